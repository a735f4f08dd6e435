"""The layer compiler: the thesis network's mapping (the doc's table), the weight image, placement and every check."""

import numpy as np
import pytest

import dataclasses

from nnaccel.hw.dqn.config import MLPERF_CONFIG, REDUCED_CONFIG, DqnConfig
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import ConvLayer, DenseLayer, dqn_layers, seeded_weights
from nnaccel.models.dqn.plan import (check_mapping, compile_network, default_mapping, layer_shapes, network_weights,
                             pack_image, unpack_image)
from nnaccel.models.shared.float_arith import from_binary32

SEED = 4040
SMALL = DqnConfig(modules=2, lanes=4, row_elements=12, activation_depth=128, weight_depth=256, max_layers=4)


def random_pairs(layers, seed=SEED):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
             rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]


def tiny_layers():
    """Conv -> conv -> dense -> dense on 2 modules x 4 lanes: C = 1 and 2, a dense after a conv and after a dense."""
    return (ConvLayer("c1", 2, 10, 4, 3, 2), ConvLayer("c2", 4, 4, 6, 2, 1),
            DenseLayer("d1", 6 * 3 * 3, 7), DenseLayer("d2", 7, 5, relu=False))


@pytest.fixture(scope="module")
def thesis_plan():
    """The one-pass-per-layer mapping (the doc's first table)."""
    return compile_network(DqnConfig(), dqn_layers(18), seeded_weights(), split="never")


@pytest.fixture(scope="module")
def split_plan():
    return compile_network(DqnConfig(), dqn_layers(18), seeded_weights())


def test_thesis_network_compiles_to_the_documented_table(thesis_plan):
    rows = [(layer.name, layer.input.describe(), layer.descriptor["kernel_height"], layer.descriptor["kernel_width"],
             layer.descriptor["stride_y"], layer.column_blocks, layer.positions_per_group, layer.groups,
             layer.cycles_per_group, layer.output.describe()) for layer in thesis_plan.layers]
    assert rows == [
        ("CONV_1", "RAM0 @0 image [4,84,84]", 8, 8, 4, 1, 16, 25, 256, "RAM1 @0 image [16,20,20]"),
        ("CONV_2", "RAM1 @0 image [16,20,20]", 4, 4, 2, 2, 8, 11, 256, "RAM0 @0 image [32,9,9]"),
        ("FC_1", "RAM0 @0 image [32,9,9]", 9, 9, 1, 16, 1, 1, 2592, "RAM1 @320 packed [16,1,16]"),
        ("FC_2", "RAM1 @320 packed [16,1,16]", 1, 16, 1, 2, 8, 1, 256, "RAM0 @336 packed [2,1,16]"),
    ]
    # CONV_2 reuses the input's words (the input's last reader is CONV_1); a packed output takes words no tensor
    # used (its last word's padding must read +0).
    assert thesis_plan.overwritten == ("",) and thesis_plan.activation_words == (338, 336)
    assert [layer.ideal_macs for layer in thesis_plan.layers] == [1_638_400, 663_552, 663_552, 4_608]
    assert sum(layer.product_cycles for layer in thesis_plan.layers) == 12_064
    assert sum(layer.estimated_cycles for layer in thesis_plan.layers) == 12_087
    assert [layer.descriptor["weight_base"] for layer in thesis_plan.layers] == [0, 257, 514, 3107]
    assert thesis_plan.weight_image.shape == (3364, 256) and thesis_plan.weight_image.dtype == np.uint32
    assert [layer.descriptor["last"] for layer in thesis_plan.layers] == [0, 0, 0, 1]
    assert [layer.descriptor["relu"] for layer in thesis_plan.layers] == [1, 1, 1, 0]
    assert thesis_plan.actions == 18


def descriptor_widths(*, activation_address, row_element, tap_column, pad_left, column_blocks_log2,
                      weight_address):
    """The descriptor word's fields, LSB first (docs/dqn_accelerator.md), written out by hand; the widths that depend
    on the configuration are given."""
    return [("in_ram", 1), ("in_base", activation_address), ("in_channels", 12), ("in_height", 10),
            ("in_width", row_element), ("kernel_height", 8), ("kernel_width", tap_column), ("stride_y", 4),
            ("stride_x", 4), ("pad_top", 8), ("pad_left", pad_left), ("out_height", 12), ("out_width", 12),
            ("positions", 20), ("first_position", 20), ("first_oy", 12), ("first_ox", 12), ("first_row", 16),
            ("first_column", tap_column), ("column_blocks_log2", column_blocks_log2), ("out_channels", 12),
            ("products", 24), ("weight_base", weight_address), ("out_ram", 1), ("out_base", activation_address),
            ("packed_output", 1), ("position_major", 1), ("reduce", 1), ("step_distance", activation_address),
            ("relu", 1), ("last", 1), ("handoff", 1), ("start_delay", 6)]


# The default configuration: activation addresses 10 bits for 1,024 words, 7 bits for 84 elements per row and for
# 4 + 84 tap columns, 3 for a left padding up to 4, column_blocks_log2 3 bits for up to 16 blocks, weight addresses
# 12 bits for 4,096 words.
DESCRIPTOR_WIDTHS = descriptor_widths(activation_address=10, row_element=7, tap_column=7, pad_left=3,
                                      column_blocks_log2=3, weight_address=12)
# SMALL: 128 activation words, 12 elements per row (4 bits), 4 + 12 tap columns (5 bits), 2 modules
# (column_blocks_log2 0 or 1), 256 weight words.
SMALL_WIDTHS = descriptor_widths(activation_address=7, row_element=4, tap_column=5, pad_left=3, column_blocks_log2=1,
                                 weight_address=8)


def decode(word, widths=DESCRIPTOR_WIDTHS):
    fields, offset = {}, 0
    for name, width in widths:
        fields[name] = word >> offset & ((1 << width) - 1)
        offset += width
    assert word >> offset == 0, "bits beyond the last field"
    return fields


