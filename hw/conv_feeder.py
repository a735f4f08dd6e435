"""The DQN accelerator's convolution feeder (SPEC section 1, thesis Figure 4.3): image rows in, one scalar per
matrix module per cycle out, using registers that only ever shift by the stride."""

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.dual_port_buffer import BufferPortSignature, check_positive_integer
from hw.float_format import BINARY32, FloatFormat

__all__ = ["ConvFeeder", "FEEDER_LATENCY", "ConvGeometry"]

FEEDER_LATENCY = 4
"""Cycles from the cycle ``start`` is high to the first ``out_valid`` (issue, load, tap, output register)."""


# Helpers that keep the generated Verilog free of width mismatches under ``verilator -Wall``: Yosys writes a
# constant with its leading zeros dropped, so ``x == 2`` or ``x + 12`` compare or add operands of unequal widths.

def _equals(value, constant):
    """``value == constant`` written as an XOR and a reduction (no narrowed constant operand)."""
    return ~(value ^ Const(constant, len(value))).any()


def _add_constant(value, constant):
    """``(value + constant) mod 2**len(value)``, with the constant written so that its top bit is set (then it
    keeps ``value``'s width): adding ``c`` or subtracting ``2**n - c``, whichever constant has the top bit."""
    bits = len(value)
    addend = constant % (1 << bits)
    if addend == 0:
        return value
    if addend >> (bits - 1):
        return (value + Const(addend, bits))[:bits]
    return (value - Const((1 << bits) - addend, bits))[:bits]


def _select(values, index):
    """``values[index]`` as a binary tree of 2:1 multiplexers on the bits of ``index`` (indices past the end of
    ``values`` give its last element)."""
    level = list(values)
    for bit in range(len(index)):
        level = [Mux(index[bit], level[pair + 1], level[pair]) if pair + 1 < len(level) else level[pair]
                 for pair in range(0, len(level), 2)]
    return level[0]


def _delay(m, stage, values):
    """One register per value (named ``<stage>_<key>``), carrying a product's bookkeeping one pipeline stage on."""
    delayed = {}
    for key, value in values.items():
        delayed[key] = Signal(Value.cast(value).shape(), name=f"{stage}_{key}", reset_less=True)
        m.d.sync += delayed[key].eq(value)
    return delayed


