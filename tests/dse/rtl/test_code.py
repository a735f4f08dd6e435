"""RTL mappings in DCP's (3, 7, 2) code: the nest of each segment, decoded back; codes that are not a nest of
the hardware are refused with the reason."""

import numpy as np
import pytest

from nnaccel.dse.rtl.code import layer_mapping_from_code, segment_code
from nnaccel.dse.rtl.sampler import sample_config, sample_layer_mapping
from nnaccel.dse.shared.layer import DIM_INDEX
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.network import dqn_layers
from nnaccel.models.dqn.plan import default_mapping, layer_shapes


def entries(level):
    names = {index: name for name, index in DIM_INDEX.items()}
    return [f"{names[int(dim)]}{int(size)}" for dim, size in level]


def layer_code(config, shape, layer_mapping):
    """The layer code (segments, 3, 7, 2): its segments' codes in position order."""
    return np.stack([segment_code(config, shape, segment) for segment in layer_mapping.in_position_order()])


def test_the_thesis_mapping_as_codes():
    config = DqnConfig()
    shapes = layer_shapes(config, dqn_layers(18))
    mapping = default_mapping(config, shapes)
    conv1 = layer_code(config, shapes[0], mapping.layers[0])
    assert conv1.shape == (1, 3, 7, 2)
    # 16 positions per group over the modules, 400 positions walked; 1 channel block; 16 lanes, steps c, kh, kw.
    assert [entries(level) for level in conv1[0]] == [
        ["X16", "N1", "K1", "C1", "Y400", "R1", "S1"], ["K1", "N1", "C1", "Y1", "X1", "R1", "S1"],
        ["K16", "N1", "Y1", "X1", "C4", "R8", "S8"]]
    conv2 = layer_code(config, shapes[1], mapping.layers[1])
    # CONV_2's position 0 (first in position order) as 8 partial sums: the kernel's row halves x its 4 columns.
    assert [entries(level)[:1] for level in conv2[0]] == [["S8"], ["K2"], ["K16"]]
    assert entries(conv2[0][2])[-3:] == ["C16", "R2", "S1"]
    assert entries(conv2[1][0])[:5] == ["X8", "N1", "K1", "C1", "Y80"]
    fc2 = segment_code(config, shapes[3], mapping.layers[3].segments[0])
    assert entries(fc2[0])[0] == "S8" and entries(fc2[2])[-3:] == ["C16", "R1", "S2"]


def test_random_layer_mappings_decode_to_themselves_in_position_order():
    rng = np.random.default_rng(99)
    for _ in range(40):
        config = sample_config(rng, modules=16, lanes=16, row_elements=84)
        for shape in layer_shapes(config, dqn_layers(18)):
            mapping = sample_layer_mapping(rng, config, shape, max_passes=4)
            decoded = layer_mapping_from_code(config, shape, layer_code(config, shape, mapping))
            assert decoded.segments == mapping.in_position_order()


@pytest.mark.parametrize("edit, message", [
    (lambda code: code[0, 1, 0].__setitem__(1, 4), r"FC_1: 1 positions per group x 4 column blocks do not make the "
                                                   r"16 matrix modules"),
    (lambda code: code[0, 2, 0].__setitem__(1, 8), r"an RTL code runs channel blocks \(K\) over the modules and "
                                                   r"K x 16 over the lanes"),
    (lambda code: code[0, 0, 0].__setitem__(0, DIM_INDEX["C"]), r"runs positions \(X\) or kernel-column chunks \(S\)"),
    (lambda code: code[0, 2, 4].__setitem__(1, 31), r"FC_1: the code of segment 0 C16 must be"),
])
def test_codes_that_are_no_nest_of_the_hardware_are_refused(edit, message):
    config = DqnConfig()
    shape = layer_shapes(config, dqn_layers(18))[2]
    code = layer_code(config, shape, default_mapping(config, dqn_layers(18)).layers[2])
    edit(code)
    with pytest.raises(ValueError, match=message):
        layer_mapping_from_code(config, shape, code)
    with pytest.raises(ValueError, match=r"an RTL layer code has shape \(segments, 3, 7, 2\)"):
        layer_mapping_from_code(config, shape, code[0])
