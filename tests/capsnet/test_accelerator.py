# amaranth: UnusedElaboratable=no
"""The CapsNet accelerator in simulation: a small configuration running random int8 layers (both engines, strides,
ReLU, partial channel/column blocks, writer stalls), every output bit for bit against ``models.capsnet.int8_layers``,
the per-layer counters against the compiler's cycle formula; the register map; lint."""

import numpy as np
import pytest

from nnaccel.hw.capsnet.accelerator import CapsNetAccelerator, CapsNetMemory
from nnaccel.hw.capsnet.config import SMALL_CONFIG
from nnaccel.models.capsnet.plan import ConvSpec, MatvecSpec, compile_layers
from nnaccel.models.capsnet.int8_layers import conv2d, matvec
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.capsnet.host import run_on_capsnet

SEED = 3003
INPUT_SHAPE = (2, 12, 11)


def fitting_shift(products):
    """A shift that puts sums of ``products`` random int8 products mostly inside int8 (some saturate)."""
    return int(np.log2(np.sqrt(products) * 128 * 128 / 3 / 48))


def random_layers(rng):
    def conv(name, out_channels, in_channels, kernel, stride, relu):
        weights = rng.integers(-128, 128, (out_channels, in_channels, *kernel)).astype(np.int8)
        bias = rng.integers(-20000, 20000, out_channels).astype(np.int32)
        return ConvSpec(name, weights, bias, stride=stride, shift=fitting_shift(in_channels * kernel[0] * kernel[1]),
                        relu=relu)
    return (conv("c1", 5, 2, (3, 2), 1, True),        # 5 channels = 2 blocks of 4; out width 10 = 4 blocks of 3
            conv("c2", 6, 5, (3, 3), 2, False),       # stride 2 -> 6 x 4 x 4
            conv("c3", 6, 6, (1, 1), 1, True),        # 6 products per group: the writer makes it stall
            MatvecSpec("caps", rng.integers(-128, 128, (32, 3, 3, 3)).astype(np.int8), shift=fitting_shift(3)))


def golden(layers, image):
    """Every layer's output: the convolutions' images, then the predictions (capsules, J, rows)."""
    outputs, x = [], image
    for spec in layers[:-1]:
        x = conv2d(x, spec.weights, spec.bias, stride=spec.stride, shift=spec.shift, relu=spec.relu)
        outputs.append(x)
    weights = layers[-1].weights
    dims = weights.shape[3]
    channels, height, width = x.shape
    capsules = x.reshape(channels // dims, dims, height, width).transpose(0, 2, 3, 1).reshape(-1, dims)
    outputs.append(matvec(weights, capsules[:, None, :], shift=layers[-1].shift))
    return outputs


@pytest.fixture(scope="module")
def small_run():
    rng = np.random.default_rng(SEED)
    layers = random_layers(rng)
    plan = compile_layers(SMALL_CONFIG, INPUT_SHAPE, layers)
    images = rng.integers(-128, 128, (3, *INPUT_SHAPE)).astype(np.int8)
    run = run_on_capsnet(CapsNetAccelerator(config=SMALL_CONFIG), plan, images, read_layers=True)
    return layers, plan, images, run


def test_every_layer_bit_exact(small_run):
    layers, plan, images, run = small_run
    for index, image in enumerate(images):
        expected = golden(layers, image)
        for number, (layer, want) in enumerate(zip(plan.layers[:-1], expected[:-1])):
            assert np.array_equal(run.layer_outputs[number][index], want), f"image {index}, layer {layer.name}"
        assert np.array_equal(run.predictions[index], expected[-1]), f"image {index}, predictions"
    saturated = np.mean(np.abs(expected[0]) == 127)
    assert 0 < saturated < 0.5, "the test data exercises saturation without being dominated by it"


def test_cycle_counters_match_the_compiler(small_run):
    _, plan, _, run = small_run
    counters = run.layer_counters
    assert (counters == counters[0]).all(), "timing does not depend on the data"
    for layer, (cycles, products, stalls, drains) in zip(plan.layers, counters[0]):
        assert products == layer.product_cycles, layer.name
        if layer.name != "c3":
            assert (cycles, stalls) == (layer.expected_cycles, 0), layer.name
    c3 = plan.layers[2]
    assert counters[0][2][2] > 0 and counters[0][2][0] == c3.expected_cycles + counters[0][2][2]
    assert run.total_cycles[0] == counters[0][:, 0].sum()


def test_register_map_constants():
    assert [(target.name, int(target)) for target in CapsNetMemory] == [
        ("CONV_WEIGHTS", 2), ("BIASES", 3), ("MATVEC_WEIGHTS", 4), ("ACTIVATIONS0", 5), ("ACTIVATIONS1", 6),
        ("PREDICTIONS", 7)]
    assert SMALL_CONFIG.module_name == "capsnet_c4x3dsp_v4dsp_r12_a512_w1024_b16_m1024_p128_d4"


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a CapsNetConfig, not 3$"):
        CapsNetAccelerator(config=3)


def test_lint_clean():
    assert lint_verilog(CapsNetAccelerator(config=SMALL_CONFIG), "capsnet_small") == []
