"""The one round-and-pack stage of the float units: raw result record -> encoded IEEE-754 bits.

Every float unit computes an exact (or sticky-jammed) raw result, then calls
:func:`round_to_format`; rounding lives only here and in its mirror in :mod:`models.shared.float_arith`.

Steps, in data-flow order:

1. Normalize: shift the significand left by its leading-zero count, but never so far that the
   exponent drops below 1 (the subnormal exponent); a raw exponent below 1 instead shifts right by
   ``1 - exponent`` with the lost bits jammed into a sticky bit. Afterwards the top significand bit
   is set (normal) or the exponent is 1 (subnormal, encoded exponent 0).
2. Round to nearest, ties to even, on the top ``mantissa_bits + 1`` bits::

       lsb  round  sticky | increment
        x     0      x    |    0        below half an ulp
        0     1      0    |    0        tie, already even
        1     1      0    |    1        tie, round to even
        x     1      1    |    1        above half an ulp

   The increment is added to the packed ``exponent | mantissa`` field, so a mantissa carry moves
   into the exponent (subnormal -> smallest normal, largest mantissa -> next binade, largest
   finite -> infinity) without extra logic.
3. Pack: exponent field all ones or more before rounding -> infinity; NaN / infinity / zero flags
   override the datapath; with ``flush_to_zero`` a result whose encoded exponent is 0 after
   rounding becomes a zero of the same sign.

FPGA mapping: a leading-zero counter, two barrel shifters and a ``width - 1``-bit incrementer, all in
ALMs (no DSP, no memory).
"""

from amaranth.hdl import Cat, Const, Mux, Signal, signed

from nnaccel.hw.shared.float_raw import leading_zeros, shift_left, shift_right_jamming

__all__ = ["round_to_format"]


def round_to_format(m, fmt, raw, *, flush_to_zero):
    """Combinational logic in ``m`` that rounds the raw record ``raw`` (see :mod:`hw.shared.float_raw`) to
    ``fmt``; returns the encoded result (``fmt.width`` bits). The significand needs at least
    ``mantissa_bits + 3`` bits (kept bits, round bit, one sticky bit)."""
    mantissa_bits, exponent_bits = fmt.mantissa_bits, fmt.exponent_bits
    width = len(raw.significand)
    if width < mantissa_bits + 3:
        raise ValueError(f"raw significand of {width} bits is too narrow to round to {fmt.name}: "
                         f"it needs at least {mantissa_bits + 3}")

    # ---- Normalize -------------------------------------------------------------------------
    # Exponent arithmetic in one signed width that holds the raw exponent, the significand width and
    # their differences.
    exponent_shape = signed(max(exponent_bits + 2, width.bit_length() + 1) + 1)

    def constant(value):
        return Const(value, exponent_shape)

    exponent = Signal(exponent_shape, name="round_exponent")
    zeros = Signal(exponent_shape, name="round_leading_zeros")
    right_amount = Signal(exponent_shape, name="round_right_amount")
    left_shift = Signal(exponent_shape, name="round_left_shift")
    right_shift = Signal(range(width + 1), name="round_right_shift")
    normalized = Signal(width, name="round_normalized")
    normalized_exponent = Signal(exponent_shape, name="round_normalized_exponent")
    headroom = exponent - constant(1)
    m.d.comb += [
        exponent.eq(raw.exponent),
        zeros.eq(leading_zeros(raw.significand)),
        right_amount.eq(constant(1) - exponent),
    ]
    with m.If(exponent < constant(1)):
        m.d.comb += [
            right_shift.eq(Mux(right_amount > constant(width), width, right_amount)),
            normalized.eq(shift_right_jamming(raw.significand, right_shift)),
            normalized_exponent.eq(1),
        ]
    with m.Else():
        m.d.comb += [
            left_shift.eq(Mux(zeros < headroom, zeros, headroom)),
            normalized.eq(shift_left(raw.significand, left_shift[:len(right_shift)])),
            normalized_exponent.eq(exponent - left_shift),
        ]

    # ---- Round to nearest even ---------------------------------------------------------------
    top = normalized[width - 1]
    fraction = normalized[width - 1 - mantissa_bits:width - 1]
    round_bit = normalized[width - 2 - mantissa_bits]
    sticky = normalized[:width - 2 - mantissa_bits].any()
    increment = round_bit & (sticky | fraction[0])
    exponent_field = Mux(top, normalized_exponent, 0)
    overflow = top & (normalized_exponent >= constant(fmt.exponent_all_ones))
    magnitude = Signal(exponent_bits + mantissa_bits, name="round_magnitude")
    m.d.comb += magnitude.eq(Cat(fraction, exponent_field[:exponent_bits]) + increment)

    # ---- Pack ----------------------------------------------------------------------------
    result = Signal(fmt.width, name="round_result")
    flushed = Const(flush_to_zero) & ~magnitude[mantissa_bits:].any()
    with m.If(raw.is_nan):
        m.d.comb += result.eq(fmt.canonical_nan)
    with m.Elif(raw.is_inf | overflow):
        m.d.comb += result.eq(Cat(Const(0, mantissa_bits), Const(fmt.exponent_all_ones, exponent_bits), raw.sign))
    with m.Elif(raw.is_zero | flushed):
        m.d.comb += result.eq(Cat(Const(0, exponent_bits + mantissa_bits), raw.sign))
    with m.Else():
        m.d.comb += result.eq(Cat(magnitude, raw.sign))
    return result
