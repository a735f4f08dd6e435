"""The CapsNet layer compiler: memory images and placement of a small network, cycle formulas, the CapsNet's
descriptors, and every check with its message."""

import numpy as np
import pytest

from nnaccel.hw.capsnet.config import SMALL_CONFIG, CapsNetConfig
from nnaccel.hw.capsnet.descriptor import LayerKind
from nnaccel.models.capsnet.network import VARIANTS
from nnaccel.models.capsnet.plan import ConvSpec, MatvecSpec, compile_capsnet, compile_layers, fitted_config, \
    pack_int8_rows, unpack_int8_rows



def small_layers():
    conv = ConvSpec("c", np.arange(5 * 2 * 3 * 3).reshape(5, 2, 3, 3).astype(np.int8) - 40,
                    np.arange(5, dtype=np.int32) * 1000, stride=2, shift=4, relu=True)
    caps = MatvecSpec("m", (np.arange(9 * 3 * 2 * 5) % 251 - 125).reshape(9, 3, 2, 5).astype(np.int8), shift=6)
    return conv, caps


def test_images_and_placement():
    conv, caps = small_layers()
    plan = compile_layers(SMALL_CONFIG, (2, 7, 7), (conv, ConvSpec("d", np.ones((5, 5, 1, 1), np.int8), None, stride=1,
                                                             shift=0, relu=False), caps))
    first, second, matvec = plan.layers
    assert (first.input.ram, first.input.base, first.output.ram, first.output.base) == (0, 0, 1, 0)
    assert (second.output.ram, second.output.base, second.output.shape) == (0, 14, (5, 3, 3))
    assert first.descriptor["channel_blocks"] == 2 and first.descriptor["column_blocks"] == 1
    assert [first.descriptor[name] for name in ("products", "column_step", "block_rows")] == [18, 6, 12]
    # Conv weights: block b, product k -> slot m = channel b*4 + m (zeros past channel 4); biases alike.
    weights = conv.weights.reshape(5, 18)
    assert np.array_equal(plan.conv_weight_image[:18, :4], weights[:4].T)
    assert np.array_equal(plan.conv_weight_image[18:36, 0], weights[4]) and not plan.conv_weight_image[18:36, 1:].any()
    assert plan.bias_image[:2].tolist() == [[0, 1000, 2000, 3000], [4000, 0, 0, 0]]
    assert second.descriptor["weight_base"] == 36 and second.descriptor["bias_base"] == 2
    # Matrix-vector weights: word (i*J + j)*N + k, lane r = W[i, j, r, k], lanes past the rows 0.
    assert matvec.kind == LayerKind.MATVEC and plan.prediction_shape == (9, 3, 2)
    words = plan.matvec_weight_image.reshape(9, 3, 5, 4)
    assert np.array_equal(words[:, :, :, :2], caps.weights.transpose(0, 1, 3, 2)) and not words[:, :, :, 2:].any()
    assert (matvec.descriptor["type_words"], matvec.descriptor["dim_words"], matvec.descriptor["capsule_types"]) == (
        15, 3, 1)
    assert matvec.macs == 9 * 3 * 2 * 5 and matvec.product_cycles == 9 * 3 * 5
    assert first.expected_cycles == 1 + 1 + 2 * 3 * 1 * 18 + 1 + 3 + 1 + 1


def test_pack_and_unpack_rows():
    image = np.arange(-30, 30, dtype=np.int8).reshape(2, 3, 10)
    words = pack_int8_rows(image, 12)
    assert words.shape == (6, 12) and not words[:, 10:].any()
    assert np.array_equal(unpack_int8_rows(words, (2, 3, 10)), image)


@pytest.mark.parametrize("variant", ["reduced", "full"])
def test_capsnet_plan_fits_the_default_configuration(variant):
    from nnaccel.models.capsnet.golden import FixedCapsNet

    shape = VARIANTS[variant]
    net = FixedCapsNet(variant=variant, shape=shape,
                       conv1_weights=np.zeros((shape.conv_channels, 1, 9, 9), np.int8),
                       conv1_bias=np.zeros(shape.conv_channels, np.int32),
                       primary_weights=np.zeros((shape.primary_channels, shape.conv_channels, 9, 9), np.int8),
                       primary_bias=np.zeros(shape.primary_channels, np.int32),
                       digit_weights=np.zeros((shape.capsules, 10, 16, 8), np.int8),
                       conv1_shift=7, primary_shift=7, digit_shift=7, squash_shift=7, conv1_weight_frac=7,
                       primary_weight_frac=7, digit_weight_frac=7)
    plan = compile_capsnet(CapsNetConfig(), net)
    conv1, primary, digit = plan.layers
    assert [layer.macs for layer in plan.layers] == [shape.conv1_macs, shape.primary_macs, shape.step2_macs]
    blocks = shape.conv_channels // 32
    assert conv1.product_cycles == blocks * 20 * 4 * 81
    assert primary.product_cycles == shape.primary_channels // 32 * 6 * 1 * shape.conv_channels * 81
    assert digit.product_cycles == shape.capsules * 10 * 8
    assert primary.input == conv1.output and digit.input == primary.output


