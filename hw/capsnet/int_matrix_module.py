"""The integer matrix module: int8 scalar times int8 vector, exact 32-bit accumulation, then requantization.

It is the CapsNet accelerator's counterpart of :class:`hw.dqn.matrix_module.MatrixModule` (same port contract: an
``operands`` stream of ``scalar``, ``vector``, ``count``, ``relu`` and a ``result`` stream) for the arithmetic of
:mod:`models.capsnet.int8_layers`.  It is a separate component rather than a number-format parameter of the float
module because nothing inside is shared: the float module is built around the float adder's latency
(interleaved partial sums and a reduction tree), while an integer sum is exact and one cycle, so one
accumulator per lane suffices, and the result passes through a requantizer the float module has no use for.
"""

from amaranth.hdl import Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.config import ACCUMULATOR_BITS, MULTIPLIER_STYLES, OPERAND_BITS, SHIFT_BITS
from nnaccel.hw.shared.parameters import check_int, check_positive

__all__ = ["IntMatrixModule", "INT_MATRIX_MODULE_LATENCY", "multiply_int8", "operand_layout", "requantize"]

INT_MATRIX_MODULE_LATENCY = 3   # product register, accumulator, result register
PRODUCT_BITS = 2 * OPERAND_BITS
INT8_MIN, INT8_MAX = -(1 << (OPERAND_BITS - 1)), (1 << (OPERAND_BITS - 1)) - 1


def operand_layout(lanes, count_bits, requantized):
    """The payload of :class:`IntMatrixModule`'s input stream (see its ``operands`` port)."""
    fields = {"scalar": signed(OPERAND_BITS), "vector": data.ArrayLayout(signed(OPERAND_BITS), lanes),
              "bias": signed(ACCUMULATOR_BITS), "count": count_bits}
    if requantized:
        fields |= {"shift": SHIFT_BITS, "relu": 1}
    return data.StructLayout(fields)


def multiply_int8(a, b, style):
    """The exact signed product of two signed 8-bit values, as a ``*`` (``style="dsp"``: synthesis infers a DSP
    multiplier) or as the sum of shifted partial products (``style="logic"``: adders in ALMs, no multiplier for
    synthesis to map).  Partial product ``i`` is ``a << i`` where bit ``i`` of ``b`` is set; bit 7 of ``b`` weighs
    ``-2**7`` (two's complement), so its partial product is subtracted."""
    if style == "dsp":
        return a * b
    partials = [Mux(b[bit], a << bit, 0) for bit in range(OPERAND_BITS - 1)]
    partials.append(Mux(b[OPERAND_BITS - 1], -(a << (OPERAND_BITS - 1)), 0))
    while len(partials) > 1:                       # balanced adder tree
        partials = [partials[i] + partials[i + 1] if i + 1 < len(partials) else partials[i]
                    for i in range(0, len(partials), 2)]
    return partials[0]


def requantize(accumulator, shift, relu):
    """``models.capsnet.int8_layers.requantize`` as logic: ReLU (if ``relu``), ``(acc + 2**(shift-1)) >> shift`` (an
    arithmetic shift, rounding half up; nothing added when ``shift = 0``), saturation to int8; a signed 8-bit value.

    The rounding sum is one bit wider than the accumulator so that ``2**31 - 1 + 2**30`` does not wrap (the
    golden model computes in int64)."""
    rectified = Mux(relu & accumulator[-1], 0, accumulator)
    half = (Const(1, ACCUMULATOR_BITS + 1) << shift) >> 1
    rounded = (rectified + half) >> shift
    saturated = Mux(rounded > INT8_MAX, INT8_MAX, Mux(rounded < INT8_MIN, INT8_MIN, rounded[:OPERAND_BITS]))
    return saturated[:OPERAND_BITS].as_signed()                # exactly 8 bits (the Mux is wider)


