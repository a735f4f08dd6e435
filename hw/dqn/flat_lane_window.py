"""The flat map's lane window: a depthwise step's activations for every lane, one channel's consecutive output
positions over all modules' lanes (the operand stage of the flat-map dataflow, inside the window feeder)."""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.flat_map import shift_elements_down, slot_lanes
from nnaccel.hw.dqn.interfaces import FlatLaneControlSignature
from nnaccel.hw.shared.parameters import check_int

__all__ = ["FlatLaneWindow"]


class FlatLaneWindow(DqnBlock):
    """Per channel slot a window of ``window_words`` activation words, shifted under the slot's lanes, masked per
    lane.

    In the flat map (models/dqn/flat_map.py) the ``modules*lanes`` lanes are cut into ``slots`` slots of
    ``modules/slots`` modules; lane ``i`` of a slot computes output position ``q_s + i`` of the slot's channel, and
    at step ``(kh, kw)`` of a stride-1 depthwise convolution whose output rows are as wide as its input rows it
    needs flat input position ``q_s + i + d`` (``d`` the step's offset): consecutive elements of the channel's flat
    words. A slot's window holds consecutive words of its channel; it is double-buffered: the next group's words are
    loaded into the back window (two at a time, from the activation RAM's two read ports, which the flat map's steps
    do not use; the slots' words in order, so a pair may end one slot's window and start the next's: 4 slots of
    3-word windows in 6 loads) during this group's steps, and ``swap`` with the group's last step makes it the front
    window, so the steps of consecutive groups follow one another without a bubble. A step gives lane ``i`` of slot
    ``s`` element ``shifts[s] + i`` of the slot's window where the lane's output position ``(oy, ox)`` lies in the
    step's bounds (its input element is real), ``+0`` where it does not (padding: above, below, left and right of the
    map; the element the flat layout puts there belongs to a neighbouring row). Slots serve small maps (several channels
    per group: a 25 x 5 map in a slot of 128 lanes); one slot a map of a group's lanes or more. The lanes' output
    coordinates are registers, set for a pass and moved on by a constant per group.

    Ports
    -----
    control : In(:class:`~hw.dqn.interfaces.FlatLaneControlSignature`): ``load`` / ``load_index``,
        ``swap``, ``shifts``,
        ``set_lanes`` / ``lane_rows`` / ``lane_columns``, ``advance`` / ``advance_rows`` / ``advance_columns`` /
        ``out_width``, and the step's bounds ``row_low``, ``row_high``, ``column_low``, ``column_high``.
    words : In(2 x activation word): the words read on the activation RAM's ports 0 and 1, taken on ``load``.
    vectors : Out(``modules`` x ``lanes`` elements): module ``m``'s vector, lane ``l`` = global lane
        ``m*lanes + l``.

    Timing: a step (``shifts`` and bounds) on cycle n gives ``vectors`` on cycle n+1 from the window and coordinates
    as they are on cycle n; a ``load``, ``swap`` (the back window as it is on cycle n, without a load of that
    cycle), ``set_lanes`` or ``advance`` on cycle n takes effect on cycle n+1.
    Throughput: a step every cycle.

    FPGA: per slot two windows of ``window_words * row_elements * width`` flip-flops (each with a 2:1 input mux) and a
    barrel shifter of ``ceil(log2(shift range))`` levels of 2:1 muxes over it (the slot's lanes x ``width`` bits wide
    at its output), per lane two 12-bit coordinate registers with an adder and a wrap compare, four signed compares
    and a zeroing AND on ``width`` bits, and the ``modules * lanes * width`` output register; all ALMs, no DSP, no RAM.
    16 x 16 binary32 with 96-element rows, one slot and a 6-word window: 36,864 window flip-flops, 9 shift levels
    (a 576 -> 256 element shifter: 2,806 elements of 2:1 muxes over its levels, 89,792 mux bits), 8,192 output
    flip-flops.
    """

    def __init__(self, *, config=DqnConfig(), window_words=4, slots=1):
        check_config(config)
        check_int("window_words", window_words, 2, 64)
        lanes = slot_lanes(config, slots)
        if slots * window_words % 2:
            raise ValueError(f"the slots' {slots} x {window_words} window words must be even (they are loaded in "
                             f"pairs)")
        if window_words * config.row_elements < lanes:
            raise ValueError(f"a window of {window_words} words of {config.row_elements} elements is narrower than "
                             f"a slot's {lanes} lanes")
        self._window_words, self._slots = window_words, slots
        super().__init__(config, {
            "control": In(FlatLaneControlSignature(config, window_words, slots)),
            "words": In(data.ArrayLayout(config.activation_word_bits, 2)),
            "vectors": Out(data.ArrayLayout(data.ArrayLayout(config.fmt.width, config.lanes), config.modules)),
        })

    @property
    def window_words(self):
        return self._window_words

    @property
    def slots(self):
        return self._slots

    def elaborate(self, platform):
        m = Module()
        config, control = self._config, self.control
        width, word_bits = config.fmt.width, config.activation_word_bits
        group_lanes = config.modules * config.lanes
        lanes_per_slot = slot_lanes(config, self._slots)

        # ---- The lanes' output coordinates ------------------------------------------------------
        rows = Signal(data.ArrayLayout(len(control.advance_rows), group_lanes))
        columns = Signal(data.ArrayLayout(len(control.advance_columns), group_lanes))
        with m.If(control.set_lanes):
            m.d.sync += [rows.eq(control.lane_rows), columns.eq(control.lane_columns)]
        with m.Elif(control.advance):
            for lane in range(group_lanes):
                moved = columns[lane] + control.advance_columns
                wrapped = moved >= control.out_width
                m.d.sync += [columns[lane].eq(Mux(wrapped, moved - control.out_width, moved)),
                             rows[lane].eq(rows[lane] + control.advance_rows + wrapped)]

        vectors = []
        for slot in range(self._slots):
            # ---- The slot's windows: the next group's words loaded in pairs into the back one -----------------
            front = Signal(self._window_words * word_bits, name=f"front_window_{slot}")
            back = Signal(self._window_words * word_bits, name=f"back_window_{slot}")
            with m.If(control.load):
                for word in range(self._window_words):     # word j of the loads: port j % 2 of load j // 2
                    loaded = slot * self._window_words + word
                    with m.If(control.load_index == loaded // 2):
                        m.d.sync += back.word_select(word, word_bits).eq(self.words[loaded % 2])
            with m.If(control.swap):
                m.d.sync += front.eq(back)

            # ---- The step: the front window shifted by the slot's shift, masked where a lane's input is padding ----
            shifted = shift_elements_down(m, front, control.shifts[slot], width=width, kept=lanes_per_slot,
                                          name=f"shifted_{slot}")
            for slot_lane in range(lanes_per_slot):
                lane = slot * lanes_per_slot + slot_lane
                real = ((rows[lane] >= control.row_low) & (rows[lane] < control.row_high)
                        & (columns[lane] >= control.column_low) & (columns[lane] < control.column_high))
                vectors.append(Mux(real, shifted.word_select(slot_lane, width), 0))
        m.d.sync += self.vectors.eq(Cat(*vectors))
        return m
