"""models.shared.sdram: the DE1-SoC SDRAM model's latency, throughput, row misses and refreshes against figures
worked out by hand from the default timing (CL 3, tRCD 2, tRP 2, tRAS 5, tWR 2, tRFC 7, refresh every 781 cycles,
1 cycle of command latency, 1 of read return)."""

import numpy as np
import pytest

from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, SdramModel, SdramTiming, sustained_read_bytes_per_cycle

PAGE = 2048                     # bytes of one row
BANK_STRIDE = 4 * PAGE          # the next row of the same bank


def test_geometry_and_defaults():
    timing = DE1_SOC_SDRAM
    assert timing.size_bytes == 64 << 20 and timing.row_bytes == PAGE
    assert timing.peak_bytes_per_second == 200e6
    assert timing.locate(0) == (0, 0, 0)
    assert timing.locate(PAGE - 2) == (0, 0, 1023)
    assert timing.locate(PAGE) == (1, 0, 0)
    assert timing.locate(BANK_STRIDE + 6) == (0, 1, 3)
    assert timing.locate(timing.size_bytes - 1) == (3, 8191, 1023)


@pytest.mark.parametrize("kwargs, message", [
    ({"cas_latency": 0}, "cas_latency must be an integer >= 1, not 0"),
    ({"rows": 1000}, "rows must be a power of two, not 1000"),
    ({"data_bits": 12}, "data_bits must be a multiple of 8, not 12"),
    ({"twr": -1}, "twr must be an integer >= 0, not -1"),
    ({"clock_mhz": 0}, "clock_mhz must be a positive number, not 0"),
    ({"refresh_interval": 9}, "refresh_interval \\(9\\) must exceed trp \\+ trfc \\(9\\): the SDRAM would do "
                              "nothing but refresh"),
])
def test_timing_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        SdramTiming(**kwargs)


def test_model_errors():
    with pytest.raises(ValueError, match="^port_bits must be a multiple of the SDRAM's 16 bits up to a row, not 24$"):
        SdramModel(port_bits=24)
    model = SdramModel(port_bits=32)
    with pytest.raises(ValueError, match="^address 0x2 \\(burst of 1\\) is not a 4-byte aligned range"):
        model.accept_read(0, 2, 1)
    with pytest.raises(ValueError, match="^burstcount must be a positive integer, not 0$"):
        model.accept_read(0, 0, 0)
    model.accept_read(0, 0, 1)
    with pytest.raises(ValueError, match="^cycles must not go back: 0 after 1$"):
        model.waitrequest(1) or model.waitrequest(0)
    with pytest.raises(RuntimeError, match="^the read word due on cycle 8 was never collected$"):
        model.read_response(9)


def test_burst_of_128_in_a_fresh_row():
    """Accepted on cycle 0: ACTIVATE on 1 (command latency), first READ on 1 + tRCD = 3, one READ per cycle, data
    CL = 3 cycles after each READ on the SDRAM bus and 1 cycle later on readdatavalid: words on cycles 7 .. 134."""
    model = SdramModel(port_bits=16)
    assert model.accept_read(0, 0, 128) == list(range(7, 135))
    assert (model.statistics.opens, model.statistics.row_hits, model.statistics.beats) == (1, 127, 128)


def test_wider_port_costs_one_beat_per_16_bits():
    """A 32-bit word is two SDRAM beats: word k's second READ is on cycle 3 + 2k + 1, valid 4 cycles later."""
    model = SdramModel(port_bits=32)
    assert model.accept_read(0, 0, 64) == [8 + 2 * k for k in range(64)]
    model64 = SdramModel(port_bits=64)
    assert model64.accept_read(0, 0, 32) == [10 + 4 * k for k in range(32)]


def test_row_hit_miss_and_other_bank():
    """After a 128-beat burst (READs on 3..130) the next burst's first READ is on 131 for the open row, 131 + tRP +
    tRCD = 135 for another row of the same bank (PRECHARGE on 131, ACTIVATE on 133) and 131 + tRCD = 133 for a
    closed bank (ACTIVATE on 131)."""
    first_read = {}
    for label, address in (("hit", 256), ("miss", BANK_STRIDE), ("other bank", PAGE)):
        model = SdramModel(port_bits=16)
        model.accept_read(0, 0, 128)
        first_read[label] = model.accept_read(1, address, 1)[0] - 4
    assert first_read == {"hit": 131, "miss": 135, "other bank": 133}


