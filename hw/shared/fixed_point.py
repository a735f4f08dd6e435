"""Fixed-point arithmetic shared by every fixed-point block: a Q-format description, Amaranth helpers
for saturating add/subtract and rounded multiply, and :class:`FixedPointALU`, the combinational
datapath built from them.

Number representation
---------------------
A :class:`QFormat` value is a ``width``-bit two's-complement (``signed=True``) or plain binary integer
``raw`` standing for ``raw / 2**frac_bits``.  Q5.10 is ``QFormat(width=16, frac_bits=10)``.

Rounding (multiply)
-------------------
The exact product of two raw values has ``2 * frac_bits`` fraction bits; ``frac_bits`` of them are
dropped by **round half up** (towards +infinity on a tie)::

    raw_product = floor((raw_a * raw_b + 2**(frac_bits - 1)) / 2**frac_bits)

with ``floor`` an arithmetic shift right.  Truth table on the dropped bits ``d`` (the first of them is
the "half" bit ``h``)::

    h d_rest   action
    0 any      truncate (round down: the dropped part is below one half)
    1 0...0    round up (exactly one half: ties go towards +infinity, also for negative values)
    1 other    round up (above one half)

It costs one adder on the product (no sticky logic) and is what :mod:`models.shared.fixed_point` models.
With ``frac_bits == 0`` nothing is dropped.

Overflow
--------
Every helper takes ``overflow="saturate"`` (the default: results clamp to the format's most negative /
most positive value) or ``overflow="wrap"`` (keep the low ``width`` bits, only when asked for).
Multiply rounds first, then saturates; multiply-accumulate rounds and saturates the product, then
adds with saturation (two saturation points, the same in the model).
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, signed, unsigned
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.parameters import check_int

__all__ = ["OVERFLOW_MODES", "QFormat", "saturate", "round_half_up", "fx_add", "fx_sub", "fx_mul", "fx_mac",
           "AluOp", "FixedPointALU"]

OVERFLOW_MODES = ("saturate", "wrap")


@dataclass(frozen=True)
class QFormat:
    """A fixed-point format: ``width`` bits in total, ``frac_bits`` of them after the binary point.

    ``QFormat(width=16, frac_bits=10)`` is signed Q5.10 (1 sign, 5 integer, 10 fraction bits).
    """

    width: int
    frac_bits: int
    signed: bool = True

    def __post_init__(self):
        check_int("width", self.width, 2, 64)
        if (not isinstance(self.frac_bits, int) or isinstance(self.frac_bits, bool)
                or not 0 <= self.frac_bits < self.width):
            raise ValueError(f"frac_bits must be an integer from 0 to width - 1 = {self.width - 1}, "
                             f"not {self.frac_bits!r}")
        if not isinstance(self.signed, bool):
            raise ValueError(f"signed must be True or False, not {self.signed!r}")

    @property
    def shape(self):
        return signed(self.width) if self.signed else unsigned(self.width)

    @property
    def min_raw(self):
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def max_raw(self):
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1

    @property
    def resolution(self):
        """The value of one least significant bit."""
        return 2.0 ** -self.frac_bits

    @property
    def name(self):
        """Short name for module names and tables: ``q5_10`` (signed) or ``uq6_10`` (unsigned)."""
        integer_bits = self.width - self.frac_bits - (1 if self.signed else 0)
        return f"{'q' if self.signed else 'uq'}{integer_bits}_{self.frac_bits}"

    def to_raw(self, value):
        """The raw integer nearest to the real ``value`` (ties away from zero), saturated to the format."""
        scaled = float(value) * (1 << self.frac_bits)
        rounded = int(scaled + 0.5) if scaled >= 0 else -int(-scaled + 0.5)
        return max(self.min_raw, min(self.max_raw, rounded))

    def to_float(self, raw):
        return int(raw) * self.resolution

    def to_bits(self, raw):
        """The ``width``-bit pattern of ``raw`` as a non-negative integer (two's complement if signed)."""
        return int(raw) & ((1 << self.width) - 1)

    def from_bits(self, bits):
        """Inverse of :meth:`to_bits`."""
        bits = int(bits) & ((1 << self.width) - 1)
        if self.signed and bits >> (self.width - 1):
            bits -= 1 << self.width
        return bits


def _check_overflow(overflow):
    if overflow not in OVERFLOW_MODES:
        raise ValueError(f"overflow must be one of {', '.join(OVERFLOW_MODES)}, not {overflow!r}")


def _widen(value):
    """An unsigned result with a zero sign bit on top, so that it reads as a non-negative signed value."""
    return Cat(value, Const(0, 1)).as_signed()


def saturate(value, fmt, *, overflow="saturate"):
    """A signed Amaranth value brought into ``fmt``: clamped, or its low bits if ``overflow='wrap'``.

    Overflow is read off the high bits, not by comparing with constants: a signed result fits when
    bits ``width-1`` and up are all equal, an unsigned one when bits ``width`` and up are all zero.
    """
    _check_overflow(overflow)
    low_bits = value[:fmt.width].as_signed() if fmt.signed else value[:fmt.width]
    if overflow == "wrap":
        return low_bits
    negative = value[-1]
    high_bits = value[fmt.width - 1:] if fmt.signed else value[fmt.width:]
    too_large = ~negative & high_bits.any()
    too_small = negative & ~high_bits.all() if fmt.signed else negative
    return Mux(too_large, Const(fmt.max_raw, fmt.shape), Mux(too_small, Const(fmt.min_raw, fmt.shape), low_bits))


def fx_add(a, b, fmt, *, overflow="saturate"):
    """``a + b`` in ``fmt``, saturating (or wrapping if asked)."""
    _check_overflow(overflow)
    total = a.as_signed() + b.as_signed() if fmt.signed else _widen(a + b)
    return saturate(total, fmt, overflow=overflow)


def fx_sub(a, b, fmt, *, overflow="saturate"):
    """``a - b`` in ``fmt``, saturating (or wrapping if asked)."""
    _check_overflow(overflow)
    difference = a.as_signed() - b.as_signed() if fmt.signed else a - b   # unsigned - unsigned is signed
    return saturate(difference, fmt, overflow=overflow)


def round_half_up(product, frac_bits):
    """``floor((product + 2**(frac_bits-1)) / 2**frac_bits)`` of a signed value, one bit wider than the kept bits.

    That equals ``floor(product / 2**frac_bits) + h`` with ``h`` the first dropped bit. The increment is
    done on the kept bits in offset binary (sign bit inverted), an unsigned add of a single bit, so
    the generated Verilog has no operands narrower than their operator (lint-clean); the sum is
    then turned back into two's complement with bit operations.
    """
    if frac_bits == 0:
        return product
    kept = product[frac_bits:]
    kept_width = len(kept)
    offset_binary = Cat(kept[:-1], ~kept[-1])
    incremented = offset_binary + product[frac_bits - 1]      # kept_width + 1 bits, bit kept_width is the carry
    top, carry = incremented[kept_width - 1], incremented[kept_width]
    return Cat(incremented[:kept_width - 1], ~top, ~top & ~carry).as_signed()


def fx_mul(a, b, fmt, *, overflow="saturate"):
    """``a * b`` in ``fmt``: the exact product rounded half up to ``frac_bits``, then saturated."""
    _check_overflow(overflow)
    product = a.as_signed() * b.as_signed() if fmt.signed else _widen(a * b)
    return saturate(round_half_up(product, fmt.frac_bits), fmt, overflow=overflow)


def fx_mac(accumulator, a, b, fmt, *, overflow="saturate"):
    """``accumulator + a * b``: :func:`fx_mul` then :func:`fx_add` (each rounding/saturating once)."""
    return fx_add(accumulator, fx_mul(a, b, fmt, overflow=overflow), fmt, overflow=overflow)


class AluOp(enum.Enum, shape=2):
    """Operations of :class:`FixedPointALU` (``c`` is only read by ``MAC``)."""
    ADD = 0   # a + b
    SUB = 1   # a - b
    MUL = 2   # a * b
    MAC = 3   # c + a * b


class FixedPointALU(wiring.Component):
    """Combinational fixed-point ALU: ``y = op(a, b, c)`` with :class:`AluOp` operations in ``fmt``.

    Ports: ``op`` (:class:`AluOp`), ``a``, ``b``, ``c`` (``fmt.shape``) in; ``y`` (``fmt.shape``) out.
    Timing: combinational (latency 0); the PE registers ``y`` in its destination register.
    FPGA mapping: the multiplier is one DSP block (a 27x27 / 18x18 mode on Stratix V / Cyclone V for
    formats up to 18 bits, two to four DSP blocks at 32 bits); rounding, adders, comparators for
    saturation and the output multiplexer are ALMs.
    """

    def __init__(self, *, fmt, overflow="saturate"):
        if not isinstance(fmt, QFormat):
            raise TypeError(f"fmt must be a QFormat, not {fmt!r}")
        _check_overflow(overflow)
        self._fmt = fmt
        self._overflow = overflow
        super().__init__({
            "op": In(AluOp),
            "a": In(fmt.shape), "b": In(fmt.shape), "c": In(fmt.shape),
            "y": Out(fmt.shape),
        })

    @property
    def fmt(self):
        return self._fmt

    @property
    def overflow(self):
        return self._overflow

    def elaborate(self, platform):
        m = Module()
        fmt, overflow = self._fmt, self._overflow
        product = fx_mul(self.a, self.b, fmt, overflow=overflow)
        with m.Switch(self.op):
            with m.Case(AluOp.ADD):
                m.d.comb += self.y.eq(fx_add(self.a, self.b, fmt, overflow=overflow))
            with m.Case(AluOp.SUB):
                m.d.comb += self.y.eq(fx_sub(self.a, self.b, fmt, overflow=overflow))
            with m.Case(AluOp.MUL):
                m.d.comb += self.y.eq(product)
            with m.Case(AluOp.MAC):
                m.d.comb += self.y.eq(fx_add(self.c, product, fmt, overflow=overflow))
        return m