def encode(fields, widths):
    word, offset = 0, 0
    for name, width in widths:
        assert 0 <= fields[name] < 1 << width, name
        word |= fields[name] << offset
        offset += width
    return word


def test_descriptor_words_decode_to_the_thesis_layers(thesis_plan):
    """CONV_1 and FC_2 of the thesis network, decoded field by field from the words the host writes."""
    conv1, fc2 = decode(thesis_plan.layers[0].encoded), decode(thesis_plan.layers[-1].encoded)
    # CONV_1: 4 x 84 x 84 from RAM 0, 8 x 8 kernel, stride 4 -> 16 x 20 x 20 in RAM 1; 16 positions per group.
    assert conv1 == dict.fromkeys(conv1, 0) | {
        "in_channels": 4, "in_height": 84, "in_width": 84, "kernel_height": 8, "kernel_width": 8, "stride_y": 4, "stride_x": 4, "out_height": 20,
        "out_width": 20, "positions": 400, "out_channels": 16, "products": 4 * 8 * 8, "out_ram": 1, "relu": 1,
        "handoff": 1}
    # FC_2 reads FC_1's packed words while FC_1 hands them off: word 0 written 6 + 2 cycles after FC_1's last
    # product, read on FC_2's cycle 8 (start delay 9: tests/dqn/test_handoff.py).
    # FC_2: FC_1's 256 outputs as 16 packed words of 16 (RAM 1 from word 320) -> 18 Q-values, 2 column blocks,
    # weights after CONV_1, CONV_2 (257 words each) and FC_1 (2,593), no ReLU, the last layer.
    assert fc2 == dict.fromkeys(fc2, 0) | {
        "in_ram": 1, "in_base": 320, "in_channels": 16, "in_height": 1, "in_width": 16, "kernel_height": 1, "kernel_width": 16,
        "stride_y": 1, "stride_x": 1, "out_height": 1, "out_width": 1, "positions": 1, "column_blocks_log2": 1, "out_channels": 18,
        "products": 256, "weight_base": 257 + 257 + 2593, "out_base": 336, "packed_output": 1, "last": 1,
        "start_delay": 9}


def test_the_tiny_networks_descriptors_worked_by_hand():
    """Every descriptor of the tiny network on SMALL, its fields worked out here from the layers' shapes and the
    placement rules of ``allocation="keep"`` (a layer's output follows the last tensor in the other RAM; a layer's
    weight rows, products and a bias row, follow the previous layer's), packed with the hand-written widths: the
    words the host writes."""
    layers = tiny_layers()
    plan = compile_network(SMALL, layers, random_pairs(layers), split="never", allocation="keep")
    zero = dict.fromkeys((name for name, _ in SMALL_WIDTHS), 0)
    expected = [
        # c1: 2 x 10 x 10 in RAM 0 words 0..19, 3 x 3 kernel at stride 2 -> 4 x 4 x 4 in RAM 1 words 0..15; 2 x 9
        # products; weight rows 0..18.
        zero | {"in_channels": 2, "in_height": 10, "in_width": 10, "kernel_height": 3, "kernel_width": 3, "stride_y": 2, "stride_x": 2,
                "out_height": 4, "out_width": 4, "positions": 16, "out_channels": 4, "products": 18, "out_ram": 1,
                "relu": 1, "handoff": 1},
        # c2: 4 x 4 x 4 -> 6 x 3 x 3 in RAM 0 after the input (words 20..37); 6 outputs on 4 lanes: 2 column blocks;
        # weight rows 19..35 (16 products and the bias).
        zero | {"in_ram": 1, "in_channels": 4, "in_height": 4, "in_width": 4, "kernel_height": 2, "kernel_width": 2, "stride_y": 1, "stride_x": 1,
                "out_height": 3, "out_width": 3, "positions": 9, "column_blocks_log2": 1, "out_channels": 6,
                "products": 16, "weight_base": 19, "out_base": 20, "relu": 1, "handoff": 1, "start_delay": 1},
        # d1: a 3 x 3 kernel over the whole 6 x 3 x 3 input -> 7 outputs packed 4 per word in RAM 1 after c1's output
        # (words 16, 17); weight rows 36..90 (54 products and the bias).
        zero | {"in_base": 20, "in_channels": 6, "in_height": 3, "in_width": 3, "kernel_height": 3, "kernel_width": 3, "stride_y": 1, "stride_x": 1,
                "out_height": 1, "out_width": 1, "positions": 1, "column_blocks_log2": 1, "out_channels": 7,
                "products": 54, "weight_base": 36, "out_ram": 1, "out_base": 16, "packed_output": 1, "relu": 1,
                "handoff": 1, "start_delay": 5},
        # d2: the 2 packed words of 4 (7 inputs and a padding element) -> 5 outputs packed in RAM 0 after c2's output
        # (word 38); 8 products; weight rows 91..99; no ReLU; the last layer.
        zero | {"in_ram": 1, "in_base": 16, "in_channels": 2, "in_height": 1, "in_width": 4, "kernel_height": 1, "kernel_width": 4,
                "stride_y": 1, "stride_x": 1, "out_height": 1, "out_width": 1, "positions": 1, "column_blocks_log2": 1,
                "out_channels": 5, "products": 8, "weight_base": 91, "out_base": 38, "packed_output": 1, "last": 1,
                "start_delay": 9},
    ]
    assert [decode(word, SMALL_WIDTHS) for word in plan.descriptors] == expected
    assert plan.descriptors == [encode(fields, SMALL_WIDTHS) for fields in expected]
    assert plan.weight_image.shape[0] == 100


