"""The record passed between the stages of the float units, the unpack (classify) stage and the
bit-manipulation helpers the units share (leading-zero count, barrel shifts).

Raw float record (:func:`raw_float_layout`), after berkeley-hardfloat's ``RawFloat``:

============  ================================================================================
is_nan        the value is a NaN (the rounder then emits the canonical NaN)
is_inf        the value is an infinity of sign ``sign``
is_zero       the value is a zero of sign ``sign``
sign          sign bit
exponent      signed, ``exponent_bits + 2`` wide: the *biased* exponent of the significand's
              most significant bit (so subnormal operands carry exponent 1, and a raw result may
              lie outside 1 .. 2**exponent_bits - 2 before rounding)
significand   unsigned, any width ``W``: value = significand * 2**(exponent - bias - (W - 1))
============  ================================================================================

The exponent and significand are meaningful only when none of the three flags is set.
"""

from amaranth.hdl import Cat, Const, Mux, Signal, signed
from amaranth.lib import data

__all__ = ["raw_float_layout", "unpack", "leading_zeros", "shift_left", "shift_right_jamming"]


def raw_float_layout(fmt, significand_bits):
    return data.StructLayout({
        "is_nan": 1,
        "is_inf": 1,
        "is_zero": 1,
        "sign": 1,
        "exponent": signed(fmt.exponent_bits + 2),
        "significand": significand_bits,
    })


def unpack(m, fmt, bits, *, flush_to_zero, name):
    """Classify the encoded value ``bits`` into a raw record (significand ``mantissa_bits + 1`` wide,
    hidden bit on top). With ``flush_to_zero`` subnormal operands count as zeros of their sign."""
    encoded = fmt.layout(bits)
    raw = Signal(raw_float_layout(fmt, fmt.mantissa_bits + 1), name=name)
    exponent_zero = ~encoded.exponent.any()
    exponent_ones = encoded.exponent.all()
    mantissa_zero = ~encoded.mantissa.any()
    is_zero = exponent_zero & (mantissa_zero | Const(flush_to_zero))
    m.d.comb += [
        raw.is_nan.eq(exponent_ones & ~mantissa_zero),
        raw.is_inf.eq(exponent_ones & mantissa_zero),
        raw.is_zero.eq(is_zero),
        raw.sign.eq(encoded.sign),
        raw.exponent.eq(Mux(exponent_zero, 1, encoded.exponent)),
        raw.significand.eq(Mux(is_zero, 0, Cat(encoded.mantissa, ~exponent_zero))),
    ]
    return raw


def leading_zeros(value):
    """Number of leading zero bits of ``value`` (``len(value)`` when it is zero), as a balanced tree
    of 2:1 multiplexers (depth log2 of the width)."""
    width = len(value)
    padded_width = 1 << width.bit_length()      # > width: room for the marker bit below the value
    # A one just below the value makes the count of an all-zero value come out as `width`, and the
    # padded value is never all zero.
    padded = Cat(Const(0, padded_width - width - 1), Const(1, 1), value)
    return _leading_zeros_tree(padded)[0]


def _leading_zeros_tree(value):
    """(count, all_zero) of a power-of-two-wide value; count is log2(width) bits, meaningful only
    when the value is not all zero."""
    if len(value) == 1:
        return Const(0, 0), ~value[0]
    half = len(value) // 2
    low_count, low_zero = _leading_zeros_tree(value[:half])
    high_count, high_zero = _leading_zeros_tree(value[half:])
    count = Mux(high_zero, Cat(low_count, Const(1, 1)), Cat(high_count, Const(0, 1)))
    return count, high_zero & low_zero


def shift_left(value, amount):
    """``value << amount`` kept to ``len(value)`` bits, as one 2:1 multiplexer stage per bit of the
    unsigned ``amount`` (a barrel shifter)."""
    width = len(value)
    for stage in range(len(amount)):
        step = min(1 << stage, width)
        value = Mux(amount[stage], Cat(Const(0, step), value[:width - step]), value)
    return value


def shift_right_jamming(value, amount):
    """``value >> amount`` with the OR of every bit shifted out ORed into the result's LSB (the
    sticky bit), as berkeley-hardfloat's ``shiftRightJam``. ``amount`` is unsigned; amounts of
    ``len(value)`` or more leave only the sticky bit."""
    width = len(value)
    if (1 << len(amount)) - 1 >= width:
        amount = Mux(amount >= Const(width, len(amount)), width, amount)
    wide = Cat(Const(0, width), value) >> amount           # low half: the bits shifted out
    return wide[width:] | wide[:width].any()