@pytest.mark.parametrize(("layers", "message"), [
    ((), "between 1 and 4 layers, not 0"),
    ((MatvecSpec("m", np.zeros((4, 3, 2, 5), np.int8), shift=0),) * 2,
     "layers must be ConvSpec layers, optionally followed by one MatvecSpec"),
    ((ConvSpec("c", np.zeros((2, 3, 3, 3), np.int8), None, stride=1, shift=0, relu=False),),
     "layer c: weights take 3 input channels, the input has 2"),
    ((ConvSpec("c", np.zeros((2, 2, 3, 3), np.int16) + 300, None, stride=1, shift=0, relu=False),),
     r"layer c: weights holds values outside int8 \(300..300\)"),
    ((ConvSpec("c", np.zeros((2, 2, 3, 3), np.int8), None, stride=8, shift=0, relu=False),),
     "layer c: stride must be from 1 to 7, not 8"),
    ((ConvSpec("c", np.zeros((2, 2, 8, 3), np.int8), None, stride=1, shift=0, relu=False),),
     r"layer c: kernel 8x3 does not fit the input 7x7 \(or 31\)"),
    ((ConvSpec("c", np.zeros((2, 2, 3, 3), np.int8), np.zeros(3, np.int32), stride=1, shift=0, relu=False),),
     "layer c: bias must be 2 int32 values"),
    ((ConvSpec("c", np.zeros((2, 2, 3, 3), np.int8), None, stride=1, shift=40, relu=False),),
     "layer c: descriptor field shift must be an integer from 0 to 31, not 40"),
    ((small_layers()[0], MatvecSpec("m", np.zeros((9, 3, 5, 5), np.int8), shift=0)),
     "layer m: 5 rows per matrix exceed the 4 lanes"),
    ((small_layers()[0], MatvecSpec("m", np.zeros((5, 3, 2, 5), np.int8), shift=0)),
     r"layer m: weights for 5 capsules of 5 elements do not match the input \(5, 3, 3\)"),
    ((ConvSpec("c", np.zeros((80, 2, 3, 3), np.int8), None, stride=2, shift=0, relu=False),),
     "biases need 20 words, the RAM has 16"),
])
def test_rejects_what_the_hardware_cannot_run(layers, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        compile_layers(SMALL_CONFIG, (2, 7, 7), layers)


def test_fitted_config_sizes_the_rams_to_the_plan():
    conv, caps = small_layers()
    big = CapsNetConfig(conv_modules=4, conv_lanes=3, matvec_lanes=4, row_elements=12)
    plan = compile_layers(big, (2, 7, 7), (conv, caps))
    fitted = fitted_config(plan, bank_depth=64)
    # activations: input 14 words + conv output 15 -> 16; conv weights 36 -> 64; biases 2; matvec words 135 -> 192;
    # predictions 27 -> 32; the engines are unchanged.
    assert (fitted.activation_depth, fitted.conv_weight_depth, fitted.bias_depth, fitted.matvec_weight_depth,
            fitted.prediction_depth) == (16, 64, 2, 192, 32)
    assert (fitted.conv_modules, fitted.conv_lanes, fitted.matvec_lanes) == (4, 3, 4)
    refitted = compile_layers(fitted, (2, 7, 7), (conv, caps))
    assert [layer.descriptor for layer in refitted.layers] == [layer.descriptor for layer in plan.layers]


def test_on_chip_compiler_takes_one_row_per_pass():
    layer = ConvSpec("conv", np.zeros((2, 1, 3, 3), np.int8), None, stride=1, shift=0, relu=False)
    config = CapsNetConfig(conv_rows=6)
    with pytest.raises(ValueError, match="^conv_rows must be 1 for the accelerator with on-chip RAMs"):
        compile_layers(config, (1, 8, 8), [layer])
