"""The RTL family's cost model against figures found without it: the thesis network's cycles as the RTL's counters
measure them, one pass worked by hand (cycles and every energy action), the same figures inside a large batch, the
area the table's composition; the smallest segmented add and random networks (flat passes, adds in segments)
against the compiler's prediction.  Random networks and mappings against the simulated RTL:
tests/dse/rtl/test_validate.py.
"""

import dataclasses

import numpy as np
import pytest

from nnaccel.dse.rtl.area import compose
from nnaccel.dse.rtl.cost_model import evaluate, evaluate_batch, evaluate_network, pack
from nnaccel.dse.rtl.sampler import random_weights, sample_config, sample_layer_mapping, sample_mapping, sample_network
from nnaccel.dse.rtl.validate import reduced_configs, validation_configs
from nnaccel.dse.shared import energy_table
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer, dqn_layers
from nnaccel.models.dqn.plan import compile_network, default_mapping, layer_shapes, with_copy_passes
from tests.dqn.test_accelerator_amaranth import random_pairs
from tests.dqn.test_golden import split_max_pool

SEED = 1313


# The thesis network on the full-size accelerator: every layer's cycles as the RTL's counters measure them
# (TOTAL_CYCLES 11,698 with the splits, 12,087 without: docs/dqn_accelerator.md, `nnaccel dse validate`), and as
# each pass costs when run alone (a case of a batch: no pass sets up while another drains): set-up 1, its products,
# its drain.
THESIS_LAYER_CYCLES = [6401, 2561 + 33 + 25, 2601, 41 + 36]
THESIS_LAYER_CYCLES_ALONE = [6418, 2586 + 58 + 34, 2618, 58 + 20]


def test_the_thesis_network():
    mapping, per_layer, totals = evaluate_network(DqnConfig(), dqn_layers(18))
    assert [row["latency_cycles"] for row in per_layer] == THESIS_LAYER_CYCLES
    # The two sums' last products wait a cycle for their partial sums' last writes.
    assert totals["latency_cycles"] == 11_698 and totals["passes"] == 7 and totals["stall_cycles"] == 2
    _, unsplit, unsplit_totals = evaluate_network(DqnConfig(), dqn_layers(18), split="never")
    assert unsplit_totals["latency_cycles"] == 12_087
    # Each product cycle, all 256 lanes multiply and add, idle ones included.
    assert totals["macs"] == 256 * 11_632
    assert totals["alms"] == compose(DqnConfig())[1].alms and totals["dsp_blocks"] == 256


# One pass worked by hand: a 1x1 convolution, 3 channels of 4 x 4 in, 4 out, on 2 modules x 4 lanes.
HAND_CONFIG = dataclasses.replace(REDUCED_CONFIG, adder_latency=2)
HAND_LAYER = ConvLayer("c", 3, 4, 4, 1, 1)
HAND_MAPPING = LayerMapping((Segment(0, 16, 1),))       # all 16 positions, one column block: 2 per group


def _hand_costs():
    """Latency and energy of the hand case, from the hardware's behaviour and the energy table."""
    groups, products = 8, 3                              # 16 positions, 2 per group; 3 input channels
    latency = matrix_module_latency(HAND_CONFIG.multiplier_latency, HAND_CONFIG.adder_latency)
    writes_per_group = 4                                  # 4 output channels, the group's two positions in one row
    write_cycles = 2                                      # two channels' rows a cycle, on both RAM ports
    product_cycles = groups * products                    # each group: its products (the bias is their seed)
    # Set-up 1 cycle (the descriptor, the first group's taps, its first rows); every later group's last product waits
    # for the one before to drain its results (latency + write cycles + 3 cycles after its last product); then the
    # last drain.
    stalls = (groups - 1) * (latency + write_cycles + 2 - (products - 1))
    drain = latency + write_cycles + 3
    cycles = 1 + product_cycles + stalls + drain
    lanes, modules, bits = 4, 2, 32
    multiply, add = energy_table.multiply_pj("fp32"), energy_table.add_pj("fp32")
    mac = product_cycles * modules * lanes * (multiply + add) + groups * modules * lanes * 1 * add
    weights = (product_cycles + groups) * modules * energy_table.storage_pj_per_word(256, lanes * bits)   # + bias
    writes = writes_per_group * groups
    activations = (2 * (1 + groups * products * 1) + writes) * energy_table.storage_pj_per_word(128, 12 * bits)
    registers = (product_cycles * modules * energy_table.storage_pj_per_word(24, bits)
                 + 2 * product_cycles * modules * lanes * energy_table.storage_pj_per_word(2, bits)
                 + 2 * groups * modules * lanes * energy_table.storage_pj_per_word(8, bits))
    return {"latency_cycles": cycles, "product_cycles": product_cycles, "stall_cycles": stalls,
            "drain_cycles": drain, "mac_pj": mac, "weight_ram_pj": weights, "activation_ram_pj": activations,
            "register_pj": registers, "energy_pj": mac + weights + activations + registers}


