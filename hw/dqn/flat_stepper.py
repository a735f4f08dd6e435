"""The flat pass's steps: a depthwise stride-1 pass with the lanes over one channel's output positions (the flat map),
sequenced for the layer sequencer."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.descriptor import descriptor_layout, group_layout
from nnaccel.hw.dqn.interfaces import FeederControlSignature

__all__ = ["FlatStepper"]


class FlatStepper(DqnBlock):
    """Walks a flat pass: groups (positions ``q0`` in steps of ``G``, ``S`` channels at a time) -> steps ``(kh,
    kw)``, one product a cycle.

    A flat pass (descriptor bit ``flat``; models/dqn/flat_map.py has the layout and the arithmetic) computes, per
    group, output positions ``q0 .. q0 + G - 1`` of channels ``c .. c + S - 1`` of a ``in_height x in_width`` map,
    ``S = config.flat_slots`` channel slots of ``G = config.flat_group_lanes`` lanes (``modules / S`` modules): lane
    ``i`` of slot ``s`` (global lane ``s*G + i``, module ``(s*G + i) // lanes``) takes position ``q0 + i`` of channel
    ``c + s`` (the pass's channels a multiple of ``S``).  Step ``(kh, kw)`` gives the lane window (in the feeder)
    the shift ``window_element + kh * in_width + kw`` (the window holds the group's words from the one of flat
    position ``q0 + d0``, ``d0 = -pad_top*in_width - pad_left``) and the bounds ``pad_top - kh <= oy < in_height +
    pad_top - kh``, ``pad_left - kw <= ox < in_width + pad_left - kw`` (padding as ``+0``); every module's scalar is
    its channel's weight of the step, slot ``m``'s first element of weight row ``weight_base + 2 + (c/S)*(products +
    1) + k`` (``k = kh*kernel_width + kw``; the compiler puts channel ``c + s``'s weight in slot ``s``'s modules);
    the row after the steps is the channels' bias row (the seed).  The groups run position-major: channels ``0 ..
    C-1`` (``S`` a group) at ``q0``, then ``q0 + G``, so the lanes' coordinates (in a slot: ``i // in_width``, ``i %
    in_width``) move on (by the descriptor's ``lane_rows`` / ``lane_columns``) once per ``C / S`` groups.

    Each slot's window is double-buffered: during a group's steps ``0 .. loads - 1`` (``loads = S * W / 2``, ``W``
    words a window) the next group's words are read two a cycle on the input RAM's ports 0 and 1 (the steps use
    neither), the slots' words in order (slot 0's first; a cycle may read the last word of one slot's window and the
    first of the next's), and its last step swaps the windows.  A pass's first group loads before its steps (the
    prologue): on the start cycle its first pair is read with the lanes' coordinates (weight rows ``weight_base``: rows,
    ``weight_base + 1``: columns, on the weight RAM's two ports), the other pairs on the cycles after, the swap on
    cycle ``loads + 1`` and the first step on cycle ``loads + 2``.

    Ports
    -----
    layer : In(descriptor): the running pass's descriptor (stable through the pass).
    start : In(1): the pass's first read (its prologue's cycle 0).
    may_finish : In(1): a group's last product may issue (no group is being written, or the writer's second
        staging register takes it); otherwise it waits (``stall``).
    feeder : Out(:class:`~hw.dqn.interfaces.FeederControlSignature`): ``issue``, the input RAM's reads
        (``row_address0/1``, ``row_read``), the weight and bias reads and ``flat_lanes`` (the lane window's control);
        the layer sequencer passes them to the feeder from ``start`` to the pass's last product.
    stall : Out(1): a group's last product waits for ``may_finish``.
    group : Out(group layout): the group taking this cycle's product (``p0`` = ``q0``; ``flat_word`` = ``c *
        channel_words + q0 // row_elements``, slot 0's; ``flat_element`` = ``q0 % row_elements``; for a stride-2 pass,
        which computes at stride 1 and writes its even rows' even columns, ``flat_row_lane`` = the even lane ``r`` of
        the group's first row written (the first even row whose last even lane ``r + ceil(W/2) - 1`` is in the group),
        ``flat_out_word`` = ``c * out_channel_words`` + its output position's word, ``flat_out_element`` its element,
        moved on per group of positions by the descriptor's ``lane_advance`` and ``out_advance_word`` /
        ``out_advance_element``, one row more where needed: models.dqn.flat_map.strided_writes).
    group_done : Out(1): the group's last product issues this cycle; ``last_group``: that group is the pass's last.

    Timing: the first product on cycle ``loads + 2`` after ``start``, then ``products`` cycles per group plus the
    stalls (a group's last product waits until the previous group is written), the last product on the cycle
    ``group_done & last_group``, idle after it (``models.dqn.timing.pass_counters``, layout ``FLAT``, counts it).
    FPGA: counters and adders of <= 20 bits (the channel, the positions, the window's word and element, the step's
    row offset, a stride-2 pass's first written row) and four 14-bit subtractions for the bounds, in ALMs; no DSPs,
    no RAM.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        if not config.flat_slots:
            raise ValueError(f"a flat stepper needs a configuration with the flat map (flat_slots), not {config!r}")
        super().__init__(config, {
            "layer": In(descriptor_layout(config)),
            "start": In(1), "may_finish": In(1),
            "feeder": Out(FeederControlSignature(config)),
            "stall": Out(1),
            "group": Out(group_layout(config)), "group_done": Out(1), "last_group": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        config, layer, feeder = self._config, self.layer, self.feeder
        lanes = feeder.flat_lanes
        group_lanes, elements, slots = config.flat_group_lanes, config.row_elements, config.flat_slots
        window_words, loads = config.flat_window_words, config.flat_loads
        group_words, group_elements = divmod(group_lanes, elements)    # G // F, G % F: a group's advance

        def moved_on(word, element, words, more_elements):
            """(word, element) of a flat position ``words * row_elements + more_elements`` positions on
            (``more_elements < row_elements``)."""
            moved = element + more_elements
            wraps = moved >= elements
            return word + words + wraps, Mux(wraps, moved - elements, moved)

        def advanced(word, element):
            """(word, element) of a flat position ``G`` positions on."""
            return moved_on(word, element, group_words, group_elements)

        # ---- The group: channel c at q0 (its word and element), the window's word and element -----------------
        channel = Signal.like(layer.in_channels)
        channel_offset = Signal.like(layer.channel_words)             # c * channel_words
        channel_weights = Signal.like(layer.weight_base)              # weight_base + 2 + (c/S)*(products + 1)
        q0 = Signal.like(layer.positions)
        q_word, q_element = Signal.like(layer.channel_words), Signal.like(layer.window_element)
        window_word, window_element = Signal.like(layer.window_word), Signal.like(layer.window_element)
        step = Signal.like(layer.products)                            # k
        kernel_row, kernel_column = Signal.like(layer.kernel_height), Signal.like(layer.kernel_width)
        row_shift = Signal(len(lanes.shifts[0]) + len(layer.in_width))  # kh * in_width
        prologue = Signal(range(loads + 2))
        # A stride-2 pass's writes: the output word of channel c, the first written row's output word and element,
        # and its even lane (models.dqn.flat_map.strided_writes).
        out_channel_offset = Signal.like(layer.out_channel_words)
        out_word, out_element = Signal.like(layer.out_channel_words), Signal.like(layer.out_advance_element)
        row_lane = Signal.like(self.group.flat_row_lane)

        last_channel = channel + slots >= layer.in_channels
        last_group = last_channel & (q0 + group_lanes >= layer.positions)
        next_q_word, next_q_element = advanced(q_word, q_element)
        next_window_word, next_window_element = advanced(window_word, window_element)
        # The next group's first window word: channel c + S at q0, or channel 0 at q0 + G.
        next_window = layer.in_base + Mux(last_channel, next_window_word, channel_offset + slots * layer.channel_words
                                          + window_word)
        m.d.comb += [self.group.p0.eq(q0), self.group.flat_word.eq(channel_offset + q_word),
                     self.group.flat_element.eq(q_element), self.last_group.eq(last_group),
                     self.group.flat_out_word.eq(out_channel_offset + out_word),
                     self.group.flat_out_element.eq(out_element), self.group.flat_row_lane.eq(row_lane)]
        # The next positions' first written row: a = (G/2) // W rows on (lane_advance lanes back, out_advance on),
        # one more where that row ends before the group (its last even lane r + Wo - 1 < 0).
        out_width = (layer.in_width + 1) >> 1
        advanced_lane = row_lane - layer.lane_advance
        one_more = advanced_lane + out_width <= 0
        rows_word, rows_element = moved_on(out_word, out_element, layer.out_advance_word, layer.out_advance_element)
        next_out_word, next_out_element = moved_on(rows_word, rows_element, 0, Mux(one_more, out_width, 0))

        # A load of the group's windows: words 2k and 2k + 1 of the slots' windows in order (word j: word j % W of
        # slot j // W's channel window), from the group's slot 0's first word.
        load_first = Signal.like(feeder.row_address0, name="load_first_word")
        load_index = Signal(range(max(2, loads)), name="load_index")
        for port, address in enumerate((feeder.row_address0, feeder.row_address1)):
            slot = Signal(range(slots), name=f"load_slot{port}") if slots > 1 else None
            word = Signal(range(window_words), name=f"load_word{port}")
            with m.Switch(load_index):
                for index in range(loads):
                    with m.Case(index):
                        m.d.comb += word.eq((2 * index + port) % window_words)
                        if slot is not None:
                            m.d.comb += slot.eq((2 * index + port) // window_words)
            m.d.comb += address.eq(load_first + (slot * layer.channel_words if slot is not None else 0) + word)
        m.d.comb += lanes.load_index.eq(load_index)

        def read_pair(first_word, load):
            """Load ``load`` of a group's windows from its slot 0's first word ``first_word``."""
            m.d.comb += [load_first.eq(first_word), load_index.eq(load), feeder.row_read.eq(1), lanes.load.eq(1)]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    # Prologue cycle 0: the first pair of channel 0's first window and the lanes' coordinates.
                    read_pair(layer.in_base + layer.window_word, 0)
                    m.d.comb += [feeder.weight_read.eq(1), feeder.weight_address.eq(layer.weight_base),
                                 feeder.bias_read.eq(1), feeder.bias_address.eq(layer.weight_base + 1),
                                 lanes.set_lanes.eq(1)]
                    m.d.sync += [channel.eq(0), channel_offset.eq(0), channel_weights.eq(layer.weight_base + 2),
                                 q0.eq(0), q_word.eq(0), q_element.eq(0), window_word.eq(layer.window_word),
                                 window_element.eq(layer.window_element), step.eq(0), kernel_row.eq(0),
                                 kernel_column.eq(0), row_shift.eq(0), prologue.eq(1), out_channel_offset.eq(0),
                                 out_word.eq(0), out_element.eq(0), row_lane.eq(0)]
                    m.next = "PROLOGUE"
            with m.State("PROLOGUE"):
                m.d.sync += prologue.eq(prologue + 1)
                with m.If(prologue < loads):
                    read_pair(layer.in_base + layer.window_word, prologue)
                with m.If(prologue == loads + 1):
                    m.d.comb += lanes.swap.eq(1)                   # the first pair's load is in: the window in front
                    m.next = "STEPS"
            with m.State("STEPS"):
                m.d.comb += [feeder.weight_read.eq(1), feeder.weight_address.eq(channel_weights + step)]
                final_step = step + 1 == layer.products
                with m.If(final_step & ~self.may_finish):
                    m.d.comb += self.stall.eq(1)
                with m.Else():
                    m.d.comb += feeder.issue.eq(1)
                    with m.If(step == 0):
                        m.d.comb += [feeder.bias_read.eq(1), feeder.bias_address.eq(channel_weights + layer.products)]
                    with m.If((step < loads) & ~last_group):
                        read_pair(next_window, step)
                    m.d.sync += step.eq(step + 1)
                    with m.If(kernel_column + 1 == layer.kernel_width):
                        m.d.sync += [kernel_column.eq(0), kernel_row.eq(kernel_row + 1),
                                     row_shift.eq(row_shift + layer.in_width)]
                    with m.Else():
                        m.d.sync += kernel_column.eq(kernel_column + 1)
                    with m.If(final_step):
                        # The group's last product: the next group's windows in front, on to the next channels, or
                        # to channel 0 at the next positions (the lanes move on).
                        m.d.comb += [self.group_done.eq(1), lanes.swap.eq(~last_group)]
                        m.d.sync += [step.eq(0), kernel_row.eq(0), kernel_column.eq(0), row_shift.eq(0),
                                     channel.eq(channel + slots),
                                     channel_offset.eq(channel_offset + slots * layer.channel_words),
                                     channel_weights.eq(channel_weights + layer.products + 1),
                                     out_channel_offset.eq(out_channel_offset + slots * layer.out_channel_words)]
                        with m.If(last_channel):
                            m.d.comb += [lanes.advance.eq(1), lanes.advance_rows.eq(layer.lane_rows),
                                         lanes.advance_columns.eq(layer.lane_columns),
                                         lanes.out_width.eq(layer.in_width)]
                            m.d.sync += [channel.eq(0), channel_offset.eq(0), channel_weights.eq(layer.weight_base + 2),
                                         q0.eq(q0 + group_lanes), q_word.eq(next_q_word), q_element.eq(next_q_element),
                                         window_word.eq(next_window_word), window_element.eq(next_window_element),
                                         out_channel_offset.eq(0), out_word.eq(next_out_word),
                                         out_element.eq(next_out_element),
                                         row_lane.eq(advanced_lane + Mux(one_more, layer.in_width, 0))]
                        with m.If(last_group):
                            m.next = "IDLE"
        # The step's shift and bounds (a step on cycle n gives the lanes' vectors on cycle n + 1).
        m.d.comb += [*(lanes.shifts[slot].eq(window_element + row_shift + kernel_column) for slot in range(slots)),
                     lanes.row_low.eq(layer.pad_top - kernel_row),
                     lanes.row_high.eq(layer.in_height + layer.pad_top - kernel_row),
                     lanes.column_low.eq(layer.pad_left - kernel_column),
                     lanes.column_high.eq(layer.in_width + layer.pad_left - kernel_column)]
        return m
