# amaranth: UnusedElaboratable=no
"""What FloatMultiplier and FloatAdder share: parameters, their validation messages, ports, names."""

import pytest
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.float_adder import FloatAdder
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY32
from nnaccel.hw.shared.float_multiplier import FloatMultiplier

UNITS = pytest.mark.parametrize("unit_class", [FloatMultiplier, FloatAdder])


@UNITS
def test_defaults_and_properties(unit_class):
    unit = unit_class()
    assert (unit.fmt, unit.latency, unit.flush_to_zero) == (BINARY32, 2, False)
    with pytest.raises(AttributeError):
        unit.latency = 3


@UNITS
def test_ports(unit_class):
    members = dict(unit_class(fmt=BFLOAT16).signature.members)
    operands = data.StructLayout({"a": 16, "b": 16})
    assert members == {"operands": In(stream.Signature(operands, always_ready=True)),
                       "result": Out(stream.Signature(16, always_ready=True))}


def test_module_names():
    assert FloatMultiplier().module_name == "float_multiplier_binary32_l2"
    assert FloatAdder(fmt=BFLOAT16, latency=0, flush_to_zero=True).module_name == "float_adder_bfloat16_l0_ftz"


@UNITS
def test_fmt_validation(unit_class):
    with pytest.raises(TypeError, match=r"^fmt must be a FloatFormat, not 'binary32'$"):
        unit_class(fmt="binary32")


@UNITS
@pytest.mark.parametrize("value", [-1, 1.0, True, None])
def test_latency_validation(unit_class, value):
    with pytest.raises(ValueError, match=rf"^latency must be a non-negative integer, not {value!r}$"):
        unit_class(latency=value)


@UNITS
@pytest.mark.parametrize("value", [0, 1, "yes", None])
def test_flush_to_zero_validation(unit_class, value):
    with pytest.raises(TypeError, match=rf"^flush_to_zero must be a bool, not {value!r}$"):
        unit_class(flush_to_zero=value)


@UNITS
def test_keyword_only(unit_class):
    with pytest.raises(TypeError):
        unit_class(BINARY32)
