"""The DQN accelerator's "16-width matrix operation module" (SPEC section 1): a scalar times a vector, accumulated."""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.float_adder import FloatAdder
from nnaccel.hw.shared.float_format import BINARY32, FloatFormat
from nnaccel.hw.shared.float_maximum import FloatMaximum
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.hw.shared.parameters import check_non_negative, check_positive
from nnaccel.hw.shared.pipeline import Pipeline
from nnaccel.hw.shared.stand_in import platform_stand_in

__all__ = ["COUNT_BITS", "MatrixModule", "matrix_module_latency", "operand_layout", "partial_sum_count",
           "reduction_levels"]


# The default width of an accumulation's product count (the longest accumulation: 2**COUNT_BITS - 1 products).
COUNT_BITS = 16


def partial_sum_count(adder_latency):
    """How many interleaved partial sums each lane keeps for an adder of ``adder_latency`` register stages.

    A sum leaves a ``La``-stage adder ``La`` cycles after its operands entered, so one running sum can take a new
    product only every ``La`` cycles; ``La`` partial sums, used in turn, keep the adder busy every cycle.  A
    combinational adder (``La = 0``) needs a single accumulator register.
    """
    return max(adder_latency, 1)


def reduction_levels(partials):
    """Adder levels of the pairwise tree that sums ``partials`` values into one: ``ceil(log2(partials))``."""
    return (partials - 1).bit_length()


def matrix_module_latency(multiplier_latency, adder_latency):
    """:attr:`MatrixModule.latency` for these float unit latencies: ``Lm + La * (1 + reduction_levels(P))``."""
    return multiplier_latency + adder_latency * (1 + reduction_levels(partial_sum_count(adder_latency)))


def operand_layout(lanes, fmt, count_bits, maximum=False):
    """The payload of :class:`MatrixModule`'s input stream (see its ``operands`` port); with ``maximum`` (a module
    with the max mode) it has the field ``maximum`` too."""
    fields = {"scalar": fmt.width, "vector": data.ArrayLayout(fmt.width, lanes),
              "seed": data.ArrayLayout(fmt.width, lanes), "count": count_bits, "relu": 1}
    return data.StructLayout(fields | ({"maximum": 1} if maximum else {}))


def _select(values, selects):
    """The value whose select is high (``values[0]`` when none is): a mux chain over one-hot ``selects``."""
    chosen = values[0]
    for value, select in zip(values[1:], selects[1:]):
        chosen = Mux(select, value, chosen)
    return chosen


