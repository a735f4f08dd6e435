"""Running argmax over a stream of float vectors: the DQN accelerator's on-chip action choice."""

from amaranth.hdl import Const, Module, Mux
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.float_format import BINARY32, FloatFormat
from nnaccel.hw.shared.parameters import check_positive

__all__ = ["FloatArgmax", "candidate_layout", "order_key"]


def order_key(fmt, bits):
    """An unsigned value that orders floats like their values: -inf < ... < -0 < +0 < ... < +inf.

    Positive floats get the sign bit set, negative ones are inverted (so a larger magnitude sorts
    lower).  NaNs sort beyond the infinities of their sign.  ``bits`` is an Amaranth value.
    """
    sign = bits[fmt.width - 1]
    return bits ^ Mux(sign, Const((1 << fmt.width) - 1, fmt.width), Const(1 << (fmt.width - 1), fmt.width))


def candidate_layout(fmt, lanes, index_bits):
    """The payload of :class:`FloatArgmax`'s input stream (see its ``candidates`` port)."""
    return data.StructLayout({"values": data.ArrayLayout(fmt.width, lanes), "mask": lanes, "base_index": index_bits})


class FloatArgmax(wiring.Component):
    """Index and value of the largest float seen since ``clear``, fed ``lanes`` values per cycle.

    Parameters (keyword-only, read-only properties): ``fmt``, ``lanes`` and ``index_bits`` (the width of an
    index: the accelerator's output-channel field).

    Ports: ``clear`` (In 1) forgets everything; ``candidates`` (In, an always-ready stream of
    :func:`candidate_layout`: ``values``, ``lanes`` raw floats; ``mask``, which lanes take part; ``base_index``,
    the index of lane 0); ``index`` (Out index_bits), ``value`` (Out width), ``found`` (Out 1: some lane has been
    seen).

    Order: :func:`order_key` (so -0 < +0); among equal values the lowest index wins, whether the tie is
    inside one beat or across beats (beats must come in increasing ``base_index``).

    Timing: the result of a valid beat is in ``index``/``value`` on the next cycle; one beat per cycle.
    FPGA: a tree of ``lanes - 1`` comparators of ``width`` bits plus one against the running best, in ALMs.
    """

    def __init__(self, *, fmt=BINARY32, lanes=16, index_bits=16):
        if not isinstance(fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {fmt!r}")
        check_positive("lanes", lanes)
        check_positive("index_bits", index_bits)
        if lanes > 1 << index_bits:
            raise ValueError(f"index_bits must number the {lanes} lanes, not {index_bits!r}")
        self._fmt = fmt
        self._lanes = lanes
        self._index_bits = index_bits
        super().__init__({
            "clear": In(1),
            "candidates": In(stream.Signature(candidate_layout(fmt, lanes, index_bits), always_ready=True)),
            "index": Out(index_bits), "value": Out(fmt.width), "found": Out(1),
        })

    @property
    def fmt(self):
        return self._fmt

    @property
    def lanes(self):
        return self._lanes

    @property
    def index_bits(self):
        return self._index_bits

    def elaborate(self, platform):
        m = Module()
        beat = self.candidates.payload
        # Candidates: (present, key, value, lane offset); a pairwise tree keeps the left one on ties.
        candidates = []
        for lane in range(self._lanes):
            value = beat.values[lane]
            candidates.append((beat.mask[lane], order_key(self._fmt, value), value, Const(lane, self._index_bits)))
        while len(candidates) > 1:
            merged = []
            for left, right in zip(candidates[0::2], candidates[1::2]):
                take_right = right[0] & (~left[0] | (right[1] > left[1]))
                merged.append(tuple(Mux(take_right, r, l) for l, r in zip(left, right)))
            if len(candidates) % 2:
                merged.append(candidates[-1])
            candidates = merged
        present, key, value, offset = candidates[0]

        better = present & (~self.found | (key > order_key(self._fmt, self.value)))
        with m.If(self.clear):
            m.d.sync += [self.found.eq(0), self.index.eq(0), self.value.eq(0)]
        with m.Elif(self.candidates.valid & better):
            m.d.sync += [self.found.eq(1), self.index.eq(beat.base_index + offset), self.value.eq(value)]
        return m
