"""cocotb test: the SDRAM model inside the simulator (``sdram_model.v``) against :class:`models.shared.sdram.SdramModel`
on every cycle.  The top is :class:`testbench.shared.sdram_model.WithSdramModel` around
:class:`testbench.shared.avalon_passthrough.AvalonPassthrough`: this module plays the Avalon master on the
``host__*`` ports.

Configuration (``load_config()``)::

    timing:         SdramTiming fields (defaults for the others)
    memory_bytes:   the model's memory (a power of two); traffic stays inside it
    seed:           the traffic's random seed
    transactions:   how many read bursts, write bursts and idle gaps
    max_burst:      the longest burst
    longest_gap:    the longest idle gap, in cycles (make it exceed the refresh interval)

Stimulus: ``image`` (uint8, ``memory_bytes``): the memory before the run, loaded through the backdoor.

On every cycle the test compares ``waitrequest``, ``readdatavalid`` and ``readdata`` with the Python model's,
and fails on the first difference.  After the traffic it reads the whole memory back through the backdoor and
compares it with the Python model's.  Outputs: ``cycles``, ``waitrequest_cycles`` (cycles a request was held
off), ``read_words``, ``write_words``, ``statistics`` (beats, row hits, opens, row misses, refreshes),
``longest_gap``.
"""

import dataclasses

import numpy as np
from cocotb.triggers import ReadOnly

import cocotb
from nnaccel.models.shared.sdram import SdramModel, SdramTiming
from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs
from nnaccel.testbench.shared.sdram_backdoor import attach_sdram_model