def test_a_pass_worked_by_hand():
    (shape,) = layer_shapes(HAND_CONFIG, (HAND_LAYER,))
    costs = evaluate(HAND_CONFIG, HAND_MAPPING, shape)
    assert {name: costs[name] for name in _hand_costs()} == pytest.approx(_hand_costs(), rel=1e-12)


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


def test_a_batch_keeps_each_case_apart():
    """The known cases (the thesis layers, the hand case) among many others in one batch (which shares passes
    between cases of the same shape and mapping) cost what they cost alone: the RTL's and the hand's figures."""
    thesis = DqnConfig()
    shapes = layer_shapes(thesis, dqn_layers(18))
    known = [(thesis, layer_mapping, shape)
             for layer_mapping, shape in zip(default_mapping(thesis, shapes).layers, shapes)]
    (hand_shape,) = layer_shapes(HAND_CONFIG, (HAND_LAYER,))
    known.append((HAND_CONFIG, HAND_MAPPING, hand_shape))
    others = random_cases(100, SEED)
    cases = [case for pair in zip(others, known + others[:len(others) - len(known)]) for case in pair]
    batch = evaluate_batch(pack(cases))
    where = [cases.index(case) for case in known]
    assert batch["latency_cycles"][where[:4]].tolist() == THESIS_LAYER_CYCLES_ALONE
    hand = _hand_costs()
    assert {name: batch[name][where[4]] for name in hand} == pytest.approx(hand, rel=1e-12)
    assert len(set(batch["alms"].tolist())) > 10


def test_cases_outside_the_family_are_refused():
    (shape,) = layer_shapes(REDUCED_CONFIG, (ConvLayer("c", 3, 4, 4, 1, 1),))
    with pytest.raises(ValueError, match="c: segment 0..15 C3: column_blocks 3 is not a power of two"):
        evaluate(REDUCED_CONFIG, LayerMapping((Segment(0, 16, 3),)), shape)
    with pytest.raises(ValueError, match="the area table has no matrix module for binary32 with multiplier latency 5"):
        evaluate(dataclasses.replace(REDUCED_CONFIG, multiplier_latency=5), LayerMapping((Segment(0, 16, 1),)), shape)


def test_a_graph_with_an_add_in_two_segments_costs_what_the_compiler_predicts():
    """The residual graph of tests/dqn/test_accelerator_amaranth.py (whose RTL counters equal the compiler's
    prediction), its first add in two segments, the later one first: the add's second pass reads the RAM its first
    writes (both addends and the sum in RAM 0), which the cost model takes from the compiler's RAMs, not a chain's."""
    layers = (ConvLayer("c1", 4, 6, 4, 3, 1, padding=1), ConvLayer("c2", 4, 6, 4, 3, 1, padding=1, relu=False),
              AddLayer("a1", skip="", relu=False), AddLayer("a2", skip="", source="a1"),
              DenseLayer("d", 4 * 6 * 6, 3, relu=False))
    default = default_mapping(REDUCED_CONFIG, layers)
    split_add = LayerMapping((Segment(10, 14, REDUCED_CONFIG.modules), Segment(0, 10, REDUCED_CONFIG.modules)))
    mapping = DqnMapping(default.layers[:2] + (split_add,) + default.layers[3:])
    plan = compile_network(REDUCED_CONFIG, layers, random_pairs(layers, np.random.default_rng(SEED)), mapping=mapping)
    _, _, totals = evaluate_network(REDUCED_CONFIG, layers, mapping, area=False)
    assert totals["latency_cycles"] == plan.estimated_cycles


def test_a_split_max_pools_sum_in_a_later_channel_tile_costs_what_the_compiler_predicts():
    """tests/dqn/test_golden.py's split max pool: its second tile's sum reads its partial sums from their first
    word, the words its tail writes, in the compiler's plan and in the cost model (they once disagreed, 38 cycles
    against 39: the sum's start delay 7, reading a word late, and 8, reading the tile's input channel's offset);
    38 cycles, as the RTL's counters measure them (`nnaccel dse validate`, tests/dse/rtl/test_validate.py)."""
    config, layers, mapping, pairs = split_max_pool()
    plan = compile_network(config, layers, pairs, mapping=mapping)
    tail, total = plan.layers[2].descriptor, plan.layers[3].descriptor
    assert (total["in_ram"], total["in_base"]) == (tail["out_ram"], tail["out_base"])
    shapes = layer_shapes(config, with_copy_passes(config, layers)[0])
    batch = pack(zip([config] * len(shapes), mapping.layers, shapes), area=False, one_run=True)
    assert batch.passes["start_delay"].tolist() == [layer.descriptor["start_delay"] for layer in plan.layers] == \
        [0, 0, 0, 6]
    assert evaluate_network(config, layers, mapping, area=False)[2]["latency_cycles"] == plan.estimated_cycles == 38


