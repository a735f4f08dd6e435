"""cocotb test of :class:`hw.shared.avalon_master.AvalonBurstMaster` against the SDRAM model.

Configuration (``load_config()``)::

    commands:      [[kind, address, words], ...]   kind "read" or "write", in the order they are issued
    timing:        SdramTiming fields (defaults for the others)
    image_base:    byte address where stimulus["image"] (uint8) is loaded before the run
    ready_seed:    null (read_data always ready) or a seed for random ready (about 1 cycle in 3 low)
    valid_seed:    null (write words always offered) or a seed for random gaps between write words
    max_burst:     the master's burst limit (the slave checks every burstcount against it)
    address_bits:  the master's address width (the commands' address field)
    max_cycles:    the run fails if the commands are not done by then
    sdram_inside:  true when the top is the master with the SDRAM model inside the simulator
                   (testbench.shared.sdram_model.WithSdramModel); else the Python slave serves the master

Stimulus: ``image`` (bytes loaded at ``image_base``), ``write_words`` (uint64 data of every write word, in
command order), ``write_enables`` (their byte enables).  Outputs: ``read_words`` and ``read_cycles`` (every word
taken from ``read_data`` and the cycle it was taken), ``requests`` ((cycle, is_write, address, burstcount) per
accepted bus request), ``image_after`` (the bytes at ``image_base`` after the run), ``cycles`` (cycle on which
the master went idle with every read word taken), ``statistics`` (beats, row hits, opens, row misses, refreshes).
``requests`` and ``statistics`` come from the Python slave and are empty with ``sdram_inside``.

The second test, ``streaming`` (a throughput measurement: ``benchmarks/shared/bench_sdram_model.py``), issues one
read command and one write command (``commands``: at most one of each), offers the same write word on every
cycle, always takes read words, and looks at the master every 1,024 cycles only, so that the SDRAM (in Python or
in the simulator) is all that runs per cycle.  Output: ``cycles`` (simulated, a multiple of 1,024).
"""

import dataclasses

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly, Timer

from nnaccel.models.shared.sdram import SdramTiming
from nnaccel.testbench.shared.clocking import CLOCK_PERIOD_NS
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs
from nnaccel.testbench.shared.sdram_memory import SlaveMemory, start_sdram

_HOLD = {"read_command__valid": 0, "write_command__valid": 0, "write_data__valid": 0, "read_data__ready": 0}
_POLL_CYCLES = 1024


def _pattern(seed, count, low_probability):
    """``count`` booleans, True where the handshake side is willing (all True without a seed)."""
    if seed is None:
        return np.ones(count, bool)
    return np.random.default_rng(seed).random(count) >= low_probability


