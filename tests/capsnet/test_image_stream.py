# amaranth: UnusedElaboratable=no
"""The streaming CapsNet accelerator running whole images from SDRAM (conv1, PrimaryCaps, step 2, routing) in
simulation with the SDRAM model inside the simulator: a small configuration and network, every feature map,
prediction and routing result bit for bit against ``models.capsnet.int8_layers`` + ``route_fixed``, every counter
against the compiler's cycle formula with the SDRAM model in it; and the same run with the Python slave on the
Avalon port (its protocol checks on every cycle): the same outputs and counters."""

import numpy as np
import pytest

from nnaccel.hw.capsnet.stream_config import SMALL_STREAM_CONFIG
from nnaccel.hw.capsnet.stream_descriptor import StreamStep
from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
from nnaccel.models.capsnet.golden import COUPLING_SHIFT, route_fixed
from nnaccel.models.capsnet.image_stream_plan import compile_image_stream, image_stream_cycles
from nnaccel.models.capsnet.int8_layers import conv2d, matvec
from nnaccel.models.capsnet.plan import ConvSpec
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.testbench.capsnet.stream_host import run_image_stream

SEED = 1623
IMAGES = 2
IMAGE_SHAPE = (1, 10, 10)
CONV1_CHANNELS, TYPES = 8, 3
DIGIT_SHIFT, SQUASH_SHIFT = 6, 1


def small_network(config, rng):
    dims = config.primary_dims
    conv1 = ConvSpec("conv1", rng.integers(-128, 128, (CONV1_CHANNELS, 1, 3, 3)).astype(np.int8),
                     rng.integers(-3000, 3000, CONV1_CHANNELS), stride=1, shift=6, relu=True)
    primary = ConvSpec("primary", rng.integers(-128, 128, (TYPES * dims, CONV1_CHANNELS, 3, 3)).astype(np.int8),
                       rng.integers(-20000, 20000, TYPES * dims), stride=2, shift=10, relu=False)
    digit = rng.integers(-128, 128, (TYPES * config.grid ** 2, config.classes, config.digit_dims, dims)).astype(np.int8)
    return conv1, primary, digit


def golden(config, image, conv1, primary, digit):
    features = conv2d(image, conv1.weights, conv1.bias, stride=1, shift=conv1.shift, relu=True)
    maps = conv2d(features, primary.weights, primary.bias, stride=2, shift=primary.shift)
    dims, grid = config.primary_dims, config.grid
    capsules = maps.reshape(-1, dims, grid, grid).transpose(0, 2, 3, 1).reshape(-1, dims)
    flat = digit.reshape(len(capsules), config.classes * config.digit_dims, dims)
    predictions = matvec(flat, capsules, shift=DIGIT_SHIFT).reshape(len(capsules), config.classes, config.digit_dims)
    return features, maps, predictions, route_fixed(predictions, squash_shift=SQUASH_SHIFT)


@pytest.fixture(scope="module")
def small_run():
    config = SMALL_STREAM_CONFIG
    rng = np.random.default_rng(SEED)
    conv1, primary, digit = small_network(config, rng)
    images = rng.integers(0, 17, (IMAGES, *IMAGE_SHAPE)).astype(np.int8)
    plan = compile_image_stream(config, conv1, primary, digit, image_shape=IMAGE_SHAPE, digit_shift=DIGIT_SHIFT,
                                routing_shift=SQUASH_SHIFT + COUPLING_SHIFT)
    run = run_image_stream(CapsNetStreamingAccelerator(config=config), plan, images)
    return config, images, (conv1, primary, digit), plan, run


def test_the_python_slave_gives_the_same_run(small_run):
    """The Python slave checks the master's Avalon protocol on every cycle; the two SDRAM models are
    cycle-identical, so every output and counter is the same."""
    _, images, _, plan, inside = small_run
    slave = run_image_stream(CapsNetStreamingAccelerator(config=plan.config), plan, images, sdram_inside=False)
    for name in ("predictions", "sums", "digit_caps", "squared_lengths", "labels", "start_cycles", "total_cycles",
                 "layer_counters"):
        np.testing.assert_array_equal(getattr(slave, name), getattr(inside, name), err_msg=name)
    for name in ("conv1_output", "primary"):
        np.testing.assert_array_equal(slave.features[name], inside.features[name], err_msg=name)


def test_every_step_bit_exact(small_run):
    config, images, network, _, run = small_run
    for index, image in enumerate(images):
        features, maps, predictions, routing = golden(config, image, *network)
        assert np.array_equal(run.features["conv1_output"][index], features), f"image {index}: conv1"
        assert np.array_equal(run.features["primary"][index], maps), f"image {index}: PrimaryCaps"
        assert np.array_equal(run.predictions[index], predictions), f"image {index}: predictions"
        assert np.array_equal(run.sums[index], routing.sums), f"image {index}: s_j"
        assert np.array_equal(run.digit_caps[index], routing.digit_caps), f"image {index}: v_j"
        assert np.array_equal(run.squared_lengths[index], routing.squared_lengths), f"image {index}: |v_j|^2"
        assert run.labels[index] == routing.label, f"image {index}: class"
    assert not np.array_equal(run.features["primary"][0], run.features["primary"][1]), "the images differ"


