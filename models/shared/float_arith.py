"""Golden models of the float units: ``float_mul`` and ``float_add`` on raw bit patterns.

Both take a :class:`hw.shared.float_format.FloatFormat` and two arrays (or scalars) of encoded values and
return the encoded results as an unsigned array (``uint16`` for widths up to 16, else ``uint32``),
bit-exact with :class:`hw.shared.float_multiplier.FloatMultiplier` and :class:`hw.shared.float_adder.FloatAdder`:
round to nearest even, full subnormal support (or the units' ``flush_to_zero`` behaviour), and the
format's canonical NaN for every NaN result.

Two implementations:

* :func:`bitlevel_mul`, :func:`bitlevel_add`: vectorised integer models for any format, computing
  what the hardware computes in the same order (unpack; exact significand product, or alignment
  with three guard bits and a jammed sticky bit followed by the exact sum; then the one rounding step
  of :mod:`hw.shared.float_rounder`, mirrored by :func:`_round_to_format`).
* NumPy's own ``float32`` / ``float16`` arithmetic (IEEE-754, round to nearest even, on x86-64 with
  subnormals) for binary32 and binary16 without flush-to-zero, and for bfloat16 float32 arithmetic rounded once to
  bfloat16: the fast paths ``float_mul`` and ``float_add`` take there. ``tests/shared/test_float_arith.py``
  checks that both agree bit for bit.

:func:`from_binary32` rounds float32 values into another format the way a host would before writing them to
hardware of that format: round to nearest even (the same rounding step), subnormals kept, overflow to infinity,
every NaN to the format's canonical NaN; binary32 passes through unchanged.  :func:`to_binary32` goes back: the
values of a narrower format as float32, exactly (every bfloat16 and binary16 value is a float32 value).
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.hw.shared.float_adder import GUARD_BITS
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32

__all__ = ["float_mul", "float_add", "float_max", "bitlevel_mul", "bitlevel_add", "from_binary32", "to_binary32", "is_nan", "bits_dtype"]

_NATIVE = {BINARY32: (np.float32, np.uint32), BINARY16: (np.float16, np.uint16)}


def bits_dtype(fmt):
    """The unsigned dtype results of ``fmt`` are returned in."""
    return np.uint16 if fmt.width <= 16 else np.uint32


def is_nan(fmt, bits):
    bits = np.asarray(bits, dtype=np.int64)
    return (((bits >> fmt.mantissa_bits) & fmt.exponent_all_ones) == fmt.exponent_all_ones) & \
        ((bits & _mask(fmt.mantissa_bits)) != 0)


def float_mul(fmt, a, b, *, flush_to_zero=False):
    """``a * b`` rounded to nearest even, on encoded values of ``fmt``."""
    if not flush_to_zero and fmt in _NATIVE:
        return _native(fmt, np.multiply, a, b)
    if not flush_to_zero and fmt == BFLOAT16:
        return _bfloat16_via_float32(np.multiply, a, b)
    return bitlevel_mul(fmt, a, b, flush_to_zero=flush_to_zero)


def float_add(fmt, a, b, *, flush_to_zero=False):
    """``a + b`` rounded to nearest even, on encoded values of ``fmt``."""
    if not flush_to_zero and fmt in _NATIVE:
        return _native(fmt, np.add, a, b)
    if not flush_to_zero and fmt == BFLOAT16:
        return _bfloat16_via_float32(np.add, a, b)
    return bitlevel_add(fmt, a, b, flush_to_zero=flush_to_zero)


def float_max(fmt, a, b):
    """The larger of ``a`` and ``b`` (encoded values of ``fmt``), bit-exact with
    :class:`hw.shared.float_maximum.FloatMaximum`: the format's canonical NaN if either is a NaN, else the larger
    in the order ``-inf < ... < -0 < +0 < ... < +inf`` (``+0`` beats ``-0``; equal encodings give that encoding).
    """
    dtype = bits_dtype(fmt)
    a, b = (np.asarray(x).astype(np.int64) for x in (a, b))
    sign_bit = 1 << (fmt.width - 1)
    keys = [np.where(x & sign_bit, ~x & _mask(fmt.width), x | sign_bit) for x in (a, b)]
    larger = np.where(keys[0] >= keys[1], a, b)
    return np.where(is_nan(fmt, a) | is_nan(fmt, b), fmt.canonical_nan, larger).astype(dtype)


def _native(fmt, operation, a, b):
    dtype, uint = _NATIVE[fmt]
    a, b = (np.asarray(x).astype(uint, copy=False).view(dtype) for x in (a, b))
    with np.errstate(all="ignore"):
        result = np.asarray(operation(a, b))
    bits = result.view(uint)
    nans = np.isnan(result)
    if nans.any():
        bits = np.where(nans, uint(fmt.canonical_nan), bits).astype(uint)
    return bits


def _bfloat16_via_float32(operation, a, b):
    """bfloat16 ``a op b`` through float32: a product of two bfloat16 values is exact in float32, and a sum rounded
    once to float32 rounds to bfloat16 as the exact sum would (24 >= 2 * 8 + 2 significand bits: no double rounding),
    so float32 arithmetic, then one round to nearest even of the float32 bits to their top 16, is bit-exact with
    the bit-level model (tests/shared/test_float_arith.py checks both on random operands)."""
    wide_a, wide_b = ((np.asarray(x).astype(np.uint32) << 16).view(np.float32) for x in (a, b))
    with np.errstate(all="ignore"):
        wide = np.asarray(operation(wide_a, wide_b))
    bits = wide.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(wide), np.uint16(BFLOAT16.canonical_nan), rounded).astype(np.uint16)


def _mask(bits):
    return (1 << bits) - 1


@dataclass
class _Raw:
    """The raw record of hw.shared.float_raw as int64 arrays (flags as bool arrays)."""
    is_nan: np.ndarray
    is_inf: np.ndarray
    is_zero: np.ndarray
    sign: np.ndarray
    exponent: np.ndarray
    significand: np.ndarray


def _operand_bits(fmt, a, b):
    """Both operands as int64 arrays of one shape, cut to the format's width."""
    return (np.asarray(x).astype(np.int64) & _mask(fmt.width) for x in np.broadcast_arrays(a, b))


