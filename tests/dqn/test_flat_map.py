"""models.dqn.flat_map: the flat layout and the lanes' operands of a stride-1 depthwise step, checked against the
image read directly (the input element of each output position's window, +0 for padding)."""

import numpy as np
import pytest

from nnaccel.models.dqn.flat_map import (advance_coordinates, flat_map_applies, flat_words, lane_coordinates,
                                         lane_operands, step_offset, window_base, window_shift, window_words_needed)
from nnaccel.models.dqn.network import ConvLayer

SEED = 25

LAYERS = [
    ConvLayer("dw3x3", 3, (7, 5), 3, 3, 1, padding=1, groups=3),
    ConvLayer("dw3x2", 2, (6, 4), 2, (3, 2), 1, padding=(2, 0, 1, 0), groups=2),
    ConvLayer("dw_kws", 4, (25, 5), 4, 3, 1, padding=1, groups=4),
]


def test_applies_to_same_depthwise_of_stride_one_and_two_only():
    assert all(flat_map_applies(layer) for layer in LAYERS)
    assert flat_map_applies(ConvLayer("s2", 4, 12, 4, 3, 2, padding=1, groups=4))               # 6 x 6: a quarter
    assert flat_map_applies(ConvLayer("same", 4, 12, 4, 3, 2, padding=(0, 1, 0, 1), groups=4))  # TFLite's SAME
    assert not flat_map_applies(ConvLayer("s2 valid", 4, 12, 4, 3, 2, groups=4))               # 5 x 5
    assert not flat_map_applies(ConvLayer("s3", 4, 12, 4, 3, 3, padding=1, groups=4))
    assert not flat_map_applies(ConvLayer("valid", 4, 12, 4, 3, 1, groups=4))
    assert not flat_map_applies(ConvLayer("dense", 4, 12, 8, 3, 1, padding=1))


def test_flat_words_hold_a_channel_in_raster_order():
    image = np.arange(2 * 5 * 3).reshape(2, 5, 3)
    flat = flat_words(image, 4)
    assert flat.shape == (2, 4, 4)
    assert flat[1].reshape(-1).tolist() == list(range(15, 30)) + [0]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.name)
def test_lane_operands_are_the_windows_elements(layer):
    """Every lane of every group and step takes its output position's window element (padding +0), read from the
    flat words in memory; the window of ``window_words_needed`` words from ``window_base`` holds every step's
    lanes at ``window_shift``."""
    rng = np.random.default_rng(SEED)
    row_elements, group_lanes, channel = 12, 8, 1
    image = rng.integers(1, 1 << 31, (layer.in_channels, layer.in_height, layer.in_width), dtype=np.uint32)
    flat = flat_words(image, row_elements)
    channel_words = flat.shape[1]
    depth = 64
    memory = rng.integers(1, 1 << 31, (depth, row_elements), dtype=np.uint32)   # other tensors' words around
    base = 6
    memory[base:base + layer.in_channels * channel_words] = flat.reshape(-1, row_elements)
    channel_word = base + channel * channel_words
    padded = np.pad(image[channel], ((layer.pad_top, layer.pad_bottom), (layer.pad_left, layer.pad_right)))
    positions = layer.out_height * layer.out_width
    window_words = window_words_needed(layer, row_elements, group_lanes)
    for first in range(0, positions, group_lanes):
        start = (channel_word + window_base(layer, row_elements, first)) * row_elements
        window = memory.reshape(-1)[(start + np.arange(window_words * row_elements)) % memory.size]
        for kh in range(layer.kernel_height):
            for kw in range(layer.kernel_width):
                lanes = lane_operands(memory, channel_word, layer, first, kh, kw, group_lanes)
                shift = window_shift(layer, row_elements, first, kh, kw)
                assert 0 <= shift <= window_words * row_elements - group_lanes
                real = lanes != 0
                assert (lanes[real] == window[shift:shift + group_lanes][real]).all()
                count = min(group_lanes, positions - first)
                oy, ox = lane_coordinates(layer.out_width, first, count)
                assert lanes[:count].tolist() == padded[oy + kh, ox + kw].tolist()


def test_advance_moves_the_lanes_a_group_on():
    rows, columns = lane_coordinates(5, 3, 16)
    for advance in (16, 7, 5, 1):
        moved = advance_coordinates(rows, columns, 5, advance)
        expected = lane_coordinates(5, 3 + advance, 16)
        assert [values.tolist() for values in moved] == [values.tolist() for values in expected]


def test_step_offset():
    layer = LAYERS[0]
    assert [step_offset(layer, kh, kw) for kh in range(3) for kw in range(3)] == [-6, -5, -4, -1, 0, 1, 4, 5, 6]