def test_precharge_waits_for_tras_and_twr():
    """A miss right after an ACTIVATE waits until tRAS = 5 after it; after a WRITE, tWR = 2 after the write."""
    model = SdramModel(port_bits=16)
    assert model.accept_read(0, 0, 1) == [7]                  # ACTIVATE 1, READ 3
    # miss: PRECHARGE no earlier than 1 + 5 = 6, ACTIVATE 8, READ 10, valid 14
    assert model.accept_read(1, BANK_STRIDE, 1) == [14]
    model = SdramModel(port_bits=16)
    assert model.accept_write(0, 0, 0x1234) == 3              # ACTIVATE 1, WRITE 3
    model.accept_write(1, 2, 0x5678)                          # WRITE 4
    # PRECHARGE at max(5, 1 + 5, 4 + 2) = 6, ACTIVATE 8, READ 10, valid 14
    assert model.accept_read(2, BANK_STRIDE, 1) == [14]


def test_write_after_read_waits_for_the_data_bus():
    """READ on 3 puts data on the SDRAM bus on 6; a WRITE needs it free: cycle 7."""
    model = SdramModel(port_bits=16)
    model.accept_read(0, 0, 1)
    assert model.accept_write(1, 2, 7) == 7
    assert model.accept_read(2, 4, 1) == [8 + 3 + 1]          # READ right after the WRITE (no turnaround)


def test_refresh_steals_cycles_every_interval():
    """A long stream (bursts requested whenever waitrequest is low): the refresh due on 781 k precharges (2),
    refreshes (7) and the bank is activated again (2): the READ after the one on cycle 780 is on 792, the one after
    1561 on 1573.  Between them, beat 1024 enters the next page (bank 1, closed): READ 1037, ACTIVATE 1038, READ 1040."""
    model = SdramModel(port_bits=16, keep_read_data=False)
    valid, cycle = [], 0
    for burst in range(14):
        while model.waitrequest(cycle):
            cycle += 1
        valid += model.accept_read(cycle, 256 * burst, 128)
    reads = np.array(valid) - 4                                # the READ command cycles
    gaps = np.flatnonzero(np.diff(reads) > 1)
    assert [(int(reads[g]), int(reads[g + 1])) for g in gaps] == [(780, 792), (1037, 1040), (1561, 1573)]
    assert model.statistics.refreshes == 2 and model.statistics.opens == 4      # banks 0 and 1, each again after a refresh


def test_idle_refresh_and_queue_waitrequest():
    """A refresh due while idle happens on time (no cost later); the queue holds 4 entries: with 4 single-word
    reads accepted on cycles 0-3 (READs on 3, 4, 5, 6) waitrequest is high on cycle 3 and low on cycle 4."""
    model = SdramModel(port_bits=16)
    for cycle in range(4):
        assert not model.waitrequest(cycle)
        model.accept_read(cycle, 2 * cycle, 1)
    assert model.waitrequest(3) and not model.waitrequest(4)
    idle = SdramModel(port_bits=16)
    # refresh 781..787 while idle, banks closed: ACTIVATE 801, READ 803, valid 807
    assert idle.accept_read(800, 0, 1) == [807] and idle.statistics.refreshes == 1


def test_data_round_trip_with_byte_enables():
    model = SdramModel(port_bits=32)
    model.accept_write(0, 64, 0x11223344)
    model.accept_write(1, 64, 0xAABBCCDD, byteenable=0b0101)
    model.accept_write(2, 68, 0x01020304)
    valid = model.accept_read(3, 64, 2)
    words = [model.read_response(cycle) for cycle in range(4, valid[-1] + 1)]
    assert [word for word in words if word is not None] == [0x11BB33DD, 0x01020304]
    assert bytes(model.memory[64:72]) == bytes.fromhex("dd33bb1104030201")


def test_sustained_streaming_bandwidth():
    """Sequential 128-word bursts: per 2 KB page one ACTIVATE (tRCD = 2) and, per 781 cycles, a refresh (11 with
    the re-activation): about 1 - 2/1024 - 11/781 of one beat per cycle = 1.968 bytes per cycle (196.8 MB/s of the
    200 MB/s peak), whatever the port width."""
    for port_bits in (16, 32, 64):
        assert sustained_read_bytes_per_cycle(port_bits=port_bits) == pytest.approx(2 * (1 - 2 / 1024 - 11 / 781),
                                                                                    abs=0.002)