def _unpack(fmt, bits, flush_to_zero):
    field = (bits >> fmt.mantissa_bits) & fmt.exponent_all_ones
    mantissa = bits & _mask(fmt.mantissa_bits)
    exponent_zero = field == 0
    exponent_ones = field == fmt.exponent_all_ones
    zero = exponent_zero & ((mantissa == 0) | flush_to_zero)
    return _Raw(is_nan=exponent_ones & (mantissa != 0), is_inf=exponent_ones & (mantissa == 0), is_zero=zero,
                sign=bits >> (fmt.width - 1), exponent=np.where(exponent_zero, 1, field),
                significand=np.where(zero, 0, mantissa | (~exponent_zero).astype(np.int64) << fmt.mantissa_bits))


def _select(condition, first, second):
    """Element-wise ``first if condition else second`` of two raw records."""
    return _Raw(**{name: np.where(condition, value, getattr(second, name)) for name, value in vars(first).items()})


def _bit_length(value):
    """Bit length of non-negative int64 values (below 2**63), exactly."""
    length = np.zeros_like(value)
    rest = value.copy()
    for step in (32, 16, 8, 4, 2, 1):
        big = rest >= (np.int64(1) << step)
        length += np.where(big, step, 0)
        rest = np.where(big, rest >> step, rest)
    return length + (rest > 0)


def _shift_right_jamming(value, amount, width):
    """hw.shared.float_raw.shift_right_jamming on ``width``-bit values."""
    amount = np.minimum(amount, width)
    lost = (value & ((np.int64(1) << amount) - 1)) != 0
    return (value >> amount) | lost


def _round_to_format(fmt, raw, width, flush_to_zero):
    """hw.shared.float_rounder.round_to_format: raw record with ``width``-bit significands -> encoded bits."""
    mantissa_bits, all_ones = fmt.mantissa_bits, fmt.exponent_all_ones
    significand, exponent = raw.significand, raw.exponent

    # Normalize
    subnormal_range = exponent < 1
    zeros = width - _bit_length(significand)
    left_shift = np.where(subnormal_range, 0, np.minimum(zeros, exponent - 1))
    right_shift = np.where(subnormal_range, np.minimum(1 - exponent, width), 0)
    normalized = np.where(subnormal_range, _shift_right_jamming(significand, right_shift, width),
                          (significand << left_shift) & _mask(width))
    normalized_exponent = np.where(subnormal_range, 1, exponent - left_shift)

    # Round to nearest even
    top = (normalized >> (width - 1)) & 1
    fraction = (normalized >> (width - 1 - mantissa_bits)) & _mask(mantissa_bits)
    round_bit = (normalized >> (width - 2 - mantissa_bits)) & 1
    sticky = (normalized & _mask(width - 2 - mantissa_bits)) != 0
    increment = round_bit & (sticky | (fraction & 1))
    exponent_field = np.where(top == 1, normalized_exponent, 0)
    overflow = (top == 1) & (normalized_exponent >= all_ones)
    magnitude = (((exponent_field & all_ones) << mantissa_bits) | fraction) + increment
    magnitude &= _mask(fmt.width - 1)

    # Pack
    sign = raw.sign << (fmt.width - 1)
    flushed = flush_to_zero & ((magnitude >> mantissa_bits) == 0)
    result = np.where(raw.is_zero | flushed, sign, sign | magnitude)
    result = np.where(raw.is_inf | overflow, sign | (all_ones << mantissa_bits), result)
    result = np.where(raw.is_nan, fmt.canonical_nan, result)
    return result.astype(bits_dtype(fmt))


