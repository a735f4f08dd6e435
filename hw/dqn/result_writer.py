"""Result writer of the DQN accelerator: a group's results from all matrix modules into the output tensor."""

import dataclasses
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Module, Mux, Shape, Signal, signed
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.descriptor import descriptor_layout
from nnaccel.hw.dqn.flat_word_packer import FlatWordPacker
from nnaccel.hw.dqn.float_argmax import candidate_layout
from nnaccel.hw.dqn.interfaces import ResultGroupSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, writes_only

__all__ = ["ResultWriter", "packed_index_bits"]


def packed_index_bits(config):
    """Bits of an output index of a packed write (the descriptor's ``out_channels`` field)."""
    return Shape.cast(descriptor_layout(config)["out_channels"].shape).width


class ResultWriter(DqnBlock):
    """Captures the ``modules x lanes`` results of a group and writes them as masked activation-RAM rows.

    Module ``m`` holds output channels ``(m % C)*lanes ...`` of position ``p0 + m // C``
    (``C = 2**column_blocks_log2``; see docs/dqn_accelerator.md).

    Image layout: one write per output channel and touched output row (a group's positions touch
    one or two rows): word ``out_base + n*out_height + oy0 + r``, element ``x`` taking module
    ``((x - ox0 + r*out_width) << log2 C) | n // lanes``, lane ``n % lanes``, enabled where that is
    one of the group's valid positions.  Two writes per cycle, one on each port of the output RAM (in a
    reduction, which reads the RAM it writes on port 1, only the last group's): a group on two rows writes channel
    ``n``'s two rows together, a group on one row channels ``n`` and ``n + 1``.  Packed layout (single-position
    layers): one write per column block ``b`` (port 0): word ``out_base + b``, elements ``0 .. lanes-1`` = module
    ``b``'s lanes, enabled for outputs ``< out_channels`` (in the last layer also a ``packed`` beat: the output index of
    element 0 and the lanes written).  Position-major layout (``packed_output`` and ``position_major``; partial
    sums for a reduction layer): one write per valid position ``q`` and column block ``b`` (port 0): word
    ``out_base + p0 - first_position + q``, elements ``b*lanes .. b*lanes + lanes-1`` = the lanes of module
    ``(q << log2 C) | b``.  A residual add (``reduce`` and ``position_major``: one position per group, ``C =
    modules``) writes its row word whole on port 0 in one cycle: word ``out_base + p0 - first_position``, element
    ``e`` = lane ``e % lanes`` of module ``e // lanes``, enabled for ``e < out_channels`` (the row's width); no
    ``packed`` beat (an add is never a network's last layer).  With the flat map's configurations the image layout's
    grid may be a second one (``write_width``: rows of that width, ``oy0`` / ``ox0`` in it).  A flat pass
    (``config.flat_slots``, the descriptor's ``flat``): the group's positions ``p0 ..`` (the first ``positions - p0``
    lanes of each slot, in lane order over its modules) of each slot's channel in flat layout, through a
    :class:`~hw.dqn.flat_word_packer.FlatWordPacker` per write port: slot ``s`` (``config.flat_slots``, channel
    ``c + s``) writes words ``out_base + flat_word + s*channel_words + j`` on port ``s % 2``, one a cycle, for ``j =
    0 ..`` while the group's positions reach them (element ``e`` of word ``j`` takes lane ``j*row_elements + e -
    flat_element`` of the slot); with two slots both ports write together, with four slots 0 and 1, then slots 2
    and 3.  A stride-2 flat pass (``stride_x`` 2) writes only its even rows' even columns: the packers take the
    slot's even lanes, and the writes go output row by output row from the group's ``flat_row_lane``,
    ``flat_out_word``, ``flat_out_element``, one or two words a row (``out_base + flat_out_word + s*out_channel_words
    + ...``; models.dqn.flat_map.strided_writes).

    Ports
    -----
    results : In(always-ready stream of ``lanes`` x width) x ``modules``
        Module ``m``'s results.  The modules finish a group together: the beat is taken when ``results[0]`` is
        valid (the others' ``valid`` is the same and not looked at).  A beat must not come while the writer is
        still writing the previous group (the writer never stalls the modules); with the flat map
        (``config.flat_slots``) one may: it waits in a second staging register until the writer is idle.
    group : In(:class:`~hw.dqn.interfaces.ResultGroupSignature`)
        ``group`` (``p0``, ``oy0``, ``ox0``) and ``layer`` (the descriptor: ``out_base``, ``out_height``,
        ``out_width``, ``positions``, ``out_channels``, ``column_blocks_log2``, ``packed_output``,
        ``position_major``, ``first_position``, ``reduce``, ``last``, ``handoff`` are used), stable from the
        group's last product until ``written`` (Out here: one cycle after the last write; an add's: with its write,
        and ``group`` then names the group being written).
    output0, output1 : Out(BufferPortSignature of the activation RAMs, one write-enable bit per element)
        The writes on port 0 and port 1 of the output RAM: ``address``, ``write_data`` (row_elements x width),
        ``write_enable`` (all zero = no write); ``read_enable`` is 0.  Both write on one cycle only to different
        words (two rows of a channel, or one row of two channels).
    packed : Out(always-ready stream of :func:`~hw.dqn.float_argmax.candidate_layout`)
        The packed writes of the network's last layer (``last`` and ``packed_output``), for the argmax:
        ``values`` (elements 0 .. lanes-1 of the write), ``mask`` (its lanes written), ``base_index`` (the output
        index of element 0; with ``argmax_tiles`` offset by the descriptor's ``first_channel``, so that a
        channel-tiled last layer's tiles number their outputs as the layer does).

    Timing: the first write on the cycle after the valid ``results`` beat (or after the cycle that takes a waiting
    one from the second staging register: the idle cycle, or in a pass that is not flat the done cycle of the group
    before, ``models.dqn.timing.staged_stalls``), then one write cycle after another:
    image layout ``out_channels`` cycles for a group on two rows, ``ceil(out_channels / 2)`` on one row (a
    reduction's groups before its last: ``out_channels`` times the rows, one port); a flat group's words
    (``ceil((flat_element + valid) / row_elements)``, a stride-2 group's row words, at least one; the slots' words
    together); ``ceil(out_channels / lanes)`` (packed), that times the valid positions (position-major); ``written``
    on the cycle after the last (models/dqn/timing.py, ``W_g``); an add's word and ``written`` on the cycle after the
    beat, the next beat taken on the cycle after that.
    Handoff (the descriptor's ``handoff``, the pass's last group): the writes go one a cycle (``out_channels`` times
    the rows in image layout) on port 1 alone, port 0 left to the next pass's reads (models/dqn/handoff.py).
    FPGA: a ``modules x lanes x width`` staging register; two crossbars, one per port, each per module a lanes:1
    mux and per row element a modules:1 mux of ``width`` bits, position adders and compares; the packed layouts'
    modules:1 mux of ``lanes x width`` bits; the add's word a 2:1 mux more on port 0's data (the staging register
    as it is); all in ALMs.  The second crossbar is the second port's price: Yosys
    (Cyclone V) maps the writer of 4 x 4 bfloat16 with 32-element rows to 5,248 LUTs (2,279 with one port); for
    16 x 16 binary32 with 84-element rows the area table (dse/rtl/area.py) composes 80,845 LUTs (43,222 with one
    port): the accelerator's estimate grows from 433,099 to 460,097 ALMs (6 %).  The handoff adds a 2:1 mux in
    front of port 1's address, data and enables (``row_elements x (width + 1)`` bits plus the address) and an AND.
    The flat map: a :class:`~hw.dqn.flat_word_packer.FlatWordPacker` per channel slot (each over its slot's lanes)
    and a 2:1 mux on each port's address, data and enables; the second staging register (``modules x lanes x
    width`` flip-flops and a 2:1 mux in front of the first); for stride 2 a 2:1 mux in front of each packer (the
    slot's lanes or its even lanes: ``modules * lanes / 2 * width`` bits) and the row walk's adders and compares.
    Taking a waiting group on the done cycle costs an AND-OR on the staging register's load enable; the group's
    valid positions are then combinational (a subtractor and a compare in front of the crossbars' enables) instead
    of a register of ``positions`` bits.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        module_results = stream.Signature(data.ArrayLayout(config.fmt.width, config.lanes), always_ready=True)
        candidates = candidate_layout(config.fmt, config.lanes, packed_index_bits(config))
        row_port = BufferPortSignature(width=config.activation_word_bits, depth=config.activation_depth,
                                       granularity=config.fmt.width)
        super().__init__(config, {
            "results": In(module_results).array(config.modules),
            "group": In(ResultGroupSignature(config)),
            "output0": Out(row_port), "output1": Out(row_port),
            "packed": Out(stream.Signature(candidates, always_ready=True)),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        width, lanes, modules = config.fmt.width, config.lanes, config.modules
        layer, group, output0, output1 = self.group.layer, self.group.group, self.output0, self.output1
        writes_only(m, output0)
        writes_only(m, output1)
        staging = Signal(modules * lanes * width)
        lane = Signal(range(lanes))
        block = Signal.like(layer.out_channels)                  # column block: n // lanes
        channel = Signal.like(layer.out_channels)                # n
        channel_rows = Signal(len(output0.address) + len(layer.out_height))     # n * out_height
        second_row = Signal()                                    # writing row oy0 + 1 (one port only)
        valid_positions = Signal.like(layer.positions)           # positions of this group that exist
        group_modules = modules >> layer.column_blocks_log2
        remaining = layer.positions - group.p0
        if config.flat_slots:
            # The group port names a waiting group from the cycle after the done cycle that takes its results: its
            # valid positions from the port while it is written.
            m.d.comb += valid_positions.eq(Mux(remaining < group_modules, remaining, group_modules))
        # Both ports write in image layout, in a reduction (it reads the RAM it writes on port 1) only its last
        # group's results: the sequencer reads no more while they are written.
        last_group = group.p0 + group_modules >= layer.positions
        # A pass handing its last group off writes it on port 1 alone, one write a cycle: the next pass reads port 0.
        handed_off = layer.handoff & last_group
        paired = ~layer.packed_output & (~layer.reduce | last_group) & ~handed_off
        # The write of the one-port sequence (port 0, or port 1 when handed off) and the paired second write.
        single_address, single_data = Signal.like(output0.address), Signal.like(output0.write_data)
        single_enable = Signal.like(output0.write_enable)
        paired_address, paired_data = Signal.like(output1.address), Signal.like(output1.write_data)
        paired_enable = Signal.like(output1.write_enable)
        m.d.comb += [output0.address.eq(single_address), output0.write_data.eq(single_data),
                     output0.write_enable.eq(Mux(handed_off, 0, single_enable)),
                     output1.address.eq(Mux(handed_off, single_address, paired_address)),
                     output1.write_data.eq(Mux(handed_off, single_data, paired_data)),
                     output1.write_enable.eq(Mux(handed_off, single_enable, paired_enable))]
        # The row width of the grid written: the walk's, or (the flat map's configurations) the second grid's.
        row_width = (Mux(layer.write_width != 0, layer.write_width, layer.out_width) if config.flat_slots
                     else layer.out_width)
        two_rows = group.ox0 + valid_positions > row_width

        def advance(lane, block):
            """The lane and column block of the channel after the one in (lane, block)."""
            return Mux(lane == lanes - 1, 0, lane + 1), Mux(lane == lanes - 1, block + 1, block)

        def image_row(row_lane, row_block, row_second, suffix):
            """The crossbar: element x of the row takes lane ``row_lane`` of module ((x - ox0 + r*W) << log2 C) |
            ``row_block``.  Returns the row's data and write enables."""
            lane_of_module = Array(Signal(width, name=f"lane_of_module{module}_{suffix}") for module in range(modules))
            for module, picked in enumerate(lane_of_module):
                module_lanes = Array(staging[(module * lanes + l) * width:(module * lanes + l + 1) * width]
                                     for l in range(lanes))
                m.d.comb += picked.eq(module_lanes[row_lane])
            row_offset = Mux(row_second, row_width, 0) - group.ox0
            data_elements, enables = [], []
            for element in range(config.row_elements):
                # element + out_width - ox0: a position, one bit for the carry of the sum, one for the sign
                position = Signal(signed(len(layer.positions) + 2), name=f"position_{element}_{suffix}")
                m.d.comb += position.eq(element + row_offset)
                source = Signal(range(modules), name=f"source_module_{element}_{suffix}")
                m.d.comb += source.eq((position.as_unsigned() << layer.column_blocks_log2) | row_block)
                data_elements.append(lane_of_module[source])
                enables.append((element < row_width) & (position >= 0) & (position < valid_positions))
            return Cat(*data_elements), Cat(*enables)

        # ---- Port 0: channel n, row oy0 + second_row.  Port 1 (paired): channel n's second row if the group
        # touches two rows, else channel n + 1 on row oy0 (if it exists).
        image_data0, image_enable0 = image_row(lane, block, second_row, "a")
        next_lane, next_block = advance(lane, block)
        image_data1, image_enable1 = image_row(Mux(two_rows, lane, next_lane), Mux(two_rows, block, next_block),
                                               two_rows, "b")
        second_exists = two_rows | (channel + 1 < layer.out_channels)
        after_next_lane, after_next_block = advance(next_lane, next_block)

        # ---- Packed layouts: module (q << log2 C) | block, its lanes repeated along the word; the
        # write enables pick elements 0 .. lanes-1 (packed) or block*lanes .. (position-major)
        packed_position = Signal(range(modules))                 # q: the group's position being written
        packed_module = Array(staging[module * lanes * width:(module + 1) * lanes * width] for module in range(modules))
        packed_lanes = packed_module[(packed_position << layer.column_blocks_log2) | block]
        packed_enable = Cat((block * lanes + l) < layer.out_channels for l in range(lanes))
        element_block = Mux(layer.position_major, block, 0)
        packed_data = Cat(packed_lanes.word_select(e % lanes, width) for e in range(config.row_elements))
        # The argmax's index of element 0: with argmax_tiles a channel tile's outputs count from its first channel.
        packed_index = block * lanes + layer.first_channel if config.argmax_tiles else block * lanes
        packed_element_enable = Cat((e // lanes == element_block) & packed_enable[e % lanes]
                                    for e in range(config.row_elements))

        # ---- A residual add (a reduction, position-major): module m's lanes are elements m*lanes .. of the one
        # row word of the group, written whole in one cycle
        row_add = layer.reduce & layer.position_major
        add_elements = min(config.row_elements, modules * lanes)
        add_data = staging[:add_elements * width]
        add_enable = Cat(element < layer.out_channels for element in range(add_elements))

        beat = Cat(results.payload for results in self.results)
        captured = self.results[0].valid
        if config.flat_slots:
            # The second staging register: a group's results that come while the writer still writes the one
            # before wait here; the writer takes them when it is idle again.
            waiting, waiting_results = Signal(), Signal.like(staging)
            captured = Signal()
            with m.If(captured):
                m.d.sync += waiting.eq(0)
            with m.If(self.results[0].valid & ~captured):
                m.d.sync += [waiting_results.eq(beat), waiting.eq(1)]
            beat = Mux(self.results[0].valid, beat, waiting_results)
        flat_writes = self._flat_writes(m, staging, captured) if config.flat_slots else None

        def take_results():
            # The results into the staging register, the write sequence from its start.
            m.d.sync += [staging.eq(beat), lane.eq(0), block.eq(0), channel.eq(0), packed_position.eq(0),
                         channel_rows.eq(0), second_row.eq(0)]
            if not config.flat_slots:
                m.d.sync += valid_positions.eq(Mux(remaining < group_modules, remaining, group_modules))
            m.next = "WRITE"

        with m.FSM():
            with m.State("IDLE"):
                if config.flat_slots:
                    m.d.comb += captured.eq(self.results[0].valid | waiting)
                with m.If(captured):
                    take_results()
            with m.State("WRITE"):
                if flat_writes is not None:
                    flat_writes(single_address, single_data, single_enable, paired_address, paired_data,
                                paired_enable)
                with m.If(row_add):
                    # The row word and written on one cycle: the writer takes the next group on the next.
                    m.d.comb += [single_address.eq(layer.out_base + group.p0 - layer.first_position),
                                 single_data.eq(add_data), single_enable.eq(add_enable),
                                 self.group.written.eq(1)]
                    m.next = "IDLE"
                with m.Elif(layer.packed_output):
                    m.d.comb += [
                        single_address.eq(layer.out_base + Mux(layer.position_major,
                                                               group.p0 - layer.first_position + packed_position,
                                                               block)),
                        single_data.eq(packed_data), single_enable.eq(packed_element_enable),
                        self.packed.valid.eq(layer.last),
                        self.packed.payload.values.eq(packed_lanes), self.packed.payload.mask.eq(packed_enable),
                        self.packed.payload.base_index.eq(packed_index),
                    ]
                    m.d.sync += block.eq(block + 1)
                    with m.If((block + 1) * lanes >= layer.out_channels):
                        m.d.sync += [block.eq(0), packed_position.eq(packed_position + 1)]
                        with m.If(~layer.position_major | (packed_position + 1 == valid_positions)):
                            m.next = "DONE"
                # The image layout: every other pass (a flat pass writes above).
                with m.Elif(~layer.flat) if config.flat_slots else m.Else():
                    row_address = layer.out_base + channel_rows + group.oy0
                    m.d.comb += [
                        single_address.eq(row_address + second_row),
                        single_data.eq(image_data0),
                        single_enable.eq(image_enable0),
                        paired_address.eq(row_address + Mux(two_rows, 1, layer.out_height)),
                        paired_data.eq(image_data1),
                        paired_enable.eq(Mux(paired & second_exists, image_enable1, 0)),
                    ]
                    with m.If(paired & ~two_rows):
                        # Channels n and n + 1 written: on to n + 2.
                        m.d.sync += [channel.eq(channel + 2), channel_rows.eq(channel_rows + 2 * layer.out_height),
                                     lane.eq(after_next_lane), block.eq(after_next_block)]
                        with m.If(channel + 2 >= layer.out_channels):
                            m.next = "DONE"
                    with m.Elif(two_rows & ~paired & ~second_row):
                        m.d.sync += second_row.eq(1)
                    with m.Else():
                        # Channel n written (both rows, paired or one after the other): on to n + 1.
                        m.d.sync += [second_row.eq(0), channel.eq(channel + 1),
                                     channel_rows.eq(channel_rows + layer.out_height),
                                     lane.eq(next_lane), block.eq(next_block)]
                        with m.If(channel + 1 == layer.out_channels):
                            m.next = "DONE"
            with m.State("DONE"):
                m.d.comb += self.group.written.eq(1)
                m.next = "IDLE"
                if config.flat_slots:
                    # A staged group's results that wait (or come now) are taken on the done cycle, except a flat
                    # pass's (its stride-2 row walk starts from the group port, which names the group only on the
                    # next cycle).
                    m.d.comb += captured.eq((self.results[0].valid | waiting) & ~layer.flat)
                    with m.If(captured):
                        take_results()
        return m

    def _flat_writes(self, m, staging, captured):
        """The flat pass's writes: a function that adds, in the WRITE state, word ``j`` of the group (its address,
        data and enables on the one-port write, and with two channel slots slot 1's on the paired one) and moves on
        to ``j + 1`` or to DONE.  With two slots each slot's words have a packer of their own (one slot of half the
        modules) and port: slot 0's channel on port 0, slot 1's on port 1, a word each a cycle; with four the two
        packers and ports write slots 0 and 1, then slots 2 and 3 (the slot pairs one after the other)."""
        config, layer, group = self._config, self.group.layer, self.group.group
        elements, slots, group_lanes = config.row_elements, config.flat_slots, config.flat_group_lanes
        slot_config = dataclasses.replace(config, modules=config.modules // slots, flat_slots=0)
        packers = [FlatWordPacker(config=slot_config) for _ in range(min(slots, 2))]
        for port, packer in enumerate(packers):
            m.submodules[f"flat_packer{port}" if slots > 1 else "flat_packer"] = packer
        word = Signal(range(-(-group_lanes // elements) + 2))           # j
        pairs = max(1, slots // 2)                                      # slot pairs, written one after the other
        slot_pair, next_pair = Signal(range(pairs)) if pairs > 1 else None, Signal()
        remaining = layer.positions - group.p0
        valid = Signal(range(group_lanes + 1))
        m.d.comb += valid.eq(Mux(remaining < group_lanes, remaining, group_lanes))
        strided, rows = layer.stride_x == 2, self._strided_rows(m, valid, captured | next_pair)
        width = config.fmt.width
        slot_bits = group_lanes * width
        for port, packer in enumerate(packers):
            lanes = staging[port * slot_bits:(port + 1) * slot_bits]
            for pair in range(1, pairs):                                # port p writes slot 2*pair + p
                slot = 2 * pair + port
                lanes = Mux(slot_pair == pair, staging[slot * slot_bits:(slot + 1) * slot_bits], lanes)
            even_lanes = Cat(lanes.word_select(2 * lane, width) for lane in range(group_lanes // 2))
            m.d.comb += [packer.results.eq(Mux(strided, even_lanes, lanes)),
                         packer.word.first.eq(Mux(strided, rows.first, 0)),
                         packer.word.valid.eq(Mux(strided, rows.end, valid)),
                         packer.word.offset.eq(Mux(strided, rows.offset, word * elements - group.flat_element))]

        def pair_written():
            # The slot pair's last write: on to the next pair's channels, or the group written.
            if pairs == 1:
                m.next = "DONE"
                return
            with m.If(slot_pair + 1 == pairs):
                m.d.sync += slot_pair.eq(0)
                m.next = "DONE"
            with m.Else():
                m.d.sync += slot_pair.eq(slot_pair + 1)
                m.d.comb += next_pair.eq(1)

        def write(address, data, enable, paired_address, paired_data, paired_enable):
            with m.If(layer.flat):
                # Slot 2*pair's channel's word of q0 (stride 2: of the row written) and the word of the group.
                channel_words = Mux(strided, layer.out_channel_words, layer.channel_words)
                first_word = layer.out_base + Mux(strided, group.flat_out_word + rows.word, group.flat_word) \
                    + (slot_pair * (channel_words << 1) if pairs > 1 else 0)
                group_word = Mux(strided, 0, word)
                m.d.comb += [address.eq(first_word + group_word), data.eq(packers[0].data),
                             enable.eq(packers[0].enable)]
                if slots > 1:
                    m.d.comb += [paired_address.eq(first_word + channel_words + group_word),
                                 paired_data.eq(packers[1].data), paired_enable.eq(packers[1].enable)]
                with m.If(strided):
                    with m.If(rows.done):
                        pair_written()
                with m.Else():
                    m.d.sync += word.eq(word + 1)
                    with m.If((word + 1) * elements >= group.flat_element + valid):
                        m.d.sync += word.eq(0)
                        pair_written()
        return write

    def _strided_rows(self, m, valid, restart):
        """A stride-2 flat pass's writes (models.dqn.flat_map.strided_writes), one a cycle in the WRITE state: output
        row by output row of the group from ``flat_row_lane`` / ``flat_out_word`` / ``flat_out_element``, each row's
        one or two words.  Returns the current write's ``word`` (from ``flat_out_word``), ``offset``, ``first``,
        ``end`` (the packer's even lanes ``first <= lane < end``) and ``done`` (the group's last write)."""
        config, layer, group = self._config, self.group.layer, self.group.group
        elements, group_lanes = config.row_elements, config.flat_group_lanes
        row_lane = Signal(signed(len(group.flat_row_lane) + 1))       # r: the row's even lane 0
        row_word = Signal.like(layer.out_channel_words)               # its output position's word (from the group's)
        row_element = Signal.like(group.flat_out_element)             # and element
        second = Signal()                                             # writing the row's second word
        out_width = (layer.in_width + 1) >> 1
        even_valid = (valid + 1) >> 1
        first = Mux(row_lane > 0, row_lane, 0)
        end = Mux(row_lane + out_width < even_valid, row_lane + out_width, even_valid)
        first_second = row_element + first - row_lane >= elements      # the row's first lane in its second word
        last_second = row_element + end - 1 - row_lane >= elements
        in_second = first_second | second
        row_written = (in_second == last_second) | (first >= end)    # (a group may have no even row's lanes)
        next_lane = row_lane + layer.in_width
        moved = row_element + out_width
        wraps = moved >= elements
        rows = SimpleNamespace(
            word=Signal.like(row_word, name="strided_word"), offset=Signal(range(-elements + 1, group_lanes)),
            first=Signal(range(group_lanes + 1), name="strided_first"),
            end=Signal(range(group_lanes + 1), name="strided_end"), done=Signal(name="strided_done"))
        m.d.comb += [rows.word.eq(row_word + in_second), rows.first.eq(first), rows.end.eq(end),
                     rows.offset.eq(Mux(in_second, elements, 0) - row_element + row_lane),
                     rows.done.eq(row_written & (next_lane >= even_valid))]
        with m.If(restart):                          # a group's results taken (IDLE) or its next slot pair
            m.d.sync += [row_lane.eq(group.flat_row_lane), row_word.eq(0), row_element.eq(group.flat_out_element),
                         second.eq(0)]
        with m.Elif(row_written):                    # the row's last word: on to the next row
            m.d.sync += [row_lane.eq(next_lane), row_word.eq(row_word + wraps),
                         row_element.eq(Mux(wraps, moved - elements, moved)), second.eq(0)]
        with m.Else():
            m.d.sync += second.eq(1)
        return rows