def test_the_compiler_splits_conv2s_first_position_and_fc2(split_plan):
    """CONV_2's 81 positions are 10 groups of 8 and one: its position 0 runs as 8 partial sums on idle modules (its
    kernel's two row halves times its 4 columns, 32 products each) plus a reduction, after the other 80; FC_2 (one
    position, 8 idle slots) as 8 partial sums of 2 kernel columns: 11,632 product cycles instead of 12,064."""
    rows = [(layer.name, layer.network_layer, layer.descriptor["first_position"], layer.descriptor["positions"],
             layer.groups, layer.product_cycles, layer.reduce, layer.descriptor["position_major"],
             layer.output.describe()) for layer in split_plan.layers]
    assert rows == [
        ("CONV_1", "CONV_1", 0, 400, 25, 6400, False, 0, "RAM1 @0 image [16,20,20]"),
        ("CONV_2", "CONV_2", 1, 81, 10, 2560, False, 0, "RAM0 @0 image [32,9,9]"),
        ("CONV_2 @0 partials", "CONV_2", 0, 8, 1, 32, False, 1, "RAM0 @288 packed [8,1,32]"),
        ("CONV_2 @0 sum", "CONV_2", 0, 1, 1, 8, True, 0, "RAM0 @0 image [32,9,9]"),
        ("FC_1", "FC_1", 0, 1, 1, 2592, False, 0, "RAM1 @320 packed [16,1,16]"),
        ("FC_2 partials", "FC_2", 0, 8, 1, 32, False, 1, "RAM0 @0 packed [8,1,32]"),
        ("FC_2 sum", "FC_2", 0, 1, 1, 8, True, 0, "RAM0 @336 packed [2,1,16]"),
    ]
    assert sum(layer.product_cycles for layer in split_plan.layers) == 11_632
    # With set-up and drains (the sequencer's timing, checked against the counters in test_dqn_accelerator): each
    # pass reads on its first cycle while the one before drains, or on its start delay's cycle
    # (tests/dqn/test_handoff.py): CONV_1 hands its last group off to CONV_2 and the sum to FC_1 (written on port 1
    # while they read port 0), the sums read their partial sums on port 1 while they are written on port 0.
    assert [layer.estimated_cycles for layer in split_plan.layers] == [6401, 2561, 33, 25, 2601, 41, 36]
    assert [layer.descriptor["handoff"] for layer in split_plan.layers] == [1, 0, 0, 1, 1, 0, 0]
    assert sum(layer.estimated_cycles for layer in split_plan.layers) == 11_698
    assert sum(layer.ideal_macs for layer in split_plan.layers) == sum(layer.macs for layer in dqn_layers(18))
    weights, lanes = seeded_weights(), 16
    partials, partials_sum, fc2_partials, fc2_sum = (split_plan.layers[i] for i in (2, 3, 5, 6))
    # Position 0's partial sums: a 2 x 1 kernel at stride 2 x 1 on a grid 4 wide, so that group position q = 4r + x
    # (modules 2q, 2q + 1) is kernel rows 2r, 2r + 1 of kernel column x; step (c, kh) of q is kernel row 2r + kh.
    slots = partials.weight_words.reshape(-1, 16, lanes)
    assert [partials.descriptor[field] for field in ("kernel_height", "kernel_width", "stride_y", "stride_x",
                                                     "out_width", "first_row", "first_column")] == [2, 1, 2, 1, 4, 0, 0]
    assert np.array_equal(slots[5 * 2 + 1, 2 * (4 + 3) + 1], weights["conv2_w"][5, 3, 3, 16:].view(np.uint32))
    assert not slots[-1].any()
    # The reductions: the bias row last, in_channels = number of partial sums, reading the partials' RAM.
    assert (partials_sum.descriptor["in_channels"], partials_sum.descriptor["in_base"],
            partials_sum.descriptor["in_ram"]) == (8, 288, 0)
    assert np.array_equal(partials_sum.weight_words[-1, :32], weights["conv2_b"].view(np.uint32))
    assert (fc2_sum.descriptor["in_channels"], fc2_sum.descriptor["last"], fc2_partials.descriptor["stride_x"]) == (8, 1, 2)
    fc2_slots = fc2_partials.weight_words.reshape(-1, 16, lanes)     # step (c, kw): input c*16 + q*2 + kw
    assert np.array_equal(fc2_slots[5 * 2 + 1, 2 * 6, :], weights["fc2_w"][5 * 16 + 6 * 2 + 1, :16].view(np.uint32))


def test_split_modes(split_plan):
    layers, weights = dqn_layers(18), seeded_weights()
    always = compile_network(DqnConfig(), layers, weights, split="always")
    assert always.descriptors == split_plan.descriptors
    with pytest.raises(ValueError, match="split must be one of auto, always, never, not 'sometimes'"):
        compile_network(DqnConfig(), layers, weights, split="sometimes")


def test_weight_words_replicate_channel_blocks_into_slots(thesis_plan):
    weights = seeded_weights()
    image, lanes = thesis_plan.weight_image, 16
    conv1, conv2, fc1, fc2 = thesis_plan.layers
    # CONV_1 (C = 1): every slot holds all 16 filters of step k = (c*8 + kh)*8 + kw.
    k = (3 * 8 + 5) * 8 + 2
    for slot in range(16):
        assert np.array_equal(image[k, slot * lanes:(slot + 1) * lanes], weights["conv1_w"][3, 5, 2].view(np.uint32))
    # CONV_2 (C = 2): slot m holds channels (m % 2)*16 .. +15; the bias row follows the products.
    base = conv2.descriptor["weight_base"]
    for slot in range(16):
        channels = slice((slot % 2) * lanes, (slot % 2 + 1) * lanes)
        assert np.array_equal(image[base + 17, slot * lanes:(slot + 1) * lanes],
                              weights["conv2_w"][1, 0, 1, channels].view(np.uint32))
        assert np.array_equal(image[base + 256, slot * lanes:(slot + 1) * lanes],
                              weights["conv2_b"][channels].view(np.uint32))
    # FC_1: word i holds all 256 outputs of input i; FC_2: 18 actions, channels 18..31 are zero.
    assert np.array_equal(image[fc1.descriptor["weight_base"] + 1000], weights["fc1_w"][1000].view(np.uint32))
    fc2_row = image[fc2.descriptor["weight_base"] + 200].reshape(16, lanes)
    assert np.array_equal(fc2_row[0, :], weights["fc2_w"][200, :16].view(np.uint32))
    assert np.array_equal(fc2_row[1, :2], weights["fc2_w"][200, 16:].view(np.uint32))
    assert not fc2_row[1, 2:].any()
    assert np.array_equal(fc2_row[::2], np.broadcast_to(fc2_row[0], (8, lanes)))


