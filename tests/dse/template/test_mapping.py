import numpy as np
import pytest

from nnaccel.dse.shared.layer import Layer, dqn_layers
from nnaccel.dse.template.hardware import TemplateHardware
from nnaccel.dse.template.mapping import Mapping, MappingError
from tests.dse.template.mapping_text import mapping_from_text

DENSE = Layer.dense(in_features=4, out_features=2)
OS_HW = TemplateHardware(pe_x=8, pe_y=8, rf_words=16, dataflow="OS")


def mapping(dram, gb, rf):
    return mapping_from_text(f"{dram} / {gb} / {rf}")


LEGAL = mapping("N1 C2 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C2")


def test_code_is_dcp_shape_and_round_trips():
    code = LEGAL.to_code()
    assert code.shape == (3, 7, 2)
    assert code[1, 0].tolist() == [1, 2]  # GB level: parallel dim K (index 1) on 2 PEs
    assert Mapping.from_code(code) == LEGAL
    assert Mapping.from_dict(LEGAL.to_dict()) == LEGAL
    assert LEGAL.pes_used == 2
    assert LEGAL.describe() == "DRAM: Nx1 PEs | C2; GB: Kx2 PEs | -; RF: Yx1 PEs | C2"


def test_legal_mapping_passes():
    assert LEGAL.violations(DENSE, OS_HW) == []
    LEGAL.validate(DENSE, OS_HW)


@pytest.mark.parametrize("levels, message", [
    (("N1 C2 K1 Y1 X1 R1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C2"),
     "level DRAM must list each of N, K, C, Y, X, R, S exactly once"),
    (("N1 C2 K1 Y1 X1 R1 S1", "K0 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C2"),
     "level GB size of K must be a positive integer, not 0"),
])
def test_malformed_mappings_are_rejected(levels, message):
    with pytest.raises(MappingError) as error:
        mapping(*levels)
    assert message in str(error.value)


def test_wrong_level_count_and_code_shape():
    with pytest.raises(MappingError, match="a mapping has 3 levels"):
        Mapping(LEGAL.levels[:2])
    with pytest.raises(MappingError, match=r"a mapping code has shape \(3, 7, 2\)"):
        Mapping.from_code(np.zeros((2, 7, 2), dtype=int))


@pytest.mark.parametrize("levels, hardware, message", [
    (("N1 C2 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C4"), OS_HW,
     "tile sizes of C multiply to 8 (2 x 1 x 4), the layer's bound is 4"),
    (("N1 C2 K1 Y1 X1 R1 S1", "C2 N1 K2 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C1"), OS_HW,
     "level GB unrolls C over the PEs; dataflow OS unrolls only N, K, Y, X"),
    (("N1 C1 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 C4 S1"),
     TemplateHardware(pe_x=8, pe_y=8, rf_words=16, dataflow="WS"),
     "innermost RF loop is C; dataflow WS keeps it to N, Y, X"),
    (("N1 C1 K1 Y1 X1 R1 S1", "K2 N1 C1 Y1 X1 R1 S1", "Y1 N1 K1 X1 R1 S1 C4"),
     TemplateHardware(pe_x=8, pe_y=8, rf_words=8, dataflow="OS"),
     "RF tile needs 9 (W 4 + I 4 + O 1) words per PE, the register file holds 8"),
])
def test_broken_constraints_are_named(levels, hardware, message):
    with pytest.raises(MappingError) as error:
        mapping(*levels).validate(DENSE, hardware)
    assert message in str(error.value)


def test_pe_count_and_global_buffer_capacity():
    fc1 = dqn_layers()[2]  # K 256, C 2592
    hardware = TemplateHardware(pe_x=8, pe_y=8, rf_words=4, dataflow="OS", gb_kib=1)
    too_wide = mapping("N1 C2592 K2 Y1 X1 R1 S1", "K128 N1 C1 Y1 X1 R1 S1",
                       "Y1 N1 K1 X1 R1 S1 C1")
    assert too_wide.violations(fc1, hardware) == ["uses 128 PEs, the array has 64 (8x8)"]
    too_big = mapping("N1 K4 C1 Y1 X1 R1 S1", "K64 N1 C2592 Y1 X1 R1 S1",
                      "Y1 N1 K1 X1 R1 S1 C1")
    found = too_big.violations(fc1, hardware)
    assert found == ["GB tile needs 168544 (W 165888 + I 2592 + O 64) words, the global buffer "
                     "holds 512 (1 KiB of 16-bit words)"]
