"""The weights of a DQN accelerator in external memory: two on-chip halves, one pass's tile loaded while the pass
before computes from the other."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.weight_buffer import WeightBuffer
from nnaccel.hw.dqn.weight_handshake import WeightTileSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.tile_port import TilePort

__all__ = ["StreamedWeights", "tile_entry_layout", "EXTERNAL_ADDRESS_BITS", "BUS_BITS", "MAX_BURST"]

EXTERNAL_ADDRESS_BITS = 26      # byte addresses of a 64 MB memory (the DE1-SoC's SDRAM)
BUS_BITS = 32                   # the Avalon-MM port's word
MAX_BURST = 128                 # bus words per burst


def tile_entry_layout(config):
    """One entry of the tile table (entry ``j``: pass ``j``'s tile): ``address`` (byte address of its first word in
    external memory) and ``words`` (weight words: its products and its bias row, loaded into words 0 .. of a half)."""
    return data.StructLayout({"address": EXTERNAL_ADDRESS_BITS,
                              "words": range(check_config(config).weight_half_depth + 1)})


class StreamedWeights(DqnBlock):
    """The weight RAM of ``config.external_weights``: two halves of ``weight_half_depth`` words
    (:class:`~hw.dqn.weight_buffer.WeightBuffer` s), a tile table and a tile loader
    (:class:`~hw.shared.tile_port.TilePort` behind an Avalon-MM burst master).  Tile ``j`` (pass ``j``'s weights,
    its bias row last) goes into half ``j mod 2`` from word 0; pass ``j`` reads half ``j mod 2``.

    Ports
    -----
    ``a``, ``b`` (In :class:`~hw.shared.dual_port_buffer.BufferPortSignature` of ``weight_word_bits`` x
    ``weight_depth``, read only): the feeder's weight and bias-row reads, served by the running pass's half (word
    ``address`` of the half).  ``tiles`` (In :class:`~hw.dqn.weight_handshake.WeightTileSignature`): the
    sequencer's run start, its passes' releases, and ``ready`` back.  ``table`` (In ``BufferPortSignature`` of
    :func:`tile_entry_layout` x ``max_layers``): the host's port to the tile table.  ``avalon`` (Out
    :class:`~hw.shared.avalon_master.AvalonMMSignature`, 32 bits, bursts of up to 128 words): external memory.

    Timing
    ------
    On ``start`` (cycle ``T``) the counts clear; tile ``j``'s command is taken by the tile port on the first cycle
    from which the port is free (the cycle after the previous load's ``finished``), tile ``j - 2``'s pass has
    released its half (``release`` on cycle ``r``: from ``r + 1``) and the table entry is read (two cycles after
    the previous command was taken; ``T + 2`` for tile 0).  The load ends on the tile port's ``finished`` cycle
    ``F`` (:class:`~models.shared.tile_port.TilePortModel`); ``ready`` is high from ``F + 1`` while pass ``j``
    runs.  A weight read issued on cycle ``c`` reads the half of the pass running on ``c``.

    FPGA mapping (Cyclone V)
    ------------------------
    The halves: ``modules`` x ``ceil(lanes * width / 40)`` x ``ceil(weight_half_depth / 256)`` M10K each (byte
    enables are the M10K's own); the tile table ``max_layers`` x 40 bits in MLABs; the tile port's read FIFO one
    M10K; counters, the read-data multiplexers of the two halves and the port-b multiplexers in ALMs.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        if not config.external_weights:
            raise ValueError(f"{config.module_name}: StreamedWeights needs external_weights=True")
        port = BufferPortSignature(width=config.weight_word_bits, depth=config.weight_depth)
        super().__init__(config, {
            "a": In(port), "b": In(port), "tiles": In(WeightTileSignature(config)),
            "table": In(BufferPortSignature(width=tile_entry_layout(config).size, depth=config.max_layers)),
            "avalon": Out(self.avalon_signature()),
        })

    @staticmethod
    def avalon_signature():
        """The ``avalon`` port's signature (for the top that exposes it)."""
        return TilePort.avalon_signature(address_bits=EXTERNAL_ADDRESS_BITS, max_burst=MAX_BURST, data_bits=BUS_BITS)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        half_depth = config.weight_half_depth
        beats_per_word = config.weight_word_bits // BUS_BITS
        halves = []
        for index in range(2):
            m.submodules[f"half{index}"] = half = WeightBuffer(config=config, depth=half_depth, granularity=8)
            halves.append(half)
        m.submodules.loader = loader = TilePort(ram_bits=config.weight_word_bits,
                                                ram_address_bits=max(1, (half_depth - 1).bit_length()),
                                                data_bits=BUS_BITS, address_bits=EXTERNAL_ADDRESS_BITS,
                                                max_burst=MAX_BURST)
        m.submodules.table = table = DualPortBuffer(width=tile_entry_layout(config).size, depth=config.max_layers)
        wiring.connect(m, wiring.flipped(self.table), table.a)
        wiring.connect(m, wiring.flipped(self.avalon), loader.avalon)
        tiles = self.tiles

        # ---- Tile order: tile j loads once tile j-1 is loaded and pass j-2 has released tile j's half ----------
        passes = Signal.like(tiles.passes)
        load_index, loaded, released = (Signal(range(config.max_layers + 1)) for _ in range(3))
        entry_valid = Signal()                   # the table's read data is load_index's entry
        loading, load_half = Signal(), Signal()
        entry = data.View(tile_entry_layout(config), table.b.read_data)
        m.d.comb += [table.b.address.eq(load_index), table.b.read_enable.eq(1)]
        command = loader.client.command
        m.d.comb += [command.valid.eq(entry_valid & (load_index < passes) & (load_index < released + 2)
                                      & ~tiles.start),
                     command.payload.address.eq(entry.address),
                     command.payload.beats.eq(entry.words * beats_per_word),
                     command.payload.ram_base.eq(0),
                     command.payload.beats_per_word.eq(beats_per_word),
                     tiles.ready.eq(loaded != released)]
        m.d.sync += entry_valid.eq(1)
        with m.If(command.valid & command.ready):
            m.d.sync += [load_index.eq(load_index + 1), entry_valid.eq(0), loading.eq(1), load_half.eq(load_index[0])]
        with m.If(loader.client.finished):
            m.d.sync += [loaded.eq(loaded + 1), loading.eq(0)]
        with m.If(tiles.release):
            m.d.sync += released.eq(released + 1)
        with m.If(tiles.start):
            m.d.sync += [passes.eq(tiles.passes), load_index.eq(0), loaded.eq(0), released.eq(0), entry_valid.eq(0)]

        # ---- The halves: the running pass's reads (ports a and b), the loader's writes (port b) ---------------
        read_half = Signal()                     # the half whose words arrive on read_data this cycle
        m.d.sync += read_half.eq(released[0])
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