def test_tiny_network_on_two_modules():
    layers = tiny_layers()
    plan = compile_network(SMALL, layers, random_pairs(layers), split="never")
    c1, c2, d1, d2 = plan.layers
    assert [(layer.column_blocks, layer.positions_per_group, layer.groups) for layer in plan.layers] == [
        (1, 2, 8), (2, 1, 9), (2, 1, 1), (2, 1, 1)]
    assert c1.output.describe() == "RAM1 @0 image [4,4,4]"
    assert c2.output.describe() == "RAM0 @0 image [6,3,3]"      # the input's words: c1 was its last reader
    assert d1.output.describe() == "RAM1 @16 packed [2,1,4]"
    assert d2.input.describe() == "RAM1 @16 packed [2,1,4]" and d2.products == 8
    assert (d2.descriptor["kernel_height"], d2.descriptor["kernel_width"], d2.descriptor["in_channels"]) == (1, 4, 2)
    # The padding input of d2 (element 7) has zero weights; d2's padding channels 5..7 too.
    assert not d2.weight_words[7].any() and not d2.weight_words[:, 5:].any()
    assert plan.output.describe() == "RAM0 @20 packed [2,1,4]" and plan.actions == 5   # above every tensor before it
    assert plan.weight_image.shape == (19 + 17 + 55 + 9, 8)


def test_input_ram_one_swaps_every_ram():
    layers = tiny_layers()
    plan = compile_network(SMALL, layers, random_pairs(layers), input_ram=1, split="never")
    assert [(layer.input.ram, layer.output.ram) for layer in plan.layers] == [(1, 0), (0, 1), (1, 0), (0, 1)]


def test_state_words_and_output_unpacking(thesis_plan):
    rng = np.random.default_rng(SEED)
    state = rng.random((4, 84, 84), dtype=np.float32)
    words = thesis_plan.input_words(state)
    assert words.shape == (336, 84)
    assert words[2 * 84 + 10, 33] == state[2, 10, 33].view(np.uint32)
    assert np.array_equal(unpack_image(thesis_plan.input, words), state.view(np.uint32))
    outputs = np.zeros((2, 84), np.uint32)
    outputs[1, 1] = 7
    assert thesis_plan.output_values(outputs).shape == (18,) and thesis_plan.output_values(outputs)[17] == 7
    with pytest.raises(ValueError, match=r"the network input must have shape \(4, 84, 84\), not \(4, 84, 83\)"):
        thesis_plan.input_words(state[:, :, :83])
    with pytest.raises(ValueError, match="activations must be float32, not float64"):
        pack_image(state.astype(np.float64), 84)


def test_a_first_dense_layer_reads_packed_inputs():
    layers = (DenseLayer("d", 6, 3),)
    plan = compile_network(SMALL, layers, random_pairs(layers))
    assert plan.input.describe() == "RAM0 @0 packed [2,1,4]"
    words = plan.input_words(np.arange(6, dtype=np.float32))
    assert words[1, 1] == np.float32(5).view(np.uint32) and words[1, 2] == 0
    with pytest.raises(ValueError, match="the network input must be 6 float32 values, not 7 float32"):
        plan.input_words(np.arange(7, dtype=np.float32))


def test_weights_dict_and_pairs_agree():
    layers, weights = dqn_layers(4), seeded_weights(actions=4)
    pairs = network_weights(layers, weights)
    assert [pair[0].shape for pair in pairs] == [layer.weight_shape for layer in layers]
    with pytest.raises(ValueError, match="weights are missing fc2_w, fc2_b"):
        network_weights(layers, {key: value for key, value in weights.items() if not key.startswith("fc2")})
    with pytest.raises(ValueError, match=r"4 layers need 4 \(weight, bias\) pairs, not 3"):
        network_weights(layers, pairs[:3])


