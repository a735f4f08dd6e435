"""IEEE-754 floating-point multiplier, any :class:`hw.shared.float_format.FloatFormat`, pipelined."""

from amaranth.hdl import Const, Module, Signal, signed

from nnaccel.hw.shared.float_operator import FloatOperator
from nnaccel.hw.shared.float_raw import raw_float_layout, unpack
from nnaccel.hw.shared.float_rounder import round_to_format
from nnaccel.hw.shared.pipeline import Pipeline

__all__ = ["FloatMultiplier"]


class FloatMultiplier(FloatOperator):
    """``result = a * b``, correctly rounded to nearest, ties to even.

    Parameters (keyword-only, read-only properties): ``fmt`` (default binary32), ``latency`` (register
    stages, default 2), ``flush_to_zero`` (default False: subnormal operands and results are handled
    in full; True: subnormal operands count as zeros and results with encoded exponent 0 after
    rounding become zeros, signs kept).

    Ports: the ``operands`` stream (``a``, ``b``) in, the ``result`` stream out (see
    :class:`hw.shared.float_operator.FloatOperator`).

    Special values: NaN operand or infinity times zero -> the canonical NaN (``fmt.canonical_nan``,
    0x7FC00000 for binary32); infinity times non-zero -> infinity; overflow -> infinity; signs of
    zeros and infinities are the XOR of the operand signs.

    Timing: latency ``latency`` cycles, throughput one operation per cycle (the operands'
    ``valid`` travels to the result's). Datapath stages and the cut points between them, in data-flow
    order::

        unpack/classify --[operands]--> significand product, exponent sum --[product]-->
        normalize, round, pack --[result]--> result

    Registers go to ``product`` first (latency 1), then ``result`` (2), then ``operands`` (3);
    stages beyond 3 are added at the output for retiming.

    FPGA mapping: the (mantissa_bits+1)^2 significand product is the DSP part. binary32's 24x24
    product needs the 27x27 mode of a variable-precision DSP block: one block on Stratix V and, per
    Intel's Cyclone V device handbook, also one block on Cyclone V (each block there offers three
    9x9, two 18x18 or one 27x27 multiplier). The ``operands`` and ``product`` cut registers map to
    the block's input and output registers. binary16 (11x11) and bfloat16 (8x8) need one 18x18 half
    of a block (bfloat16 even a 9x9 third). Exponent add, leading-zero count, normalisation shifts and
    the rounding incrementer are ALM logic.
    """

    CUT_PRIORITY = ("product", "result", "operands")
    MODULE_PREFIX = "float_multiplier"

    def elaborate_logic(self, platform):
        m = Module()
        fmt = self.fmt
        operands = self.operands.payload
        pipeline = Pipeline(m, latency=self.latency, cut_priority=self.CUT_PRIORITY, valid=self.operands.valid)

        # ---- Unpack and classify --------------------------------------------------------------
        operands = pipeline.cut("operands", {
            "a": unpack(m, fmt, operands.a, flush_to_zero=self.flush_to_zero, name="a_unpacked"),
            "b": unpack(m, fmt, operands.b, flush_to_zero=self.flush_to_zero, name="b_unpacked"),
        })
        a, b = operands["a"], operands["b"]

        # ---- Significand product (DSP) and exponent sum ------------------------------------------
        # The product of two (m+1)-bit significands has 2m+2 bits; its top bit weighs
        # 2**(ea + eb - 2*bias + 1), hence the biased raw exponent ea + eb - bias + 1.
        product = Signal(raw_float_layout(fmt, 2 * (fmt.mantissa_bits + 1)), name="product")
        is_nan = a.is_nan | b.is_nan | (a.is_inf & b.is_zero) | (a.is_zero & b.is_inf)
        m.d.comb += [
            product.is_nan.eq(is_nan),
            product.is_inf.eq(~is_nan & (a.is_inf | b.is_inf)),
            product.is_zero.eq(~is_nan & (a.is_zero | b.is_zero)),
            product.sign.eq(a.sign ^ b.sign),
            product.exponent.eq(a.exponent + b.exponent - Const(fmt.bias - 1, signed(fmt.exponent_bits + 3))),
            product.significand.eq(a.significand * b.significand),
        ]
        product = pipeline.cut("product", product)

        # ---- Normalize, round, pack --------------------------------------------------------------
        result = pipeline.cut("result", round_to_format(m, fmt, product, flush_to_zero=self.flush_to_zero))
        pipeline.check_complete()
        m.d.comb += [self.result.payload.eq(result), self.result.valid.eq(pipeline.valid)]
        return m
