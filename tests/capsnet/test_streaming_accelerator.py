# amaranth: UnusedElaboratable=no
"""The streaming CapsNet accelerator (step 2 from SDRAM, routing on chip) in simulation with the SDRAM model: a
small configuration, random PrimaryCaps outputs and weights, predictions and routing bit for bit against
``models.capsnet.golden``, every counter against the compiler's cycle formula with the SDRAM model in it."""

import numpy as np
import pytest

from nnaccel.hw.capsnet.stream_config import SMALL_STREAM_CONFIG, CapsNetStreamConfig
from nnaccel.hw.capsnet.stream_descriptor import StreamStep
from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
from nnaccel.models.capsnet.golden import COUPLING_SHIFT, route_fixed
from nnaccel.models.capsnet.int8_layers import matvec
from nnaccel.models.capsnet.image_stream_plan import image_stream_cycles
from nnaccel.models.capsnet.stream_plan import compile_stream
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.capsnet.stream_host import run_on_stream

SEED = 3016
TYPES, IMAGES = 3, 3
SHIFT, SQUASH_SHIFT = 7, 1


def golden(config, maps, weights):
    """(predictions (capsules, J, D), RoutingResult) of one input as the fixed-point model computes them."""
    dims, grid = config.primary_dims, config.grid
    capsules = maps.reshape(-1, dims, grid, grid).transpose(0, 2, 3, 1).reshape(-1, dims)   # i = (t*G + y)*G + x
    flat = weights.reshape(len(capsules), config.classes * config.digit_dims, config.primary_dims)
    predictions = matvec(flat, capsules, shift=SHIFT).reshape(len(capsules), config.classes, config.digit_dims)
    return predictions, route_fixed(predictions, squash_shift=SQUASH_SHIFT)


@pytest.fixture(scope="module")
def small_run():
    config = SMALL_STREAM_CONFIG
    rng = np.random.default_rng(SEED)
    maps = rng.integers(-128, 128, (IMAGES, TYPES * config.primary_dims, config.grid, config.grid)).astype(np.int8)
    weights = rng.integers(-128, 128, (TYPES * config.grid ** 2, config.classes, config.digit_dims,
                                       config.primary_dims)).astype(np.int8)
    plan = compile_stream(config, maps[0], weights, shift=SHIFT, routing_shift=SQUASH_SHIFT + COUPLING_SHIFT)
    run = run_on_stream(CapsNetStreamingAccelerator(config=config), plan, maps)
    return config, maps, weights, plan, run


def test_predictions_and_routing_bit_exact(small_run):
    config, maps, weights, _, run = small_run
    for index in range(IMAGES):
        predictions, routing = golden(config, maps[index], weights)
        assert np.array_equal(run.predictions[index], predictions), f"input {index}: predictions"
        assert np.array_equal(run.sums[index], routing.sums), f"input {index}: s_j"
        assert np.array_equal(run.digit_caps[index], routing.digit_caps), f"input {index}: v_j"
        assert np.array_equal(run.squared_lengths[index], routing.squared_lengths), f"input {index}: |v_j|^2"
        assert run.labels[index] == routing.label, f"input {index}: class"
    assert len(set(run.labels.tolist())) > 1 or len(set(np.abs(run.sums).max(axis=(1, 2)).tolist())) > 1, \
        "the inputs differ in their results"


def test_counters_match_the_cycle_formula(small_run):
    _, _, _, plan, run = small_run
    port = TilePortModel(max_burst=plan.config.max_burst, fifo_depth=plan.config.fifo_depth)
    for index, start in enumerate(run.start_cycles):
        expected = image_stream_cycles(plan, int(start), port)
        assert run.total_cycles[index] == expected.total, f"input {index}"
        assert run.layer_counters[index].tolist() == [list(step) for step in expected.steps], f"input {index}"
    assert run.layer_counters[0][StreamStep.PREDICTIONS][2] > 0, "the engine waits for the SDRAM (memory-bound)"


@pytest.mark.parametrize("config", [SMALL_STREAM_CONFIG, CapsNetStreamConfig()], ids=["small", "capsnet"])
def test_lint_clean(config):
    accelerator = CapsNetStreamingAccelerator(config=config)
    assert lint_verilog(accelerator, accelerator.module_name) == []


def test_tile_rams_of_the_de1soc_configuration():
    """Half-row step-2 tiles: 2 x 240 weight words and 2 x 30 predictions; step 1's inputs as deep as the staging."""
    rams = CapsNetStreamConfig().tile_rams
    assert rams == {"conv_inputs": (224, 96), "conv_slabs": (64, 162), "conv_biases": (256, 32),
                    "conv_staging": (224, 96), "inputs": (64, 96), "weights": (128, 480), "predictions": (128, 60)}
    assert CapsNetStreamConfig().tile_ram_bits == 136_832


@pytest.mark.parametrize("kwargs, message", [
    ({"digit_dims": 6}, "digit_dims must be a multiple of 4, not 6"),
    ({"row_bytes": 4}, "row_bytes must be a multiple of 4 of at least grid \\(6\\), not 4"),
    ({"multipliers": "lut"}, "multipliers must be one of \\('dsp', 'logic'\\), not 'lut'"),
    ({"classes": 0}, "classes must be an integer from 1 to 64, not 0"),
    ({"tile_columns": 4}, "tile_columns must divide grid \\(6\\), not 4"),
    ({"tile_columns": 7}, "tile_columns must be an integer from 1 to 6, not 7"),
    ({"requantize_cycles": 3}, "requantize_cycles must divide digit_dims \\(16\\), not 3"),
    ({"requantize_cycles": 16}, "requantize_cycles must be an integer from 1 to 8, not 16"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        CapsNetStreamConfig(**kwargs)


def test_compile_errors():
    config = SMALL_STREAM_CONFIG
    maps = np.zeros((2 * config.primary_dims, config.grid, config.grid), np.int8)
    weights = np.zeros((2 * config.grid ** 2, config.classes, config.digit_dims, config.primary_dims), np.int8)
    with pytest.raises(ValueError, match="^digit_weights must be int8"):
        compile_stream(config, maps, weights[:-1], shift=1, routing_shift=1)
    with pytest.raises(ValueError, match="^5 capsule types: the accelerator takes 1 to 4$"):
        compile_stream(config, np.zeros((5 * config.primary_dims, config.grid, config.grid), np.int8),
                       np.zeros((5 * config.grid ** 2, config.classes, config.digit_dims, config.primary_dims),
                                np.int8), shift=1, routing_shift=1)