@dataclass(frozen=True, kw_only=True)
class ConvGeometry:
    """A convolution layer's shape and how many output positions are computed at once; derived sizes.

    Shared by :class:`ConvFeeder` and the golden model :func:`models.conv_feeder.feeder_schedule`, which both
    validate their parameters through it.

    Output positions are numbered in raster order, ``q = row * output_size + column``.  Group ``g`` (``g = 0 ..
    groups - 1``) computes the ``positions`` positions ending at ``q_end = (g + 1) * positions`` (positions past
    the last one are idle).  Its *head* is the part in output row ``head_row(g) = q_end // output_size``: columns
    ``0 .. head_count(g) - 1`` with ``head_count(g) = q_end % output_size``.  The rest, its *tail*, is the end of
    the row above: columns ``output_size - positions + head_count(g) .. output_size - 1``.  Matrix module ``m``
    works on column ``m`` of the head row if ``m < head_count(g)``, else on column ``m + output_size - positions``
    of the row above.  This needs every group to be a head plus a tail (never a stretch in the middle of a row),
    which holds when ``positions <= output_size`` and ``gcd(positions, output_size) >= output_size - positions``;
    the constructor checks every group and says which one breaks the rule.
    """

    channels: int
    image_size: int
    kernel_size: int
    stride: int
    positions: int

    def __post_init__(self):
        for name in ("channels", "image_size", "kernel_size", "stride", "positions"):
            check_positive_integer(name, getattr(self, name))
        if self.kernel_size > self.image_size:
            raise ValueError(f"kernel_size must be at most image_size = {self.image_size}, not {self.kernel_size!r}")
        if self.positions > self.output_size:
            raise ValueError(f"positions must be at most the output size {self.output_size}, "
                             f"not {self.positions!r}")
        for group in range(self.groups - 1):
            head = self.head_count(group)
            if head > self.positions:
                raise ValueError(
                    f"positions={self.positions} cannot tile {self.output_size}-wide output rows: group {group} "
                    f"covers columns {head - self.positions}..{head - 1} of output row {self.head_row(group)}, "
                    f"neither its start nor its end (needs gcd(positions, {self.output_size}) >= "
                    f"{self.output_size - self.positions})")

    @property
    def output_size(self):
        return (self.image_size - self.kernel_size) // self.stride + 1

    @property
    def groups(self):
        """Window groups: ``ceil(output_size**2 / positions)``."""
        return -(-self.output_size ** 2 // self.positions)

    @property
    def products(self):
        """Products per output (and cycles per group): ``channels * kernel_size**2``."""
        return self.channels * self.kernel_size ** 2

    @property
    def register_elements(self):
        """Numbers in each shift register: ``(positions + ceil(kernel_size / stride) - 1) * stride``."""
        return (self.positions + -(-self.kernel_size // self.stride) - 1) * self.stride

    @property
    def tail_offset(self):
        """Image column the tail register starts at: ``(output_size - positions) * stride``."""
        return (self.output_size - self.positions) * self.stride

    def head_row(self, group):
        """Output row of group ``group``'s head (an int, or an array for an array of groups)."""
        return (group + 1) * self.positions // self.output_size

    def head_count(self, group):
        """Modules working on group ``group``'s head row (an int, or an array for an array of groups)."""
        return (group + 1) * self.positions % self.output_size

    @property
    def cycles(self):
        """Output cycles of the whole layer: ``groups * products`` (one product per cycle, no stall)."""
        return self.groups * self.products


class ConvFeeder(wiring.Component):
    """Feeds ``positions`` matrix modules one image scalar each per cycle, for a ``kernel_size`` x ``kernel_size``
    convolution with ``stride`` over a ``channels`` x ``image_size`` x ``image_size`` image.

    The image sits in a :class:`~hw.dual_port_buffer.DualPortBuffer` in image order: word ``c * image_size + r``
    is row ``r`` of channel ``c``, ``image_size`` numbers, column 0 at the LSB (CONV_1: 2688-bit words, depth 336;
    CONV_2 reads CONV_1's output buffer, 640-bit words, depth 320).  The feeder owns both ports of that buffer
    while it runs and only reads.

    Ports
    -----
    start : In(1)
        Pulse to compute a whole layer (ignored while ``busy``).
    busy : Out(1)
        High from the cycle after ``start`` until the last beat has been emitted.
    upper, lower : Out(BufferPortSignature(width=image_size * fmt.width, depth=channels * image_size))
        The two buffer ports (``write_enable`` is always low): ``upper`` reads the rows of a group's tail,
        ``lower`` those of its head (see :class:`ConvGeometry`).
    out_valid : Out(1)
        High on every cycle that carries a product.
    scalars : Out(positions * fmt.width)
        One image value per matrix module, module 0 at the LSB; 0 for an idle module.
    weight_index : Out(range(channels * kernel_size**2))
        The product this cycle carries, ``c * kernel_size**2 + kh * kernel_size + kw``: the row of the weight
        buffer (stored [in_channel, filter_h, filter_w, out_channel]) whose filter vector goes with ``scalars``.
    first, last : Out(1)
        First / last product of a group (``weight_index`` 0 / ``channels * kernel_size**2 - 1``).
    output_row, head_count : Out
        Which outputs the group computes: module ``m < head_count`` computes output
        ``(output_row, m)``, module ``m >= head_count`` computes ``(output_row - 1, m + output_size - positions)``.
    active : Out(positions)
        Bit ``m`` high when module ``m`` computes a new output (only the last group has idle modules).
    These outputs are constant during a group.

    Product order and stride-only shifting (thesis Figure 4.3)
    ----------------------------------------------------------
    Every group runs the products in weight-buffer order: channel, kernel row, kernel column.  For each
    (channel, kernel row), both ports read one image row: ``lower`` the row under the head's windows, ``upper``
    the row under the tail's.  Each row goes into its own *shift register* of ``(positions + ceil(K / S) - 1) *
    S`` numbers (``K`` kernel size, ``S`` stride), taken from column 0 (``lower``) or column
    ``(output_size - positions) * S`` (``upper``).  Module ``m`` reads element ``m * S + kw % S`` of its
    register: its window's column ``kw`` as long as the register has been shifted ``kw // S`` times.  So the
    registers only ever shift by the stride, once every ``S`` cycles; a window column ``a * S + b`` further on is
    reached by repeating that shift ``a`` times, and since the kernel columns are visited in order, each shift is
    reused by the next ``S`` columns instead of being redone (thesis: "window 3 reuses window 2's shift").  The
    double buffer is the buffer's read-data register, which never shifts, plus the shift register: one shifting
    register per row stream.  Module ``m`` takes its ``lower`` tap when bit ``m`` of a head-mask register
    (``m < head_count``) is set, else its ``upper`` tap; from one group to the next the mask shifts right by
    ``output_size - positions`` (or refills when the previous group had no tail).  The split between head and tail
    is what lets a group straddle two output rows, so that every module stays busy when ``positions`` does not
    divide ``output_size`` (CONV_1: 16 of 20, CONV_2: 8 of 9); a feeder whose groups stay inside one output row
    needs 40 groups for CONV_1 and 18 for CONV_2.

    Timing
    ------
    Pipeline: issue (read request, counters) -> load/shift (the read data arrives and enters the shift register)
    -> tap (module multiplexers) -> output registers.  The first beat leaves ``FEEDER_LATENCY = 4`` cycles after
    the ``start`` cycle; after it one beat every cycle, with no bubble inside or between groups: a group takes
    exactly ``channels * kernel_size**2`` cycles and the layer ``groups * channels * kernel_size**2``.  Nothing
    ever stalls: a row is needed every ``kernel_size`` cycles per port, and the read for the next (channel,
    kernel row) is issued two cycles before its first product, which is all the buffer's one-cycle read latency
    asks for.  ``weight_index`` comes with its scalars; a controller that reads the weight buffer with it (one
    cycle of read latency) delays the scalars by one cycle to pair them.

    CONV_1 (4x84x84, 8x8, stride 4, 16 positions): 25 groups x 256 = 6,400 cycles, as in the thesis.  CONV_2
    (16x20x20, 4x4, stride 2, 8 positions, each scalar driving the two modules that hold filters 0-15 and 16-31):
    11 groups x 256 = 2,816 cycles, the fewest possible while each (position, 16-filter half) accumulation stays on
    one matrix module: 81 x 2 accumulations on 16 modules take at least ceil(162 / 16) = 11 rounds.  Only the
    last group is ragged (one position, 2 of 16 modules busy: 8 % of CONV_2's module-cycles idle).

    Resources
    ---------
    Two shift registers of ``(positions + ceil(K / S) - 1) * S * fmt.width`` bits (CONV_1: 68 numbers = 2,176
    bits each), each bit a three-way choice (hold, load, shift by S); per module an ``S``:1 multiplexer on each
    register, a 2:1 head/tail choice and the idle gating (``fmt.width`` bits wide); ``positions * fmt.width``
    output register bits; the head mask (``positions`` bits), counters, two address adders and the bookkeeping
    carried down the pipeline (a few dozen bits).  All in ALMs; no DSP, no block RAM (the image buffer
    is outside).

    Parameters
    ----------
    channels, image_size, kernel_size, stride, positions : int
        The layer's input shape, square kernel and stride, and how many output positions are fed in parallel
        (see :class:`ConvGeometry` for which values are accepted).
    fmt : FloatFormat
        Number format of the image (only its width matters: the feeder moves numbers, it does not compute).
    """

    def __init__(self, *, channels, image_size, kernel_size, stride, positions, fmt=BINARY32):
        if not isinstance(fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {fmt!r}")
        self._geometry = ConvGeometry(channels=channels, image_size=image_size, kernel_size=kernel_size,
                                      stride=stride, positions=positions)
        self._fmt = fmt
        geometry = self._geometry
        row_port = BufferPortSignature(width=image_size * fmt.width, depth=channels * image_size)
        super().__init__({
            "start": In(1),
            "busy": Out(1),
            "upper": Out(row_port),
            "lower": Out(row_port),
            "out_valid": Out(1),
            "scalars": Out(positions * fmt.width),
            "weight_index": Out(range(geometry.products)),
            "first": Out(1),
            "last": Out(1),
            "output_row": Out(range(geometry.output_size + 1)),
            "head_count": Out(range(positions + 1)),
            "active": Out(positions),
        })

    @property
    def channels(self):
        return self._geometry.channels

    @property
    def image_size(self):
        return self._geometry.image_size

    @property
    def kernel_size(self):
        return self._geometry.kernel_size

    @property
    def stride(self):
        return self._geometry.stride

    @property
    def positions(self):
        return self._geometry.positions

    @property
    def fmt(self):
        return self._fmt

    @property
    def geometry(self):
        return self._geometry

    @property
    def latency(self):
        return FEEDER_LATENCY

    def elaborate(self, platform):
        m = Module()
        geometry = self._geometry
        width = self._fmt.width
        kernel, stride, positions = geometry.kernel_size, geometry.stride, geometry.positions
        output_size = geometry.output_size
        address_shape = self.lower.address.shape()

        # ---- Issue stage: counters, group bookkeeping, row reads -----------------------------------------
        running = Signal()
        group = Signal(range(geometry.groups))
        weight_index = Signal(range(geometry.products))
        column = Signal(range(kernel))                 # kw
        column_in_chunk = Signal(range(max(stride, 2)))  # kw % S (always 0 when S = 1)
        kernel_row = Signal(address_shape)             # kh
        channel_base = Signal(address_shape)           # c * image_size
        head_image_row = Signal(address_shape)         # head_row * S
        head_row = Signal(range(output_size + 1))     # output_size: past the last row (no head)
        head_count = Signal(range(positions + 1))
        head_mask = Signal(positions)                  # bit m: m < head_count (module m works on the head)

        last_product = _equals(weight_index, geometry.products - 1)
        last_column = _equals(column, kernel - 1)
        first_column = ~column.any()
        head_exists = ~_equals(head_row, output_size)
        lower_address = ((channel_base + head_image_row)[:address_shape.width] + kernel_row)[:address_shape.width]
        m.d.comb += [
            self.lower.address.eq(lower_address),
            self.lower.read_enable.eq(running & first_column & head_exists),
            self.upper.address.eq(_add_constant(lower_address, -stride)),
            self.upper.read_enable.eq(running & first_column & head_row.any()),
        ]

        # The next group's head ends (output_size - positions) columns further left, in the next output row, if
        # this group's head reaches that far; otherwise this group had no tail and the next is a full head.
        step_back = output_size - positions
        wraps = head_mask[step_back - 1] if step_back else Const(1)
        first_head_row, first_head_count = divmod(positions, output_size)
        with m.If(running):
            m.d.sync += [
                weight_index.eq(Mux(last_product, 0, weight_index + 1)),
                column.eq(Mux(last_column, 0, column + 1)),
                column_in_chunk.eq(Mux(last_column | _equals(column_in_chunk, stride - 1), 0,
                                       column_in_chunk + 1)),
            ]
            with m.If(last_column):
                last_kernel_row = _equals(kernel_row, kernel - 1)
                m.d.sync += kernel_row.eq(Mux(last_kernel_row, 0, kernel_row + 1))
                with m.If(last_kernel_row):
                    m.d.sync += channel_base.eq(Mux(last_product, 0,
                                                    _add_constant(channel_base, geometry.image_size)))
            with m.If(last_product):
                m.d.sync += group.eq(group + 1)
                with m.If(wraps):
                    m.d.sync += [
                        head_count.eq(_add_constant(head_count, -step_back)),
                        head_mask.eq(head_mask >> step_back),
                        head_row.eq(head_row + 1),
                        head_image_row.eq(_add_constant(head_image_row, stride)),
                    ]
                with m.Else():
                    m.d.sync += [head_count.eq(positions), head_mask.eq((1 << positions) - 1)]
                with m.If(_equals(group, geometry.groups - 1)):
                    m.d.sync += running.eq(0)
        with m.Elif(self.start & ~self.busy):
            m.d.sync += [
                running.eq(1),
                group.eq(0),
                weight_index.eq(0),
                column.eq(0),
                column_in_chunk.eq(0),
                kernel_row.eq(0),
                channel_base.eq(0),
                head_row.eq(first_head_row),
                head_image_row.eq(first_head_row * stride),
                head_count.eq(first_head_count),
                head_mask.eq((1 << first_head_count) - 1),
            ]

        # ---- Load/shift stage: the rows read on the issue cycle arrive -----------------------------------
        load_valid = Signal()
        m.d.sync += load_valid.eq(running)
        # (with S = 1 the registers shift on every column and each module has a single tap: no column_in_chunk)
        chunk = {"column_in_chunk": column_in_chunk} if stride > 1 else {}
        load = _delay(m, "load", {"first_column": first_column, "chunk_start": ~column_in_chunk.any(), **chunk,
                                  "weight_index": weight_index, "head_row": head_row, "head_count": head_count,
                                  "head_mask": head_mask, "head_exists": head_exists})

        register_bits = geometry.register_elements * width
        shift_bits = stride * width
        registers = {}
        for name, port, offset in (("lower", self.lower, 0), ("upper", self.upper, geometry.tail_offset)):
            row = port.read_data
            available = min(register_bits, len(row) - offset * width)
            loaded = Cat(row[offset * width:offset * width + available], Const(0, register_bits - available))
            registers[name] = register = Signal(register_bits, name=f"{name}_shift_register")
            with m.If(load_valid):
                with m.If(load["first_column"]):
                    m.d.sync += register.eq(loaded)
                with m.Elif(load["chunk_start"]):
                    m.d.sync += register.eq(Cat(register[shift_bits:], Const(0, shift_bits)))

        # ---- Tap stage: each module picks its number from its two registers -------------------------------
        tap_valid = Signal()
        m.d.sync += tap_valid.eq(load_valid)
        tap = _delay(m, "tap", {key: load[key] for key in (*chunk, "weight_index", "head_row", "head_count",
                                                           "head_mask", "head_exists")})
        scalars = []
        active = []
        for module in range(positions):
            taps = {name: _select([register[(module * stride + element) * width:][:width]
                                   for element in range(stride)], tap.get("column_in_chunk", Const(0, 0)))
                    for name, register in registers.items()}
            in_head = tap["head_mask"][module]
            module_active = ~in_head | tap["head_exists"]
            scalars.append(Mux(module_active, Mux(in_head, taps["lower"], taps["upper"]), 0))
            active.append(module_active)

        # ---- Output registers -----------------------------------------------------------------------------
        m.d.sync += [
            self.out_valid.eq(tap_valid),
            self.scalars.eq(Cat(*scalars)),
            self.weight_index.eq(tap["weight_index"]),
            self.first.eq(~tap["weight_index"].any()),
            self.last.eq(_equals(tap["weight_index"], geometry.products - 1)),
            self.output_row.eq(tap["head_row"]),
            self.head_count.eq(tap["head_count"]),
            self.active.eq(Cat(*active)),
        ]
        m.d.comb += self.busy.eq(running | load_valid | tap_valid | self.out_valid)
        return m
