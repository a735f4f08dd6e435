# amaranth: UnusedElaboratable=no
"""The flat pass in the accelerator (hw/dqn/flat_stepper.py, the feeder's lane window, the writer's flat words), on
Amaranth's simulator with the reduced configuration and the flat map (2 x 4 modules x lanes, 12-element rows, a
4-word window): depthwise stride-1 layers between 1 x 1 layers, compiled with their tensors in flat layout, come out
bit-exact with the golden model (models.dqn.flat_map.flat_depthwise per flat pass), TOTAL_CYCLES and every pass's
cycle counter as models.dqn.timing predicts them.  The compiler keeps the block-diagonal mapping where the flat pass
does not apply or is slower, and a configuration without the flat map builds and compiles as before."""

import dataclasses

import numpy as np
import pytest

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.dqn.descriptor import DESCRIPTOR_FIELDS, descriptor_layout
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.hw.shared.float_format import FloatFormat
from nnaccel.models.dqn.flat_map import flat_pass_fits, strided_writes
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import ConvLayer, DenseLayer
from nnaccel.models.dqn.plan import compile_network
from nnaccel.models.dqn.timing import flat_group_writes, staged_stalls
from nnaccel.sim.lint import lint_verilog
from tests.dqn.test_accelerator_amaranth import check_on_the_rtl, random_pairs, run_inference

FLAT_CONFIG = dataclasses.replace(REDUCED_CONFIG, flat_slots=1, flat_window_words=4)
TWO_SLOTS = dataclasses.replace(FLAT_CONFIG, flat_slots=2)          # a slot of one module's 4 lanes per channel
FAST_MODULES = dataclasses.replace(TWO_SLOTS, multiplier_latency=1, adder_latency=1)    # matrix module latency 2
SEED = 2525


def separable_block(channels, size, kernel=3, padding=1, stride=1):
    """A 1 x 1 expansion, a depthwise layer, a 1 x 1 projection (MobileNet's and DS-CNN's block)."""
    depthwise = ConvLayer("depthwise", channels, size, channels, kernel, stride, padding=padding, groups=channels)
    return (ConvLayer("expand", 3, size, channels, 1, 1), depthwise,
            ConvLayer("project", channels, (depthwise.out_height, depthwise.out_width), 4, 1, 1, relu=False))


@pytest.mark.parametrize("layers", [
    separable_block(6, (5, 4)),                                  # 20 positions: groups of 8 over 2.5 words
    separable_block(3, (7, 5)),                                  # 35 positions: the lanes wrap mid-row
    separable_block(2, (6, 3), kernel=(3, 2), padding=(2, 0, 1, 0)),   # a rectangular kernel, uneven padding
], ids=["5x4", "7x5", "6x3_kernel3x2"])
def test_a_flat_pass_between_pointwise_layers_is_bit_exact(layers):
    """The expansion reads the image input and writes the flat layout (its second output grid, rows of 12), the
    projection reads the flat view and writes an image (its second grid as wide as the map)."""
    plan = check_on_the_rtl(FLAT_CONFIG, layers, seed=SEED)
    width = layers[0].in_width
    assert [layer.descriptor["flat"] for layer in plan.layers] == [0, 1, 0]
    assert [layer.descriptor["write_width"] for layer in plan.layers] == [FLAT_CONFIG.row_elements, 0, width]
    assert [(bool(layer.input.flat), bool(layer.output.flat)) for layer in plan.layers] == [
        (False, True), (True, True), (True, False)]


FOUR_SLOTS = dataclasses.replace(TWO_SLOTS, modules=4, flat_slots=4, flat_window_words=3)   # 4 x 3 words, 6 loads


