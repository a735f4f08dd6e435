"""cocotb test module for :class:`hw.pe_ring.ring.PERing`: load program and local memories, run, read back.

Stimulus: ``program`` (words), ``lm_writes`` (K x 3: pe, address, raw bits), ``lm_reads`` (R x 2: pe,
address). Configuration: ``max_cycles`` (timeout for one run), ``runs`` (how many times to start the
program, the LM contents carrying over; default 1).
Outputs: ``lm_data`` (R,) words read after the last run, ``results`` (pes,) result-port registers,
``cycles`` (runs,) the ring's cycle counter after each run.
"""

import cocotb
import numpy as np
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs

_POLL_CYCLES = 256


async def _write_program(dut, words):
    for address, word in enumerate(words):
        dut.prog_addr.value = address
        dut.prog_data.value = int(word)
        dut.prog_we.value = 1
        await RisingEdge(dut.clk)
    dut.prog_we.value = 0


async def _write_lm(dut, writes):
    for pe, address, bits in writes:
        dut.lm_pe.value, dut.lm_addr.value, dut.lm_wdata.value = int(pe), int(address), int(bits)
        dut.lm_we.value = 1
        await RisingEdge(dut.clk)
    dut.lm_we.value = 0


async def _read_lm(dut, reads):
    """One word per two cycles: present the address, sample ``lm_rdata`` after the next clock edge."""
    data = []
    for pe, address in reads:
        dut.lm_pe.value, dut.lm_addr.value = int(pe), int(address)
        await RisingEdge(dut.clk)
        await ReadOnly()
        data.append(int(dut.lm_rdata.value))
        await RisingEdge(dut.clk)
    return data


async def _run(dut, max_cycles):
    dut.start.value = 1
    await RisingEdge(dut.clk)
    dut.start.value = 0
    waited = 0
    while True:
        await ClockCycles(dut.clk, _POLL_CYCLES)
        await ReadOnly()
        if int(dut.done.value):
            return int(dut.cycles.value)
        waited += _POLL_CYCLES
        assert waited <= max_cycles, f"the ring did not halt within {max_cycles} cycles"


@cocotb.test()
async def run_program(dut):
    config, stimulus = load_config(), load_stimulus()
    await start_clock_and_reset(dut, hold={"prog_we": 0, "lm_we": 0, "start": 0})
    await _write_program(dut, stimulus["program"])
    await _write_lm(dut, stimulus["lm_writes"].reshape(-1, 3))
    cycles = []
    for _ in range(config.get("runs", 1)):
        cycles.append(await _run(dut, config["max_cycles"]))
        await RisingEdge(dut.clk)
    reads = stimulus["lm_reads"].reshape(-1, 2)
    lm_data = await _read_lm(dut, reads)
    results = []
    for pe in range(config["pes"]):
        dut.lm_pe.value = pe
        await RisingEdge(dut.clk)
        await ReadOnly()
        results.append(int(dut.result.value))
        await RisingEdge(dut.clk)
    save_outputs(lm_data=np.array(lm_data, dtype=np.uint64), results=np.array(results, dtype=np.uint64),
                 cycles=np.array(cycles, dtype=np.int64))
