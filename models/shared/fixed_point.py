"""Bit-exact NumPy model of :mod:`hw.shared.fixed_point`: the same rounding (half up), the same saturation.

Values are raw integers (``numpy.int64`` arrays, or Python-int ``object`` arrays for formats whose
product does not fit 63 bits); convert with :func:`to_raw` / :func:`to_float` and to/from bit
patterns with :func:`to_bits` / :func:`from_bits` (the unsigned words the simulators exchange).
"""

import numpy as np

from nnaccel.hw.shared.fixed_point import OVERFLOW_MODES, QFormat

__all__ = ["QFormat", "to_raw", "to_float", "to_bits", "from_bits", "saturate", "add", "sub", "mul", "mac"]


def _dtype(fmt):
    """int64 when a full product of two raws fits in it, else Python ints (object)."""
    fits = fmt.width <= 32 if fmt.signed else fmt.width <= 31
    return np.int64 if fits else object


def _raw_array(values, fmt):
    return np.asarray(values).astype(_dtype(fmt))


def to_raw(values, fmt):
    """Nearest raw integers (ties away from zero) to the real ``values``, saturated to ``fmt``."""
    scaled = np.asarray(values, dtype=np.float64) * float(1 << fmt.frac_bits)
    rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    return np.clip(rounded, fmt.min_raw, fmt.max_raw).astype(np.int64).astype(_dtype(fmt))


def to_float(raw, fmt):
    return np.asarray(raw).astype(np.float64) * fmt.resolution


def to_bits(raw, fmt):
    """Raw integers as ``width``-bit patterns (uint64), two's complement for signed formats."""
    mask = (1 << fmt.width) - 1
    return np.array([int(v) & mask for v in np.ravel(raw)], dtype=np.uint64).reshape(np.shape(raw))


def from_bits(bits, fmt):
    """Inverse of :func:`to_bits`."""
    return np.array([fmt.from_bits(int(v)) for v in np.ravel(bits)],
                    dtype=_dtype(fmt)).reshape(np.shape(bits))


def saturate(wide, fmt, *, overflow="saturate"):
    """Exact integers brought into ``fmt``: clamped, or wrapped to ``width`` bits if ``overflow='wrap'``."""
    if overflow not in OVERFLOW_MODES:
        raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_MODES)}, not {overflow!r}")
    wide = _raw_array(wide, fmt)
    if overflow == "saturate":
        return np.clip(wide, fmt.min_raw, fmt.max_raw)
    low = wide & ((1 << fmt.width) - 1)
    if fmt.signed:
        low = np.where(low >= (1 << (fmt.width - 1)), low - (1 << fmt.width), low)
    return low.astype(_dtype(fmt))


def add(a, b, fmt, *, overflow="saturate"):
    return saturate(_raw_array(a, fmt) + _raw_array(b, fmt), fmt, overflow=overflow)


def sub(a, b, fmt, *, overflow="saturate"):
    return saturate(_raw_array(a, fmt) - _raw_array(b, fmt), fmt, overflow=overflow)


def mul(a, b, fmt, *, overflow="saturate"):
    """Exact product, round half up to ``frac_bits`` (``+ 2**(f-1)`` then floor shift), then saturate."""
    product = _raw_array(a, fmt) * _raw_array(b, fmt)
    if fmt.frac_bits:
        product = (product + (1 << (fmt.frac_bits - 1))) >> fmt.frac_bits
    return saturate(product, fmt, overflow=overflow)


def mac(accumulator, a, b, fmt, *, overflow="saturate"):
    """``accumulator + a * b`` as the hardware does it: :func:`mul`, then :func:`add`."""
    return add(accumulator, mul(a, b, fmt, overflow=overflow), fmt, overflow=overflow)