async def _start(dut, config, image, word_bits):
    """Reset, with the SDRAM holding ``image`` at ``config["image_base"]``: ``(next_cycle, memory)``
    (:func:`testbench.shared.sdram_memory.start_sdram`: the model inside the simulator or the Python slave)."""
    timing = SdramTiming(**config.get("timing", {}))
    return await start_sdram(dut, {config["image_base"]: image}, inside=bool(config.get("sdram_inside")),
                             word_bytes=word_bits // 8, hold=_HOLD, timing=timing, max_burst=config["max_burst"])


@cocotb.test()
async def burst_master(dut):
    config, stimulus = load_config(), load_stimulus()
    image = stimulus["image"].astype(np.uint8)
    base = config["image_base"]
    word_bits = len(dut.write_data__payload) * 8 // 9          # data and its byte enables
    next_cycle, memory = await _start(dut, config, image, word_bits)

    commands = {kind: [(address, words) for k, address, words in config["commands"] if k == kind]
                for kind in ("read", "write")}
    expected_reads = sum(words for _, words in commands["read"])
    write_words, write_enables = stimulus["write_words"], stimulus["write_enables"]
    max_cycles = config["max_cycles"]
    ready = _pattern(config.get("ready_seed"), max_cycles, 0.3)
    offer = _pattern(config.get("valid_seed"), max_cycles, 0.3)
    command_address_bits = config["address_bits"]

    read_words, read_cycles = [], []
    next_command = {"read": 0, "write": 0}
    written = 0
    offering = False                  # a write word offered and not yet taken stays offered (stream rule)
    cycle = 0
    while cycle < max_cycles:
        for kind in ("read", "write"):
            port = getattr(dut, f"{kind}_command__valid"), getattr(dut, f"{kind}_command__payload")
            if next_command[kind] < len(commands[kind]):
                address, words = commands[kind][next_command[kind]]
                port[0].value = 1
                port[1].value = address | words << command_address_bits
            else:
                port[0].value = 0
        offering = written < len(write_words) and (offering or bool(offer[cycle]))
        dut.write_data__valid.value = int(offering)
        if offering:
            dut.write_data__payload.value = int(write_words[written]) | int(write_enables[written]) << word_bits
        dut.read_data__ready.value = int(ready[cycle])
        await ReadOnly()
        for kind in ("read", "write"):
            if int(getattr(dut, f"{kind}_command__valid").value) and int(getattr(dut, f"{kind}_command__ready").value):
                next_command[kind] += 1
        if offering and int(dut.write_data__ready.value):
            written += 1
            offering = False
        if int(dut.read_data__valid.value) and ready[cycle]:
            read_words.append(int(dut.read_data__payload.value))
            read_cycles.append(cycle)
        done = (all(next_command[kind] == len(commands[kind]) for kind in commands) and written == len(write_words)
                and len(read_words) == expected_reads and not int(dut.busy.value))
        if done:
            break
        await next_cycle()
        cycle += 1

    image_after = await memory.read(base, len(image))
    requests, statistics = [], []
    if isinstance(memory, SlaveMemory):
        requests = [(c, kind == "write", a, n) for c, kind, a, n in memory.slave.requests]
        statistics = dataclasses.astuple(memory.slave.model.statistics)[:5]
    save_outputs(read_words=np.array(read_words, dtype=np.uint64), read_cycles=np.array(read_cycles, np.int64),
                 requests=np.array(requests, np.int64).reshape(-1, 4), image_after=image_after,
                 cycles=np.int64(cycle), statistics=np.array(statistics, np.int64))
    assert cycle < max_cycles, (f"not done after {max_cycles} cycles: commands {next_command}, {written} of "
                                f"{len(write_words)} words written, {len(read_words)} of {expected_reads} read")


@cocotb.test()
async def streaming(dut):
    config, stimulus = load_config(), load_stimulus()
    word_bits = len(dut.write_data__payload) * 8 // 9
    next_cycle, _ = await _start(dut, config, stimulus["image"].astype(np.uint8), word_bits)
    address_bits = config["address_bits"]
    dut.read_data__ready.value = 1
    dut.write_data__valid.value = 1
    dut.write_data__payload.value = 0x5A5A5A5A | ((1 << word_bits // 8) - 1) << word_bits
    commands = {kind: (address, words) for kind, address, words in config["commands"]}
    cycle = 0
    for kind, (address, words) in commands.items():       # each command: valid until taken
        valid, payload = getattr(dut, f"{kind}_command__valid"), getattr(dut, f"{kind}_command__payload")
        valid.value, payload.value = 1, address | words << address_bits
        await ReadOnly()
        while not int(getattr(dut, f"{kind}_command__ready").value):
            await next_cycle()
            cycle += 1
            await ReadOnly()
        await next_cycle()
        cycle += 1
        valid.value = 0
    while int(dut.busy.value) and cycle < config["max_cycles"]:
        await Timer(_POLL_CYCLES * CLOCK_PERIOD_NS, unit="ns")      # no Python on the cycles in between
        await ReadOnly()
        cycle += _POLL_CYCLES
    save_outputs(cycles=np.int64(cycle))
    assert not int(dut.busy.value), f"the master is still busy after {cycle} cycles"
