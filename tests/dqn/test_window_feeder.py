# amaranth: UnusedElaboratable=no
"""hw.dqn.window_feeder.WindowFeeder on Amaranth's simulator: after a load and k shifts, module m sees element
``tap_column[m] + k`` of the row of its slot (zero past the row's end), 1.0 on the cycle after ``bias``."""

import numpy as np
import pytest
from amaranth.lib import data
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.window_feeder import WindowFeeder

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=9, activation_depth=16, weight_depth=16, max_layers=2)
ONE = int(np.float32(1.0).view(np.uint32))
SEED = 777


def run_steps(feeder, steps):
    """``steps``: per cycle ``(row0, row1, load, shift, bias, slots, columns)``; the scalars seen on the next cycle."""
    seen = []
    simulator = Simulator(feeder)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        for row0, row1, load, shift, bias, slots, columns in steps:
            ctx.set(feeder.row0, row0)
            ctx.set(feeder.row1, row1)
            ctx.set(feeder.load, load)
            ctx.set(feeder.shift, shift)
            ctx.set(feeder.bias, bias)
            ctx.set(feeder.tap_slot, sum(slot << module for module, slot in enumerate(slots)))
            ctx.set(feeder.tap_column, columns)
            await ctx.tick()
            seen.append([ctx.get(feeder.scalars[module]) for module in range(CONFIG.modules)])

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


def test_windows_after_load_and_shifts():
    rng = np.random.default_rng(SEED)
    elements = CONFIG.row_elements
    steps, expected = [], []
    for _ in range(3):                                     # three steps, each: load, then 4 shifts with a bias
        rows = [[int(v) for v in rng.integers(1, 1 << 32, elements)] for _ in range(2)]
        slots = [int(s) for s in rng.integers(0, 2, CONFIG.modules)]
        columns = [int(c) for c in rng.integers(0, elements, CONFIG.modules)]
        for cycle in range(6):
            bias = cycle == 3
            steps.append((rows[0], rows[1], cycle == 0, cycle > 0, bias, slots, columns))
            shifts = cycle                                 # shifts since the load, including this cycle's
            if bias:
                expected.append([ONE] * CONFIG.modules)
            else:
                expected.append([rows[slot][column + shifts] if column + shifts < elements else 0
                                 for slot, column in zip(slots, columns)])
    assert run_steps(WindowFeeder(config=CONFIG), steps) == expected


def test_row_inputs_are_ignored_without_load():
    rng = np.random.default_rng(SEED + 1)
    rows = [[int(v) for v in rng.integers(1, 1 << 32, CONFIG.row_elements)] for _ in range(2)]
    other = [[0] * CONFIG.row_elements] * 2
    taps = ([1, 0, 1, 0], [0, 3, 8, 5])
    steps = [(rows[0], rows[1], 1, 0, 0, *taps), (other[0], other[1], 0, 0, 0, *taps)]
    window = [rows[slot][column] for slot, column in zip(*taps)]
    assert run_steps(WindowFeeder(config=CONFIG), steps) == [window, window]


def test_ports():
    feeder = WindowFeeder(config=CONFIG)
    row = data.ArrayLayout(32, CONFIG.row_elements)
    assert dict(feeder.signature.members) == {
        "row0": In(row), "row1": In(row), "load": In(1), "shift": In(1), "bias": In(1), "tap_slot": In(4),
        "tap_column": In(data.ArrayLayout(range(9), 4)), "scalars": Out(data.ArrayLayout(32, 4))}
    assert feeder.config is CONFIG


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a DqnConfig, not 'small'$"):
        WindowFeeder(config="small")
