"""The RTL family (the DQN accelerator) as DCP's design space: codes, decoding, costs, enumeration."""

import numpy as np
import pytest

from nnaccel.dse.rtl import cost_model as rtl_cost
from nnaccel.dse.rtl.dataflow_space import (IDLE_SEGMENT, RtlDataflowSpace, best_network_mapping, layer_shape,
                               mapping_code, mapping_table, weight_rows)
from nnaccel.dse.rtl.sampler import random_weights
from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.dse.shared.layer import Layer, dqn_layers
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.dqn.network import dqn_layers as rtl_dqn_layers
from nnaccel.models.dqn.plan import compile_network, default_mapping, layer_shapes

SPACE = RtlDataflowSpace()
THESIS = DqnConfig()
SMALL_CONFIG = DqnConfig(modules=8, lanes=2, row_elements=16, activation_depth=128, weight_depth=256)
SMALL = Layer.conv(in_channels=2, in_size=7, out_channels=4, kernel=3, name="small")
SMALL_DENSE = Layer.dense(in_features=12, out_features=3, name="small_dense")


def test_the_compilers_default_mapping_costs_what_rtl_cost_says():
    """Layer by layer, each pass costed alone (the space's cases: no pass sets up while another drains)."""
    mapping, _, _ = rtl_cost.evaluate_network(THESIS, rtl_dqn_layers(18))
    for layer, layer_mapping, shape in zip(dqn_layers(), mapping.layers, layer_shapes(THESIS, rtl_dqn_layers(18))):
        code = mapping_code(THESIS, layer_shape(layer, THESIS), layer_mapping)
        assert code.shape == (9, 7, 2)
        assert SPACE.violations(code, layer, THESIS) == []
        costs = SPACE.evaluate(layer, THESIS, code[None])
        expected = rtl_cost.evaluate(THESIS, layer_mapping, shape)
        assert costs["latency"][0] == expected["latency_cycles"]
        assert costs["energy"][0] == pytest.approx(expected["energy_pj"], rel=1e-12)
    assert sum(SPACE.evaluate(layer, THESIS, mapping_code(THESIS, layer_shape(layer, THESIS), m)[None])
               ["latency"][0] for layer, m in zip(dqn_layers(), mapping.layers)) == 11792


@pytest.mark.parametrize("config, layer", [(THESIS, dqn_layers()[1]), (THESIS, dqn_layers()[3]),
                                           (SMALL_CONFIG, SMALL), (SMALL_CONFIG, SMALL_DENSE)])
def test_sampled_codes_are_legal_decode_to_themselves_and_cost_what_rtl_cost_says(config, layer):
    codes = SPACE.sample_codes(layer, config, 40, seed=3)
    shape = layer_shape(layer, config)
    assert any((code != IDLE_SEGMENT.reshape(1, 3, 7, 2).repeat(3, 0).reshape(9, 7, 2)).any() for code in codes)
    for code, relaxed in zip(codes, relax(codes)):
        assert SPACE.violations(code, layer, config) == []
        assert (SPACE.nearest(relaxed, layer, config) == code).all()
    costs = SPACE.evaluate(layer, config, codes)
    reference = rtl_cost.evaluate_batch(rtl_cost.pack(
        [(config, SPACE.mapping(code, layer, config), shape) for code in codes], area=False))
    assert costs["latency"].tolist() == reference["latency_cycles"].tolist()
    np.testing.assert_allclose(costs["energy"], reference["energy_pj"], rtol=1e-12)


@pytest.mark.parametrize("config, layer", [(THESIS, dqn_layers()[0]), (THESIS, dqn_layers()[2]),
                                           (SMALL_CONFIG, SMALL), (SMALL_CONFIG, SMALL_DENSE)])
def test_any_relaxed_code_decodes_to_a_legal_mapping(config, layer):
    rng = np.random.default_rng(11)
    for _ in range(25):
        relaxed = np.stack([rng.uniform(-1, 7, (9, 7)), rng.uniform(0, 9, (9, 7))], axis=-1)
        assert SPACE.violations(SPACE.nearest(relaxed, layer, config), layer, config) == []


def test_decoding_snaps_counts_and_column_blocks_in_log2():
    shape = layer_shape(SMALL, SMALL_CONFIG)     # 25 positions, 4 channels: 2, 4 or 8 column blocks
    code = mapping_code(SMALL_CONFIG, shape, LayerMapping((Segment(0, 21, 2), Segment(21, 4, 4))))
    relaxed = relax(code[None])[0]
    relaxed[6, 3, 1] = np.log2(4) + 0.4          # tail groups, Y: count 2^2.4 = 5.3: 5 positions
    relaxed[7, 1, 1] = np.log2(8) - 0.3          # tail modules, K: column blocks 2^2.7: 8
    mapping = SPACE.mapping(SPACE.nearest(relaxed, SMALL, SMALL_CONFIG), SMALL, SMALL_CONFIG)
    assert mapping.describe() == "0..19 C2 + 20..24 C8"


