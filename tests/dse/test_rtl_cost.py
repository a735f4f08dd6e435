"""The RTL family's cost model: its latency is the compiler's prediction (which the RTL's counters equal:
tests/dqn/test_accelerator.py, tests/dse/test_rtl_validate.py), batches equal single cases, energy is the sum
of its actions, area the table's composition."""

import dataclasses

import numpy as np
import pytest

from nnaccel.dse.shared import energy_table
from nnaccel.dse.shared.rtl_area import compose
from nnaccel.dse.shared.rtl_cost import evaluate, evaluate_batch, evaluate_network, pack
from nnaccel.dse.shared.rtl_family import random_weights, sample_config, sample_layer_mapping, sample_mapping, sample_network
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.models.dqn.mapping import LayerMapping, Segment
from nnaccel.models.dqn.network import ConvLayer, dqn_layers
from nnaccel.models.dqn.plan import compile_network, layer_shapes

SEED = 1313


def test_the_thesis_network():
    mapping, per_layer, totals = evaluate_network(DqnConfig(), dqn_layers(18))
    assert [row["latency_cycles"] for row in per_layer] == [6469, 2622 + 89 + 50, 2622, 69 + 24]
    assert totals["latency_cycles"] == 11_945 and totals["passes"] == 7 and totals["stall_cycles"] == 0
    _, unsplit, unsplit_totals = evaluate_network(DqnConfig(), dqn_layers(18), split="never")
    assert unsplit_totals["latency_cycles"] == 12_242
    # Each product cycle, all 256 lanes multiply and add, idle ones included.
    assert totals["macs"] == 256 * 11_700
    assert totals["alms"] == compose(DqnConfig())[1].alms and totals["dsp_blocks"] == 256


def test_latency_is_the_compilers_prediction_for_random_mappings():
    rng = np.random.default_rng(SEED)
    for index in range(60):
        config = dataclasses.replace(REDUCED_CONFIG, modules=int(rng.choice([1, 2, 4, 8])),
                                     lanes=int(rng.integers(1, 5)), multiplier_latency=int(rng.integers(1, 4)),
                                     adder_latency=int(rng.integers(1, 4)))
        layers = sample_network(rng, config)
        mapping = sample_mapping(rng, config, layers)
        plan = compile_network(config, layers, random_weights(layers, index), mapping=mapping)
        _, per_layer, totals = evaluate_network(config, layers, mapping)
        for layer, row in zip(layers, per_layer):
            passes = [work for work in plan.layers if work.network_layer == layer.name]
            assert row["latency_cycles"] == sum(work.estimated_cycles for work in passes)
            assert row["stall_cycles"] == sum(work.predicted["stall_cycles"] for work in passes)
            assert row["passes"] == len(passes)
        assert totals["latency_cycles"] == plan.estimated_cycles


def random_cases(count, seed):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        config = sample_config(rng, row_elements=84)
        try:
            shapes = layer_shapes(config, dqn_layers(18))
        except ValueError:
            continue
        cases += [(config, sample_layer_mapping(rng, config, shape, max_passes=4), shape) for shape in shapes]
    return cases[:count]


def test_a_batch_is_its_cases_one_at_a_time():
    cases = random_cases(200, SEED)
    batch = evaluate_batch(pack(cases))
    for index, case in enumerate(cases):
        single = evaluate(*case)
        assert {name: batch[name][index] for name in single} == pytest.approx(single, rel=1e-12)
    assert batch["stall_cycles"].max() >= 0 and len(set(batch["alms"].tolist())) > 10


def test_energy_is_the_sum_of_its_actions():
    """One 1x1 convolution pass worked by hand from the table."""
    config = dataclasses.replace(REDUCED_CONFIG, adder_latency=2)
    (shape,) = layer_shapes(config, (ConvLayer("c", 3, 4, 4, 1, 1),))
    costs = evaluate(config, LayerMapping((Segment(0, 16, 1),)), shape)
    groups, products = 8, 3                          # 16 positions, 2 per group; 3 input channels
    product_cycles = groups * (products + 1)
    lanes, modules, bits = 4, 2, 32
    multiply, add = energy_table.multiply_pj("fp32"), energy_table.add_pj("fp32")
    mac = product_cycles * modules * lanes * (multiply + add) + groups * modules * lanes * 1 * add
    weights = product_cycles * modules * energy_table.storage_pj_per_word(256, lanes * bits)
    writes = 4 * groups                              # 4 channels, each group's two positions in one 4-wide row
    activations = (2 * (1 + groups * products * 1) + writes) * energy_table.storage_pj_per_word(128, 12 * bits)
    registers = (product_cycles * modules * energy_table.storage_pj_per_word(24, bits)
                 + 2 * product_cycles * modules * lanes * energy_table.storage_pj_per_word(2, bits)
                 + 2 * groups * modules * lanes * energy_table.storage_pj_per_word(8, bits))
    assert costs["mac_pj"] == pytest.approx(mac)
    assert costs["weight_ram_pj"] == pytest.approx(weights)
    assert costs["activation_ram_pj"] == pytest.approx(activations)
    assert costs["register_pj"] == pytest.approx(registers)
    assert costs["energy_pj"] == pytest.approx(mac + weights + activations + registers)
    assert costs["product_cycles"] == product_cycles


def test_cases_outside_the_family_are_refused():
    (shape,) = layer_shapes(REDUCED_CONFIG, (ConvLayer("c", 3, 4, 4, 1, 1),))
    with pytest.raises(ValueError, match="c: segment 0..15 C3: column_blocks 3 is not a power of two"):
        evaluate(REDUCED_CONFIG, LayerMapping((Segment(0, 16, 3),)), shape)
    with pytest.raises(ValueError, match="the area table has no matrix module for binary32 with multiplier latency 5"):
        evaluate(dataclasses.replace(REDUCED_CONFIG, multiplier_latency=5), LayerMapping((Segment(0, 16, 1),)), shape)
