"""The cost model against access counts worked out by hand on tiny layers, the same figures inside a batch of
random cases, and bounds every mapping must respect found from the layer alone."""

import numpy as np
import pytest

from nnaccel.dse.shared import energy_table
from nnaccel.dse.shared.layer import Layer, LayerType
from nnaccel.dse.template.cost_model import evaluate, evaluate_batch, pack
from nnaccel.dse.template.hardware import TemplateHardware
from nnaccel.dse.template.loopnest import footprints
from nnaccel.dse.template.sampler import sample_hardware, sample_mapping
from tests.dse.template.mapping_text import mapping_from_text

DENSE = Layer.dense(in_features=4, out_features=2)  # 8 MACs
OS_HW = TemplateHardware(pe_x=8, pe_y=8, rf_words=16, dataflow="OS")


def mapping(dram, gb, rf):
    return mapping_from_text(f"{dram} / {gb} / {rf}")


def test_outputs_stay_put_while_the_reduction_runs_outside():
    # DRAM loops C2; K on 2 PEs; RF loops C2 (innermost). Weights and inputs are loaded twice
    # (once per DRAM C step), each load a distinct half: every word moves once. The output tile
    # stays in the RFs across both C loops: written back once, never fetched again.
    costs = evaluate(OS_HW, mapping("N1 C2 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1",
                                    "Y1 N1 K1 X1 R1 S1 C2"), DENSE)
    assert costs["macs"] == 8 and costs["pes_used"] == 2 and costs["compute_cycles"] == 4
    assert costs["dram_reads"] == 8 + 4          # all weights + all inputs, once
    assert costs["dram_writes"] == 2             # the two outputs
    assert costs["gb_writes"] == 12 + 2          # from DRAM + outputs up from the array
    assert costs["gb_reads"] == 12 + 2           # to the array (inputs multicast) + to DRAM
    assert costs["rf_reads"] == 3 * 8 + 2        # W, I, psum per MAC + one drain per PE
    assert costs["rf_writes"] == 8 + 2 * (2 * 2 + 2 * 2)  # psum per MAC + W, I tiles per PE
    assert costs["latency_cycles"] == 4          # 28 GB words at 32/cycle < 4 compute cycles


def test_partial_sums_come_back_when_the_reduction_loop_is_outside_the_output_loop():
    # One PE; DRAM loops C2 then K2 inside; RF loop C2. Inputs stay across the inner K loop
    # (loaded 2 times), weights are loaded 4 times, outputs 4 times of which 2 refetch psums.
    costs = evaluate(OS_HW, mapping("N1 C2 K2 Y1 X1 R1 S1", "Y1 N1 K1 C1 X1 R1 S1",
                                    "X1 N1 K1 Y1 R1 S1 C2"), DENSE)
    assert costs["compute_cycles"] == 8
    assert costs["dram_reads"] == 4 * 2 + 2 * 2 + 2   # W tiles, I tiles, psum refetches
    assert costs["dram_writes"] == 4                  # every residency writes back
    assert costs["gb_reads"] == 12 + 2 + 4
    assert costs["gb_writes"] == 4 + 12 + 2
    assert costs["rf_reads"] == 24 + 4
    assert costs["rf_writes"] == 8 + (4 * 2 + 2 * 2) + 2


def test_latency_is_the_slowest_of_compute_and_each_memory_level():
    layer_mapping = mapping("N1 C2 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C2")
    gb_bound = TemplateHardware(pe_x=8, pe_y=8, rf_words=16, dataflow="OS", gb_words_per_cycle=1)
    assert evaluate(gb_bound, layer_mapping, DENSE)["latency_cycles"] == 28
    dram_bound = TemplateHardware(pe_x=8, pe_y=8, rf_words=16, dataflow="OS", dram_gbps=1.0)
    # 14 DRAM words of 2 bytes at 1 byte per cycle (1 GB/s at 1 GHz).
    assert evaluate(dram_bound, layer_mapping, DENSE)["latency_cycles"] == 28
    assert evaluate(dram_bound, layer_mapping, DENSE)["dram_cycles"] == 28


