"""The template design space behind DCP: nearest legal decoding and exhaustive enumeration."""

import numpy as np
import pytest

from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.dse.shared.layer import Layer, dqn_layers
from nnaccel.dse.template.cost_model import evaluate
from nnaccel.dse.template.dataflow_space import TemplateDataflowSpace
from nnaccel.dse.template.hardware import TemplateHardware
from nnaccel.dse.template.mapping import Mapping
from tests.dse.template.mapping_text import mapping_from_text

SPACE = TemplateDataflowSpace()
SMALL = Layer.conv(in_channels=4, in_size=6, out_channels=8, kernel=3, name="small")


@pytest.mark.parametrize("style", ["WS", "OS", "RS"])
def test_decoding_a_legal_code_gives_it_back(style):
    hardware = TemplateHardware(pe_x=12, pe_y=10, rf_words=16, dataflow=style)
    for layer in (dqn_layers()[1], dqn_layers()[3], SMALL):
        codes = SPACE.sample_codes(layer, hardware, 12, seed=5)
        for code, relaxed in zip(codes, relax(codes)):
            assert (SPACE.nearest(relaxed, layer, hardware) == code).all()


@pytest.mark.parametrize("style", ["WS", "OS", "RS"])
def test_any_relaxed_code_decodes_to_a_legal_dataflow(style):
    rng = np.random.default_rng(7)
    hardware = TemplateHardware(pe_x=8, pe_y=8, rf_words=4, dataflow=style, gb_kib=2)
    for layer in (dqn_layers()[0], dqn_layers()[2], SMALL):
        for _ in range(15):
            relaxed = np.stack([rng.uniform(-1, 8, (3, 7)), rng.uniform(0, 9, (3, 7))], axis=-1)
            code = SPACE.nearest(relaxed, layer, hardware)
            assert SPACE.violations(code, layer, hardware) == []


def relaxed_of(text):
    return relax(mapping_from_text(text).to_code()[None])[0]


def test_sizes_snap_to_the_nearest_factors_in_log2():
    dense = Layer.dense(in_features=16, out_features=4)
    hardware = TemplateHardware(pe_x=8, pe_y=8, rf_words=64, dataflow="OS")
    relaxed = relaxed_of("N1 C2 K1 Y1 X1 R1 S1 / K4 N1 C1 Y1 X1 R1 S1 / Y1 N1 K1 X1 R1 S1 C8")
    relaxed[0, 2, 1] = 1.3   # C at DRAM: 2^1.3, nearer 2 than 4
    relaxed[2, 2, 1] = 2.6   # C at RF: 2^2.6, nearer 8 (2^3) than 4; the product must be 16
    mapping = Mapping.from_code(SPACE.nearest(relaxed, dense, hardware))
    assert dict(mapping.loops(0))["C"] * dict(mapping.loops(2))["C"] == 16
    assert dict(mapping.loops(0))["C"] == 2 and dict(mapping.loops(2))["C"] == 8


def test_too_many_pes_move_to_a_temporal_loop():
    fc = Layer.dense(in_features=64, out_features=64)
    hardware = TemplateHardware(pe_x=8, pe_y=8, rf_words=64, dataflow="WS")
    relaxed = relaxed_of("K8 N1 C1 Y1 X1 R1 S1 / C16 N1 K8 Y1 X1 R1 S1 / N1 K1 C4 Y1 X1 R1 S1")
    code = SPACE.nearest(relaxed, fc, hardware)
    mapping = Mapping.from_code(code)
    assert mapping.pes_used <= 64 and mapping.violations(fc, hardware) == []
    assert mapping.parallel(0)[0] == "K" and mapping.parallel(1)[0] == "C"


def test_overflowing_register_file_moves_loops_out_and_innermost_rule_holds():
    fc = Layer.dense(in_features=64, out_features=64)
    hardware = TemplateHardware(pe_x=8, pe_y=8, rf_words=16, dataflow="OS")
    relaxed = relaxed_of("N1 K1 C1 Y1 X1 R1 S1 / K8 N1 C1 Y1 X1 R1 S1 / Y1 N1 X1 R1 S1 K8 C64")
    mapping = Mapping.from_code(SPACE.nearest(relaxed, fc, hardware))
    assert mapping.violations(fc, hardware) == []
    rf_loops = [d for d, s in mapping.loops(2) if s > 1]
    assert rf_loops and rf_loops[-1] == "C"  # OS keeps C innermost: the reduction stays in
    rf_tile = dict(mapping.loops(2))
    assert rf_tile["C"] * rf_tile["K"] + rf_tile["C"] + rf_tile["K"] <= 16 < 8 * 64


@pytest.mark.parametrize("style", ["WS", "OS", "RS"])
@pytest.mark.parametrize("layer", [Layer.conv(in_channels=2, in_size=2, out_channels=4, kernel=2),
                                   Layer.dense(in_features=12, out_features=4)])
def test_enumeration_is_legal_and_covers_every_sampled_cost(style, layer):
    hardware = TemplateHardware(pe_x=8, pe_y=8, rf_words=8, dataflow=style)
    codes = np.concatenate(list(SPACE.enumerate_codes(layer, hardware, limit=200_000)))
    assert len(codes) > 20
    for code in codes[:: max(1, len(codes) // 100)]:
        assert SPACE.violations(code, layer, hardware) == []
    costs = SPACE.evaluate(layer, hardware, codes)
    enumerated = set(zip(np.round(costs["latency"], 6), np.round(costs["energy"], 6)))
    for mapping in (Mapping.from_code(c) for c in SPACE.sample_codes(layer, hardware, 60,
                                                                         seed=2)):
        found = evaluate(hardware, mapping, layer)
        assert (round(found["latency_cycles"], 6), round(found["energy_pj"], 6)) in enumerated


def test_enumeration_declines_a_space_over_the_limit():
    hardware = TemplateHardware(pe_x=16, pe_y=16, rf_words=64, dataflow="RS")
    assert SPACE.enumerate_codes(dqn_layers()[1], hardware, limit=1_000_000) is None
