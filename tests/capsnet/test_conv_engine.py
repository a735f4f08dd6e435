# amaranth: UnusedElaboratable=no
"""CapsNetConvEngine: parameter check, ports, lint; and its tiled mode alone (testbench.capsnet.conv_engine_tb: the
RAMs and the port program played by the testbench, with seeded random delays on the tile loads and the staging
stores) on the small DE1-SoC configuration's engine: both streamed layers of a small network (conv1: one input
channel, its map loaded once; PrimaryCaps: a tile per step, stride 2, a last row group that computes rows it does not
write) bit for bit against models.capsnet.int8_layers.conv2d, and every tile release, row group write, the done
cycle and the counters equal to models.capsnet.conv_timing.ConvEngineTiming given the cycles the tiles were ready.
Its untiled mode runs inside the on-chip accelerator (tests/capsnet/test_accelerator.py)."""

import dataclasses

import numpy as np
import pytest

from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.tile_handshake import TileHandshakeSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.capsnet.config import SMALL_CONFIG
from nnaccel.hw.capsnet.stream_config import SMALL_STREAM_CONFIG
from nnaccel.models.capsnet.conv_timing import ConvEngineTiming
from nnaccel.models.capsnet.image_stream_plan import compile_image_stream
from nnaccel.models.capsnet.int8_layers import conv2d
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from tests.capsnet.test_image_stream import DIGIT_SHIFT, IMAGE_SHAPE, small_network

SEED = 2611
MAX_DELAY = 40                    # cycles a tile load or a staging store may take in the random runs


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a CapsNetConfig, not 'small'$"):
        CapsNetConvEngine(config="small")


def test_ports():
    engine = CapsNetConvEngine(config=SMALL_CONFIG)
    assert engine.config == SMALL_CONFIG
    members = engine.signature.members
    assert list(members) == ["control", "inputs", "weights", "biases", "outputs"]
    assert members["control"].signature.flip() == EngineControlSignature(descriptor_layout(SMALL_CONFIG))
    # The RAM ports: 12 int8 per activation word, 4 int8 per weight word, 4 int32 per bias word, byte enables.
    for name, width, depth in (("inputs", 96, 512), ("weights", 32, 1024), ("biases", 128, 16), ("outputs", 96, 512)):
        assert members[name].signature == BufferPortSignature(width=width, depth=depth, granularity=8), name
    tiled = CapsNetConvEngine(config=dataclasses.replace(SMALL_CONFIG, conv_tiled=True))
    assert tiled.signature.members["tiles"].signature.flip() == TileHandshakeSignature()


def test_lint_clean():
    assert lint_verilog(CapsNetConvEngine(config=SMALL_CONFIG), "capsnet_conv_engine_small") == []


@pytest.fixture(scope="module")
def small_layers():
    """The small network's two streamed layers: ``{name: (ConvStreamLayer, input map, golden output, slabs,
    biases)}``."""
    config = SMALL_STREAM_CONFIG
    rng = np.random.default_rng(SEED)
    conv1, primary, digit = small_network(config, rng)
    image = rng.integers(0, 17, IMAGE_SHAPE).astype(np.int8)
    plan = compile_image_stream(config, conv1, primary, digit, image_shape=IMAGE_SHAPE, digit_shift=DIGIT_SHIFT,
                                routing_shift=5)
    features = conv2d(image, conv1.weights, conv1.bias, stride=1, shift=conv1.shift, relu=True)
    maps = conv2d(features, primary.weights, primary.bias, stride=2, shift=primary.shift)
    layers = {}
    for layer, spec, layer_input, golden in zip(plan.conv_layers, (conv1, primary), (image, features),
                                                 (features, maps)):
        channels = layer.in_shape[0]
        slabs = plan.image[f"{spec.name}_slabs"].reshape(layer.blocks, channels, -1, config.conv_modules)
        biases = plan.image[f"{spec.name}_biases"].view("<i4").reshape(layer.blocks, config.conv_modules)
        layers[spec.name] = layer, layer_input, golden, slabs, biases.astype(np.int64)
    return layers


def run_tiled(layer, layer_input, slabs, biases, *, delay_seed):
    """Simulate the engine alone on ``layer``; delays drawn from ``delay_seed`` (None: every delay 0)."""
    config = SMALL_STREAM_CONFIG
    engine = CapsNetConvEngine(config=config.conv_config)
    fields = {name: value for name, value in layer.engine.items()}
    descriptor = descriptor_layout(config.conv_config).const(fields).as_value().value
    delays = np.random.default_rng(delay_seed) if delay_seed is not None else None
    groups = layer.blocks * layer.row_groups

    def draw(count):
        return [0] * count if delays is None else delays.integers(0, MAX_DELAY + 1, count).tolist()

    result = simulate(engine, name=engine.module_name, test_module="nnaccel.testbench.capsnet.conv_engine_tb",
                      config={"descriptor": descriptor, "image": bool(layer.stream["image"]),
                              "channels": layer.in_shape[0], "in_height": layer.in_shape[1],
                              "out_shape": list(layer.out_shape), "blocks": layer.blocks,
                              "row_groups": layer.row_groups, "column_blocks": layer.column_blocks,
                              "modules": config.conv_modules, "rows": config.conv_rows,
                              "row_bytes": config.conv_row_bytes, "load_delays": draw(layer.tiles),
                              "store_delays": draw(groups), "max_cycles": 100_000},
                      stimulus={"inputs": layer_input.view(np.uint8), "slabs": slabs.view(np.uint8),
                                "biases": biases})
    return result.outputs


@pytest.mark.parametrize("delay_seed", [None, 7], ids=["no-delays", "random-delays"])
@pytest.mark.parametrize("name", ["conv1", "primary"])
def test_tiled_layer_alone(small_layers, name, delay_seed):
    layer, layer_input, golden, slabs, biases = small_layers[name]
    out = run_tiled(layer, layer_input, slabs, biases, delay_seed=delay_seed)
    np.testing.assert_array_equal(out["outputs"].view(np.int8), golden)
    config = SMALL_STREAM_CONFIG
    timing = ConvEngineTiming(layer, modules=config.conv_modules, rows=config.conv_rows, start=0)
    for ready in out["ready_cycles"]:
        timing.run_step(int(ready))
    assert timing.finished
    assert out["release_cycles"].tolist() == timing.release_cycles
    assert out["group_written_cycles"].tolist() == timing.group_written_cycles
    assert int(out["done_cycle"]) == timing.done_cycle
    assert tuple(out["counters"].tolist()) == timing.counters
    products, stalls, _ = timing.counters
    assert products == layer.blocks * layer.row_groups * layer.column_blocks * layer.in_shape[0] * \
        layer.kernel[0] * layer.kernel[1] * config.conv_rows
    if delay_seed is not None:
        assert stalls > 0, "the random delays make the engine wait"
