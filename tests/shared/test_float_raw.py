# amaranth: UnusedElaboratable=no
"""hw.shared.float_raw helpers (leading-zero count, barrel shifts, unpack) and the rounder's width check,
exhaustively on small widths with Amaranth's simulator."""

import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from nnaccel.hw.shared.float_format import FloatFormat
from nnaccel.hw.shared.float_raw import leading_zeros, raw_float_layout, shift_left, shift_right_jamming, unpack
from nnaccel.hw.shared.float_rounder import round_to_format


def _exhaustive(m, inputs, check):
    """Drive every combination of the input signals' values and call check(values, ctx)."""
    simulator = Simulator(m)

    async def testbench(ctx):
        def sweep(index, values):
            if index == len(inputs):
                yield values
                return
            for value in range(1 << len(inputs[index])):
                yield from sweep(index + 1, values + [value])
        for values in sweep(0, []):
            for signal, value in zip(inputs, values):
                ctx.set(signal, value)
            check(values, ctx)

    simulator.add_testbench(testbench)
    simulator.run()


@pytest.mark.parametrize("width", [1, 5, 8])
def test_leading_zeros(width):
    m = Module()
    value, count = Signal(width), Signal(8)
    m.d.comb += count.eq(leading_zeros(value))
    _exhaustive(m, [value], lambda v, ctx: _equal(ctx.get(count), width - v[0].bit_length(), v))


def test_shift_left():
    m = Module()
    value, amount, shifted = Signal(6), Signal(3), Signal(6)
    m.d.comb += shifted.eq(shift_left(value, amount))
    _exhaustive(m, [value, amount], lambda v, ctx: _equal(ctx.get(shifted), (v[0] << v[1]) & 0x3F, v))


@pytest.mark.parametrize("amount_bits", [2, 4])     # amounts that can / cannot reach the width
def test_shift_right_jamming(amount_bits):
    m = Module()
    value, amount, shifted = Signal(6), Signal(amount_bits), Signal(6)
    m.d.comb += shifted.eq(shift_right_jamming(value, amount))

    def expected(value, amount):
        return (value >> amount) | int(value & ((1 << amount) - 1) != 0)
    _exhaustive(m, [value, amount], lambda v, ctx: _equal(ctx.get(shifted), expected(*v), v))


@pytest.mark.parametrize("flush_to_zero", [False, True])
def test_unpack(flush_to_zero):
    fmt = FloatFormat(exponent_bits=3, mantissa_bits=2)
    m = Module()
    bits = Signal(fmt.width)
    raw = unpack(m, fmt, bits, flush_to_zero=flush_to_zero, name="raw")

    def check(values, ctx):
        encoded = values[0]
        sign, field, mantissa = encoded >> 5, (encoded >> 2) & 7, encoded & 3
        zero = field == 0 and (mantissa == 0 or flush_to_zero)
        expected = {"is_nan": field == 7 and mantissa != 0, "is_inf": field == 7 and mantissa == 0,
                    "is_zero": zero, "sign": sign, "exponent": max(field, 1),
                    "significand": 0 if zero else mantissa | (4 if field else 0)}
        got = {name: ctx.get(getattr(raw, name)) for name in expected}
        _equal(got, {name: int(value) for name, value in expected.items()}, values)
    _exhaustive(m, [bits], check)


def test_rounder_needs_round_and_sticky_bits():
    fmt = FloatFormat(exponent_bits=5, mantissa_bits=10)
    raw = Signal(raw_float_layout(fmt, 12))
    with pytest.raises(ValueError, match=r"^raw significand of 12 bits is too narrow to round to binary16: "
                                         r"it needs at least 13$"):
        round_to_format(Module(), fmt, raw, flush_to_zero=False)


def _equal(got, expected, inputs):
    assert got == expected, f"inputs {inputs}: got {got}, expected {expected}"