def random_traffic(rng, timing, *, word_bytes, memory_bytes, transactions, max_burst, longest_gap):
    """A list of ``("gap", cycles)``, ``("read", address, words)`` and ``("write", address, words, data, enables,
    gaps)`` (``gaps``: idle cycles before each word).  Addresses follow the previous burst, hit its row, take
    another row of its bank (a conflict), or are random: row hits, misses and openings of closed banks."""
    pages = memory_bytes // timing.row_bytes        # (row, bank) pairs inside the memory
    traffic, next_address = [], 0
    for _ in range(transactions):
        kind = rng.choice(["read", "write", "gap"], p=[0.45, 0.35, 0.2])
        if kind == "gap":
            long_gap = rng.random() < 0.3
            traffic.append(("gap", int(rng.integers(timing.refresh_interval, longest_gap + 1) if long_gap
                                       else rng.integers(1, 8))))
            continue
        words = int(rng.integers(1, max_burst + 1)) if rng.random() < 0.7 else max_burst
        span = words * word_bytes
        pattern = rng.integers(4)
        if pattern == 0:                                 # where the last burst ended
            address = next_address
        elif pattern == 1:                               # the same row (page), another column
            page = next_address // timing.row_bytes
            address = page * timing.row_bytes + int(rng.integers(timing.row_bytes // word_bytes)) * word_bytes
        elif pattern == 2 and pages > timing.banks:      # the same bank, another row
            page = (next_address // timing.row_bytes + timing.banks * int(rng.integers(1, pages // timing.banks))) \
                % pages
            address = page * timing.row_bytes
        else:
            address = int(rng.integers(memory_bytes // word_bytes)) * word_bytes
        address = min(address, memory_bytes - span)
        next_address = (address + span) % memory_bytes
        if kind == "read":
            traffic.append(("read", address, words))
        else:
            data = [int.from_bytes(rng.bytes(word_bytes), "little") for _ in range(words)]
            enables = rng.integers(0, 1 << word_bytes, size=words)
            gaps = np.where(rng.random(words) < 0.3, rng.integers(1, 4, size=words), 0)
            traffic.append(("write", address, words, data, enables, gaps))
    return traffic


def requests(traffic, word_bytes):
    """Per cycle of the master: ``None`` (idle) or ``(is_write, address, burstcount, data, enables, word_address)``
    (a write burst keeps its first word's address on the bus; ``word_address`` is where the word goes), advancing
    through ``traffic`` as requests are accepted (``send(True)`` after an accepted cycle)."""
    for item in traffic:
        if item[0] == "gap":
            for _ in range(item[1]):
                yield None
        elif item[0] == "read":
            while not (yield (False, item[1], item[2], 0, 0, item[1])):
                pass
        else:
            _, address, words, data, enables, gaps = item
            for word in range(words):
                for _ in range(int(gaps[word])):
                    yield None
                while not (yield (True, address, words, data[word], int(enables[word]), address + word * word_bytes)):
                    pass


@cocotb.test()
async def sdram_model_equivalence(dut):
    config, stimulus = load_config(), load_stimulus()
    timing = SdramTiming(**config.get("timing", {}))
    word_bytes = len(dut.host__writedata) // 8
    memory_bytes = config["memory_bytes"]
    image = stimulus["image"].astype(np.uint8)
    assert len(image) == memory_bytes
    model = SdramModel(timing=timing, port_bits=8 * word_bytes)
    model.memory[:memory_bytes] = image
    backdoor = await attach_sdram_model(dut, {0: image}, word_bytes=word_bytes)
    assert backdoor.memory_bytes == memory_bytes
    next_cycle = await start_clock_and_reset(dut, hold={"host__read": 0, "host__write": 0})

    rng = np.random.default_rng(config["seed"])
    traffic = random_traffic(rng, timing, word_bytes=word_bytes, memory_bytes=memory_bytes,
                             transactions=config["transactions"], max_burst=config["max_burst"],
                             longest_gap=config["longest_gap"])
    master = requests(traffic, word_bytes)
    request = next(master, None)
    done = False
    cycle, held, read_words, write_words, last_readdata, accepted_requests = 0, 0, 0, 0, 0, 0
    while not done or model.reads_pending:
        dut.host__read.value = int(request is not None and not request[0])
        dut.host__write.value = int(request is not None and request[0])
        if request is not None:
            _, address, burstcount, data, enables, _ = request
            dut.host__address.value, dut.host__burstcount.value = address, burstcount
            dut.host__writedata.value, dut.host__byteenable.value = data, enables
        await ReadOnly()
        waitrequest = model.waitrequest(cycle)
        word = model.read_response(cycle)
        if word is not None:
            last_readdata = word
            read_words += 1
        hardware = (int(dut.host__waitrequest.value), int(dut.host__readdatavalid.value),
                    int(dut.host__readdata.value))
        assert hardware == (int(waitrequest), int(word is not None), last_readdata), (
            f"cycle {cycle}: (waitrequest, readdatavalid, readdata) = ({hardware[0]}, {hardware[1]}, "
            f"{hardware[2]:#x}), the Python model gives ({int(waitrequest)}, {int(word is not None)}, "
            f"{last_readdata:#x})")
        accepted = request is not None and not waitrequest
        assert int(dut.accepted.value) == accepted_requests, f"cycle {cycle}: the DUT counted {int(dut.accepted.value)}"
        accepted_requests += accepted
        if accepted:
            is_write, address, burstcount, data, enables, word_address = request
            if is_write:
                model.accept_write(cycle, word_address, data, enables)
                write_words += 1
            else:
                model.accept_read(cycle, address, burstcount)
        held += request is not None and waitrequest
        if not done:
            try:
                request = master.send(accepted) if request is not None else next(master)
            except StopIteration:
                request, done = None, True
        await next_cycle()
        cycle += 1

    memory_after = await backdoor.read(0, memory_bytes)
    np.testing.assert_array_equal(memory_after, model.memory[:memory_bytes])
    save_outputs(cycles=np.int64(cycle), waitrequest_cycles=np.int64(held), read_words=np.int64(read_words),
                 write_words=np.int64(write_words),
                 statistics=np.array(dataclasses.astuple(model.statistics)[:5], np.int64),
                 longest_gap=np.int64(max([item[1] for item in traffic if item[0] == "gap"], default=0)))