def test_violations_are_the_compilers_messages():
    shape = layer_shape(SMALL, SMALL_CONFIG)
    code = mapping_code(SMALL_CONFIG, shape, LayerMapping.whole(25, 2))
    wrong = code.copy()
    wrong[4, 0, 1] = 3                            # body modules level: K x 3 column blocks
    assert SPACE.violations(wrong, SMALL, SMALL_CONFIG) == [
        "small: 4 positions per group x 3 column blocks do not make the 8 matrix modules"]
    crowded = mapping_code(SMALL_CONFIG, shape, LayerMapping((Segment(0, 1, 2, 3), Segment(1, 23, 2),
                                                              Segment(24, 1, 2, 3))))
    assert SPACE.violations(crowded, SMALL, DqnConfig(modules=8, lanes=2, row_elements=16, max_layers=4,
                                                      activation_depth=128, weight_depth=256)) == \
        ["small takes 5 passes; the descriptor table holds 4"]


def test_weight_rows_are_the_compilers():
    layers = (ConvLayer("c1", 2, 7, 4, 3, 1), ConvLayer("c2", 4, 5, 3, 3, 1))
    config = DqnConfig(modules=8, lanes=2, row_elements=16, activation_depth=128, weight_depth=512)
    shapes = layer_shapes(config, layers)
    mapping = DqnMapping((LayerMapping((Segment(0, 1, 2, 3), Segment(1, 20, 2), Segment(21, 4, 4))),
                          LayerMapping((Segment(0, 8, 2), Segment(8, 1, 2, 3)))))
    plan = compile_network(config, layers, random_weights(layers, 0), mapping=mapping)
    assert sum(weight_rows(config, s, m) for s, m in zip(shapes, mapping.layers)) == len(plan.weight_image)


@pytest.mark.parametrize("layer", [SMALL, SMALL_DENSE])
def test_enumeration_is_legal_and_holds_every_sampled_cost(layer):
    codes = np.concatenate(list(SPACE.enumerate_codes(layer, SMALL_CONFIG, limit=100_000)))
    assert len(codes) > (100 if layer is SMALL else 2)
    for code in codes[:: max(1, len(codes) // 60)]:
        assert SPACE.violations(code, layer, SMALL_CONFIG) == []
    costs = SPACE.evaluate(layer, SMALL_CONFIG, codes)
    enumerated = set(zip(costs["latency"], np.round(costs["energy"], 3)))
    sampled = SPACE.sample_codes(layer, SMALL_CONFIG, 60, seed=4)
    found = SPACE.evaluate(layer, SMALL_CONFIG, sampled)
    assert set(zip(found["latency"], np.round(found["energy"], 3))) <= enumerated
    assert SPACE.enumerate_codes(dqn_layers()[0], THESIS, limit=100_000) is None


def test_the_best_over_any_segments_is_no_worse_than_the_code_space_and_costs_what_it_says():
    codes = np.concatenate(list(SPACE.enumerate_codes(SMALL, SMALL_CONFIG, limit=100_000)))
    table = mapping_table(SMALL, SMALL_CONFIG, "latency")
    cost, mapping = min((entry for entry in table if entry[1] is not None), key=lambda entry: entry[0])
    assert cost <= SPACE.evaluate(SMALL, SMALL_CONFIG, codes)["latency"].min()
    assert rtl_cost.evaluate(SMALL_CONFIG, mapping, layer_shape(SMALL, SMALL_CONFIG))["latency_cycles"] == cost
    for passes, (entry_cost, entry_mapping) in enumerate(table):
        assert entry_mapping is None or entry_mapping.passes == passes


def test_the_best_dqn_mapping_is_the_compilers_default():
    config = THESIS
    cost, mappings = best_network_mapping(list(dqn_layers())[1:], config, "latency")
    default = default_mapping(config, layer_shapes(config, rtl_dqn_layers(18)))
    assert cost == sum(rtl_cost.evaluate(config, m, s)["latency_cycles"]
                       for m, s in zip(default.layers[1:], layer_shapes(config, rtl_dqn_layers(18))[1:]))
    assert sum(m.passes for m in mappings) <= config.max_layers


def test_network_violations_count_the_shared_descriptor_table():
    config = DqnConfig(max_layers=5)
    # the default table's mapping (7 passes): the compiler's own default gives way to a table of 5
    seven_passes = default_mapping(DqnConfig(), layer_shapes(config, rtl_dqn_layers(18)))
    assert seven_passes.passes == 7
    codes = [mapping_code(config, layer_shape(layer, config), mapping) for layer, mapping in
             zip(dqn_layers(), seven_passes.layers)]
    assert SPACE.network_violations(codes, list(dqn_layers()), config) == [
        "the network takes 7 passes; the descriptor table holds 5"]
    assert SPACE.network_violations(codes, list(dqn_layers()), THESIS) == []


def test_hardware_round_trips_and_features_have_a_fixed_length():
    for config in (THESIS, SMALL_CONFIG):
        assert SPACE.hardware_from_dict(SPACE.hardware_to_dict(config)) == config
        assert SPACE.hardware_features(config).shape == (SPACE.hardware_feature_count,)
    limits = SPACE.log2_limits(dqn_layers()[1], THESIS)
    assert limits.shape == (9, 7) and limits[3, 3] == np.log2(81)


def test_layers_the_family_cannot_run_are_refused():
    depthwise = Layer(y=6, x=6, r=3, s=3, k=4, c=4, type=1, name="dw")
    with pytest.raises(ValueError, match="dw: the RTL family runs convolutions and dense layers of batch 1"):
        layer_shape(depthwise, THESIS)
