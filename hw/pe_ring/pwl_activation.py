"""Piecewise-linear (PWL) activation unit: ``y = intercept[i] + slope[i] * dx`` from a segment table.

The input range is ``[-input_range, +input_range)`` cut into ``segments`` equal segments; both are
powers of two in least significant bits, so the segment index and the offset ``dx`` inside the
segment are bit fields of the input (no adder or comparator in front of the table):

* ``x`` is clamped to the range (saturation: inputs below give the value at ``-input_range``,
  inputs above the value at the last representable point below ``+input_range``);
* ``offset = x + input_range`` is the clamped input with its sign bit inverted;
* ``index = offset >> segment_shift`` selects the table entry, ``dx = offset mod 2**segment_shift``.

Each entry holds the line through the segment in the data format: ``intercept`` is the value at
the segment's left edge and ``slope`` the gradient, so ``y = fx_mac(intercept, slope, dx)``
(:func:`hw.shared.fixed_point.fx_mac`: product rounded half up, then saturating add). Referring the
intercept to the segment edge instead of to ``x = 0`` keeps ``slope * dx`` small, so quantising the
slope costs at most ``2**segment_shift`` times half an LSB of slope.
Tables come from :mod:`models.pe_ring.pwl` (sigmoid, tanh, Gaussian), which also models this unit bit for bit.
"""

from dataclasses import dataclass

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.fixed_point import QFormat, fx_mac

__all__ = ["PWLTable", "PWLActivation"]


def _power_of_two_exponent(value):
    return value.bit_length() - 1 if isinstance(value, int) and value > 0 and value & (value - 1) == 0 else None


@dataclass(frozen=True)
class PWLTable:
    """A PWL table: ``slopes[i]`` and ``intercepts[i]`` (raw ``fmt`` integers) for segment ``i`` of
    ``[-input_range, +input_range)``; ``input_range`` is a real number, a power of two times the LSB."""

    fmt: QFormat
    input_range: float
    slopes: tuple
    intercepts: tuple
    name: str = "pwl"

    def __post_init__(self):
        if not isinstance(self.fmt, QFormat):
            raise TypeError(f"fmt must be a QFormat, not {self.fmt!r}")
        range_lsb = self.input_range * (1 << self.fmt.frac_bits) if isinstance(self.input_range, (int, float)) else None
        range_log2 = _power_of_two_exponent(int(range_lsb)) if range_lsb and range_lsb == int(range_lsb) else None
        if range_log2 is None or not self.fmt.signed or range_log2 > self.fmt.width - 1:
            raise ValueError(f"input_range must be a power of two times the LSB of a signed {self.fmt.name}, "
                             f"at most 2**{self.fmt.width - 1} LSBs, not {self.input_range!r}")
        segments = len(self.slopes)
        segments_log2 = _power_of_two_exponent(segments)
        if segments_log2 is None or segments < 2 or segments_log2 > range_log2 + 1:
            raise ValueError(f"the number of segments must be a power of two from 2 to {2 << range_log2} "
                             f"(one LSB per segment), not {segments}")
        if len(self.intercepts) != segments:
            raise ValueError(f"{len(self.intercepts)} intercepts for {segments} slopes: they must pair up")
        for kind, values in (("slope", self.slopes), ("intercept", self.intercepts)):
            bad = [v for v in values if not isinstance(v, int) or not self.fmt.min_raw <= v <= self.fmt.max_raw]
            if bad:
                raise ValueError(f"{kind} {bad[0]!r} is not a raw {self.fmt.name} integer")

    @property
    def segments(self):
        return len(self.slopes)

    @property
    def range_log2(self):
        """``input_range`` is ``2**range_log2`` LSBs."""
        return int(self.input_range * (1 << self.fmt.frac_bits)).bit_length() - 1

    @property
    def segment_shift(self):
        """Each segment is ``2**segment_shift`` LSBs wide."""
        return self.range_log2 + 1 - (self.segments.bit_length() - 1)


class PWLActivation(wiring.Component):
    """PWL activation unit for a :class:`PWLTable`.

    Ports: ``x`` (In) and ``y`` (Out), always-ready streams of ``fmt.shape`` values.
    Timing: latency 1 (``y`` for the ``x`` of cycle ``c`` is on the port during cycle ``c + 1``, valid
    when that ``x`` was), throughput one input per cycle. The table lookup is the registered stage
    (synchronous ROM read, ``dx`` registered beside it); the multiply-add is combinational after it.
    FPGA mapping: the table is one block RAM (``segments`` x ``2 * width`` bits: 256 x 32 fits one
    M10K / M20K), the multiply one DSP block, clamping and the adder ALMs.
    """

    def __init__(self, *, table):
        if not isinstance(table, PWLTable):
            raise TypeError(f"table must be a PWLTable, not {table!r}")
        self._table = table
        fmt = table.fmt
        self._entry = data.StructLayout({"slope": fmt.shape, "intercept": fmt.shape})
        super().__init__({"x": In(stream.Signature(fmt.shape, always_ready=True)),
                          "y": Out(stream.Signature(fmt.shape, always_ready=True))})

    @property
    def table(self):
        return self._table

    def elaborate(self, platform):
        m = Module()
        table, fmt = self._table, self._table.fmt
        range_log2, shift = table.range_log2, table.segment_shift
        x = self.x.payload

        # ---- Clamp to [-input_range, +input_range) and split into index / dx (cycle c) ----------
        offset_bits = range_log2 + 1
        if range_log2 == fmt.width - 1:
            offset = Cat(x[:-1], ~x[-1])                      # the range is the whole format
        else:
            high = x[range_log2:]                             # all equal when x is inside the range
            negative = x[-1]
            below = negative & ~high.all()
            above = ~negative & high.any()
            inside = Cat(x[:range_log2], ~x[range_log2])
            offset = Mux(below, 0, Mux(above, (1 << offset_bits) - 1, inside))
        offset_signal = Signal(offset_bits)
        m.d.comb += offset_signal.eq(offset)

        # ---- Table lookup, registered (cycle c -> c + 1) ----------------------------------------
        m.submodules.table = rom = Memory(
            shape=self._entry, depth=table.segments,
            init=[{"slope": s, "intercept": b} for s, b in zip(table.slopes, table.intercepts)])
        lookup = rom.read_port()
        dx = Signal(fmt.shape)
        m.d.comb += lookup.addr.eq(offset_signal[shift:])
        m.d.sync += [dx.eq(offset_signal[:shift]) if shift else dx.eq(0), self.y.valid.eq(self.x.valid)]

        # ---- y = intercept + slope * dx (cycle c + 1) -------------------------------------------
        m.d.comb += self.y.payload.eq(fx_mac(lookup.data.intercept, lookup.data.slope, dx, fmt))
        return m
