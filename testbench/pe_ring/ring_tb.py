"""cocotb test module for :class:`hw.pe_ring.ring.PERing` through its host port: load the program table, the
program and the local memories, start, read back (:class:`testbench.shared.host_driver.HostDriver`).

Stimulus: ``program`` (words), ``entries`` (the program table: entry address of program i), ``lm`` (pes *
lm_depth raw words: PE p's word a at p * lm_depth + a), ``lm_reads`` (host addresses p * lm_depth + a).
Configuration: ``max_cycles`` (timeout of one START), ``starts`` (how many STARTs, the LM contents carrying over),
``programs`` (the START value: programs 0 .. programs-1 run in turn), ``pes``; ``progress_file`` (optional).
Outputs: ``lm_data`` (starts, R) the words read after each START, ``results`` (pes,) result-port registers,
``cycles`` (starts,) TOTAL_CYCLES after each START, ``counters`` (starts, programs, 4) each program's counters.
"""

import cocotb
import numpy as np

from nnaccel.hw.pe_ring.ring import RingMemory
from nnaccel.hw.shared.host_control import HostTarget
from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs
from nnaccel.testbench.shared.host_driver import IDLE_HOST, HostDriver, report_progress


@cocotb.test()
async def run_program(dut):
    config, stimulus = load_config(), load_stimulus()
    await start_clock_and_reset(dut, hold=IDLE_HOST)
    host = HostDriver(dut)
    await host.write_block(HostTarget.DESCRIPTORS, 0, stimulus["entries"])
    await host.write_block(RingMemory.PROGRAM, 0, stimulus["program"])
    await host.write_block(RingMemory.LOCAL_MEMORY, 0, stimulus["lm"])
    starts, programs = config["starts"], config["programs"]
    cycles, counters, lm_data = [], [], []
    report_progress(config, 0, starts)
    for start in range(starts):
        await host.run(programs, config["max_cycles"])
        total, program_counters = await host.read_counters(programs)
        cycles.append(total)
        counters.append(program_counters)
        lm_data.append(await host.read_block(RingMemory.LOCAL_MEMORY, stimulus["lm_reads"]))
        report_progress(config, start + 1, starts)
    results = await host.read_block(RingMemory.RESULTS, range(config["pes"]))
    save_outputs(lm_data=np.array(lm_data, dtype=np.uint64), results=np.array(results, dtype=np.uint64),
                 cycles=np.array(cycles, dtype=np.int64), counters=np.array(counters, dtype=np.int64))
