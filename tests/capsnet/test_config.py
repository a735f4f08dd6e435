"""CapsNetConfig: parameter checks, derived sizes, the DSP-block count; the descriptor layout and encoder."""

import pytest

from nnaccel.hw.capsnet.config import CapsNetConfig, cyclone_v_dsp_blocks
from nnaccel.hw.capsnet.descriptor import DESCRIPTOR_FIELDS, descriptor_bits, descriptor_layout, encode_descriptor


@pytest.mark.parametrize(("arguments", "message"), [
    ({"conv_modules": 0}, "conv_modules must be an integer from 1 to 64, not 0"),
    ({"conv_lanes": 33}, "conv_lanes must be an integer from 1 to 32, not 33"),
    ({"matvec_lanes": 4.0}, "matvec_lanes must be an integer from 1 to 64, not 4.0"),
    ({"matvec_requantize_cycles": 17}, "matvec_requantize_cycles must be an integer from 1 to 16, not 17"),
    ({"matvec_requantize_cycles": 3}, "matvec_requantize_cycles must divide matvec_lanes \\(16\\), not 3"),
    ({"conv_multipliers": "alm"}, r"conv_multipliers must be one of \('dsp', 'logic'\), not 'alm'"),
    ({"matvec_multipliers": None}, r"matvec_multipliers must be one of \('dsp', 'logic'\), not None"),
    ({"row_elements": 0}, "row_elements must be an integer from 1 to 256, not 0"),
    ({"activation_depth": 1}, "activation_depth must be an integer from 2 to 65536, not 1"),
    ({"conv_weight_depth": True}, "conv_weight_depth must be an integer from 2 to 1048576, not True"),
    ({"bias_depth": 1 << 13}, "bias_depth must be an integer from 2 to 4096, not 8192"),
    ({"matvec_weight_depth": -1}, "matvec_weight_depth must be an integer from 2 to 1048576, not -1"),
    ({"prediction_depth": 1}, "prediction_depth must be an integer from 2 to 65536, not 1"),
    ({"max_layers": 17}, "max_layers must be an integer from 1 to 16, not 17"),
])
def test_rejects_bad_parameters(arguments, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        CapsNetConfig(**arguments)


def test_default_sizes_and_dsp_blocks():
    config = CapsNetConfig()
    assert (config.conv_macs, config.macs) == (192, 208)
    assert (config.activation_word_bits, config.conv_weight_word_bits, config.bias_word_bits,
            config.matvec_word_bits, config.host_data_bits) == (224, 256, 1024, 128, 1024)
    assert cyclone_v_dsp_blocks(192) == 64 and cyclone_v_dsp_blocks(16) == 6 and cyclone_v_dsp_blocks(1) == 1
    assert config.dsp_blocks == 70
    assert CapsNetConfig(conv_multipliers="logic").dsp_blocks == 6
    assert CapsNetConfig(conv_multipliers="logic", matvec_multipliers="logic").dsp_blocks == 0
    assert config.name == "capsnet_c32x6dsp_v16dsp_r28"


def test_descriptor_encoding():
    config = CapsNetConfig()
    layout = descriptor_layout(config)
    assert tuple(layout.members) == DESCRIPTOR_FIELDS and layout.size == descriptor_bits(config)
    assert encode_descriptor(config) == 0
    word = encode_descriptor(config, kind=1, in_ram=1, shift=31)
    assert word == 1 | 1 << 1 | 31 << (2 + 13)          # kind, in_ram, in_base (13 bits), shift
    with pytest.raises(ValueError, match=r"^descriptor fields unknown: \['colour'\]$"):
        encode_descriptor(config, colour=1)
    with pytest.raises(ValueError, match="^descriptor field shift must be an integer from 0 to 31, not 32$"):
        encode_descriptor(config, shift=32)