def test_counters_match_the_cycle_formula(small_run):
    _, _, _, plan, run = small_run
    port = TilePortModel(max_burst=plan.config.max_burst, fifo_depth=plan.config.fifo_depth)
    for index, start in enumerate(run.start_cycles):
        expected = image_stream_cycles(plan, int(start), port)
        assert run.layer_counters[index].tolist() == [list(step) for step in expected.steps], f"image {index}"
        assert run.total_cycles[index] == expected.total, f"image {index}"
    for step in StreamStep:
        assert run.layer_counters[0][step][0] > 0, f"{step.name} took no cycle"


@pytest.mark.system
def test_the_de1soc_top_gives_the_same_run_on_both_back_ends():
    """The full-size DE1-SoC top on one reduced-network digit: the SDRAM model inside the simulator and the Python
    slave (its protocol checks on every cycle) give the same outputs and counters, equal to the cycle formula."""
    from nnaccel.cli.capsnet import board_plan
    from nnaccel.models.capsnet.golden import classify_fixed, load_capsnet, quantize_image
    from nnaccel.models.shared.mnist import sample_digits

    net = load_capsnet("reduced")
    plan = board_plan(net)
    image = sample_digits()[0][0]
    accelerator = CapsNetStreamingAccelerator(config=plan.config)
    runs = [run_image_stream(accelerator, plan, [quantize_image(image)], sdram_inside=inside) for inside in (True, False)]
    for name in ("predictions", "digit_caps", "labels", "start_cycles", "total_cycles", "layer_counters"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name), err_msg=name)
    np.testing.assert_array_equal(runs[0].features["primary"], runs[1].features["primary"])
    port = TilePortModel(max_burst=plan.config.max_burst, fifo_depth=plan.config.fifo_depth)
    expected = image_stream_cycles(plan, int(runs[0].start_cycles[0]), port)
    assert runs[0].layer_counters[0].tolist() == [list(step) for step in expected.steps]
    assert runs[0].total_cycles[0] == expected.total
    golden = classify_fixed(image, net)
    assert np.array_equal(runs[0].predictions[0], golden.predictions) and runs[0].labels[0] == golden.label


def test_compile_errors():
    config = SMALL_STREAM_CONFIG
    conv1, primary, digit = small_network(config, np.random.default_rng(SEED))
    compile_kwargs = {"image_shape": IMAGE_SHAPE, "digit_shift": DIGIT_SHIFT, "routing_shift": 5}
    odd = ConvSpec("primary", np.zeros((9, 7, 3, 3), np.int8), None, stride=2, shift=1, relu=False)
    seven = ConvSpec("conv1", np.zeros((7, 1, 3, 3), np.int8), None, stride=1, shift=1, relu=True)
    with pytest.raises(ValueError, match="^layer primary: weights take 7 input channels, the input has 8$"):
        compile_image_stream(config, conv1, odd, digit, **compile_kwargs)
    with pytest.raises(ValueError, match="^layer primary: 7 input channels: the tiles alternate between two slots"):
        compile_image_stream(config, seven, odd, digit, **compile_kwargs)
    wide = ConvSpec("conv1", np.zeros((20, 1, 3, 3), np.int8), None, stride=1, shift=1, relu=True)
    with pytest.raises(ValueError, match="^layer conv1: 5 channel blocks, the accelerator takes at most 4$"):
        compile_image_stream(config, wide, primary, digit, **compile_kwargs)
    with pytest.raises(ValueError, match="^PrimaryCaps gives 4x4 maps, the accelerator's grid is 3x3"):
        compile_image_stream(config, conv1, primary, digit, **{**compile_kwargs, "image_shape": (1, 12, 12)})
    with pytest.raises(TypeError, match="^config must be a CapsNetStreamConfig"):
        compile_image_stream(config.conv_config, conv1, primary, digit, **compile_kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"conv_modules": 6}, "conv_modules must be a multiple of 4 \\(a kernel word is whole bus words\\), not 6"),
    ({"conv_rows": 0}, "conv_rows must be an integer from 1 to 32, not 0"),
    ({"conv_row_bytes": 6}, "conv_row_bytes must be a multiple of 4 of at least row_bytes \\(8\\), not 6"),
    ({"conv_multipliers": "lut"}, "conv_multipliers must be one of \\('dsp', 'logic'\\), not 'lut'"),
])
def test_config_errors(kwargs, message):
    from nnaccel.hw.capsnet.stream_config import CapsNetStreamConfig

    with pytest.raises(ValueError, match=f"^{message}$"):
        CapsNetStreamConfig(**kwargs)