def segmented_add_block():
    """The smallest network whose add runs in segments that read the RAM the segment before writes: two 1 x 1
    convolutions of a 1 x 2 x 1 input (input, ``a`` and ``b`` alternate RAMs, so ``b`` and the input share one) and
    ``add input``, its two positions (rows) in two segments, the later first, on the reduced configuration in
    bfloat16: ``(config, layers, mapping)``."""
    config = reduced_configs()[1]
    layers = (ConvLayer("a", 1, (2, 1), 1, 1, 1, relu=False), ConvLayer("b", 1, (2, 1), 1, 1, 1, relu=False),
              AddLayer("add", skip="", relu=False))
    whole = LayerMapping((Segment(0, 2, config.modules),))
    mapping = DqnMapping((whole, whole, LayerMapping((Segment(1, 1, config.modules), Segment(0, 1, config.modules)))))
    return config, layers, mapping


def test_the_smallest_segmented_add_costs_what_the_compiler_predicts():
    """The add's second segment reads both addends from the RAM its first segment writes the sum to, so it waits
    for that segment's writes: the cost model takes the RAMs from the compiler's assignment (``assign_rams``); when
    it took a chain's answer (a layer's later passes read the other RAM) it said 62 cycles, the compiler 64, as
    ``nnaccel dse validate`` found on a downsampling block (``7 C2 + 0..6 C2``, docs/dse.md).  64 cycles as the
    RTL's counters measure them (tests/dse/rtl/test_validate.py)."""
    config, layers, mapping = segmented_add_block()
    plan = compile_network(config, layers, random_weights(layers, SEED), mapping=mapping)
    later, earlier = plan.layers[2].descriptor, plan.layers[3].descriptor
    assert later["out_ram"] == earlier["in_ram"] == later["in_ram"]
    shapes = layer_shapes(config, layers)
    batch = pack(zip([config] * len(shapes), mapping.layers, shapes), area=False, one_run=True)
    assert batch.passes["reads_previous"].tolist() == [True, True, True, True]
    assert evaluate_network(config, layers, mapping, area=False)[2]["latency_cycles"] == plan.estimated_cycles == 64


def test_the_cost_model_predicts_the_networks_validate_draws():
    """``nnaccel dse validate``'s draws over the reduced configurations and 12 random ones: 240 networks (residual
    blocks, downsampling blocks with copies, max pools, flat passes) with random mappings, adds in segments among
    them, the cost model's latency equal to the compiler's prediction in every one."""
    configs = reduced_configs() + validation_configs(np.random.default_rng(SEED), 12)
    draws = _draws_predicted(configs, 240)
    segmented_adds = sum(isinstance(layer, AddLayer) and len(layer_mapping.segments) > 1
                         for config, layers, plan in draws
                         for layer, layer_mapping in zip(with_copy_passes(config, layers)[0], plan.mapping.layers))
    assert segmented_adds >= 5


def test_the_cost_model_predicts_the_flat_networks_cycles():
    """``nnaccel dse validate``'s draws on the flat map's configurations: 32 random networks with depthwise-separable
    blocks (stride-2 depthwise layers among them) and random mappings, the cost model's latency equal to the
    compiler's prediction."""
    configs = [config for config in reduced_configs() + validation_configs(np.random.default_rng(0), 6)
               if config.flat_slots in (1, 2)]
    flat_passes, strided_passes = _flat_passes(plan for *_, plan in _draws_predicted(configs, 32))
    assert flat_passes >= 8 and strided_passes >= 2


def test_the_cost_model_predicts_four_slot_flat_networks_cycles():
    """Likewise on the reduced configuration with four channel slots of 3-word windows (4 x 4 MACs): 32 networks (6
    loads need 8 steps: only the 3 x 3 depthwise layers run flat, 6 of them, 4 of stride 2)."""
    configs = [config for config in reduced_configs() if config.flat_slots == 4]
    flat_passes, strided_passes = _flat_passes(plan for *_, plan in _draws_predicted(configs, 32))
    assert flat_passes >= 6 and strided_passes >= 3


def _draws_predicted(configs, count):
    """``count`` random networks and mappings over ``configs`` in turn, each cost model latency checked against the
    compiler's prediction; returns them, ``(config, layers, plan)`` each."""
    rng = np.random.default_rng(SEED)
    draws = []
    for index in range(count):
        config = configs[index % len(configs)]
        layers = sample_network(rng, config)
        plan = compile_network(config, layers, random_weights(layers, index), mapping=sample_mapping(rng, config,
                                                                                                     layers))
        assert evaluate_network(config, layers, plan.mapping, area=False)[2]["latency_cycles"] == \
            plan.estimated_cycles
        draws.append((config, layers, plan))
    return draws


def _flat_passes(plans):
    """The flat passes of ``plans`` and the stride-2 flat passes among them."""
    descriptors = [layer.descriptor for plan in plans for layer in plan.layers]
    return (sum(descriptor["flat"] for descriptor in descriptors),
            sum(descriptor["flat"] and descriptor["stride_x"] == 2 for descriptor in descriptors))
