"""The flat map's output side: one activation word of a channel's flat map from a group's results (the write
data of the flat-map dataflow, inside the result writer)."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.flat_map import shift_elements_down

__all__ = ["FlatWordPacker", "FlatWordSignature"]


class FlatWordSignature(wiring.Signature):
    """Which word a :class:`FlatWordPacker` makes: ``offset`` Out(signed), the lane under the word's element 0 (the
    word's first flat position minus the group's first position: negative when the group's first position lies
    inside the word); ``first`` and ``valid`` Out, the lanes ``first <= lane < valid`` the word stores (the channel's
    map may end inside the group; a stride-2 pass's word stores one output row's lanes)."""

    def __init__(self, *, row_elements, group_lanes):
        self._sizes = (row_elements, group_lanes)
        super().__init__({"offset": Out(range(-row_elements + 1, group_lanes)), "first": Out(range(group_lanes + 1)),
                          "valid": Out(range(group_lanes + 1))})

    def __eq__(self, other):
        return type(other) is FlatWordSignature and other._sizes == self._sizes

    def __hash__(self):
        return hash((FlatWordSignature, self._sizes))

    def __repr__(self):
        row_elements, group_lanes = self._sizes
        return f"FlatWordSignature(row_elements={row_elements}, group_lanes={group_lanes})"


class FlatWordPacker(DqnBlock):
    """Element ``e`` of the word is lane ``offset + e`` of the group, enabled where ``first <= offset + e < valid``.

    In the flat map a group's lanes hold consecutive output positions ``q0 ..`` of one channel (module ``m``'s lane
    ``l`` is group lane ``m*lanes + l``).  Flat layout puts position ``q`` at word ``q // row_elements``, element
    ``q % row_elements`` of the channel, so the group's results touch a few consecutive words, each written with
    :attr:`FlatWordSignature` ``offset = j*row_elements - q0``; together they store every valid lane once and nothing
    else (the enables), whatever the alignment.  With two channel slots the result writer has one packer per slot,
    each built for the slot's half of the modules.

    Ports
    -----
    results : In(``modules`` x ``lanes`` elements): a group's results (the writer's staging register).
    word : In(:class:`FlatWordSignature`): ``offset``, ``first``, ``valid``.
    data : Out(``row_elements`` x width): the word's elements (those not enabled are zero).
    enable : Out(``row_elements``): the element write enables.

    Timing: combinational (the writer registers or writes it on the cycle it is formed).

    FPGA: a shifter of ``ceil(log2(modules*lanes + row_elements - 1))`` levels of 2:1 muxes (``row_elements x
    width`` bits at its output), per element two compares for its enable; ALMs only.  (The figures below are from
    before ``first``: its compare replaced a sign test.)  16 x 16 binary32, 96-element
    rows: 9 levels of up to 351 elements; Yosys (Cyclone V, ``sim.fpga.synth.estimate``) 32,570 ALMs (38,419 LUTs,
    3,061 carry cells).
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        super().__init__(config, {
            "results": In(data.ArrayLayout(data.ArrayLayout(config.fmt.width, config.lanes), config.modules)),
            "word": In(FlatWordSignature(row_elements=config.row_elements, group_lanes=config.modules * config.lanes)),
            "data": Out(data.ArrayLayout(config.fmt.width, config.row_elements)),
            "enable": Out(config.row_elements),
        })

    def elaborate(self, platform):
        m = Module()
        config, word = self._config, self.word
        width, elements = config.fmt.width, config.row_elements
        # The lanes behind elements - 1 zeros: element e of the word is element offset + elements - 1 + e.
        start = Signal(range(config.modules * config.lanes + elements - 1), name="start")
        m.d.comb += start.eq(word.offset + (elements - 1))
        packed = shift_elements_down(m, Cat(Const(0, (elements - 1) * width), self.results.as_value()), start,
                                     width=width, kept=elements, name="packed_0")
        enables = [(word.offset + e >= word.first) & (word.offset + e < word.valid) for e in range(elements)]
        m.d.comb += [self.enable.eq(Cat(*enables)),
                     self.data.eq(Cat(Mux(enable, packed.word_select(e, width), 0)
                                      for e, enable in enumerate(enables)))]
        return m
