"""The external-weight mapping space (``dse.rtl.stream_space``): its choices, what they compile to, their costs, and a
mapping with a non-default choice in every layer run on the simulated accelerator with the SDRAM model."""

from dataclasses import replace

import numpy as np
import pytest

from nnaccel.dse.rtl.stream_space import LayerChoice, StreamSpace
from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import ConvLayer, reduced_layers
from nnaccel.models.dqn.weight_stream import compile_streamed, stream_counters
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.testbench.dqn.host import COUNTER_NAMES, run_on_accelerator
from tests.dqn.test_accelerator import reduced_states

SEED = 2931
EXTERNAL = replace(REDUCED_CONFIG, external_weights=True, weight_depth=64)


@pytest.fixture(scope="module")
def space():
    return StreamSpace(EXTERNAL, reduced_layers())


def _weights(rng, layers):
    return [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
             rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]


def test_the_space_per_layer_and_its_size(space):
    described = [[choice.describe() for choice in choices] for choices in space.choices]
    assert described[0] == ["tile 4 C1", "tile 4 C1 2 position ranges, tiles outer",
                            "tile 4 C1 4 position ranges, tiles outer", "tile 4 C2",
                            "tile 4 C2 2 position ranges, tiles outer", "tile 4 C2 4 position ranges, tiles outer"]
    assert described[2] == ["tile 8 C2", "tile 4 C1", "tile 4 C2"]
    assert described[3] == ["tile 4 C1", "tile 4 C1 S2", "tile 4 C2"]
    assert space.size() == ([6, 6, 3, 3], 324)


def test_the_default_is_the_compilers_mapping(space):
    rng = np.random.default_rng(SEED)
    weights = _weights(rng, space.layers)
    stream, _, _ = space.compile(space.default(), weights)
    reference = compile_streamed(EXTERNAL, space.layers, weights)
    assert stream.plan.descriptors == reference.plan.descriptors
    assert stream.table == reference.table
    assert np.array_equal(stream.image, reference.image)
    port = TilePortModel(timing=DE1_SOC_SDRAM, port_bits=EXTERNAL.external_bus_bits)
    assert space.cost(space.default())["latency"] == stream_counters(reference, 100, port).total


def test_more_positions_per_group_repeat_the_weights(space):
    """A dense layer's tile of 4 channels on one column block computes 2 positions per group: every weight word
    holds the product's weights twice, so the layer's tiles are twice the bytes of the widest tile's."""
    default = space.default()
    narrow = list(default)
    narrow[2] = LayerChoice(4, 1)
    bytes_of = {name: space.compile(choices)[0] for name, choices in (("widest", default), ("narrow", narrow))}
    tiles = {name: [words for words, layer in zip(stream.tile_words, stream.plan.layers)
                    if layer.network_layer == "d1"] for name, stream in bytes_of.items()}
    assert tiles["widest"] == [37] and tiles["narrow"] == [37, 37]
    assert bytes_of["narrow"].weight_bytes - bytes_of["widest"].weight_bytes == 37 * 32


def test_the_loop_order_orders_the_passes():
    space = StreamSpace()                        # DE1-SoC, the thesis network: CONV_1 in 2 tiles of 8 channels
    orders = {}
    for order in ("tiles", "positions"):
        choices = space.default()
        choices[0] = LayerChoice(8, 2, 2, order)
        stream, _, _ = space.compile(choices)
        orders[order] = [(layer.descriptor["first_position"], layer.first_channel) for layer in stream.plan.layers
                         if layer.network_layer == "CONV_1"]
        orders[f"{order} bytes"] = stream.weight_bytes
    assert orders["tiles"] == [(0, 0), (200, 0), (0, 8), (200, 8)]
    assert orders["positions"] == [(0, 0), (0, 8), (200, 0), (200, 8)]
    assert orders["tiles bytes"] == orders["positions bytes"]


def test_a_choice_past_the_descriptor_table_is_illegal():
    space = StreamSpace()                        # FC_1 in 64 tiles of 4 channels: past the 64 descriptors
    choices = space.default()
    choices[2] = LayerChoice(4, 1)
    assert space.cost(choices) is None
    with pytest.raises(ValueError, match="descriptor table"):
        space.compile(choices)


def test_a_searched_mapping_runs_bit_exact_with_every_counter_as_the_cost_model(space):
    rng = np.random.default_rng(SEED)
    choices = [LayerChoice(4, 2, 2), LayerChoice(4, 1, 2), LayerChoice(4, 1), LayerChoice(4, 1, split=2)]
    weights = _weights(rng, space.layers)
    stream, _, _ = space.compile(choices, weights)
    states = reduced_states(rng)[:2]
    run = run_on_accelerator(DqnAccelerator(config=EXTERNAL), stream, states)
    for index, state in enumerate(states):
        assert np.array_equal(run.q_values[index], golden_forward(stream.plan, state).q_values)
    port = TilePortModel(timing=DE1_SOC_SDRAM, port_bits=EXTERNAL.external_bus_bits)
    for index, start in enumerate(run.start_cycles):
        predicted = space.latency(stream, int(start), port)
        assert int(run.total_cycles[index]) == predicted.total
        assert run.layer_counters[index].tolist() == [[counters[name] for name in COUNTER_NAMES]
                                                      for counters in predicted.passes]
    assert len(stream.plan.layers) == 2 + 2 + 2 + 2


def test_any_network_the_compiler_runs_its_default_the_compilers_mapping():
    """A network with a depthwise convolution (its channel tiles the compiler's: a single choice) and, compiled with
    ``split="auto"``, the compiler's own K-splits: the all-default mapping is ``compile_streamed``'s plan, its
    latency the formula's."""
    layers = (ConvLayer("c1", 2, 10, 4, 3, 2), ConvLayer("dw", 4, 4, 4, 1, 1, groups=4),
              *reduced_layers()[1:])
    space = StreamSpace(EXTERNAL, layers, name="reduced with a depthwise layer")
    assert [len(choices) for choices in space.choices][1] == 1
    assert space.size()[0] == [6, 1, 6, 3, 3]
    weights = _weights(np.random.default_rng(SEED), layers)
    stream, _, _ = space.compile(space.default(), weights)
    reference = compile_streamed(EXTERNAL, layers, weights)
    assert stream.plan.descriptors == reference.plan.descriptors and stream.table == reference.table
    assert np.array_equal(stream.image, reference.image)
    port = TilePortModel(timing=DE1_SOC_SDRAM, port_bits=EXTERNAL.external_bus_bits)
    assert space.cost(space.default())["latency"] == stream_counters(reference, 100, port).total
    assert space.bandwidth_bound() < space.cost(space.default())["latency"]