@pytest.mark.parametrize("config, layers, message", [
    (SMALL, tuple(DenseLayer(f"d{index}", 4, 4) for index in range(5)),
     r"the network needs \d+ passes \(d0, .*\); the descriptor table holds 4"),
    (SMALL, (DenseLayer("d", 4, 4), DenseLayer("d", 4, 4)), "layer names must be unique and not empty: 'd'"),
    (SMALL, (ConvLayer("g", 3, 6, 4, 3, 1, groups=2),), "g: 2 groups do not divide 3 input and 4 output channels"),
    (SMALL, (DenseLayer("d", 4, 4), DenseLayer("e", 4, 4, source="f")), "e: reads 'f', which is no earlier layer"),
    (SMALL, (), "the network has no layers"),
    (SMALL, (ConvLayer("wide", 1, 13, 4, 3, 1),),
     r"wide: input rows of 13 elements are wider than a word \(row_elements = 12\)"),
    (SMALL, (ConvLayer("left", 1, 8, 4, 3, 1, padding=(0, 0, 5, 0)),),
     r"left: a left padding of 5 columns exceeds the feeder's 4 \(pad_columns\)"),
    (SMALL, (ConvLayer("c", 4, 12, 8, 1, 1), ConvLayer("deep", 8, 12, 12, 1, 1)),
     r"deep: activation RAM 0 is too small: the tensor needs words 0..143 beside the tensors live with it, the RAM "
     r"has 128 words"),
    (SMALL, (ConvLayer("c", 1, 12, 8, 3, 1), DenseLayer("d", 800, 8)),
     "d: the weight RAM is too small: the layers up to d need 811 words, the RAM has 256"),
    (SMALL, (ConvLayer("c", 2, 10, 4, 3, 2), ConvLayer("c2", 4, 5, 4, 3, 1)),
     r"c2: expects an input image \(4, 5, 5\), the previous layer makes \(4, 4, 4\)"),
    (SMALL, (ConvLayer("c", 2, 10, 4, 3, 2), DenseLayer("d", 63, 4)),
     "d: expects 63 inputs, the previous layer makes 64"),
    (SMALL, (DenseLayer("d", 4, 4), ConvLayer("c", 1, 2, 1, 1, 1)),
     "c: a convolution cannot read the packed output of a dense layer"),
    (SMALL, (ConvLayer("k", 1, 3, 4, 4, 1),), "k: a 4x4 kernel does not fit the padded input 3x3"),
])
def test_constraints_are_checked(config, layers, message):
    with pytest.raises(ValueError, match=message):
        compile_network(config, layers, random_pairs(layers))


def test_layers_whose_weights_do_not_match_are_rejected():
    layers = tiny_layers()
    pairs = random_pairs(layers)
    pairs[1] = (pairs[1][0][:, :, :, :5], pairs[1][1])
    with pytest.raises(ValueError, match=r"c2: weight must have shape \(4, 2, 2, 6\), not \(4, 2, 2, 5\)"):
        compile_network(SMALL, layers, pairs)
    pairs = random_pairs(layers)
    pairs[3] = (pairs[3][0], pairs[3][1].astype(np.float64))
    with pytest.raises(ValueError, match="d2: bias must be float32, not float64"):
        compile_network(SMALL, layers, pairs)


def test_descriptor_field_overflow_names_the_layer():
    config = DqnConfig(modules=1, lanes=1, row_elements=256, weight_depth=1 << 17)
    layers = (ConvLayer("big", 1, 256, 1, 256, 1),)
    with pytest.raises(ValueError,
                       match="big: descriptor field kernel_height must be an integer from 0 to 255, not 256"):
        compile_network(config, layers, random_pairs(layers))


def test_bad_arguments():
    layers = tiny_layers()
    with pytest.raises(TypeError, match="config must be a DqnConfig, not 3"):
        compile_network(3, layers, random_pairs(layers))
    with pytest.raises(ValueError, match="input_ram must be 0 or 1, not 2"):
        compile_network(SMALL, layers, random_pairs(layers), input_ram=2)
    with pytest.raises(TypeError, match="layers must be ConvLayer, DenseLayer or AddLayer, not 'x'"):
        compile_network(SMALL, ["x"], [(None, None)])


def test_the_default_mapping_is_the_compilers_rule(split_plan, thesis_plan):
    """The thesis' mapping (one pass per layer, fewest column blocks) and the K-splits "auto" adds."""
    layers = dqn_layers(18)
    assert thesis_plan.mapping == default_mapping(DqnConfig(), layers, split="never")
    assert thesis_plan.mapping.describe() == "0..399 C1 | 0..80 C2 | 0 C16 | 0 C2"
    assert split_plan.mapping.describe() == "0..399 C1 | 1..80 C2 + 0 C2 S8 | 0 C16 | 0 C2 S8"
    given = compile_network(DqnConfig(), layers, seeded_weights(), mapping=split_plan.mapping)
    assert given.descriptors == split_plan.descriptors
    assert np.array_equal(given.weight_image, split_plan.weight_image)
    assert DqnMapping.from_json(split_plan.mapping.to_json()) == split_plan.mapping
    with pytest.raises(ValueError, match="give a mapping or a split mode, not both"):
        compile_network(DqnConfig(), layers, seeded_weights(), split="never", mapping=split_plan.mapping)


def mixed_layers():
    """On the reduced configuration: a convolution with a K-split position inside it, a 1x1 convolution (four
    products per group: the writer and the walker make the groups stall) and a dense layer."""
    return (ConvLayer("c1", 2, 10, 4, 2, 2), ConvLayer("c2", 4, 5, 4, 1, 1), DenseLayer("d1", 100, 3, relu=False))


MIXED_MAPPING = DqnMapping((LayerMapping((Segment(11, 14, 2), Segment(0, 10, 1), Segment(10, 1, 1, 2))),
                            LayerMapping((Segment(0, 24, 1), Segment(24, 1, 2))), LayerMapping.whole(1, 1)))


def test_a_mapping_runs_segments_in_its_order_with_their_own_column_blocks():
    layers = mixed_layers()
    plan = compile_network(REDUCED_CONFIG, layers, random_pairs(layers), mapping=MIXED_MAPPING)
    rows = [(layer.name, layer.column_blocks, layer.positions_per_group, layer.descriptor["first_position"],
             layer.descriptor["positions"], layer.descriptor["weight_base"]) for layer in plan.layers]
    assert rows == [("c1", 2, 1, 11, 25, 0), ("c1 0..9", 1, 2, 0, 10, 9), ("c1 @10 partials", 1, 2, 20, 22, 18),
                    ("c1 @10 sum", 1, 2, 10, 11, 23), ("c2", 1, 2, 0, 24, 26), ("c2 24..24", 2, 1, 24, 25, 31),
                    ("d1", 1, 2, 0, 1, 36)]
    partials = plan.layers[2].descriptor
    # Position 10 = (2, 0) at stride 2: input rows 4.., column 0; chunk q = kernel column q at column stride 1.
    assert (partials["kernel_height"], partials["kernel_width"], partials["stride_y"], partials["stride_x"],
            partials["first_row"], partials["first_column"], partials["out_width"]) == (2, 1, 2, 1, 4, 0, 10)
    # The 1x1 convolution's groups (5 cycles) wait for the writer (4 or 8 writes after a latency of 6).
    assert plan.layers[4].predicted["stall_cycles"] > 0
    assert sum(layer.ideal_macs for layer in plan.layers) == sum(layer.macs for layer in layers)


