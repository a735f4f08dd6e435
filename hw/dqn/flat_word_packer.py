"""The flat map's output side: one activation word of a channel's flat map from a group's results (the write
data of the flat-map dataflow, inside the result writer)."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.flat_map import shift_elements_down, slot_lanes

__all__ = ["FlatWordPacker", "FlatWordSignature"]


class FlatWordSignature(wiring.Signature):
    """Which word a :class:`FlatWordPacker` makes: ``slot`` Out(range(slots)), the channel slot whose lanes it takes
    (only with several slots); ``offset`` Out(signed), the slot lane under the word's element 0 (the word's first
    flat position minus the slot's first position: negative when the slot's first position lies inside the word);
    ``valid`` Out, the slot's lanes whose positions exist (the channel's map may end inside the slot)."""

    def __init__(self, *, row_elements, slots, slot_lanes):
        self._sizes = (row_elements, slots, slot_lanes)
        super().__init__({"offset": Out(range(-row_elements + 1, slot_lanes)), "valid": Out(range(slot_lanes + 1))}
                         | ({"slot": Out(range(slots))} if slots > 1 else {}))

    def __eq__(self, other):
        return type(other) is FlatWordSignature and other._sizes == self._sizes

    def __hash__(self):
        return hash((FlatWordSignature, self._sizes))

    def __repr__(self):
        row_elements, slots, slot_lanes = self._sizes
        return f"FlatWordSignature(row_elements={row_elements}, slots={slots}, slot_lanes={slot_lanes})"


class FlatWordPacker(DqnBlock):
    """Element ``e`` of the word is lane ``offset + e`` of slot ``slot``, enabled where ``0 <= offset + e < valid``.

    In the flat map a slot's lanes hold consecutive output positions ``q_s ..`` of one channel (module ``m``'s lane
    ``l`` is global lane ``m*lanes + l``; slot ``s`` holds global lanes ``s*slot_lanes ..``).  Flat layout puts
    position ``q`` at word ``q // row_elements``, element ``q % row_elements`` of the channel, so the slot's results
    touch a few consecutive words, each written with :attr:`FlatWordSignature` ``offset = j*row_elements - q_s``;
    together they store every valid lane once and nothing else (the enables), whatever the alignment.

    Ports
    -----
    results : In(``modules`` x ``lanes`` elements): a group's results (the writer's staging register).
    word : In(:class:`FlatWordSignature`): ``slot``, ``offset``, ``valid``.
    data : Out(``row_elements`` x width): the word's elements (those not enabled are zero).
    enable : Out(``row_elements``): the element write enables.

    Timing: combinational (the writer registers or writes it on the cycle it is formed).

    FPGA: per slot a shifter of ``ceil(log2(slot_lanes + row_elements - 1))`` levels of 2:1 muxes (``row_elements x
    width`` bits at its output) and a ``slots``:1 mux of the word, per element two compares for its enable; ALMs
    only.  16 x 16 binary32, 96-element rows, one slot: 9 levels of up to 351 elements; Yosys (Cyclone V,
    ``sim.fpga.synth.estimate``) 32,570 ALMs (38,419 LUTs, 3,061 carry cells).
    """

    def __init__(self, *, config=DqnConfig(), slots=1):
        check_config(config)
        self._slots = slots
        lanes = slot_lanes(config, slots)
        super().__init__(config, {
            "results": In(data.ArrayLayout(data.ArrayLayout(config.fmt.width, config.lanes), config.modules)),
            "word": In(FlatWordSignature(row_elements=config.row_elements, slots=slots, slot_lanes=lanes)),
            "data": Out(data.ArrayLayout(config.fmt.width, config.row_elements)),
            "enable": Out(config.row_elements),
        })

    @property
    def slots(self):
        return self._slots

    def elaborate(self, platform):
        m = Module()
        config, word = self._config, self.word
        width, elements = config.fmt.width, config.row_elements
        lanes_per_slot = slot_lanes(config, self._slots)
        # The slot's lanes behind elements - 1 zeros: element e of the word is element offset + elements - 1 + e.
        start = Signal(range(lanes_per_slot + elements - 1), name="start")
        m.d.comb += start.eq(word.offset + (elements - 1))
        words = []
        for slot in range(self._slots):
            results = self.results.as_value()[slot * lanes_per_slot * width:(slot + 1) * lanes_per_slot * width]
            words.append(shift_elements_down(m, Cat(Const(0, (elements - 1) * width), results), start, width=width,
                                             kept=elements, name=f"packed_{slot}"))
        enables = [(word.offset + e >= 0) & (word.offset + e < word.valid) for e in range(elements)]
        chosen = Array(words)[word.slot] if self._slots > 1 else words[0]
        m.d.comb += [self.enable.eq(Cat(*enables)),
                     self.data.eq(Cat(Mux(enable, chosen.word_select(e, width), 0)
                                      for e, enable in enumerate(enables)))]
        return m
