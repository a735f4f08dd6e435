# amaranth: UnusedElaboratable=no
"""hw.shared.avalon_master.AvalonBurstMaster: parameters, lint, and simulations against the SDRAM model
(testbench.shared.avalon_sdram): data, burst splitting, backpressure on both streams, and the exact cycle of every
read word (the model's schedule for the requests the master made, plus the read FIFO's latency); and the same run
with the SDRAM model inside the simulator (testbench.shared.sdram_model)."""

import numpy as np
import pytest

from nnaccel.hw.shared.avalon_master import AvalonBurstMaster, AvalonMMSignature
from nnaccel.models.shared.sdram import SdramModel, SdramTiming
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.sdram_model import WithSdramModel

MAX_BURST, FIFO_DEPTH = 16, 32           # small: many bursts, the FIFO credit limits the requests
READ_FIFO_LATENCY = 2                    # readdatavalid on cycle t -> read_data valid on t + 2


def small_master():
    return AvalonBurstMaster(data_bits=32, address_bits=26, max_burst=MAX_BURST, words_bits=12,
                             fifo_depth=FIFO_DEPTH)


@pytest.mark.parametrize("kwargs, message", [
    ({"data_bits": 24}, "data_bits must be a power of two, not 24"),
    ({"data_bits": 4}, "data_bits must be an integer from 8 to 1024, not 4"),
    ({"max_burst": 100}, "max_burst must be a power of two \\(Avalon burstcount\\), not 100"),
    ({"max_burst": 128, "fifo_depth": 64}, "fifo_depth must be an integer from 128 to 65536, not 64"),
    ({"words_bits": 0}, "words_bits must be an integer from 1 to 32, not 0"),
    ({"address_bits": "26"}, "address_bits must be an integer from 1 to 64, not '26'"),
])
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        AvalonBurstMaster(**kwargs)


def test_signature():
    master = AvalonBurstMaster()
    assert (master.data_bits, master.max_burst, master.fifo_depth) == (32, 128, 256)
    assert master.signature.members["avalon"].signature == AvalonMMSignature(data_bits=32, address_bits=26,
                                                                               burstcount_bits=8)
    assert repr(master.signature.members["avalon"].signature) == \
        "AvalonMMSignature(data_bits=32, address_bits=26, burstcount_bits=8)"
    assert master.module_name == "avalon_master_d32_a26_b128_w20_f256"


@pytest.mark.parametrize("master", [small_master(), AvalonBurstMaster()], ids=["small", "default"])
def test_lint_clean(master):
    assert lint_verilog(master, master.module_name) == []


def run(commands, *, image, image_base=0, write_words=(), write_enables=None, ready_seed=None, valid_seed=None,
        max_cycles=20_000, timing=None, sdram_inside=False):
    """Simulate the small master on ``commands``; the SDRAM is the Python slave or, with ``sdram_inside``, the model
    inside the simulator (testbench.shared.sdram_model) with a memory of 64 KB."""
    write_words = np.asarray(write_words, np.uint64)
    write_enables = np.full(len(write_words), 0xF, np.uint64) if write_enables is None else write_enables
    master = small_master()
    top, name = master, master.module_name
    if sdram_inside:
        top = WithSdramModel(master, timing=SdramTiming(**(timing or {})), memory_bytes=1 << 16)
        name = f"{master.module_name}_sdram"
    result = simulate(top, name=name, test_module="nnaccel.testbench.shared.avalon_master_tb",
                      stimulus={"image": image, "write_words": write_words, "write_enables": write_enables},
                      config={"commands": commands, "image_base": image_base, "ready_seed": ready_seed,
                              "valid_seed": valid_seed, "max_burst": MAX_BURST, "max_cycles": max_cycles,
                              "timing": timing or {}, "address_bits": 26, "sdram_inside": sdram_inside},
                      testcase="burst_master")
    return result.outputs


def words_of(image, address, words):
    return np.frombuffer(image[address:address + 4 * words].tobytes(), "<u4").astype(np.uint64)


