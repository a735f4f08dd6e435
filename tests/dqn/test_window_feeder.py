# amaranth: UnusedElaboratable=no
"""hw.dqn.window_feeder.WindowFeeder on Amaranth's simulator: after a load and k shifts, module m sees element
``tap_column[m] + k`` of its slot's register (``pad_columns`` zeros, then the row; zero past the row's width, a
padding row all zeros), 1.0 on the cycle after ``unit_scalar``; its vector is
slot m of the weight word or, in a reduction step, its lanes of the input word, its seed slot m of the bias row; the
product's valid, count and ReLU flag one cycle after its issue; the reads it asks the RAMs for are the sequencer's."""

import numpy as np
import pytest
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.interfaces import FeederControlSignature
from nnaccel.hw.dqn.matrix_module import COUNT_BITS, operand_layout
from nnaccel.hw.dqn.window_feeder import WindowFeeder
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=9, activation_depth=16, weight_depth=16, max_layers=2)
ONE = int(np.float32(1.0).view(np.uint32))
SEED = 777


def pack(elements, bits=32):
    return sum(int(value) << (bits * index) for index, value in enumerate(elements))


def run_steps(feeder, steps):
    """``steps``: per cycle ``(row0, row1, load, shift, unit, slots, columns, width, zeros)``, ``zeros`` the
    padding flags of a row read on that cycle (for the next load); the scalars seen on the next cycle."""
    seen = []
    simulator = Simulator(feeder)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        control = feeder.control
        for row0, row1, load, shift, unit, slots, columns, width, zeros in steps:
            ctx.set(feeder.rows0.read_data, pack(row0))
            ctx.set(feeder.rows1.read_data, pack(row1))
            ctx.set(control.load, load)
            ctx.set(control.shift, shift)
            ctx.set(control.unit_scalar, unit)
            ctx.set(control.tap_slot, sum(slot << module for module, slot in enumerate(slots)))
            ctx.set(control.tap_column, columns)
            ctx.set(control.row_width, width)
            ctx.set(control.row_read, 1)
            ctx.set(control.row_zero0, zeros[0])
            ctx.set(control.row_zero1, zeros[1])
            await ctx.tick()
            seen.append([ctx.get(feeder.operands[module].payload.scalar) for module in range(CONFIG.modules)])

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


def register(row, width, zero):
    """A row register after a load: ``pad_columns`` zeros, the row's first ``width`` elements, zeros after; all
    zeros for a row read as padding."""
    return [0] * CONFIG.pad_columns + [0 if zero or index >= width else value for index, value in enumerate(row)]


def test_windows_after_load_and_shifts():
    """Module m sees element ``tap_column[m] + k`` of its slot's register k shifts after a load (zero past the
    register's end); the zeros in front of the row, past ``row_width`` and of a row flagged as padding (the flag
    given with the read, on the cycle before the load) read as +0."""
    rng = np.random.default_rng(SEED)
    elements, taps = CONFIG.row_elements, CONFIG.pad_columns + CONFIG.row_elements
    loads = [([[int(v) for v in rng.integers(1, 1 << 32, elements)] for _ in range(2)], int(rng.integers(1, elements + 1)),
              [int(z) for z in rng.integers(0, 2, 2)]) for _ in range(4)]
    loads[0][2][:] = [0, 0]
    loads[1][2][:] = [1, 0]
    idle = ([0] * CONFIG.modules, [0] * CONFIG.modules)
    steps = [([0] * elements, [0] * elements, 0, 0, 0, *idle, elements, loads[0][2])]
    expected = []
    for step, (rows, width, zeros) in enumerate(loads[:3]):
        registers = [register(rows[slot], width, zeros[slot]) for slot in range(2)]
        slots = [int(s) for s in rng.integers(0, 2, CONFIG.modules)]
        columns = [int(c) for c in rng.integers(0, taps, CONFIG.modules)]
        for cycle in range(6):                             # a load, then 5 shifts with a unit scalar among them
            unit = cycle == 3
            steps.append((rows[0], rows[1], cycle == 0, cycle > 0, unit, slots, columns, width, loads[step + 1][2]))
            if unit:
                expected.append([ONE] * CONFIG.modules)
            else:
                expected.append([registers[slot][column + cycle] if column + cycle < taps else 0
                                 for slot, column in zip(slots, columns)])
    assert run_steps(WindowFeeder(config=CONFIG), steps)[1:] == expected


