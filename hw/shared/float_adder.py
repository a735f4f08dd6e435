"""IEEE-754 floating-point adder, any :class:`hw.shared.float_format.FloatFormat`, pipelined."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

from nnaccel.hw.shared.float_operator import FloatOperator
from nnaccel.hw.shared.float_raw import raw_float_layout, shift_right_jamming, unpack
from nnaccel.hw.shared.float_rounder import round_to_format
from nnaccel.hw.shared.pipeline import Pipeline

__all__ = ["FloatAdder"]

# Guard bits below the significand during alignment: guard, round and a sticky (jammed) bit are
# enough for a correctly rounded sum (the lost bits only matter when the shift is 2 or more, and
# then normalisation shifts left by at most one place).
GUARD_BITS = 3


class FloatAdder(FloatOperator):
    """``result = a + b``, correctly rounded to nearest, ties to even.

    Parameters (keyword-only, read-only properties): ``fmt`` (default binary32), ``latency`` (register
    stages, default 2), ``flush_to_zero`` (default False: subnormal operands and results are handled
    in full; True: subnormal operands count as zeros and results with encoded exponent 0 after
    rounding become zeros, signs kept).

    Ports: the ``operands`` stream (``a``, ``b``) in, the ``result`` stream out (see
    :class:`hw.shared.float_operator.FloatOperator`). Subtraction is ``a + (b with its sign bit flipped)``.

    Special values: NaN operand or infinities of opposite signs -> the canonical NaN
    (``fmt.canonical_nan``, 0x7FC00000 for binary32); infinity plus finite -> that infinity;
    overflow -> infinity. An exact zero sum is +0, except -0 + -0 = -0 (round to nearest).

    Timing: latency ``latency`` cycles, throughput one operation per cycle (the operands'
    ``valid`` travels to the result's). Datapath stages and the cut points between them, in data-flow
    order::

        unpack, order by magnitude, align (shift right, sticky) --[aligned]-->
        add or subtract significands --[sum]--> normalize, round, pack --[result]--> result

    Registers go to ``sum`` first (latency 1), then ``result`` (2), then ``aligned`` (3); stages
    beyond 3 are added at the output for retiming.

    FPGA mapping: no DSP and no memory: magnitude comparator, exponent subtractor, alignment barrel
    shifter with sticky OR, a (mantissa_bits + 5)-bit adder/subtractor, leading-zero counter,
    normalisation shifters and rounding incrementer, all in ALMs (for binary32 the adder is 29 bits,
    the shifters 28 to 29 bits wide).
    """

    CUT_PRIORITY = ("sum", "result", "aligned")
    MODULE_PREFIX = "float_adder"

    def elaborate_logic(self, platform):
        m = Module()
        fmt = self.fmt
        extended_bits = fmt.mantissa_bits + 1 + GUARD_BITS
        operand_layout = raw_float_layout(fmt, fmt.mantissa_bits + 1)
        operands = self.operands.payload
        pipeline = Pipeline(m, latency=self.latency, cut_priority=self.CUT_PRIORITY, valid=self.operands.valid)

        # ---- Unpack, order by magnitude, align ---------------------------------------------------
        a = unpack(m, fmt, operands.a, flush_to_zero=self.flush_to_zero, name="a_unpacked")
        b = unpack(m, fmt, operands.b, flush_to_zero=self.flush_to_zero, name="b_unpacked")
        # The encodings without sign bits order finite magnitudes (and put infinities on top).
        a_is_larger = operands.a[:fmt.width - 1] >= operands.b[:fmt.width - 1]
        larger = Signal(operand_layout, name="larger")
        smaller = Signal(operand_layout, name="smaller")
        exponent_difference = Signal(fmt.exponent_bits, name="exponent_difference")
        m.d.comb += [
            larger.eq(Mux(a_is_larger, a, b)),
            smaller.eq(Mux(a_is_larger, b, a)),
            exponent_difference.eq(larger.exponent - smaller.exponent),
        ]
        is_nan = a.is_nan | b.is_nan | (a.is_inf & b.is_inf & (a.sign != b.sign))
        aligned = pipeline.cut("aligned", {
            "larger": larger,
            "smaller_significand": shift_right_jamming(
                Cat(Const(0, GUARD_BITS), smaller.significand), exponent_difference),
            "subtract": larger.sign ^ smaller.sign,
            "is_nan": is_nan,
            "is_inf": ~is_nan & (a.is_inf | b.is_inf),
        })
        larger = aligned["larger"]

        # ---- Add or subtract significands ------------------------------------------------------
        # One carry bit above the extended significands: the top bit of the raw sum weighs
        # 2**(larger exponent + 1) relative to the bias, hence raw exponent = larger exponent + 1.
        # Subtraction never goes negative: the larger magnitude is the minuend.
        larger_significand = Cat(Const(0, GUARD_BITS), larger.significand)
        total = Signal(extended_bits + 1, name="significand_sum")
        m.d.comb += total.eq(Mux(aligned["subtract"],
                                 larger_significand - aligned["smaller_significand"],
                                 larger_significand + aligned["smaller_significand"]))
        raw_sum = Signal(raw_float_layout(fmt, extended_bits + 1), name="raw_sum")
        exact_zero = ~total.any()
        m.d.comb += [
            raw_sum.is_nan.eq(aligned["is_nan"]),
            raw_sum.is_inf.eq(aligned["is_inf"]),
            raw_sum.is_zero.eq(exact_zero),
            raw_sum.sign.eq(Mux(exact_zero & aligned["subtract"], 0, larger.sign)),
            raw_sum.exponent.eq(larger.exponent + Const(1, signed(fmt.exponent_bits + 2))),
            raw_sum.significand.eq(total),
        ]
        raw_sum = pipeline.cut("sum", raw_sum)

        # ---- Normalize, round, pack --------------------------------------------------------------
        result = pipeline.cut("result", round_to_format(m, fmt, raw_sum, flush_to_zero=self.flush_to_zero))
        pipeline.check_complete()
        m.d.comb += [self.result.payload.eq(result), self.result.valid.eq(pipeline.valid)]
        return m
