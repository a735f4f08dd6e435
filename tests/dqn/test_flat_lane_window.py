# amaranth: UnusedElaboratable=no
"""hw.dqn.flat_lane_window.FlatLaneWindow on Amaranth's simulator: for every group and step of stride-1 depthwise
layers (padding on every side, a rectangular kernel, a 25 x 5 map), each lane's element is the one
models.dqn.flat_map.lane_operands defines (its output position's window element, +0 for padding), with the window
loaded two words a cycle and the lanes' coordinates set once and advanced per group; Verilog lint clean."""

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


def run_layer(layer, memory, channel_word, window_words):
    """Every group of the channel at ``channel_word``: the lanes set (first group) or advanced, the window loaded,
    then each step; returns the lanes' elements per step, in order."""
    window = FlatLaneWindow(config=CONFIG, window_words=window_words)
    positions = layer.out_height * layer.out_width
    seen = []
    simulator = Simulator(window)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        control = window.control
        for first in range(0, positions, GROUP_LANES):
            if first == 0:
                rows, columns = lane_coordinates(layer.out_width, first, GROUP_LANES)
                ctx.set(control.lane_rows, [int(row) for row in rows])
                ctx.set(control.lane_columns, [int(column) for column in columns])
                ctx.set(control.set_lanes, 1)
            else:
                ctx.set(control.advance, 1)
                ctx.set(control.advance_rows, GROUP_LANES // layer.out_width)
                ctx.set(control.advance_columns, GROUP_LANES % layer.out_width)
                ctx.set(control.out_width, layer.out_width)
            start = channel_word + window_base(layer, CONFIG.row_elements, first)
            for pair in range(window_words // 2):
                words = [memory[(start + 2 * pair + half) % len(memory)] for half in range(2)]
                ctx.set(window.words, [pack(word) for word in words])
                ctx.set(control.load, 1)
                ctx.set(control.load_pair, pair)
                await ctx.tick()
                ctx.set(control.set_lanes, 0)
                ctx.set(control.advance, 0)
            ctx.set(control.load, 0)
            for kh in range(layer.kernel_height):
                for kw in range(layer.kernel_width):
                    ctx.set(control.shift, window_shift(layer, CONFIG.row_elements, first, kh, kw))
                    bounds = step_bounds(layer, kh, kw)
                    for name, value in zip(("row_low", "row_high", "column_low", "column_high"), bounds):
                        ctx.set(getattr(control, name), value)
                    await ctx.tick()
                    seen.append([element for vector in ctx.get(window.vectors)
                                 for element in unpack(pack(vector), CONFIG.lanes)])

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_lanes_take_their_windows_elements(layer):
    rng = np.random.default_rng(SEED)
    memory = rng.integers(1, 1 << 32, (CONFIG.activation_depth, CONFIG.row_elements), dtype=np.uint64)
    channel_words = -(-layer.out_height * layer.out_width // CONFIG.row_elements)
    channel_word = 2 + channel_words                          # channel 1 of a tensor at word 2
    window_words = window_words_needed(layer, CONFIG.row_elements, GROUP_LANES)
    window_words += window_words % 2
    expected = [lane_operands(memory, channel_word, layer, first, kh, kw, GROUP_LANES).tolist()
                for first in range(0, layer.out_height * layer.out_width, GROUP_LANES)
                for kh in range(layer.kernel_height) for kw in range(layer.kernel_width)]
    assert run_layer(layer, memory.tolist(), channel_word, window_words) == expected


def test_rejects_bad_windows():
    with pytest.raises(ValueError, match="window_words must be even"):
        FlatLaneWindow(config=CONFIG, window_words=3)
    with pytest.raises(ValueError, match="narrower than the 8 lanes"):
        FlatLaneWindow(config=DqnConfig(modules=2, lanes=4, row_elements=3), window_words=2)


def test_lint_clean():
    assert lint_verilog(FlatLaneWindow(config=CONFIG, window_words=4), "flat_lane_window") == []
