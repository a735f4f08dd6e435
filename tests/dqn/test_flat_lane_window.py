# amaranth: UnusedElaboratable=no
"""hw.dqn.flat_lane_window.FlatLaneWindow on Amaranth's simulator: for every group and step of stride-1 depthwise
layers (padding on every side, a rectangular kernel, a 25 x 5 map), each lane's element is the one
models.dqn.flat_map.lane_operands defines (its output position's window element, +0 for padding), with one slot and
with two (each its own channel, position, window and shift), the windows loaded two words a cycle and the lanes'
coordinates set once and advanced per group; Verilog lint clean."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.flat_lane_window import FlatLaneWindow
from nnaccel.models.dqn.flat_map import (lane_coordinates, lane_operands, step_bounds, window_base, window_shift,
                                         window_words_needed)
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.sim.lint import lint_verilog

CONFIG = DqnConfig(modules=2, lanes=4, row_elements=12, pad_columns=2, activation_depth=64, weight_depth=16)
GROUP_LANES = CONFIG.modules * CONFIG.lanes
SEED = 2025

LAYERS = [
    ConvLayer("dw3x3", 3, (7, 5), 3, 3, 1, padding=1, groups=3),
    ConvLayer("dw3x2", 2, (6, 4), 2, (3, 2), 1, padding=(2, 0, 1, 0), groups=2),
    ConvLayer("dw_kws", 4, (25, 5), 4, 3, 1, padding=1, groups=4),
]


def pack(elements, bits=32):
    return sum(int(value) << (bits * index) for index, value in enumerate(elements))


def unpack(value, count, bits=32):
    return [(value >> (bits * index)) & ((1 << bits) - 1) for index in range(count)]


def slot_schedule(layer, slots):
    """Per group, per slot ``(channel, first position)``: slot ``s`` on channel ``s`` (of a tensor of ``slots``
    channels) at position ``q0 + s * slot_lanes``, ``q0`` moving on by all the lanes per group: slots on different
    channels and positions, so that each has its own window and shift."""
    slot_lanes = GROUP_LANES // slots
    positions = layer.out_height * layer.out_width
    return [[(slot, first + slot * slot_lanes) for slot in range(slots)] for first in range(0, positions, GROUP_LANES)]


def run_layer(layer, memory, channel_words, window_words, slots):
    """Every group of ``slot_schedule``: the lanes set (first group) or advanced, each slot's window loaded, then
    each step; returns the lanes' elements per step, in order."""
    window = FlatLaneWindow(config=CONFIG, window_words=window_words, slots=slots)
    seen = []
    simulator = Simulator(window)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        control = window.control
        for group, assignments in enumerate(slot_schedule(layer, slots)):
            first = assignments[0][1]
            if group == 0:
                rows, columns = lane_coordinates(layer.out_width, first, GROUP_LANES)
                ctx.set(control.lane_rows, [int(row) for row in rows])
                ctx.set(control.lane_columns, [int(column) for column in columns])
                ctx.set(control.set_lanes, 1)
            else:
                ctx.set(control.advance, 1)
                ctx.set(control.advance_rows, GROUP_LANES // layer.out_width)
                ctx.set(control.advance_columns, GROUP_LANES % layer.out_width)
                ctx.set(control.out_width, layer.out_width)
            for slot, (channel, slot_first) in enumerate(assignments):
                start = channel_words[channel] + window_base(layer, CONFIG.row_elements, slot_first)
                for pair in range(window_words // 2):
                    words = [memory[(start + 2 * pair + half) % len(memory)] for half in range(2)]
                    ctx.set(window.words, [pack(word) for word in words])
                    ctx.set(control.load, 1)
                    ctx.set(control.load_slot, slot)
                    ctx.set(control.load_pair, pair)
                    await ctx.tick()
                    ctx.set(control.set_lanes, 0)
                    ctx.set(control.advance, 0)
            ctx.set(control.load, 0)
            for kh in range(layer.kernel_height):
                for kw in range(layer.kernel_width):
                    ctx.set(control.shifts, [window_shift(layer, CONFIG.row_elements, slot_first, kh, kw)
                                             for _, slot_first in assignments])
                    bounds = step_bounds(layer, kh, kw)
                    for name, value in zip(("row_low", "row_high", "column_low", "column_high"), bounds):
                        ctx.set(getattr(control, name), value)
                    await ctx.tick()
                    seen.append([element for vector in ctx.get(window.vectors)
                                 for element in unpack(pack(vector), CONFIG.lanes)])

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


@pytest.mark.parametrize("slots", [1, 2])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_lanes_take_their_windows_elements(layer, slots):
    rng = np.random.default_rng(SEED)
    memory = rng.integers(1, 1 << 32, (CONFIG.activation_depth, CONFIG.row_elements), dtype=np.uint64)
    words_per_channel = -(-layer.out_height * layer.out_width // CONFIG.row_elements)
    channel_words = [2 + channel * words_per_channel for channel in range(slots)]    # a tensor at word 2
    slot_lanes = GROUP_LANES // slots
    window_words = window_words_needed(layer, CONFIG.row_elements, slot_lanes)
    window_words += window_words % 2
    expected = []
    for assignments in slot_schedule(layer, slots):
        for kh in range(layer.kernel_height):
            for kw in range(layer.kernel_width):
                expected.append([element for channel, first in assignments for element in lane_operands(
                    memory, channel_words[channel], layer, first, kh, kw, slot_lanes).tolist()])
    assert run_layer(layer, memory.tolist(), channel_words, window_words, slots) == expected


def test_rejects_bad_windows():
    with pytest.raises(ValueError, match="window_words must be even"):
        FlatLaneWindow(config=CONFIG, window_words=3)
    with pytest.raises(ValueError, match="narrower than a slot's 8 lanes"):
        FlatLaneWindow(config=DqnConfig(modules=2, lanes=4, row_elements=3), window_words=2)
    with pytest.raises(ValueError, match="slots must divide the 4 modules, not 3"):
        FlatLaneWindow(config=DqnConfig(modules=4, lanes=2), slots=3)


def test_lint_clean():
    assert lint_verilog(FlatLaneWindow(config=CONFIG, window_words=4, slots=2), "flat_lane_window") == []
