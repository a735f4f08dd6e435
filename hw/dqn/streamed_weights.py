"""The weights of a DQN accelerator in external memory: two on-chip halves, one pass's tile loaded while the pass
before computes from the other, or streamed through its half while the pass runs."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.weight_buffer import WeightBuffer
from nnaccel.hw.dqn.weight_handshake import WeightTileSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.tile_port import TilePort

__all__ = ["StreamedWeights", "load_entry_layout", "EXTERNAL_ADDRESS_BITS", "MAX_BURST", "READ_BITS"]

EXTERNAL_ADDRESS_BITS = 26      # byte addresses of a 64 MB memory (the DE1-SoC's SDRAM)
MAX_BURST = 128                 # bus words per burst
READ_BITS = 16                  # a streamed pass's weight reads are counted up to 2**16 - 1


def load_entry_layout(config):
    """One entry of the load table: a load of ``words`` weight words from byte ``address`` of external memory into
    words ``ram_base ..`` (wrapping) of the half of its tile; ``last`` (the tile's last load: the next entry is the
    next tile's); ``whole`` (the tile is complete when this load ends: every later weight read may go); else
    ``available`` (the tile's weight words ``0 .. available - 1`` are loaded when it ends) and ``after_reads`` (the
    load waits until the pass of its tile runs and has read that many weight words: a streamed tile's load that
    overwrites words the pass still reads, or its bias row, read with the first product)."""
    check_config(config)
    return data.StructLayout({"address": EXTERNAL_ADDRESS_BITS, "words": range(config.weight_half_depth + 1),
                              "ram_base": range(config.weight_half_depth), "after_reads": READ_BITS,
                              "available": READ_BITS, "last": 1, "whole": 1})


class StreamedWeights(DqnBlock):
    """The weight RAM of ``config.external_weights``: two halves of ``weight_half_depth`` words
    (:class:`~hw.dqn.weight_buffer.WeightBuffer` s), a load table of ``weight_loads`` entries
    (:func:`load_entry_layout`) and a loader (:class:`~hw.shared.tile_port.TilePort` behind an Avalon-MM burst
    master).  Pass ``j`` of a run reads half ``j mod 2``; the loads of its tile ``j`` write that half.  The table's
    entries are taken in order: each tile's loads, then the next tile's.

    Ports
    -----
    ``a``, ``b`` (In :class:`~hw.shared.dual_port_buffer.BufferPortSignature` of ``weight_word_bits`` x
    ``weight_half_depth``, read only): the feeder's weight and bias-row reads, served by the running pass's half.
    ``tiles`` (In :class:`~hw.dqn.weight_handshake.WeightTileSignature`): the sequencer's run start, its passes'
    releases, and ``ready`` back: the running pass's tile is whole, or more of its words are available than it has
    read (reads on port ``a`` since the pass started).  ``table`` (In ``BufferPortSignature`` of
    :func:`load_entry_layout` x ``weight_loads``): the host's port to the load table.  ``avalon`` (Out
    :class:`~hw.shared.avalon_master.AvalonMMSignature` of ``config.external_bus_bits``, bursts of up to 128
    words): external memory.

    Timing
    ------
    On ``start`` (cycle ``T``) the counts clear and entry 0 is read.  An entry's load is taken by the tile port on
    the first cycle on which the port is free (the cycle after the previous load's ``finished``), the entry is read
    (two cycles after the previous load was taken; ``T + 2`` for entry 0), its tile's half is free (pass ``t - 2``
    released it: ``release`` on cycle ``r``, from ``r + 1``) and, with ``after_reads``, its pass runs and has read
    that many words (the read on cycle ``c`` counts from ``c + 1``).  The load ends on the tile port's
    ``finished`` cycle ``F`` (:class:`~models.shared.tile_port.TilePortModel`); what it makes available counts from
    ``F + 1``.  A weight read issued on cycle ``c`` reads the half of the pass running on ``c``.

    FPGA mapping (Cyclone V)
    ------------------------
    The halves: ``2 x modules`` slices of ``lanes * width`` bits x ``weight_half_depth`` words in M10K (byte
    enables are the M10K's own); the load table ``weight_loads`` x 79 bits in M10K; the tile port's read FIFO one
    M10K; the counters, the read-data multiplexers of the two halves and the port-b multiplexers in ALMs.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        if not config.external_weights:
            raise ValueError(f"{config.module_name}: StreamedWeights needs external_weights=True")
        port = BufferPortSignature(width=config.weight_word_bits, depth=config.weight_address_depth)
        super().__init__(config, {
            "a": In(port), "b": In(port), "tiles": In(WeightTileSignature(config)),
            "table": In(BufferPortSignature(width=load_entry_layout(config).size, depth=config.weight_loads)),
            "avalon": Out(self.avalon_signature(config)),
        })

    @staticmethod
    def avalon_signature(config):
        """The ``avalon`` port's signature for ``config`` (for the top that exposes it)."""
        return TilePort.avalon_signature(address_bits=EXTERNAL_ADDRESS_BITS, max_burst=MAX_BURST,
                                         data_bits=config.external_bus_bits)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        half_depth = config.weight_half_depth
        beats_per_word = config.weight_word_bits // config.external_bus_bits
        halves = []
        for index in range(2):
            m.submodules[f"half{index}"] = half = WeightBuffer(config=config, depth=half_depth, granularity=8)
            halves.append(half)
        m.submodules.loader = loader = TilePort(ram_bits=config.weight_word_bits,
                                                ram_address_bits=(half_depth - 1).bit_length(),
                                                data_bits=config.external_bus_bits, address_bits=EXTERNAL_ADDRESS_BITS,
                                                max_burst=MAX_BURST)
        m.submodules.table = table = DualPortBuffer(width=load_entry_layout(config).size, depth=config.weight_loads)
        wiring.connect(m, wiring.flipped(self.table), table.a)
        wiring.connect(m, wiring.flipped(self.avalon), loader.avalon)
        tiles = self.tiles

        # ---- The running pass (``released`` passes are done): its weight reads and what its tile holds --------
        passes = Signal.like(tiles.passes)
        released = Signal(range(config.max_layers + 1))
        reads = Signal(READ_BITS)
        whole = Signal(2)                        # per half: its tile is complete
        available = Signal(data.ArrayLayout(READ_BITS, 2))   # per half: its tile's words loaded from word 0
        running = released[0]
        m.d.comb += tiles.ready.eq(whole.bit_select(running, 1) | (available[running] > reads))
        with m.If(tiles.release):
            m.d.sync += [released.eq(released + 1), reads.eq(0), whole.bit_select(running, 1).eq(0),
                         available[running].eq(0)]
        with m.Elif(self.a.read_enable):
            m.d.sync += reads.eq(reads + 1)

        # ---- Loads in table order: a tile's loads once pass t-2 freed its half (and after_reads, its pass runs) --
        entry_index = Signal(range(config.weight_loads))
        load_tile = Signal(range(config.max_layers + 1))    # the tile of the entry read
        entry_valid = Signal()                   # the table's read data is entry_index's entry
        entry = data.View(load_entry_layout(config), table.b.read_data)
        m.d.comb += [table.b.address.eq(entry_index), table.b.read_enable.eq(1)]
        half_free = load_tile < released + 2
        reads_done = Mux(entry.after_reads == 0, 1, (load_tile == released) & (reads >= entry.after_reads))
        command = loader.client.command
        m.d.comb += [command.valid.eq(entry_valid & (load_tile < passes) & half_free & reads_done & ~tiles.start),
                     command.payload.address.eq(entry.address),
                     command.payload.beats.eq(entry.words * beats_per_word),
                     command.payload.ram_base.eq(entry.ram_base),
                     command.payload.beats_per_word.eq(beats_per_word)]
        loading, load_half = Signal(), Signal()
        load_whole, load_available = Signal(), Signal(READ_BITS)    # the loading entry's
        m.d.sync += entry_valid.eq(1)
        with m.If(command.valid & command.ready):
            m.d.sync += [entry_index.eq(entry_index + 1), load_tile.eq(load_tile + entry.last), entry_valid.eq(0),
                         loading.eq(1), load_half.eq(load_tile[0]), load_whole.eq(entry.whole),
                         load_available.eq(entry.available)]
        with m.If(loader.client.finished):
            m.d.sync += loading.eq(0)
            with m.If(load_whole):
                m.d.sync += whole.bit_select(load_half, 1).eq(1)
            with m.Else():
                m.d.sync += available[load_half].eq(load_available)
        with m.If(tiles.start):
            m.d.sync += [passes.eq(tiles.passes), entry_index.eq(0), load_tile.eq(0), released.eq(0), reads.eq(0),
                         whole.eq(0), available.eq(0), entry_valid.eq(0)]

        # ---- The halves: the running pass's reads (ports a and b), the loads' writes (port b) -----------------
        read_half = Signal()                     # the half whose words arrive on read_data this cycle
        m.d.sync += read_half.eq(running)
        for index, half in enumerate(halves):
            m.d.comb += [half.a.address.eq(self.a.address), half.a.read_enable.eq(self.a.read_enable)]
            with m.If(loading & (load_half == index)):
                m.d.comb += [half.b.address.eq(loader.ram_write.address),
                             half.b.write_data.eq(loader.ram_write.write_data),
                             half.b.write_enable.eq(loader.ram_write.write_enable)]
            with m.Else():
                m.d.comb += [half.b.address.eq(self.b.address), half.b.read_enable.eq(self.b.read_enable)]
        m.d.comb += [self.a.read_data.eq(Mux(read_half, halves[1].a.read_data, halves[0].a.read_data)),
                     self.b.read_data.eq(Mux(read_half, halves[1].b.read_data, halves[0].b.read_data))]
        return m