def check_bursts(requests, commands, kind):
    """The bursts of each command of ``kind`` cover its words in order, none longer than MAX_BURST."""
    bursts = [(address, count) for _, is_write, address, count in requests if bool(is_write) == (kind == "write")]
    assert all(1 <= count <= MAX_BURST for _, count in bursts)
    expected = []
    for k, address, words in commands:
        if k == kind:
            while words:
                count = min(words, MAX_BURST)
                expected.append((address, count))
                address, words = address + 4 * count, words - count
    assert bursts == expected


def reads_and_writes_with_backpressure(**options):
    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, size=24 * 1024, dtype=np.uint8)
    # reads cross the 2 KB pages (banks) and hit a row twice; writes go to a separate region
    commands = [["read", 2040, 70], ["write", 16384, 37], ["read", 0, 5], ["read", 8192 + 64, 41],
                ["write", 20000, 3], ["read", 100, 1]]
    write_words = rng.integers(0, 1 << 32, size=40, dtype=np.uint64)
    write_enables = rng.integers(0, 16, size=40, dtype=np.uint64)
    out = run(commands, image=image, write_words=write_words, write_enables=write_enables, ready_seed=3,
              valid_seed=4, **options)
    expected = np.concatenate([words_of(image, a, n) for k, a, n in commands if k == "read"])
    np.testing.assert_array_equal(out["read_words"], expected)
    after = image.copy()
    addresses = [a + 4 * i for k, a, n in commands if k == "write" for i in range(n)]
    for address, word, enables in zip(addresses, write_words, write_enables):
        for byte in range(4):
            if int(enables) >> byte & 1:
                after[address + byte] = int(word) >> 8 * byte & 0xFF
    np.testing.assert_array_equal(out["image_after"], after)
    return out, commands


def test_reads_and_writes_with_backpressure():
    out, commands = reads_and_writes_with_backpressure()
    check_bursts(out["requests"], commands, "read")
    check_bursts(out["requests"], commands, "write")
    assert out["statistics"][0] == 2 * (len(out["read_words"]) + 40)          # beats: 2 per 32-bit word


def test_the_sdram_model_inside_the_simulator_gives_the_same_run():
    """The same traffic against the SDRAM model inside the simulator: the same words, each on the same cycle, the
    same memory afterwards and the same end cycle as with the Python slave."""
    python_slave, _ = reads_and_writes_with_backpressure()
    inside, _ = reads_and_writes_with_backpressure(sdram_inside=True)
    for key in ("read_words", "read_cycles", "image_after", "cycles"):
        np.testing.assert_array_equal(inside[key], python_slave[key])


def test_read_word_cycles_match_the_sdram_model():
    """With read_data always ready, every word leaves the master READ_FIFO_LATENCY cycles after the model's
    readdatavalid for the bursts at the cycles the master requested them; and the stream keeps the SDRAM busy."""
    image = np.arange(16 * 1024, dtype=np.uint32).view(np.uint8)
    words = 3000                                               # 12 KB: 6 pages, 7 refreshes
    out = run([["read", 0, words]], image=image)
    np.testing.assert_array_equal(out["read_words"], words_of(image, 0, words))
    model = SdramModel(port_bits=32, keep_read_data=False)
    valid = []
    for cycle, _, address, count in out["requests"]:
        assert not model.waitrequest(int(cycle))
        valid += model.accept_read(int(cycle), int(address), int(count))
    np.testing.assert_array_equal(out["read_cycles"], np.array(valid) + READ_FIFO_LATENCY)
    replayed = model.statistics
    assert tuple(out["statistics"]) == (replayed.beats, replayed.row_hits, replayed.opens, replayed.row_misses,
                                        replayed.refreshes)
    assert replayed.beats == 2 * words and replayed.refreshes == out["read_cycles"][-1] // 781
    # the master never lets the command bus idle for lack of requests: 2 bytes per cycle less the SDRAM's
    # own overheads (a row switch every 2 KB, a refresh every 781 cycles, the first access)
    assert 4 * words / out["read_cycles"][-1] > 1.95