class IntMatrixModule(wiring.Component):
    """``lanes`` int8 multipliers and 32-bit accumulators: each valid cycle adds ``scalar * vector[l]`` into lane
    ``l``; the accumulation starts from ``bias`` and ends with :func:`requantize` (or, with ``requantized=False``,
    gives the 32-bit sums for a requantizer shared by several modules).

    Ports
    -----
    operands : In(stream.Signature(operand_layout(lanes, count_bits, requantized), always_ready=True))
        One product per valid beat; idle cycles between products are allowed anywhere (the module never
        stalls).  Payload fields: ``scalar`` (signed 8, shared by all lanes), ``vector`` (``lanes`` x signed
        8); sampled with an accumulation's first product: ``bias`` (signed 32, the accumulator's initial value,
        shared by every lane), ``count`` (count_bits, the number of products, ``count = 0`` acts as 1) and,
        only when ``requantized``, ``shift`` (5) and ``relu`` (1) for :func:`requantize`.
    result : Out(stream.Signature(ArrayLayout(8, lanes), always_ready=True)), 32-bit lanes when not ``requantized``
        One valid beat per finished accumulation: the lanes' int8 results (or 32-bit sums); the payload holds
        until the next valid beat.

    Arithmetic: exactly :mod:`models.capsnet.int8_layers` (integer sums are exact, so the order does not matter); the
    accumulator wraps at 32 bits where the golden model raises ``OverflowError``.

    Timing
    ------
    Latency :data:`INT_MATRIX_MODULE_LATENCY` = 3: the result is valid 3 cycles after the cycle on which the
    accumulation's last product was valid (product register, accumulator, result register).
    Throughput: one product (``lanes`` MACs) per cycle, no bubble between accumulations, also for ``count = 1``.

    Resources and FPGA mapping (Cyclone V)
    --------------------------------------
    Per lane one 8x8 multiplier, one 32-bit adder, a 16-bit product and a 32-bit accumulator register, and (when
    ``requantized``) a requantizer: ReLU mux, 33-bit rounding adder, barrel shifter, saturation, several times
    larger than the rest of the lane (Yosys ``synth_intel_alm`` estimate, 6 lanes, DSP multipliers: about 1,860
    ALMs with requantizers, 235 without; logic multipliers add about 85 ALMs each).  With ``multipliers="dsp"`` the
    multipliers are DSP multipliers (three 9x9 per variable-precision DSP block: ``ceil(lanes / 3)`` blocks);
    with ``"logic"`` they are adder trees in ALMs and the module uses no DSP block.

    Parameters
    ----------
    lanes : int
        Vector width.
    multipliers : str
        ``"dsp"`` or ``"logic"`` (see :func:`multiply_int8`).
    count_bits : int
        Width of ``count``; the longest accumulation is ``2**count_bits - 1`` products.
    requantized : bool
        Requantize in the module (int8 results) or give the 32-bit sums.
    rows : int
        Interleaved accumulations (1: one accumulator per lane).  With ``rows = R`` each lane has a ring of ``R``
        accumulators: product ``i`` of an accumulation of ``count`` products (a multiple of ``R``) goes to
        accumulator ``i mod R``; the first ``R`` start from ``bias``; each of the last ``R`` products finishes its
        accumulator and gives one ``result`` beat (``R`` results per accumulation, in accumulator order), 3 cycles
        after it.  A finishing product must come no earlier than the cycle after the previous result was taken
        (the user spaces them, as the convolution engine does).  FPGA: ``R`` 32-bit registers per lane, a
        rotating ring with no read multiplexer.
    """

    def __init__(self, *, lanes=16, multipliers="dsp", count_bits=16, requantized=True, rows=1):
        check_positive("lanes", lanes)
        if multipliers not in MULTIPLIER_STYLES:
            raise ValueError(f"multipliers must be one of {MULTIPLIER_STYLES}, not {multipliers!r}")
        check_positive("count_bits", count_bits)
        if not isinstance(requantized, bool):
            raise TypeError(f"requantized must be a bool, not {requantized!r}")
        check_int("rows", rows, 1, 64)
        self._rows = rows
        self._lanes = lanes
        self._multipliers = multipliers
        self._count_bits = count_bits
        self._requantized = requantized
        result_bits = OPERAND_BITS if requantized else ACCUMULATOR_BITS
        super().__init__({
            "operands": In(stream.Signature(operand_layout(lanes, count_bits, requantized), always_ready=True)),
            "result": Out(stream.Signature(data.ArrayLayout(result_bits, lanes), always_ready=True)),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def multipliers(self):
        return self._multipliers

    @property
    def count_bits(self):
        return self._count_bits

    @property
    def requantized(self):
        return self._requantized

    @property
    def latency(self):
        return INT_MATRIX_MODULE_LATENCY

    @property
    def module_name(self):
        """Verilog module name carrying the parameters, e.g. ``int_matrix_module_w16_dsp_c16`` (``..._sums`` when
        not requantized)."""
        return (f"int_matrix_module_w{self._lanes}_{self._multipliers}_c{self._count_bits}"
                f"{'' if self._requantized else '_sums'}{'' if self._rows == 1 else f'_r{self._rows}'}")

    def elaborate(self, platform):
        m = Module()
        operands = self.operands.payload

        # ---- Input cycle: accumulation bookkeeping; bias, shift and ReLU of the accumulation -------------
        rows = self._rows
        busy = Signal()                            # an accumulation is open: the next product is not its first
        remaining = Signal(self._count_bits)       # products of the open accumulation still to come
        started = Signal(range(rows + 1))          # products of the open accumulation so far, saturating at rows
        accumulation_bias = Signal(signed(ACCUMULATOR_BITS))
        accumulation_shift, final_shift = Signal(SHIFT_BITS), Signal(SHIFT_BITS)   # used when requantized
        accumulation_relu, final_relu = Signal(), Signal()
        first = ~busy
        left = Mux(first, operands.count, remaining)               # products left, this one included
        last = Mux(first, operands.count <= 1, remaining == 1)
        opening = first | (started < rows)                          # starts its accumulator from the bias
        finishing = (left <= rows) | last                          # finishes its accumulator
        with m.If(self.operands.valid):
            m.d.sync += [busy.eq(~last), remaining.eq(left - 1),
                         started.eq(Mux(first, 1, Mux(started < rows, started + 1, started)))]
            with m.If(first):
                m.d.sync += accumulation_bias.eq(operands.bias)
                if self._requantized:
                    m.d.sync += [accumulation_shift.eq(operands.shift), accumulation_relu.eq(operands.relu)]

        # ---- Pipeline cycle 1: products --------------------------------------------------------------------
        multiplied, product_first, product_last = Signal(), Signal(), Signal()   # the product registers are valid
        m.d.sync += [multiplied.eq(self.operands.valid), product_first.eq(opening), product_last.eq(finishing)]
        products = [Signal(signed(PRODUCT_BITS), name=f"product_{lane}") for lane in range(self._lanes)]
        for lane, product in enumerate(products):
            m.d.sync += product.eq(multiply_int8(operands.scalar, operands.vector[lane], self._multipliers))

        # ---- Pipeline cycle 2: accumulate (the first product adds to the bias) ----------------------------
        # The accumulation's bias/shift/relu registers are read here, one cycle after its first product
        # entered: a following accumulation overwrites them at the earliest at the end of this cycle.
        # Each lane's accumulators are a ring: the head takes the product and moves to the tail.
        accumulated = Signal()                     # the tail holds a finished accumulator
        rings = [[Signal(signed(ACCUMULATOR_BITS), name=f"accumulator_{lane}" + (f"_{row}" if rows > 1 else ""))
                  for row in range(rows)] for lane in range(self._lanes)]
        accumulators = [ring[-1] for ring in rings]
        with m.If(multiplied):
            for ring, product in zip(rings, products):
                m.d.sync += [ring[-1].eq(Mux(product_first, accumulation_bias, ring[0]) + product),
                             *(ring[row].eq(ring[row + 1]) for row in range(rows - 1))]
        m.d.sync += accumulated.eq(multiplied & product_last)
        if self._requantized:
            with m.If(multiplied & product_last):
                m.d.sync += [final_shift.eq(accumulation_shift), final_relu.eq(accumulation_relu)]

        # ---- Pipeline cycle 3: requantize into the result register ----------------------------------------
        m.d.sync += self.result.valid.eq(accumulated)
        with m.If(accumulated):
            for lane, accumulator in enumerate(accumulators):
                if self._requantized:
                    m.d.sync += self.result.payload[lane].eq(requantize(accumulator, final_shift, final_relu))
                else:
                    m.d.sync += self.result.payload[lane].eq(accumulator)
        return m