class MatrixModule(wiring.Component):
    """``lanes`` float multipliers and accumulators: each valid cycle adds ``scalar * vector[l]`` into lane ``l``.

    Ports
    -----
    operands : In(stream.Signature(operand_layout(lanes, fmt, count_bits, maximum), always_ready=True))
        One product per valid beat (idle cycles between products are allowed anywhere; the module never
        stalls).  Payload fields:

        ``scalar`` (fmt.width)
            The scalar shared by all lanes.
        ``vector`` (``lanes`` x fmt.width)
            One element per lane.
        ``seed`` (``lanes`` x fmt.width)
            The accumulation's starting value per lane (the bias), sampled with its first product.
        ``count`` (count_bits)
            Number of products in this accumulation, sampled with its first product (``count = 0`` acts as 1).
        ``relu`` (1)
            Apply ReLU to this accumulation's results, sampled with its first product.  ReLU replaces every
            result whose sign bit is set (negative numbers, ``-0``, NaNs with the sign set) by ``+0``.
        ``maximum`` (1, only in a module built with ``maximum=True``)
            This accumulation is a maximum, not a sum (sampled with its first product; see "Max mode").
    result : Out(stream.Signature(ArrayLayout(fmt.width, lanes), always_ready=True))
        One valid beat per finished accumulation: the lanes' sums (the payload is only meaningful then).

    Summation order (the golden model ``models.dqn.matrix_module.accumulate_products`` repeats it)
    ------------------------------------------------------------------------------------------
    Each lane keeps ``P = partial_sum_count(adder_latency) = max(La, 1)`` partial sums.  Product ``k`` of an
    accumulation (``k = 0 .. count - 1``, counting valid cycles) goes to partial ``k mod P``:
    ``partial[k mod P] = product_k + partial[k mod P]``, where partial 0 starts at the accumulation's ``seed``
    (its first product is added to the seed: the bias costs no product cycle) and every other partial at ``-0``:
    the additive identity (``x + -0 = x`` for every ``x``, ``+0`` and ``-0`` included, and a NaN product is
    already the canonical NaN the adder returns), so it starts exactly from its first product, and every product
    goes through the adder like every other.  Partials never used (``count < P``) stay ``-0``.
    When the last product's sum leaves the adder, the P partials are summed by a pairwise tree (level by level,
    ``v[2i] + v[2i+1]``, an odd last value passing to the next level unchanged), then ReLU is applied if
    requested.

    Max mode (``maximum=True``: max pooling)
    ----------------------------------------
    An accumulation whose first product comes with ``maximum`` takes the largest product instead of the sum, in
    the same order and with the same timing: ``partial[k mod P] = max(product_k, partial[k mod P])``
    (:class:`~hw.shared.float_maximum.FloatMaximum`, with the adder's latency, beside each accumulating and each
    tree adder; its result is taken instead of the sum), partial 0 starting at the ``seed``, every other partial
    at ``-inf`` (the identity of the maximum), partials never used counting as ``-inf``, the tree taking the
    maximum of each pair.  A max-pooling pass feeds ``scalar = 1.0``, so the products are the vector's elements
    (``1.0 * x = x`` exactly; a NaN becomes the canonical NaN, which the maximum returns anyway), and seeds
    ``-inf`` (or a window's element).  Maximum rule (``models.shared.float_arith.float_max``): a NaN wins as the
    canonical NaN; ``+0`` beats ``-0``.  The price: per lane ``P`` maximum units (comparator and mux, with
    their ``La`` register stages) and a result mux per adder: Yosys module by module (Cyclone V, ``nnaccel synth``)
    puts a 16-lane binary32 module at 26,468 ALMs with the max mode and 23,039 without (+15 %; a whole-design
    run gave 26,927 and 22,116).

    Pipeline: drain while the next accumulation starts
    --------------------------------------------------
    ``lanes`` multipliers (latency ``Lm``) feed ``lanes`` accumulating adders (latency ``La``).  The running
    partials live in the accumulating adder's pipeline and in ``P`` registers per lane; the adder's output is
    forwarded to its own input when a partial comes back exactly when its next product arrives (the normal
    back-to-back case), otherwise it is read from the register it was written to.  On the cycle the last
    product's sum leaves the adder, the P final partials (the forwarded one and the registered ones) enter a
    separate pipelined reduction tree of ``P - 1`` adders per lane, while the next accumulation's products already
    overwrite the partial registers: no bubble between accumulations and no second bank of partials (the price:
    per lane P forwarding muxes, a P-way operand mux and the ``P - 1`` tree adders; with double-buffered partials
    the tree would still be needed to keep up with ``count = 1`` accumulations).  The tree takes one set of
    partials per cycle, so back-to-back accumulations of ``count = 1`` give one result per cycle.

    Timing
    ------
    Latency: the result is valid ``latency = Lm + La * (1 + reduction_levels(P))`` cycles after the cycle on which
    the accumulation's last product was valid, ``reduction_levels(P) = ceil(log2(P))``
    (``Lm = La = 2``, the default: ``2 + 2 * (1 + 1) = 6`` cycles).  Throughput: one product (``lanes``
    multiply-adds) per cycle, without bubbles between accumulations.

    Resources (per module, besides the float units' own pipeline registers)
    -----------------------------------------------------------------------
    * ``lanes`` multipliers and ``lanes * P`` adders (``lanes`` accumulating, ``lanes * (P - 1)`` in the tree);
    * ``lanes * P * fmt.width`` partial-sum register bits, plus ``lanes * fmt.width * La`` bits of delay for
      each tree level with an odd number of values (none when ``P`` is a power of two);
    * control shared by all lanes: ``count_bits + P + 3`` bookkeeping bits and, per register stage, a tag of
      ``P + 6`` bits after the multipliers, ``P + 4`` after the accumulators and 2 in the tree (one-hot partial
      index, first, fresh partial, last, full, relu, valid);
    * the seed: ``lanes * fmt.width * Lm`` bits of delay beside the multipliers and per lane a 2:1 mux of
      ``fmt.width`` bits in front of the accumulating adder (the seed or ``-0`` for a partial's first product).
    Default (16 lanes, binary32, ``Lm = La = 2``, ``P = 2``): 16 multipliers, 32 adders, 1024 partial-sum bits,
    1024 seed-delay bits and 53 control bits.

    FPGA mapping (Intel Stratix V): each binary32 multiplier is one variable-precision DSP block (27x27 mantissa
    product), so 16 lanes use 16 DSP blocks and 16 modules the DE5-Net's 256; the adders (alignment shifter,
    adder, normalizer), the ReLU and the partial-sum registers are in ALMs.

    Parameters
    ----------
    lanes : int
        Vector width (16 in the thesis).
    maximum : bool
        Build the max mode (default False: the module only sums, and its operands have no ``maximum`` field).
    fmt : FloatFormat
        Number format of every operand and result (binary32 by default; ``BINARY16``, ``BFLOAT16`` presets).
    multiplier_latency, adder_latency : int
        Register stages ``Lm`` and ``La`` of the float units (0 = combinational).
    count_bits : int
        Width of ``count``; the longest accumulation is ``2**count_bits - 1`` products.
    """

    def __init__(self, *, lanes=16, fmt=BINARY32, multiplier_latency=2, adder_latency=2, count_bits=COUNT_BITS,
                 maximum=False):
        check_positive("lanes", lanes)
        if not isinstance(fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {fmt!r}")
        check_non_negative("multiplier_latency", multiplier_latency)
        check_non_negative("adder_latency", adder_latency)
        check_positive("count_bits", count_bits)
        if not isinstance(maximum, bool):
            raise TypeError(f"maximum must be a bool, not {maximum!r}")
        self._lanes = lanes
        self._fmt = fmt
        self._multiplier_latency = multiplier_latency
        self._adder_latency = adder_latency
        self._count_bits = count_bits
        self._maximum = maximum
        super().__init__({
            "operands": In(stream.Signature(operand_layout(lanes, fmt, count_bits, maximum), always_ready=True)),
            "result": Out(stream.Signature(data.ArrayLayout(fmt.width, lanes), always_ready=True)),
        })

    @property
    def lanes(self):
        return self._lanes

    @property
    def fmt(self):
        return self._fmt

    @property
    def multiplier_latency(self):
        return self._multiplier_latency

    @property
    def adder_latency(self):
        return self._adder_latency

    @property
    def count_bits(self):
        return self._count_bits

    @property
    def maximum(self):
        return self._maximum

    @property
    def module_name(self):
        """Verilog module name carrying the parameters, e.g. ``matrix_module_w16_binary32_m2_a2_c16`` (``_max``
        appended with the max mode)."""
        return (f"matrix_module_w{self._lanes}_{self._fmt.name}_m{self._multiplier_latency}"
                f"_a{self._adder_latency}_c{self._count_bits}" + ("_max" if self._maximum else ""))

    @property
    def partials(self):
        """Partial sums kept per lane (``P`` in the class docstring)."""
        return partial_sum_count(self._adder_latency)

    @property
    def latency(self):
        """Cycles from the last product's valid beat to the result's."""
        return matrix_module_latency(self._multiplier_latency, self._adder_latency)

    def _accumulating_units(self, m, name):
        """The :class:`FloatAdder` named ``name`` (the accumulating adder of a lane, or one of its tree) and, with the
        max mode, a :class:`FloatMaximum` beside it; :meth:`_connect_units` gives them their operands."""
        units = [FloatAdder(fmt=self._fmt, latency=self._adder_latency)]
        if self._maximum:
            units.append(FloatMaximum(fmt=self._fmt, latency=self._adder_latency))
        for unit, suffix in zip(units, ("", "_maximum")):
            m.submodules[name + suffix] = unit
        return units

    @staticmethod
    def _unit_result(units, maximum):
        """The sum, or the maximum where ``maximum`` (the flag of the operation leaving the units) is set."""
        if len(units) == 1:
            return units[0].result.payload
        return Mux(maximum, units[1].result.payload, units[0].result.payload)

    @staticmethod
    def _connect_units(m, units, a, b, valid):
        for unit in units:
            m.d.comb += [unit.operands.payload.a.eq(a), unit.operands.payload.b.eq(b), unit.operands.valid.eq(valid)]

    def elaborate(self, platform):
        stand_in = platform_stand_in(platform, self, hierarchical_block=True)
        if stand_in is not None:
            return stand_in
        m = Module()
        width = self._fmt.width
        partials = self.partials
        operands = self.operands.payload
        negative_zero = Const(1 << (width - 1), width)
        negative_infinity = Const(self._fmt.infinity(sign=1), width)

        # ---- Accumulation bookkeeping, on the input cycle -------------------------------------------------
        # Each product is tagged with what the later stages need: the partial it goes to, whether it is the
        # first product of that partial (fresh: add it to -0, or to the seed if it is the accumulation's first
        # product, which carries the seed along), whether it is the accumulation's last, and then
        # whether every partial was used (full) and the accumulation's ReLU flag.
        busy = Signal()                       # an accumulation is open: its next product is not its first
        remaining = Signal(self._count_bits)  # products of the open accumulation still to come
        wrapped = Signal()                    # every partial has had a product in the open accumulation
        accumulation_relu = Signal()
        accumulation_maximum = Signal()

        first = Signal()
        last = Signal()                       # this product ends its accumulation
        m.d.comb += [
            first.eq(~busy),
            # count <= 1 and remaining == 1, spelt with bits (Yosys narrows the constant of a comparison).
            last.eq(Mux(first, ~operands.count[1:].any(), remaining[0] & ~remaining[1:].any())),
        ]
        input_tag = {"fresh": ~wrapped, "first": first, "seed": operands.seed, "last": last,
                     "relu": Mux(first, operands.relu, accumulation_relu)}
        if self._maximum:
            input_tag["maximum"] = Mux(first, operands.maximum, accumulation_maximum)
        if partials > 1:
            next_partial = Signal(partials, init=1)  # one-hot: bit p set when the next product goes to partial p
            completes_round = next_partial[-1]
            input_tag |= {"partial": next_partial, "full": wrapped | completes_round}
        else:
            completes_round = Const(1)

        with m.If(self.operands.valid):
            m.d.sync += [
                busy.eq(~last),
                remaining.eq(Mux(first, operands.count, remaining) - 1),
                wrapped.eq(~last & (wrapped | completes_round)),
            ]
            if partials > 1:
                m.d.sync += next_partial.eq(Mux(last | completes_round, 1, next_partial << 1))
            with m.If(first):
                m.d.sync += accumulation_relu.eq(operands.relu)
                if self._maximum:
                    m.d.sync += accumulation_maximum.eq(operands.maximum)

        multiply = Pipeline(m, latency=self._multiplier_latency, cut_priority=("product",), valid=self.operands.valid)
        product_tag = multiply.cut("product", input_tag)
        accumulate = Pipeline(m, latency=self._adder_latency, cut_priority=("sum",), valid=multiply.valid)
        sum_tag = accumulate.cut("sum", {key: value for key, value in product_tag.items()
                                         if key not in ("fresh", "first", "seed")})
        # The value a partial holds before its first product, and an unused partial counts as: the identity.
        if self._maximum:
            identity = Mux(product_tag["maximum"], negative_infinity, negative_zero)
            unused = Mux(sum_tag["maximum"], negative_infinity, negative_zero)
        else:
            identity = unused = negative_zero

        if partials > 1:
            product_selects = list(product_tag["partial"])
            sum_updates = [accumulate.valid & selected for selected in sum_tag["partial"]]
            # This accumulation put products into partials 0 .. (its last product's partial), or into all of them.
            partial_used = [Const(1)] + [sum_tag["full"] | sum_tag["partial"][index:].any()
                                         for index in range(1, partials)]
        else:
            product_selects, sum_updates, partial_used = [Const(1)], [accumulate.valid], [Const(1)]

        # ---- Per lane: multiply, accumulate into the interleaved partial sums --------------------------------
        final_partials = []
        for lane in range(self._lanes):
            multiplier = m.submodules[f"multiplier_{lane}"] = FloatMultiplier(
                fmt=self._fmt, latency=self._multiplier_latency)
            m.d.comb += [
                multiplier.operands.payload.a.eq(operands.scalar),
                multiplier.operands.payload.b.eq(operands.vector[lane]),
                multiplier.operands.valid.eq(self.operands.valid),
            ]

            units = self._accumulating_units(m, f"accumulator_{lane}")
            accumulated = self._unit_result(units, sum_tag.get("maximum"))
            stored = [Signal(width, name=f"partial_{lane}_{index}", reset_less=True) for index in range(partials)]
            latest = [Mux(sum_updates[index], accumulated, stored[index]) for index in range(partials)]
            # A combinational adder's output is this cycle's own sum: its running value is the register.
            running = latest if self._adder_latency else stored
            partial_operand = Mux(product_tag["fresh"], Mux(product_tag["first"], product_tag["seed"][lane], identity),
                                  _select(running, product_selects))
            self._connect_units(m, units, multiplier.result.payload, partial_operand, multiply.valid)
            for index in range(partials):
                with m.If(sum_updates[index]):
                    m.d.sync += stored[index].eq(accumulated)
            # Read on the cycle the last product's sum leaves the adder; partials this accumulation did not use
            # hold older values and count as the identity.
            final_partials.append([Mux(partial_used[index], latest[index], unused) for index in range(partials)])

        # ---- Reduce the final partials (pairwise tree), while the next accumulation runs --------------------
        values = final_partials
        reducing = accumulate.valid & sum_tag["last"]             # the values of this tree level are valid
        relu, maximum = sum_tag["relu"], sum_tag.get("maximum")
        for level in range(reduction_levels(partials)):
            level_units = [[] for _ in range(self._lanes)]
            for lane in range(self._lanes):
                for pair in range(len(values[lane]) // 2):
                    units = self._accumulating_units(m, f"reducer_{lane}_{level}_{pair}")
                    self._connect_units(m, units, values[lane][2 * pair], values[lane][2 * pair + 1], reducing)
                    level_units[lane].append(units)
            # The level's odd value (if any) and the ReLU and max flags wait for the level's adders (the max flag
            # picks their results as they leave).
            carried = {"relu": relu} | ({"maximum": maximum} if self._maximum else {})
            if len(values[0]) % 2:
                carried |= {f"lane{lane}": values[lane][-1] for lane in range(self._lanes)}
            level_stage = Pipeline(m, latency=self._adder_latency, cut_priority=(f"level{level + 1}",),
                                   valid=reducing)
            carried = level_stage.cut(f"level{level + 1}", carried)
            reducing, relu, maximum = level_stage.valid, carried["relu"], carried.get("maximum")
            sums = [[self._unit_result(units, maximum) for units in level_units[lane]] for lane in range(self._lanes)]
            if len(values[0]) % 2:
                for lane in range(self._lanes):
                    sums[lane].append(carried[f"lane{lane}"])
            values = sums

        # ---- ReLU ---------------------------------------------------------------------------------------------
        m.d.comb += self.result.valid.eq(reducing)
        for lane, (total,) in enumerate(values):
            m.d.comb += self.result.payload[lane].eq(Mux(relu & total[width - 1], 0, total))
        return m
