# amaranth: UnusedElaboratable=no
"""hw.dqn.flat_lane_window.FlatLaneWindow on Amaranth's simulator: for every group and step of stride-1 depthwise
layers (padding on every side, a rectangular kernel, a 25 x 5 map), each lane's element is the one
models.dqn.flat_map.lane_operands defines (its output position's window element, +0 for padding), with one slot and
with two (each its own channel, position, window and shift), the groups' steps back to back, the next group's
windows loaded two words a cycle into the back windows meanwhile and swapped in with the last step, the lanes'
coordinates set once and advanced per group (tests/dqn/flat_lane_driver.py); Verilog lint clean."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.flat_lane_window import FlatLaneWindow
from nnaccel.models.dqn.flat_map import lane_operands, window_words_needed
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.sim.lint import lint_verilog
from tests.dqn.flat_lane_driver import drive_groups

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=12, pad_columns=2, activation_depth=64, weight_depth=16)
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


def slot_schedule(layer, slots, channel_words):
    """Per group, per slot ``(channel word, first position)``: slot ``s`` on channel ``s`` (of a tensor of ``slots``
    channels) at position ``q0 + s * slot_lanes``, ``q0`` moving on by all the lanes per group: slots on different
    channels and positions, so that each has its own window and shift."""
    slot_lanes = GROUP_LANES // slots
    positions = layer.out_height * layer.out_width
    return [[(channel_words[slot], first + slot * slot_lanes) for slot in range(slots)]
            for first in range(0, positions, GROUP_LANES)]


def run_layer(layer, memory, groups, window_words, slots):
    """The groups driven back to back (flat_lane_driver); the lanes' elements per step, in order."""
    window = FlatLaneWindow(config=CONFIG, window_words=window_words, slots=slots)
    seen = []
    simulator = Simulator(window)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        async def record(group, kh, kw):
            vectors = ctx.get(window.vectors)
            seen.append([element for vector in vectors for element in unpack(pack(vector), CONFIG.lanes)])

        await drive_groups(ctx, window, layer, memory, groups, record)

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


@pytest.mark.parametrize("slots", [1, 2, 4])
@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_lanes_take_their_windows_elements(layer, slots):
    rng = np.random.default_rng(SEED)
    memory = rng.integers(1, 1 << 32, (CONFIG.activation_depth, CONFIG.row_elements), dtype=np.uint64)
    words_per_channel = -(-layer.out_height * layer.out_width // CONFIG.row_elements)
    channel_words = [2 + channel * words_per_channel for channel in range(slots)]    # a tensor at word 2
    slot_lanes = GROUP_LANES // slots
    window_words = window_words_needed(layer, CONFIG.row_elements, slot_lanes)
    window_words += slots * window_words % 2           # the slots' words loaded in pairs: 4 slots of 3 words
    groups = slot_schedule(layer, slots, channel_words)
    expected = [[element for channel_word, first in assignments for element in lane_operands(
                    memory, channel_word, layer, first, kh, kw, slot_lanes).tolist()]
                for assignments in groups
                for kh in range(layer.kernel_height) for kw in range(layer.kernel_width)]
    assert run_layer(layer, memory.tolist(), groups, window_words, slots) == expected


def test_rejects_bad_windows():
    with pytest.raises(ValueError, match=r"the slots' 1 x 3 window words must be even"):
        FlatLaneWindow(config=CONFIG, window_words=3)
    with pytest.raises(ValueError, match="narrower than a slot's 8 lanes"):
        FlatLaneWindow(config=DqnConfig(modules=2, lanes=4, row_elements=3), window_words=2)
    with pytest.raises(ValueError, match="slots must divide the 4 modules, not 3"):
        FlatLaneWindow(config=DqnConfig(modules=4, lanes=2), slots=3)


@pytest.mark.parametrize("slots, window_words", [(1, 4), (2, 4), (4, 3)])
def test_lint_clean(slots, window_words):
    window = FlatLaneWindow(config=CONFIG, window_words=window_words, slots=slots)
    assert lint_verilog(window, "flat_lane_window") == []
