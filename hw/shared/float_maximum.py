"""IEEE-754 maximum of two floats, any :class:`hw.shared.float_format.FloatFormat`, pipelined."""

from amaranth.hdl import Const, Module, Mux

from nnaccel.hw.shared.float_format import BINARY32
from nnaccel.hw.shared.float_operator import FloatOperator
from nnaccel.hw.shared.pipeline import Pipeline

__all__ = ["FloatMaximum", "order_key"]


def order_key(fmt, value):
    """An unsigned key of ``fmt.width`` bits that orders the non-NaN encodings of ``fmt`` by value, ``-0`` below
    ``+0``: a negative value's bits inverted, a positive value's with the sign bit set."""
    sign_bit = Const(1 << (fmt.width - 1), fmt.width)
    return Mux(value[fmt.width - 1], ~value, value | sign_bit)


class FloatMaximum(FloatOperator):
    """``result = max(a, b)``: the max-pooling operation of the DQN matrix module.

    Parameters (keyword-only, read-only properties): ``fmt`` (default binary32), ``latency`` (register stages,
    default 2: the adder's, so that the matrix module can put it beside its accumulating adder).  There is no
    flush-to-zero: no arithmetic, so a subnormal is compared as the value it encodes.

    Ports: the ``operands`` stream (``a``, ``b``) in, the ``result`` stream out (see
    :class:`hw.shared.float_operator.FloatOperator`).

    Rule (the golden model ``models.shared.float_arith.float_max`` repeats it): a NaN operand gives the canonical
    NaN (``fmt.canonical_nan``), as the adder does, so a NaN in a pooling window shows in its result (PyTorch's
    max pooling propagates NaNs as well); otherwise the larger value in the order ``-inf < ... < -0 < +0 < ... <
    +inf``: ``max(-0, +0) = +0`` in either operand order (IEEE-754 leaves the sign of that zero open; this order
    makes the result independent of the operands' order, so the golden model need not know which came first).

    Timing: latency ``latency`` cycles (a single cut point, ``result``: every register stage is at the output,
    for retiming), throughput one operation per cycle.

    FPGA mapping: no DSP and no memory: per operand a NaN detector and ``fmt.width`` XORs (the order key), one
    ``fmt.width``-bit comparator and a 2:1 mux, in ALMs.
    """

    CUT_PRIORITY = ("result",)
    MODULE_PREFIX = "float_maximum"

    def __init__(self, *, fmt=BINARY32, latency=2):
        super().__init__(fmt=fmt, latency=latency)

    def elaborate_logic(self, platform):
        m = Module()
        fmt = self.fmt
        a, b = self.operands.payload.a, self.operands.payload.b
        pipeline = Pipeline(m, latency=self.latency, cut_priority=self.CUT_PRIORITY, valid=self.operands.valid)

        def is_nan(value):
            return (value[fmt.mantissa_bits:fmt.width - 1] == fmt.exponent_all_ones) & value[:fmt.mantissa_bits].any()

        larger = Mux(order_key(fmt, a) >= order_key(fmt, b), a, b)
        result = pipeline.cut("result", Mux(is_nan(a) | is_nan(b), fmt.canonical_nan, larger))
        pipeline.check_complete()
        m.d.comb += [self.result.payload.eq(result), self.result.valid.eq(pipeline.valid)]
        return m