def test_segments_with_the_same_column_blocks_share_weight_rows():
    layers = mixed_layers()
    mapping = DqnMapping((LayerMapping((Segment(0, 10, 1), Segment(10, 15, 1))),) + MIXED_MAPPING.layers[1:])
    plan = compile_network(REDUCED_CONFIG, layers, random_pairs(layers), mapping=mapping)
    assert plan.layers[0].descriptor["weight_base"] == plan.layers[1].descriptor["weight_base"] == 0
    assert plan.layers[2].descriptor["weight_base"] == 9


@pytest.mark.parametrize("segments, message", [
    ([Segment(0, 10, 1), Segment(11, 14, 1)], r"c1: positions 10..10 are in no segment"),
    ([Segment(0, 12, 1), Segment(11, 14, 1)], r"c1: positions 11..11 are in two segments"),
    ([Segment(0, 26, 1)], r"c1: the segments end at position 25, the layer has 25 \(0..24\)"),
    ([Segment(0, 25, 3)], r"c1: segment 0..24 C3: column_blocks 3 is not a power of two"),
    ([Segment(0, 25, 4)], r"c1: segment 0..24 C4: 4 column blocks exceed the 2 matrix modules"),
    ([Segment(0, 24, 1), Segment(24, 1, 1, 3)], r"c1: segment 24 C1 S3: 3 chunks divide neither the kernel width 2 nor its two row halves"),
    ([Segment(0, 24, 1), Segment(24, 1, 2, 2)],
     r"c1: segment 24 C2 S2: 2 partial sums need 2 position slots, 2 column blocks leave 1 \(2 modules\)"),
    ([Segment(0, 23, 1), Segment(23, 2, 1, 2)], r"c1: segment 23..24 C1 S2: a K-split \(S2\) takes a single-position "
                                                r"segment, not 2 positions"),
])
def test_mapping_errors_name_the_layer_and_the_constraint(segments, message):
    layers = mixed_layers()
    mapping = DqnMapping((LayerMapping(tuple(segments)),) + MIXED_MAPPING.layers[1:])
    with pytest.raises(ValueError, match=message):
        compile_network(REDUCED_CONFIG, layers, random_pairs(layers), mapping=mapping)


def test_mapping_errors_of_the_hardware_limits():
    shapes = layer_shapes(DqnConfig(modules=8, lanes=4), (ConvLayer("rows", 1, 5, 4, 3, 1),))
    with pytest.raises(ValueError, match=r"rows: a group of 8 output positions spans 3 rows of 3"):
        check_mapping(DqnConfig(modules=8, lanes=4), shapes, DqnMapping((LayerMapping.whole(9, 1),)))
    narrow = DqnConfig(modules=4, lanes=4, row_elements=6)
    shapes = layer_shapes(narrow, (ConvLayer("c", 1, 6, 8, 2, 1),))
    check_mapping(narrow, shapes, DqnMapping((LayerMapping.whole(25, 2),)))
    with pytest.raises(ValueError, match=r"c: segment 24 C2 S2: a partial sum of 2 column blocks x 4 lanes does not "
                                         r"fit a word of 6 elements \(row_elements\)"):
        check_mapping(narrow, shapes, DqnMapping((LayerMapping((Segment(0, 24, 2), Segment(24, 1, 2, 2))),)))
    strided = layer_shapes(DqnConfig(modules=4, lanes=4), (ConvLayer("s", 1, 9, 4, 4, 3),))
    with pytest.raises(ValueError, match=r"s: segment 1 C1 S2: chunks of 2 kernel columns run at stride 2, so the "
                                         r"window must start on a multiple of 2; it starts at \(padded\) input column 3"):
        check_mapping(DqnConfig(modules=4, lanes=4), strided,
                      DqnMapping((LayerMapping((Segment(0, 1, 1), Segment(1, 1, 1, 2), Segment(2, 2, 1))),)))
    with pytest.raises(ValueError, match="the mapping has 2 layer mappings, the network 1 layers"):
        check_mapping(DqnConfig(modules=4, lanes=4), strided, DqnMapping((LayerMapping.whole(4, 1),) * 2))


