"""FloatFormat: derived sizes, presets, lookup by name, canonical NaN, validation messages."""

import pytest

from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32, PRESETS, FloatFormat, float_format


@pytest.mark.parametrize("fmt, width, bias, all_ones, nan, name", [
    (BINARY32, 32, 127, 0xFF, 0x7FC00000, "binary32"),
    (BINARY16, 16, 15, 0x1F, 0x7E00, "binary16"),
    (BFLOAT16, 16, 127, 0xFF, 0x7FC0, "bfloat16"),
    (FloatFormat(exponent_bits=4, mantissa_bits=3), 8, 7, 0xF, 0x7C, "e4m3"),
])
def test_derived_sizes(fmt, width, bias, all_ones, nan, name):
    assert (fmt.width, fmt.bias, fmt.exponent_all_ones, fmt.canonical_nan, fmt.name) == \
        (width, bias, all_ones, nan, name)


def test_presets_and_lookup():
    assert BINARY32 == FloatFormat(exponent_bits=8, mantissa_bits=23)
    assert FloatFormat(exponent_bits=8, mantissa_bits=23).name == "binary32"
    assert hash(BINARY16) == hash(FloatFormat(exponent_bits=5, mantissa_bits=10))
    assert BINARY16 != BFLOAT16
    assert set(PRESETS) == {"binary32", "binary16", "bfloat16"}
    assert float_format("bfloat16") is BFLOAT16
    assert repr(BINARY32) == "FloatFormat(exponent_bits=8, mantissa_bits=23)"


def test_layout_and_infinity():
    assert BINARY32.layout.size == 32
    assert BINARY32.layout["mantissa"].offset == 0
    assert BINARY32.layout["exponent"].offset == 23
    assert BINARY32.layout["sign"].offset == 31
    assert BINARY32.infinity() == 0x7F800000
    assert BINARY32.infinity(sign=1) == 0xFF800000


def test_properties_are_read_only():
    with pytest.raises(AttributeError):
        BINARY32.width = 16


def test_unknown_name():
    with pytest.raises(ValueError,
                       match=r"^unknown float format 'binary64'; presets are binary32, binary16, bfloat16$"):
        float_format("binary64")


@pytest.mark.parametrize("value", [1, 17, 8.0, True, "8"])
def test_exponent_bits_validation(value):
    with pytest.raises(ValueError, match=rf"^exponent_bits must be an integer from 2 to 16, not {value!r}$"):
        FloatFormat(exponent_bits=value, mantissa_bits=7)


@pytest.mark.parametrize("value", [0, 31, 7.0, False])
def test_mantissa_bits_validation(value):
    with pytest.raises(ValueError, match=rf"^mantissa_bits must be an integer from 1 to 30, not {value!r}$"):
        FloatFormat(exponent_bits=8, mantissa_bits=value)


def test_keyword_only():
    with pytest.raises(TypeError):
        FloatFormat(8, 23)