def test_row_inputs_are_ignored_without_load():
    rng = np.random.default_rng(SEED + 1)
    rows = [[int(v) for v in rng.integers(1, 1 << 32, CONFIG.row_elements)] for _ in range(2)]
    other = [[0] * CONFIG.row_elements] * 2
    taps = ([1, 0, 1, 0], [0, 3, 8, 12])
    steps = [(rows[0], rows[1], 1, 0, 0, *taps, CONFIG.row_elements, (0, 0)),
             (other[0], other[1], 0, 0, 0, *taps, CONFIG.row_elements, (1, 1))]
    window = [register(rows[slot], CONFIG.row_elements, 0)[column] for slot, column in zip(*taps)]
    assert run_steps(WindowFeeder(config=CONFIG), steps) == [window, window]


@pytest.mark.parametrize("from_activations", [0, 1])
def test_vectors_valid_count_and_relu(from_activations):
    """A product issued on one cycle is a valid beat on the next: module m's vector is slot m of the weight word, or
    in a reduction step elements m*lanes .. of the input word on port 1 (modules 0 to 3 of 4: 8 of 9 elements);
    its seed slot m of the bias row read on the weight RAM's second port; the count and ReLU flag are the issue's.
    The feeder reads where the sequencer says."""
    rng = np.random.default_rng(SEED + 2)
    lanes, modules = CONFIG.lanes, CONFIG.modules
    weights = [int(v) for v in rng.integers(0, 1 << 32, lanes * modules)]
    biases = [int(v) for v in rng.integers(0, 1 << 32, lanes * modules)]
    row1 = [int(v) for v in rng.integers(0, 1 << 32, CONFIG.row_elements)]
    feeder = WindowFeeder(config=CONFIG)
    seen = {}
    simulator = Simulator(feeder)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        control = feeder.control
        for name, value in (("issue", 1), ("row_address0", 5), ("row_address1", 6), ("row_read", 1),
                            ("weight_address", 9), ("weight_read", 1), ("bias_address", 11), ("bias_read", 1)):
            ctx.set(getattr(control, name), value)
        ctx.set(control.product, {"vector_from_activations": from_activations, "count": 300, "relu": 1})
        ports = (feeder.rows0, feeder.rows1, feeder.weights, feeder.biases)
        seen["reads"] = [ctx.get(port.address) for port in ports] + [ctx.get(port.read_enable) for port in ports]
        seen["before"] = ctx.get(feeder.operands[0].valid)
        await ctx.tick()
        ctx.set(control.issue, 0)
        ctx.set(feeder.weights.read_data, pack(weights))
        ctx.set(feeder.biases.read_data, pack(biases))
        ctx.set(feeder.rows1.read_data, pack(row1))
        seen["beat"] = [(ctx.get(operands.valid), ctx.get(operands.payload.vector), ctx.get(operands.payload.seed),
                         ctx.get(operands.payload.count), ctx.get(operands.payload.relu))
                        for operands in feeder.operands]
        await ctx.tick()
        seen["after"] = ctx.get(feeder.operands[0].valid)

    simulator.add_testbench(testbench)
    simulator.run()
    assert seen["reads"] == [5, 6, 9, 11, 1, 1, 1, 1]
    assert (seen["before"], seen["after"]) == (0, 0)
    source = row1 if from_activations else weights
    assert seen["beat"] == [(1, source[module * lanes:(module + 1) * lanes], biases[module * lanes:(module + 1) * lanes],
                             300, 1) for module in range(modules)]


def test_ports():
    feeder = WindowFeeder(config=CONFIG)
    rows = BufferPortSignature(width=32 * CONFIG.row_elements, depth=16, granularity=32)
    operands = stream.Signature(operand_layout(CONFIG.lanes, CONFIG.fmt, COUNT_BITS), always_ready=True)
    assert dict(feeder.signature.members) == {
        "control": In(FeederControlSignature(CONFIG)), "rows0": Out(rows), "rows1": Out(rows),
        "weights": Out(BufferPortSignature(width=32 * 8, depth=16)),
        "biases": Out(BufferPortSignature(width=32 * 8, depth=16)), "operands": Out(operands).array(4)}
    assert feeder.config is CONFIG


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a DqnConfig, not 'small'$"):
        WindowFeeder(config="small")
