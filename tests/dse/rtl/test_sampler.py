"""The RTL family's samplers: seeded, legal (the compiler takes every draw), covering what the hardware runs."""

import dataclasses

import numpy as np
import pytest

from nnaccel.dse.rtl.hardware import RTL_SPACE, config_from_json, config_to_json, network_from_json, network_to_json
from nnaccel.dse.rtl import sampler
from nnaccel.dse.rtl.sampler import (NoMappingFound, random_weights, sample_case, sample_config, sample_layer_mapping,
                                     sample_mapping, sample_network)
from nnaccel.dse.rtl.validate import reduced_configs, validation_cases, validation_configs
from nnaccel.hw.dqn.config import REDUCED_CONFIG
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer, dqn_layers
from nnaccel.models.dqn.plan import compile_network, layer_shapes

SEED = 1212


def test_configs_are_seeded_and_round_trip_through_json():
    first = [sample_config(np.random.default_rng(SEED)) for _ in range(2)]
    assert first[0] == first[1]
    rng = np.random.default_rng(SEED)
    configs = [sample_config(rng) for _ in range(200)]
    assert all(config_from_json(config_to_json(config)) == config for config in configs)
    assert {config.fmt.name for config in configs} == set(RTL_SPACE.formats)
    assert {config.modules for config in configs} == set(RTL_SPACE.modules)
    assert sample_config(rng, fmt="bfloat16", lanes=3).lanes == 3


def test_random_networks_and_mappings_compile_and_cover_every_kind_of_pass():
    rng = np.random.default_rng(SEED)
    kinds, stalls, orders, features = set(), 0, 0, set()
    for index in range(120):
        config = dataclasses.replace(REDUCED_CONFIG, modules=int(rng.choice([1, 2, 4, 8])),
                                     lanes=int(rng.integers(1, 5)))
        layers = sample_network(rng, config)
        assert network_from_json(network_to_json(layers)) == layers
        mapping = sample_mapping(rng, config, layers)
        plan = compile_network(config, layers, random_weights(layers, index), mapping=mapping)
        assert len(plan.layers) <= config.max_layers
        kinds |= {("partials" if "partials" in layer.name or "tail" in layer.name else
                   "sum" if layer.reduce else "segment" if " " in layer.name else "whole") for layer in plan.layers}
        stalls += sum(layer.predicted["stall_cycles"] > 0 for layer in plan.layers)
        orders += any(layer.segments != layer.in_position_order() for layer in mapping.layers)
        convolutions = [layer for layer in layers if isinstance(layer, ConvLayer)]
        features |= {name for layer in convolutions for name, present in (
            ("padding", layer.padded), ("rectangular", layer.in_height != layer.in_width),
            ("rectangular kernel", layer.kernel_height != layer.kernel_width),
            ("rectangular stride", layer.stride_y != layer.stride_x)) if present}
        features |= {"tiles"} if any(layer.first_channel for layer in plan.layers) else set()
        features |= {"add"} if any(isinstance(layer, AddLayer) for layer in layers) else set()
        features |= {"depthwise"} if any(layer.groups > 1 for layer in convolutions) else set()
        features |= {"copy"} if len(plan.network) > len(layers) else set()
    assert kinds == {"whole", "segment", "partials", "sum"}
    assert features == {"padding", "rectangular", "rectangular kernel", "rectangular stride", "tiles", "add",
                        "depthwise", "copy"}
    assert stalls > 20 and orders > 10


def test_layer_mappings_of_the_thesis_network_on_random_hardware():
    rng = np.random.default_rng(SEED)
    for _ in range(30):
        config = sample_config(rng, modules=16, lanes=16, row_elements=84)
        for shape in layer_shapes(config, dqn_layers(18)):
            mapping = sample_layer_mapping(rng, config, shape, max_passes=3)
            assert mapping.passes <= 3
            covered = sorted(position for segment in mapping.segments
                             for position in range(segment.first, segment.first + segment.count))
            assert covered == list(range(shape.positions))


def test_random_weights_are_seeded():
    layers = dqn_layers(4)[2:]
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(random_weights(layers, 3), random_weights(layers, 3)))
    with pytest.raises(ValueError, match="modules must be a power of two"):
        sample_config(np.random.default_rng(0), modules=3)