@pytest.mark.parametrize("fmt", [BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
def test_weights_and_inputs_are_rounded_to_the_format(fmt):
    config = dataclasses.replace(REDUCED_CONFIG, fmt=fmt, row_elements=16)
    layers = tiny_layers()[:3]
    pairs = random_pairs(layers)
    plan = compile_network(config, layers, pairs, split="never")
    first = plan.layers[0]
    expected = from_binary32(fmt, pairs[0][0].reshape(-1, 4))
    assert np.array_equal(first.weight_words[:18, :4], expected)
    assert np.array_equal(first.weight_words[18, :4], from_binary32(fmt, pairs[0][1]))
    assert plan.weight_image.max() < 1 << 16
    state = np.random.default_rng(SEED).standard_normal((2, 10, 10)).astype(np.float32)
    assert np.array_equal(plan.input_words(state)[:, :10], from_binary32(fmt, state.reshape(20, 10)))
    assert not plan.input_words(state)[:, 10:].any()
    if fmt is BINARY16:
        assert np.array_equal(expected, pairs[0][0].reshape(-1, 4).astype(np.float16).view(np.uint16))


def test_mapping_objects_check_their_fields_and_round_trip_through_json():
    with pytest.raises(ValueError, match="segment column_blocks must be an integer >= 1, not 0"):
        Segment(0, 4, 0)
    with pytest.raises(ValueError, match="segment count must be an integer >= 1, not True"):
        Segment(0, True, 1)
    with pytest.raises(ValueError, match=r"a layer mapping needs one or more Segments, not \(\)"):
        LayerMapping(())
    with pytest.raises(ValueError, match=r"a DQN mapping needs one LayerMapping per network layer, not \(1,\)"):
        DqnMapping([1])
    with pytest.raises(ValueError, match="a DQN mapping is a list of layers"):
        DqnMapping.from_json([[[0, 1]]])
    assert DqnMapping.from_json(MIXED_MAPPING.to_json()) == MIXED_MAPPING
    assert MIXED_MAPPING.passes == 7 and MIXED_MAPPING.layers[0].passes == 4
    assert MIXED_MAPPING.describe() == "11..24 C2 + 0..9 C1 + 10 C1 S2 | 0..23 C1 + 24 C2 | 0 C1"


def test_a_configuration_whose_host_port_cannot_carry_a_descriptor_is_refused():
    narrow = dataclasses.replace(REDUCED_CONFIG, fmt=BINARY16)          # 12 x 16 bits < a 238-bit descriptor
    with pytest.raises(ValueError, match=r"dqn_m2_l4_binary16_r12_p2_a128_w256_d8_ml2_al2: a descriptor of 244 bits does "
                                         r"not fit the host data port of 192 bits"):
        layer_shapes(narrow, tiny_layers())
    layer_shapes(dataclasses.replace(narrow, row_elements=16), tiny_layers())


@pytest.mark.parametrize("layer, per_group, note", [
    (ConvLayer("issue", 2, 12, 8, 3, 2), 4,
     "issue: 4 positions per group, 12 of 16 modules idle: a group must lie in two output rows of 5"),
    (ConvLayer("tall", 1, (9, 3), 2, 3, 1), 2,
     "tall: 2 positions per group, 14 of 16 modules idle: a group must lie in two output rows of 1"),
    (ConvLayer("fits", 1, 8, 4, 3, 1, padding=1), 16, None),
])
def test_groups_that_would_span_three_rows_take_fewer_positions(layer, per_group, note):
    """Never refused: where the fewest column blocks would make a group span three output rows, the default mapping
    takes more (fewer positions per group) and the plan says why."""
    plan = compile_network(DqnConfig(), (layer,), random_pairs((layer,)))
    assert plan.layers[0].positions_per_group == per_group
    assert plan.notes == ([note] if note else [])


def test_channel_tiles_slice_weights_and_outputs():
    """12 and 10 output channels on 2 modules x 4 lanes: tiles of 8 and the rest, each pass writing its channels'
    rows (image) or words (packed) of the layer's one output tensor, with its slice of the weights."""
    layers = (ConvLayer("conv", 1, 4, 12, 3, 1), DenseLayer("dense", 12 * 2 * 2, 10, relu=False))
    pairs = random_pairs(layers)
    plan = compile_network(dataclasses.replace(SMALL, max_layers=8), layers, pairs)
    rows = [(layer.name, layer.first_channel, layer.out_channels, layer.output.base, layer.descriptor["out_base"],
             layer.column_blocks) for layer in plan.layers]
    assert rows == [("conv [0:8]", 0, 8, 0, 0, 2), ("conv [8:12]", 8, 4, 0, 8 * 2, 1),
                    ("dense [0:8]", 0, 8, 4, 4, 2), ("dense [8:10]", 8, 2, 4, 4 + 2, 1)]
    second = plan.layers[1].weight_words.reshape(-1, 2, 4)
    np.testing.assert_array_equal(second[:9, 0], pairs[0][0].reshape(9, 12)[:, 8:].view(np.uint32))
    np.testing.assert_array_equal(second[9, 0], pairs[0][1][8:].view(np.uint32))
    assert plan.output.elements == 10 and plan.notes == []


def test_mlperf_shapes_compile_on_the_mlperf_configuration():
    """The keyword-spotting model's first layers (49 x 10 MFCCs, a 10 x 4 kernel at stride 2 padded SAME: 4 / 5
    rows, 1 / 1 columns -> 25 x 5; a 1 x 1 convolution) and the anomaly-detection autoencoder (dense 640 -> 128 ...
    -> 640: its last layer in three channel tiles) compile on MLPERF_CONFIG, within its 64 descriptors."""
    kws = (ConvLayer("conv1", 1, (49, 10), 64, (10, 4), 2, padding=(4, 5, 1, 1)), ConvLayer("pw", 64, (25, 5), 64, 1, 1))
    plan = compile_network(MLPERF_CONFIG, kws, random_pairs(kws))
    assert [layer.output.shape for layer in plan.layers] == [(64, 25, 5), (64, 25, 5)]
    assert plan.layers[0].ideal_macs == kws[0].macs and plan.layers[0].positions_per_group == 4
    sizes = (640, 128, 128, 128, 128, 8, 128, 128, 128, 128, 640)
    autoencoder = tuple(DenseLayer(f"fc{index}", inputs, outputs, relu=index < 9)
                        for index, (inputs, outputs) in enumerate(zip(sizes, sizes[1:])))
    plan = compile_network(MLPERF_CONFIG, autoencoder, random_pairs(autoencoder))
    assert [layer.name for layer in plan.layers[-3:]] == ["fc9 [0:256]", "fc9 [256:512]", "fc9 [512:640]"]
    assert len(plan.layers) <= MLPERF_CONFIG.max_layers and plan.output.elements == 640


def test_fastest_tiling_narrows_the_tiles_of_writer_bound_layers():
    """A MobileNet-like 1 x 1 convolution (32 -> 64 channels on 24 x 24): one tile of 64 channels runs 4 positions
    per group of 32 products and waits for 32 to 64 write cycles per group (64 to 128 row writes, two a cycle);
    four tiles of 16 run 16 positions per group, whose 8 to 16 write cycles never make them wait (4,608 cycles of
    MACs; a pass sets up in one cycle, so the extra tiles cost little).  The thesis network keeps its tiles (none
    narrower is faster)."""
    layers = (ConvLayer("pw", 32, 24, 64, 1, 1),)
    widest = compile_network(MLPERF_CONFIG, layers, random_pairs(layers))
    fastest = compile_network(MLPERF_CONFIG, layers, random_pairs(layers), tiling="fastest")
    assert [layer.name for layer in fastest.layers] == ["pw [0:16]", "pw [16:32]", "pw [32:48]", "pw [48:64]"]
    assert (widest.estimated_cycles, fastest.estimated_cycles) == (5_937, 4_629)
    assert sum(int(layer.predicted["stall_cycles"]) for layer in fastest.layers) == 0
    assert sum(layer.ideal_macs for layer in fastest.layers) == layers[0].macs
    thesis = compile_network(DqnConfig(), dqn_layers(18), seeded_weights(), tiling="fastest")
    assert thesis.descriptors == compile_network(DqnConfig(), dqn_layers(18), seeded_weights()).descriptors
    with pytest.raises(ValueError, match="tiling must be one of widest, fastest, not 'narrow'"):
        compile_network(MLPERF_CONFIG, layers, random_pairs(layers), tiling="narrow")


def test_a_dict_tiling_sets_the_channel_tile_of_each_named_layer():
    shapes = layer_shapes(DqnConfig(), dqn_layers(18), tiling={"CONV_2": 16, "FC_1": 64})
    assert [(shape.tile_size, shape.tiles, shape.min_column_blocks) for shape in shapes] == [
        (256, 1, 1), (16, 2, 1), (64, 4, 4), (256, 1, 2)]
    plan = compile_network(DqnConfig(max_layers=16, weight_depth=16384), dqn_layers(18), seeded_weights(),
                           tiling={"CONV_2": 16, "FC_1": 64})
    assert [layer.name for layer in plan.layers][1:7] == ["CONV_2 [0:16]", "CONV_2 [16:32]", "FC_1 [0:64]",
                                                          "FC_1 [64:128]", "FC_1 [128:192]", "FC_1 [192:256]"]
    with pytest.raises(ValueError, match=r"FC_1: a channel tile holds 1 \.\. 256 output channels \(modules x lanes\), "
                                         r"not 300"):
        layer_shapes(DqnConfig(), dqn_layers(18), tiling={"FC_1": 300})


def max_pool(name, channels, size, kernel):
    """A max pool of ``channels`` channels, stride ``kernel``, and its weights (1.0, seed -inf)."""
    layer = ConvLayer(name, channels, size, channels, kernel, kernel, relu=False, groups=channels, maximum=True)
    return layer, (np.ones(layer.weight_shape, np.float32), np.full(channels, -np.inf, np.float32))


def test_a_max_pool_of_more_tiles_than_descriptors_is_refused_naming_it():
    """A max pool runs a pass per channel (its tiles never widen): 8 channels and a dense layer need 9 passes of a
    table of 8, refused in one line naming the pool (layer_shapes once stopped on ``1 is not in list``)."""
    config = dataclasses.replace(REDUCED_CONFIG, max_pooling=True)
    pool, pool_pair = max_pool("pool", 8, 4, 2)
    layers = (pool, DenseLayer("d", 32, 4, relu=False))
    assert [shape.tiles for shape in layer_shapes(config, layers)] == [8, 1]
    with pytest.raises(ValueError, match=r"^the network needs 9 passes \(pool: 8, d\); the descriptor table holds 8; "
                                         r"pool is a max pool of 8 channels, one pass a channel$"):
        compile_network(config, layers, [pool_pair, random_pairs(layers[1:])[0]])


def test_a_depthwise_layer_widens_its_tiles_beside_a_max_pool():
    """A depthwise layer in tiles of 4 channels (its fastest) and a max pool of 5 need 11 passes of a table of 9: the
    depthwise layer widens to tiles of 8 (the pool cannot), and the network runs in 9."""
    config = dataclasses.replace(REDUCED_CONFIG, max_pooling=True, max_layers=9)
    pool, pool_pair = max_pool("pool", 5, 4, 2)
    layers = (ConvLayer("dw", 16, 4, 16, 3, 1, padding=1, groups=16), ConvLayer("pw", 16, 4, 5, 1, 1), pool,
              DenseLayer("d", 20, 4, relu=False))
    pairs = random_pairs(layers)
    pairs[2] = pool_pair
    plan = compile_network(config, layers, pairs)
    assert [layer.name for layer in plan.layers] == ["dw [0:8]", "dw [8:16]", "pw", *(f"pool [{channel}:{channel + 1}]"
                                                                                     for channel in range(5)), "d"]


def test_the_compilers_k_splits_give_way_to_the_descriptor_table():
    """A dense layer after a max pool of 7 channels: K-split where the table has room (2 passes), run whole where
    the split would make 9 passes of a table of 8 (the compiler once refused the network)."""
    pool, pool_pair = max_pool("pool", 7, 4, 2)
    layers = (pool, DenseLayer("d", 28, 4, relu=False))
    pairs = [pool_pair, random_pairs(layers[1:])[0]]
    roomy = compile_network(dataclasses.replace(REDUCED_CONFIG, max_pooling=True, max_layers=9), layers, pairs)
    assert [layer.name for layer in roomy.layers][-2:] == ["d partials", "d sum"]
    plan = compile_network(dataclasses.replace(REDUCED_CONFIG, max_pooling=True), layers, pairs)
    assert [layer.name for layer in plan.layers][-2:] == ["pool [6:7]", "d"]