def bitlevel_mul(fmt, a, b, *, flush_to_zero=False):
    """Integer model of hw.shared.float_multiplier for any format."""
    a, b = (_unpack(fmt, bits, flush_to_zero) for bits in _operand_bits(fmt, a, b))
    nan = a.is_nan | b.is_nan | (a.is_inf & b.is_zero) | (a.is_zero & b.is_inf)
    product = _Raw(is_nan=nan, is_inf=~nan & (a.is_inf | b.is_inf), is_zero=~nan & (a.is_zero | b.is_zero),
                   sign=a.sign ^ b.sign, exponent=a.exponent + b.exponent - fmt.bias + 1,
                   significand=a.significand * b.significand)
    return _round_to_format(fmt, product, 2 * (fmt.mantissa_bits + 1), flush_to_zero)


def bitlevel_add(fmt, a_bits, b_bits, *, flush_to_zero=False):
    """Integer model of hw.shared.float_adder for any format."""
    a_bits, b_bits = _operand_bits(fmt, a_bits, b_bits)
    a, b = _unpack(fmt, a_bits, flush_to_zero), _unpack(fmt, b_bits, flush_to_zero)
    # The encodings without sign bits order the magnitudes, as in the hardware.
    a_is_larger = (a_bits & _mask(fmt.width - 1)) >= (b_bits & _mask(fmt.width - 1))
    larger, smaller = _select(a_is_larger, a, b), _select(a_is_larger, b, a)
    extended_bits = fmt.mantissa_bits + 1 + GUARD_BITS
    aligned = _shift_right_jamming(smaller.significand << GUARD_BITS, larger.exponent - smaller.exponent,
                                   extended_bits)
    subtract = larger.sign != smaller.sign
    larger_significand = larger.significand << GUARD_BITS
    total = np.where(subtract, larger_significand - aligned, larger_significand + aligned)
    nan = a.is_nan | b.is_nan | (a.is_inf & b.is_inf & (a.sign != b.sign))
    raw_sum = _Raw(is_nan=nan, is_inf=~nan & (a.is_inf | b.is_inf), is_zero=total == 0,
                   sign=np.where((total == 0) & subtract, 0, larger.sign), exponent=larger.exponent + 1,
                   significand=total)
    return _round_to_format(fmt, raw_sum, extended_bits + 1, flush_to_zero)


def from_binary32(fmt, values):
    """float32 ``values`` (a float32 array, or their raw bits as unsigned integers) as encodings of ``fmt``.

    Rounded to nearest even by the rounder the float units use; binary32 comes back bit for bit (NaN payloads
    included); in every other format a NaN becomes the canonical NaN.  Formats whose significand is wider than
    binary32's are refused (the rounder needs two bits below the target's last one).
    """
    values = np.asarray(values)
    bits = values.view(np.uint32) if values.dtype == np.float32 else values.astype(np.uint32)
    if fmt == BINARY32:
        return bits.copy()
    if fmt.mantissa_bits > BINARY32.mantissa_bits - 2:
        raise ValueError(f"from_binary32 rounds to formats of at most {BINARY32.mantissa_bits - 2} mantissa bits, "
                         f"not {fmt.name}")
    raw = _unpack(BINARY32, bits.astype(np.int64), False)
    raw.exponent = raw.exponent - BINARY32.bias + fmt.bias
    return _round_to_format(fmt, raw, BINARY32.mantissa_bits + 1, False)


def to_binary32(fmt, bits):
    """Encodings of ``fmt`` (raw bits) as float32 values, exactly; every NaN becomes float32's quiet NaN.

    Defined for the formats binary32 holds: at most 8 exponent bits and 23 mantissa bits.  binary32's own bits
    come back as they are.
    """
    if fmt == BINARY32:
        return np.asarray(bits, dtype=np.uint32).view(np.float32)
    if fmt.exponent_bits > BINARY32.exponent_bits or fmt.mantissa_bits > BINARY32.mantissa_bits:
        raise ValueError(f"to_binary32 widens formats of at most {BINARY32.exponent_bits} exponent and "
                         f"{BINARY32.mantissa_bits} mantissa bits, not {fmt.name}")
    bits = np.asarray(bits).astype(np.int64)
    sign = np.where((bits >> (fmt.width - 1)) & 1, -1.0, 1.0)
    exponent = (bits >> fmt.mantissa_bits) & fmt.exponent_all_ones
    fraction = bits & _mask(fmt.mantissa_bits)
    significand = np.where(exponent == 0, fraction, fraction | (1 << fmt.mantissa_bits)).astype(np.float64)
    values = sign * np.ldexp(significand, np.maximum(exponent, 1) - fmt.bias - fmt.mantissa_bits)
    special = np.where(fraction == 0, sign * np.inf, np.nan)
    return np.where(exponent == fmt.exponent_all_ones, special, values).astype(np.float32)