def test_energy_and_area_compose_the_table():
    costs = evaluate(OS_HW, mapping("N1 C2 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1",
                                    "Y1 N1 K1 X1 R1 S1 C2"), DENSE)
    expected = (8 * energy_table.mac_pj("fp16")
                + (26 + 24) * energy_table.storage_pj_per_word(16, 16)
                + 28 * energy_table.storage_pj_per_word(108 * 1024 * 8 // 16, 16)
                + 14 * energy_table.dram_pj_per_word(16))
    assert costs["energy_pj"] == pytest.approx(expected)
    assert costs["area_um2"] == pytest.approx(
        64 * (3000 + 16 * 16 * 4.522) + 108 * energy_table.sram_um2_per_kib())


def test_input_tiles_include_the_filter_halo_at_the_stride():
    extents = np.array([[1.0, 1, 2, 3, 1, 3, 2]])  # N K C Y X R S
    for stride, rows in ((1, 5), (2, 7)):
        weights, inputs, outputs = footprints(extents, np.array([int(LayerType.CONV)]),
                                              np.array([stride]))[0]
        assert (weights, outputs) == (2 * 3 * 2, 3)
        assert inputs == 2 * rows * 2  # C x rows x (cols = (1 - 1) * stride + 2)


def test_depthwise_weights_and_outputs_follow_the_channel():
    extents = np.array([[1.0, 1, 4, 2, 2, 3, 3]])
    weights, inputs, outputs = footprints(extents, np.array([int(LayerType.DEPTHWISE)]),
                                          np.array([1]))[0]
    assert (weights, inputs, outputs) == (4 * 9, 4 * 4 * 4, 4 * 2 * 2)


HAND_CASES = (      # (mapping, what it costs, worked out above)
    (("N1 C2 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C2"),
     {"macs": 8, "compute_cycles": 4, "dram_reads": 12, "dram_writes": 2, "gb_reads": 14, "gb_writes": 14,
      "rf_reads": 26, "rf_writes": 24, "latency_cycles": 4}),
    (("N1 C2 K2 Y1 X1 R1 S1", "Y1 N1 K1 C1 X1 R1 S1", "X1 N1 K1 Y1 R1 S1 C2"),
     {"macs": 8, "compute_cycles": 8, "dram_reads": 14, "dram_writes": 4, "gb_reads": 18, "gb_writes": 18,
      "rf_reads": 28, "rf_writes": 22}),
)


def _random_cases(count, seed):
    rng = np.random.default_rng(seed)
    layers = [Layer.conv(in_channels=3, in_size=12, out_channels=8, kernel=3, stride=1),
              Layer.conv(in_channels=16, in_size=20, out_channels=32, kernel=4, stride=2),
              Layer(y=10, x=10, r=3, s=3, k=8, c=8, type=LayerType.DEPTHWISE),
              Layer.dense(in_features=96, out_features=10, batch=2)]
    cases = []
    for index in range(count):
        hardware = sample_hardware(rng, number_format=("fp32", "bf16", "fp16", "int8")[index % 4])
        layer = layers[index % len(layers)]
        cases.append((hardware, sample_mapping(layer, hardware, rng), layer))
    return cases


def test_a_batch_gives_the_hand_figures_among_random_cases():
    cases = _random_cases(40, seed=12)
    hand = [(OS_HW, mapping(*levels), DENSE) for levels, _ in HAND_CASES]
    cases[7:7] = hand[:1]
    cases[23:23] = hand[1:]
    batch = evaluate_batch(pack(cases))
    for case, (_, expected) in zip(hand, HAND_CASES):
        index = cases.index(case)
        assert {name: batch[name][index] for name in expected} == expected


def test_every_mapping_does_the_layer_s_macs_and_moves_every_word_at_least_once():
    """Bounds found from the layers alone: a legal mapping runs each MAC of the nest once, every weight and input
    word comes from DRAM at least once and every output word goes back at least once."""
    cases = _random_cases(40, seed=13)
    batch = evaluate_batch(pack(cases))
    for index, (hardware, _, layer) in enumerate(cases):
        n, k, c, y, x, r, s = layer.loop_bounds()
        weights = (k * c if layer.type != LayerType.DEPTHWISE else c) * r * s
        inputs = n * c * layer.y * layer.x if layer.stride == 1 or layer.type == LayerType.DENSE else None
        outputs = n * (layer.k if layer.type != LayerType.DEPTHWISE else c) * y * x
        assert batch["macs"][index] == layer.macs
        assert batch["dram_reads"][index] >= weights + (inputs or 0)
        assert batch["dram_writes"][index] >= outputs
        assert batch["pes_used"][index] <= hardware.pes
    assert len(set(batch["latency_cycles"].tolist())) > 10
