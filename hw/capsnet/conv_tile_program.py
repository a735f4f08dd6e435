"""The port program of a convolution streamed from SDRAM: the tile port's commands for one layer of step 1."""

import enum

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.tile_handshake import TileHandshakeSignature
from nnaccel.hw.shared.tile_port import TileCommandSignature, tile_command_layout

__all__ = ["ConvTileProgram", "ConvTarget", "conv_stream_layout"]

COUNT_BITS = 16          # tiles, bytes and beats of one layer


class ConvTarget(enum.IntEnum):
    """The on-chip RAM a command moves data to or from."""
    BIAS = 0             # load: the layer's biases (conv_modules int32 per word)
    INPUT = 1            # load: an input map (one row per word), slot = tile parity
    WEIGHTS = 2          # load: a kernel slab (conv_modules int8 per word), slot = tile parity
    STAGING = 3          # store: one output channel of a row group


def conv_stream_layout(*, address_bits, ram_address_bits, beats_per_word_bits):
    """The SDRAM side of a streamed convolution (what :class:`ConvTileProgram` needs beside the engine's
    descriptor); the compiler (:func:`models.capsnet.stream_plan.compile_image_stream`) derives every field.

    ``tiles``: tile loads of the layer (0: no layer); ``image``: one input channel, its map is loaded once and a
    tile is only a kernel slab; ``channels`` (C) and ``passes`` (passes per channel block: row groups x column
    blocks); biases ``bias_address``, ``bias_beats``, ``bias_word_beats``; input maps ``in_address`` (channel 0), ``map_bytes``,
    ``map_beats``, ``row_beats`` (bus words per map row), ``in_slot_words`` (RAM words of an input slot);
    kernel slabs ``slab_address`` (tile (b, c) at ``(b*C + c) * slab_bytes``), ``slab_bytes``, ``slab_beats``,
    ``slab_words``, ``slab_word_beats``; outputs ``out_address`` (channel 0), ``channel_bytes`` (one output
    channel), ``group_bytes`` (one row group of a channel), ``block_bytes`` (a channel block's channels),
    ``group_beats`` and ``last_group_beats`` (bus words of
    a channel's row group, the block's last group), ``out_row_beats``, ``channel_words`` (staging words per
    channel), ``slot_words`` (per staging slot), ``groups`` (row groups of the layer), ``block_groups`` (per
    channel block), ``column_blocks``, ``block_channels`` and ``last_block_channels`` (output channels of a block,
    of the last block), ``last_block_group`` (the first group of the last block)."""
    counts = {name: COUNT_BITS for name in (
        "tiles", "map_bytes", "map_beats", "slab_bytes", "slab_beats", "channel_bytes", "group_bytes", "block_bytes",
        "group_beats", "last_group_beats", "groups", "last_block_group")}
    words = {name: ram_address_bits for name in ("in_slot_words", "slab_words", "channel_words", "slot_words")}
    addresses = {name: address_bits for name in ("bias_address", "in_address", "slab_address", "out_address")}
    return data.StructLayout({
        **counts, **words, **addresses, "image": 1, "channels": 10, "passes": 8, "bias_beats": COUNT_BITS,
        "bias_word_beats": beats_per_word_bits,
        "row_beats": beats_per_word_bits, "slab_word_beats": beats_per_word_bits,
        "out_row_beats": beats_per_word_bits, "block_groups": 8, "column_blocks": 8, "block_channels": 8,
        "last_block_channels": 8})


