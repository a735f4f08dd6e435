"""cocotb test of ``ConvFeeder`` reading an image from a ``DualPortBuffer`` (the design under test holds both).

Configuration: ``positions``, ``bits`` (number width), ``start_cycle`` (cycle after reset on which ``start`` is
pulsed), ``runs`` (layers computed one after the other: each run pulses ``start`` again ``start_cycle`` cycles
after ``busy`` fell), ``beats`` (beats expected per run) and ``timeout`` (cycles allowed per run).

Monitor: every cycle with ``out_valid`` high records ``scalars`` (positions lanes), ``weight_index``, ``first``,
``last``, ``output_row``, ``head_count``, ``active``, and ``cycle``, counted from that run's start cycle.
Outputs: those arrays, all runs concatenated, plus ``run`` (the run of each beat) and ``busy_cycles`` (per run,
cycles from the start cycle to the first cycle with ``busy`` low).
"""

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly

from testbench.clocking import start_clock_and_reset
from testbench.exchange import load_config, save_outputs, unpack_lanes

FIELDS = ("weight_index", "first", "last", "output_row", "head_count", "active")


@cocotb.test()
async def feed_layer(dut):
    config = load_config()
    positions, bits = config["positions"], config["bits"]
    next_cycle = await start_clock_and_reset(dut, hold={"start": 0})

    scalars, fields, cycles, runs, busy_cycles = [], {field: [] for field in FIELDS}, [], [], []
    for run in range(config["runs"]):
        for _ in range(config["start_cycle"]):
            await next_cycle()
        dut.start.value = 1
        cycle = 0
        beats = 0
        while True:
            await ReadOnly()
            if int(dut.out_valid.value):
                scalars.append(int(dut.scalars.value))
                for field in FIELDS:
                    fields[field].append(int(getattr(dut, field).value))
                cycles.append(cycle)
                runs.append(run)
                beats += 1
            if cycle and not int(dut.busy.value):
                busy_cycles.append(cycle)
                break
            assert cycle < config["timeout"], f"run {run}: busy still high after {cycle} cycles ({beats} beats)"
            await next_cycle()
            dut.start.value = 0
            cycle += 1
        assert beats == config["beats"], f"run {run}: {beats} beats, expected {config['beats']}"

    save_outputs(scalars=unpack_lanes(scalars, positions, bits), cycle=np.array(cycles, dtype=np.int64),
                 run=np.array(runs, dtype=np.int64), busy_cycles=np.array(busy_cycles, dtype=np.int64),
                 **{field: np.array(values, dtype=np.uint64) for field, values in fields.items()})