@pytest.mark.parametrize("config, layers", [
    (TWO_SLOTS, separable_block(6, (5, 4))),                     # 20 positions: 5 groups of 4 per channel pair
    (TWO_SLOTS, separable_block(4, (7, 5))),                     # 35 positions: a slot's lanes wrap mid-row
    (TWO_SLOTS, separable_block(2, (6, 3), kernel=(3, 2), padding=(2, 0, 1, 0))),   # 6 steps: 4 loads hidden
    (FOUR_SLOTS, separable_block(8, (5, 4))),                    # four slots: 20 positions over 2 words
    (FOUR_SLOTS, separable_block(4, (7, 5))),
    (FOUR_SLOTS, separable_block(8, (3, 3))),                    # 9 positions: one word, one group per channel
], ids=["5x4", "7x5", "6x3_kernel3x2", "5x4_four_slots", "7x5_four_slots", "3x3_four_slots"])
def test_channel_slots_are_bit_exact(config, layers):
    """Two channel slots: a group computes the same positions of two channels, each slot's window loaded from its
    channel's words, each slot's words written in turn.  Four slots of 3-word windows (MobileNet's configuration,
    scaled down): four channels a group, the slots' 12 window words loaded two a cycle in 6 of its 9 steps (a load
    across two slots' windows), slots 0 and 1's words written, then slots 2 and 3's.  Outputs bit-exact, every
    counter as predicted."""
    plan = check_on_the_rtl(config, layers, seed=SEED + 3)
    flat = plan.layers[1]
    channels, positions = layers[1].in_channels, layers[1].out_height * layers[1].out_width
    assert [layer.descriptor["flat"] for layer in plan.layers] == [0, 1, 0]
    assert flat.positions_per_group == config.flat_group_lanes
    assert flat.groups == -(-positions // config.flat_group_lanes) * channels // config.flat_slots


@pytest.mark.parametrize("config, layers", [
    (FOUR_SLOTS, separable_block(4, (8, 5), padding=(0, 1, 1, 1), stride=2)),  # four slots, two write rounds
    (TWO_SLOTS, separable_block(4, (8, 5), padding=(0, 1, 1, 1), stride=2)),   # TFLite's SAME: rows padded unevenly
    (TWO_SLOTS, separable_block(2, (7, 5), stride=2)),                         # PyTorch's padding 1, odd sizes
    (FLAT_CONFIG, separable_block(2, (8, 9), padding=(0, 1, 1, 1), stride=2)),  # one slot: rows of 5 in 12
    (FLAT_CONFIG, separable_block(2, (8, 3), padding=(0, 1, 1, 1), stride=2)),  # 4 even lanes span a row pair
], ids=["8x5_same_four_slots", "8x5_same_two_slots", "7x5_pad1_two_slots", "8x9_one_slot", "8x3_one_slot"])
def test_a_stride_2_depthwise_layer_on_the_flat_map_is_bit_exact(config, layers):
    """A stride-2 depthwise layer runs as a flat pass at stride 1 and writes its even rows' even columns in flat
    layout (models.dqn.flat_map.strided_writes), read by the projection on the flat view: outputs bit-exact with the
    golden model (flat_depthwise at stride 2), every counter as predicted."""
    plan = check_on_the_rtl(config, layers, seed=SEED + 5)
    flat = plan.layers[1]
    depthwise = layers[1]
    assert [layer.descriptor["flat"] for layer in plan.layers] == [0, 1, 0]
    assert (flat.descriptor["stride_x"], flat.output.flat) == (2, (depthwise.out_height, depthwise.out_width))
    assert plan.layers[2].input.flat == (depthwise.out_height, depthwise.out_width)


def test_strided_writes_store_each_even_row_once():
    """Every output position of a stride-2 pass is written by exactly one group's write, with the lane the stride-1
    pass computed it on: a 7 x 5 map in groups of 4 and 8 lanes, 12-element words."""
    for lanes in (4, 8):
        stored = {}
        for start in range(0, 35, lanes):
            for word, offset, first, end in strided_writes(start, min(lanes, 35 - start), 5, 12):
                for element in range(12):
                    lane = offset + element
                    if first <= lane < end:
                        assert (word, element) not in stored
                        stored[word, element] = start + 2 * lane
        assert sorted(stored) == [divmod(position, 12) for position in range(4 * 3)]
        assert [stored[divmod(position, 12)] for position in range(12)] == [
            2 * oy * 5 + 2 * ox for oy in range(4) for ox in range(3)]


def test_two_slots_need_an_even_channel_count():
    """With two slots a depthwise layer of 3 channels keeps the block-diagonal mapping; 4 take the flat pass."""
    assert not flat_pass_fits(TWO_SLOTS, ConvLayer("dw", 3, (5, 4), 3, 3, 1, padding=1, groups=3))
    assert flat_pass_fits(TWO_SLOTS, ConvLayer("dw", 4, (5, 4), 4, 3, 1, padding=1, groups=4))
    assert not flat_pass_fits(TWO_SLOTS, ConvLayer("dw", 4, (5, 4), 4, (1, 5), 1, padding=(0, 0, 2, 2), groups=4))


def test_a_strided_convolution_writes_the_flat_layout_a_dense_layer_reads_the_image():
    """DS-CNN's shape: a strided convolution writes the depthwise layer's input in flat layout (second grid), two
    depthwise-pointwise pairs, the last pointwise layer writes the image a dense layer reads."""
    layers = (ConvLayer("conv", 1, (9, 8), 3, (3, 2), 2, padding=(1, 1, 0, 0)),
              ConvLayer("dw1", 3, (5, 4), 3, 3, 1, padding=1, groups=3),
              ConvLayer("pw1", 3, (5, 4), 3, 1, 1),
              ConvLayer("dw2", 3, (5, 4), 3, 3, 1, padding=1, groups=3),
              ConvLayer("pw2", 3, (5, 4), 2, 1, 1),
              DenseLayer("dense", 2 * 5 * 4, 3, relu=False))
    plan = check_on_the_rtl(FLAT_CONFIG, layers, seed=SEED + 2)
    assert [layer.descriptor["flat"] for layer in plan.layers[:5]] == [0, 1, 0, 1, 0]


def test_a_flat_pass_reads_the_network_input_and_is_the_last():
    """The host writes the input in flat layout; the output is read back from it (each channel's map alone)."""
    layers = (ConvLayer("depthwise", 5, (4, 6), 5, 3, 1, padding=1, groups=5),)
    plan = check_on_the_rtl(FLAT_CONFIG, layers, seed=SEED + 1)
    assert plan.input.flat == (4, 6) and plan.output.flat == (4, 6)
    assert plan.notes == ["depthwise: a flat pass, the lanes over one channel's 4x6 positions (8 of 8 lanes busy in "
                          "a group)"]


def test_the_golden_flat_pass_follows_the_float_reference():
    """The compiled block's golden outputs against float64 convolutions: within float32 rounding."""
    layers = separable_block(6, (5, 4))
    rng = np.random.default_rng(SEED)
    pairs = random_pairs(layers, rng)
    plan = compile_network(FLAT_CONFIG, layers, pairs)
    state = rng.standard_normal((3, 5, 4)).astype(np.float32)
    reference = state.astype(np.float64)
    for layer, (weight, bias) in zip(layers, pairs):
        top, bottom, left, right = layer.border
        padded = np.pad(reference, ((0, 0), (top, bottom), (left, right)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (layer.kernel_height, layer.kernel_width),
                                                            axis=(1, 2))            # (C, H, W, kh, kw)
        if layer.groups > 1:
            reference = np.einsum("chwij,ijc->chw", windows, weight[0]) + bias[:, None, None]
        else:
            reference = np.einsum("chwij,cijn->nhw", windows, weight) + bias[:, None, None]
        reference = np.maximum(reference, 0) if layer.relu else reference
    golden = golden_forward(plan, state).q_values.view(np.float32)
    np.testing.assert_allclose(golden, reference.reshape(-1), rtol=0, atol=1e-5 * np.abs(reference).max())


def test_the_compiler_keeps_block_diagonal_where_the_flat_pass_does_not_apply():
    """A stride-2 depthwise layer without padding (its output not a quarter of its input), one whose output a 3 x 3
    convolution reads (it reads images only) and one without
    the flat map in the configuration: no flat pass, no flat tensor."""
    cases = [
        (FLAT_CONFIG, (ConvLayer("depthwise", 4, (6, 6), 4, 3, 2, groups=4),)),     # stride 2 unpadded: 2 x 2
        (FLAT_CONFIG, (ConvLayer("depthwise", 4, (5, 4), 4, 3, 1, padding=1, groups=4),
                       ConvLayer("conv", 4, (5, 4), 2, 3, 1, padding=1))),
        (REDUCED_CONFIG, separable_block(6, (5, 4))),
    ]
    for config, layers in cases:
        plan = compile_network(config, layers, random_pairs(layers, np.random.default_rng(SEED)))
        assert not any(layer.descriptor.get("flat") for layer in plan.layers)
        assert not any(tensor.flat for tensor in plan.tensors.values())


def test_flat_pass_fits_the_window_and_the_steps():
    """The window must hold a group's span and load within its steps: a 1 x 3 kernel (3 steps) cannot hide a 2-pair
    load, a 5 x 5 kernel on a map 12 wide spans more than 4 words of 12."""
    assert flat_pass_fits(FLAT_CONFIG, ConvLayer("dw", 2, (5, 4), 2, 3, 1, padding=1, groups=2))
    assert not flat_pass_fits(FLAT_CONFIG, ConvLayer("dw", 2, (5, 4), 2, (1, 3), 1, padding=(0, 0, 1, 1), groups=2))
    assert not flat_pass_fits(FLAT_CONFIG, ConvLayer("dw", 2, (5, 12), 2, 5, 1, padding=2, groups=2))
    assert not flat_pass_fits(REDUCED_CONFIG, ConvLayer("dw", 2, (5, 4), 2, 3, 1, padding=1, groups=2))


def test_flat_group_writes_count_the_words_a_group_touches():
    """Groups of 8 positions of a 20-position channel in 12-element words: 0..7 (word 0), 8..15 (words 0, 1),
    16..19 (word 1)."""
    assert flat_group_writes(20, 8, 12).tolist() == [1, 2, 1]


def test_without_the_flat_map_the_descriptor_is_as_before():
    """flat_slots = 0 (the default): no flat field; with the flat map the fields follow the old ones."""
    assert tuple(descriptor_layout(DqnConfig()).members) == DESCRIPTOR_FIELDS
    flat_fields = tuple(descriptor_layout(FLAT_CONFIG).members)
    assert flat_fields[:len(DESCRIPTOR_FIELDS)] == DESCRIPTOR_FIELDS and "flat" in flat_fields
    assert DqnConfig().module_name == dataclasses.replace(DqnConfig(), flat_window_words=8).module_name


@pytest.mark.parametrize("config, suffix", [(FLAT_CONFIG, "_flat1w4"), (TWO_SLOTS, "_flat2w4"),
                                            (FOUR_SLOTS, "_flat4w3")], ids=["1", "2", "4"])
def test_the_flat_configuration_lints_clean(config, suffix):
    accelerator = DqnAccelerator(config=config)
    assert accelerator.module_name.endswith(suffix)
    assert lint_verilog(accelerator, accelerator.module_name) == []


@pytest.mark.parametrize("kwargs, message", [
    (dict(flat_slots=3), "flat_slots must divide the 2 modules"),
    (dict(flat_slots=8, modules=8), "flat_slots must be an integer from 0 to 4"),
    (dict(flat_slots=1, flat_window_words=3), "an even number of window words over the slots"),
    (dict(flat_slots=1, fmt=FloatFormat(exponent_bits=4, mantissa_bits=5)), "elements of 12 bits"),
])
def test_bad_flat_configurations_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(REDUCED_CONFIG, **kwargs)


EIGHT_MODULES = dataclasses.replace(TWO_SLOTS, modules=8)           # slots of 16 lanes: a 12-element word and 4 more


def test_a_slot_takes_two_one_word_maps():
    """Maps of at most one word (2 x 2 in 12-element rows) where a slot's 16 lanes reach into the next word: each slot
    takes two channels' maps, a word apart (models.dqn.flat_map.maps_per_slot; MobileNet's 3 x 3 maps in 96-element
    words and 128-lane slots), 4 channels a group: one group instead of two.  The projection writes the flat view a
    dense layer reads as the image of its 2 x 2 positions.  Bit-exact, every counter as predicted."""
    layers = (*separable_block(4, (2, 2)), DenseLayer("dense", 4 * 2 * 2, 3, relu=False))
    plan = check_on_the_rtl(EIGHT_MODULES, layers, seed=SEED + 7)
    flat = plan.layers[1]
    assert [layer.descriptor["flat"] for layer in plan.layers] == [0, 1, 0, 0]
    assert (flat.groups, flat.descriptor["in_channels"], flat.descriptor["channel_words"],
            flat.descriptor["positions"]) == (1, 2, 2, 12 + 4)
    assert flat.note == ("depthwise: a flat pass, the lanes over 4 channels' 2x2 positions (16 of 32 lanes busy in a "
                         "group)")
    assert plan.layers[3].input.flat == (2, 2) and plan.layers[3].descriptor["kernel_width"] == 4


def test_the_lanes_past_a_map_store_the_rows_below_it():
    """With two maps a slot the writer stores the first map's word whole: its elements past the 2 x 2 map hold what
    those lanes compute, the depthwise layer on the rows below the map (zeros as padding); the golden model stores the
    same, so the output words (the flat pass the network's last layer) match the RTL's element for element."""
    layers = separable_block(4, (2, 2))[:2]
    plan = compile_network(EIGHT_MODULES, layers, random_pairs(layers, np.random.default_rng(SEED + 9)))
    state = np.random.default_rng(SEED + 10).standard_normal(plan.input_shape).astype(np.float32)
    observed, golden = run_inference(plan, state), golden_forward(plan, state)
    np.testing.assert_array_equal(observed["outputs"], golden.activations[-1])
    assert observed["outputs"][0, 4:].any() and not observed["outputs"][1, 4:].any()


def test_a_dense_layer_reads_a_one_word_flat_map_as_its_positions():
    """A dense layer after a 1 x 1 layer on 3 x 3 maps: the projection writes the flat view (no second grid) and the
    dense kernel covers the 9 positions of each channel's word, not the word (1 x 9, not 1 x 12)."""
    layers = (*separable_block(4, (3, 3)), DenseLayer("dense", 4 * 3 * 3, 3, relu=False))
    plan = check_on_the_rtl(TWO_SLOTS, layers, seed=SEED + 8)
    project, dense = plan.layers[2], plan.layers[-1]
    assert project.descriptor["write_width"] == 0 and project.output.flat == (3, 3)
    assert (dense.descriptor["kernel_height"], dense.descriptor["kernel_width"]) == (1, 9)


def test_the_writer_takes_a_waiting_group_on_its_done_cycle():
    """A writer-bound expansion (6 channels from 1: 3 paired write cycles for a group's one product) on matrix modules
    of latency 2: each group's results wait in the second staging register and the writer takes them on the done
    cycle of the group before (models.dqn.timing.staged_stalls with ``on_done``), 61 stall cycles where taking them
    on the idle cycle after would cost 79; bit-exact, every counter as predicted."""
    layers = (ConvLayer("expand", 1, (5, 4), 6, 1, 1), *separable_block(6, (5, 4))[1:])
    plan = check_on_the_rtl(FAST_MODULES, layers, seed=SEED + 9)
    expand = plan.layers[0]
    products, latency = expand.descriptor["products"], matrix_module_latency(1, 1)
    writes = [3] * (expand.groups - 1)                   # 20 groups of one position on one row: ceil(6 / 2) writes
    assert expand.predicted["stall_cycles"] == staged_stalls(products, latency, writes, on_done=True) == 61
    assert staged_stalls(products, latency, writes) == 79