class ConvTileProgram(wiring.Component):
    """Drives a :class:`~hw.shared.tile_port.TilePort` for one streamed convolution on
    :class:`~hw.capsnet.conv_engine.CapsNetConvEngine` in its tiled mode, one command at a time.

    Program: the biases; with one input channel (``image``) the input map; then, in the engine's step order
    ``for b: for pass: for c``, tile ``t`` (``image``: the slab of block b; else input map c then slab (b, c))
    into RAM slot ``t mod 2``, as soon as tile ``t - 2`` is released; a row group's outputs, one command per
    output channel, as soon as the engine has written the group (stores come before loads).  A tile is released
    when the engine's last step on it ends (``tile_done``; with ``image`` the block's last pass).

    The engine may start a step when its tile is loaded, and the first step of row group ``j`` only when group
    ``j - 2`` (the one before in the same staging slot) is stored: that is ``tile_ready``.

    Ports
    -----
    ``control`` (In :class:`~hw.capsnet.engine_control.EngineControlSignature` of :func:`conv_stream_layout`,
    without events): ``run.start`` with ``layer`` (stable until ``done``); ``run.busy`` from ``start`` to ``done``;
    ``run.done``: every load and store of the layer finished (the cycle after the last ``finished``; on the cycle
    after ``start`` when ``tiles`` is 0).  ``port`` (Out :class:`~hw.shared.tile_port.TileCommandSignature`): the
    commands to the tile port, its ``finished``.  ``load_target`` (Out :class:`ConvTarget`): the RAM of the command
    in flight (from the cycle after it is taken).  ``tiles`` (Out
    :class:`~hw.capsnet.tile_handshake.TileHandshakeSignature`) with the engine.

    Timing: a command is offered on the cycle after its condition holds (counters are registers); the next one is
    decided on the cycle after ``port_finished``.  :func:`models.capsnet.stream_plan.image_stream_cycles` follows it.

    FPGA mapping (Cyclone V): counters and address adders in ALMs, no RAM, no multiplier.
    """

    def __init__(self, *, address_bits, ram_address_bits, beats_bits, beats_per_word_bits):
        self._layout = conv_stream_layout(address_bits=address_bits, ram_address_bits=ram_address_bits,
                                          beats_per_word_bits=beats_per_word_bits)
        command = tile_command_layout(address_bits=address_bits, beats_bits=beats_bits,
                                      ram_address_bits=ram_address_bits, beats_per_word_bits=beats_per_word_bits)
        super().__init__({
            "control": In(EngineControlSignature(self._layout, events=False)),
            "port": Out(TileCommandSignature(command)), "load_target": Out(ConvTarget),
            "tiles": Out(TileHandshakeSignature()),
        })

    def elaborate(self, platform):
        m = Module()
        layer, tiles, run = self.control.layer, self.tiles, self.control.run
        tile_count = Signal(COUNT_BITS)

        # ---- The engine's side: which tile it is on, which row group its next step opens ---------------------
        released, uses = Signal.like(tile_count), Signal.like(layer.passes)
        step_channel, step_column_block = Signal.like(layer.channels), Signal.like(layer.column_blocks)
        step_group, groups_written, groups_stored = (Signal.like(layer.groups) for _ in range(3))
        with m.If(tiles.tile_done):
            last_use = Mux(layer.image, uses + 1 == layer.passes, 1)
            m.d.sync += uses.eq(Mux(last_use, 0, uses + 1))
            with m.If(last_use):
                m.d.sync += released.eq(released + 1)
            with m.If(step_channel + 1 == layer.channels):
                m.d.sync += step_channel.eq(0)
                with m.If(step_column_block + 1 == layer.column_blocks):
                    m.d.sync += [step_column_block.eq(0), step_group.eq(step_group + 1)]
                with m.Else():
                    m.d.sync += step_column_block.eq(step_column_block + 1)
            with m.Else():
                m.d.sync += step_channel.eq(step_channel + 1)
        with m.If(tiles.group_written):
            m.d.sync += groups_written.eq(groups_written + 1)
        opens_group = (step_channel == 0) & (step_column_block == 0)
        staging_free = ~opens_group | (groups_stored + 1 >= step_group)
        loaded = Signal.like(tile_count)
        m.d.comb += tiles.tile_ready.eq((loaded > released) & staging_free)

        # ---- Loads: biases, the image's map, then tiles in step order ---------------------------------------
        bias_loaded, image_loaded, map_loaded = Signal(), Signal(), Signal()
        load_channel, load_pass = Signal.like(layer.channels), Signal.like(layer.passes)
        map_address, slab_address, block_slab_address = (Signal.like(layer.in_address) for _ in range(3))
        want_image = layer.image & ~image_loaded
        want_tile = (loaded < layer.tiles) & (loaded < released + 2)
        want_map = want_tile & ~layer.image & ~map_loaded

        # ---- Stores: channel by channel of the written row groups -------------------------------------------
        store_group, store_block_group = Signal.like(layer.groups), Signal.like(layer.block_groups)
        store_channel = Signal.like(layer.block_channels)
        block_address, group_address, channel_address = (Signal.like(layer.out_address) for _ in range(3))
        staging_word, staging_slot = Signal.like(layer.slot_words), Signal()
        want_store = groups_written > store_group
        last_block = store_group >= layer.last_block_group
        last_channel = store_channel + 1 == Mux(last_block, layer.last_block_channels, layer.block_channels)
        last_group_of_block = store_block_group + 1 == layer.block_groups

        command = self.port.command.payload
        target = Signal(ConvTarget)                           # the RAM of the command offered
        with m.If(want_store):
            m.d.comb += [target.eq(ConvTarget.STAGING), command.store.eq(1),
                         command.address.eq(channel_address),
                         command.beats.eq(Mux(last_group_of_block, layer.last_group_beats, layer.group_beats)),
                         command.ram_base.eq(Mux(staging_slot, layer.slot_words, 0) + staging_word),
                         command.beats_per_word.eq(layer.out_row_beats)]
        with m.Elif(~bias_loaded):
            m.d.comb += [target.eq(ConvTarget.BIAS), command.address.eq(layer.bias_address),
                         command.beats.eq(layer.bias_beats), command.beats_per_word.eq(layer.bias_word_beats)]
        with m.Elif(want_image | want_map):
            m.d.comb += [target.eq(ConvTarget.INPUT), command.address.eq(Mux(layer.image, layer.in_address,
                                                                                   map_address)),
                         command.beats.eq(layer.map_beats),
                         command.ram_base.eq(Mux(loaded[0] & ~layer.image, layer.in_slot_words, 0)),
                         command.beats_per_word.eq(layer.row_beats)]
        with m.Else():
            m.d.comb += [target.eq(ConvTarget.WEIGHTS), command.address.eq(slab_address),
                         command.beats.eq(layer.slab_beats), command.ram_base.eq(Mux(loaded[0], layer.slab_words, 0)),
                         command.beats_per_word.eq(layer.slab_word_beats)]
        running, in_flight = Signal(), Signal()
        m.d.comb += self.port.command.valid.eq(running & ~in_flight & (want_store | ~bias_loaded | want_image | want_tile))
        issued_target = self.load_target
        with m.If(self.port.command.valid & self.port.command.ready):
            m.d.sync += [in_flight.eq(1), issued_target.eq(target)]

        with m.If(self.port.finished & in_flight):
            m.d.sync += in_flight.eq(0)
            with m.Switch(issued_target):
                with m.Case(ConvTarget.BIAS):
                    m.d.sync += bias_loaded.eq(1)
                with m.Case(ConvTarget.INPUT):
                    with m.If(layer.image):
                        m.d.sync += image_loaded.eq(1)
                    with m.Else():
                        m.d.sync += map_loaded.eq(1)
                with m.Case(ConvTarget.WEIGHTS):
                    m.d.sync += [loaded.eq(loaded + 1), map_loaded.eq(0), slab_address.eq(slab_address + layer.slab_bytes)]
                    with m.If(load_channel + 1 == layer.channels):
                        m.d.sync += [load_channel.eq(0), map_address.eq(layer.in_address)]
                        with m.If(layer.image | (load_pass + 1 == layer.passes)):   # a block's last pass
                            m.d.sync += [load_pass.eq(0), block_slab_address.eq(slab_address + layer.slab_bytes)]
                        with m.Else():
                            m.d.sync += [load_pass.eq(load_pass + 1), slab_address.eq(block_slab_address)]
                    with m.Else():
                        m.d.sync += [load_channel.eq(load_channel + 1), map_address.eq(map_address + layer.map_bytes)]
                with m.Case(ConvTarget.STAGING):
                    m.d.sync += [store_channel.eq(store_channel + 1),
                                 channel_address.eq(channel_address + layer.channel_bytes),
                                 staging_word.eq(staging_word + layer.channel_words)]
                    with m.If(last_channel):
                        m.d.sync += [store_channel.eq(0), staging_word.eq(0), staging_slot.eq(~staging_slot),
                                     store_group.eq(store_group + 1), groups_stored.eq(groups_stored + 1)]
                        with m.If(last_group_of_block):
                            next_block = block_address + layer.block_bytes
                            m.d.sync += [store_block_group.eq(0), block_address.eq(next_block),
                                         group_address.eq(next_block), channel_address.eq(next_block)]
                        with m.Else():
                            next_group = group_address + layer.group_bytes
                            m.d.sync += [store_block_group.eq(store_block_group + 1), group_address.eq(next_group),
                                         channel_address.eq(next_group)]

        done = running & bias_loaded & (loaded == layer.tiles) & (groups_stored == layer.groups) & ~in_flight
        with m.If(done):
            m.d.sync += running.eq(0)
        m.d.comb += [run.done.eq(done), run.busy.eq(running)]
        with m.If(run.start):
            m.d.sync += [running.eq(1), in_flight.eq(0), bias_loaded.eq(layer.tiles == 0), image_loaded.eq(0),
                         map_loaded.eq(0), loaded.eq(0), released.eq(0), uses.eq(0), step_channel.eq(0),
                         step_column_block.eq(0), step_group.eq(0), groups_written.eq(0), groups_stored.eq(0),
                         load_channel.eq(0), load_pass.eq(0), map_address.eq(layer.in_address),
                         slab_address.eq(layer.slab_address), block_slab_address.eq(layer.slab_address),
                         store_group.eq(0), store_block_group.eq(0), store_channel.eq(0),
                         block_address.eq(layer.out_address), group_address.eq(layer.out_address),
                         channel_address.eq(layer.out_address), staging_word.eq(0), staging_slot.eq(0)]
        return m