def test_max_pools_are_drawn_on_a_configuration_with_the_max_mode_only():
    """Max pools (weights 1.0, bias -inf) in the networks drawn for a max-mode configuration, compiled with their
    mappings, the cost model's latency equal to the compiler's; the configuration and the layers round-trip through
    JSON; none without the max mode."""
    from nnaccel.dse.rtl.cost_model import evaluate_network

    rng = np.random.default_rng(SEED)
    config = dataclasses.replace(REDUCED_CONFIG, max_pooling=True)
    assert config_from_json(config_to_json(config)) == config
    pools = 0
    for index in range(40):
        layers = sample_network(rng, config)
        assert network_from_json(network_to_json(layers)) == layers
        for layer, (weight, bias) in zip(layers, random_weights(layers, index)):
            if isinstance(layer, ConvLayer) and layer.maximum:
                pools += 1
                assert np.all(weight == 1) and np.all(bias == -np.inf) and layer.groups == layer.in_channels
        mapping = sample_mapping(rng, config, layers)
        plan = compile_network(config, layers, random_weights(layers, index), mapping=mapping)
        # (the cost model misses 2 to 4 cycles of some residual adds cut into segments: another gap, left out here)
        if not any(isinstance(layer, AddLayer) for layer in layers):
            assert evaluate_network(config, layers, mapping, area=False)[2]["latency_cycles"] == plan.estimated_cycles
    assert pools >= 5
    plain = [sample_network(rng, REDUCED_CONFIG) for _ in range(40)]
    assert not any(getattr(layer, "maximum", False) for layers in plain for layer in layers)


def unmappable():
    """``validation_cases(2000, seed=22)``'s network on 8 x 1 bfloat16 of which few random mappings compile (about
    one in 20: the others overfill the weight RAM's 256 words, most leaving its 270-input dense layer unsplit to keep
    within the descriptor table; the compiler's mapping fits): ``(config, layers)``."""
    config = next(config for config in validation_configs(np.random.default_rng(0), 6)
                  if (config.modules, config.lanes, config.fmt.name) == (8, 1, "bfloat16"))
    layers = (ConvLayer("c1", 3, (7, 10), 3, 4, 1, padding=(0, 1, 0, 0), groups=3),
              ConvLayer("c2", 3, (5, 7), 9, (3, 4), (2, 1), padding=(1, 1, 3, 3)), DenseLayer("d1", 270, 1),
              DenseLayer("d2", 1, 7, relu=False))
    return config, layers


def test_a_network_without_a_random_mapping_gives_way_to_another(monkeypatch):
    """sample_mapping gives up on such a network (NoMappingFound: 100 draws without one that compiles, seed 6);
    sample_case draws another network (smaller images) and its mapping, and after as many such networks as it may
    draw takes the compiler's mapping."""
    config, layers = unmappable()
    compile_network(config, layers, random_weights(layers, 0))
    with pytest.raises(NoMappingFound, match=f"no mapping of 4 layers compiles on {config.module_name} in 100 draws"):
        sample_mapping(np.random.default_rng(6), config, layers)
    draws = []
    original = sampler.sample_network

    def first_unmappable(rng, config, *, max_size):
        draws.append(max_size)
        return layers if len(draws) == 1 else original(rng, config, max_size=max_size)

    monkeypatch.setattr(sampler, "sample_network", first_unmappable)
    drawn, mapping = sample_case(np.random.default_rng(6), config)
    assert drawn != layers and draws[:2] == [10, 9]
    compile_network(config, drawn, random_weights(drawn, 0), mapping=mapping)
    monkeypatch.setattr(sampler, "sample_network", lambda rng, config, *, max_size: layers)
    drawn, mapping = sample_case(np.random.default_rng(6), config, networks=1)
    assert drawn == layers and mapping == compile_network(config, layers, random_weights(layers, 0)).mapping


@pytest.mark.extended
def test_the_validation_sampler_draws_2000_cases_of_seed_22():
    """The seed on which the sampler once stopped with a RuntimeError (the network of :func:`unmappable`), over the
    thirteen configurations of ``nnaccel dse validate``'s reports (33 s)."""
    configs = reduced_configs() + validation_configs(np.random.default_rng(0), 6)
    assert len(validation_cases(2000, seed=22, configs=configs, thesis=False)) == 2000
