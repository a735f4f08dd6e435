"""An accelerator's port into external memory: loads of on-chip RAM tiles from it and stores of tiles to it."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.avalon_master import AvalonBurstMaster, AvalonMMSignature, check_burst_master_parameters
from nnaccel.hw.shared.parameters import check_int
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, reads_only, writes_only

__all__ = ["TilePort", "TileCommandSignature", "tile_command_layout"]


def tile_command_layout(*, address_bits, beats_bits, ram_address_bits, beats_per_word_bits):
    """A load or store: ``store`` (0 load, 1 store), ``address`` (byte address in external memory), ``beats`` (bus
    words to move), ``ram_base`` (first RAM word), ``beats_per_word`` (bus words per RAM word, at least 1)."""
    return data.StructLayout({"store": 1, "address": address_bits, "beats": beats_bits,
                              "ram_base": ram_address_bits, "beats_per_word": beats_per_word_bits})


class TileCommandSignature(wiring.Signature):
    """A client's commands to a :class:`TilePort`, seen from the client (the port has it flipped): ``command`` Out
    (stream of ``command_layout``, :func:`tile_command_layout`), ``finished`` In(1) (the command's last bus word
    moved on this cycle)."""

    def __init__(self, command_layout):
        if not isinstance(command_layout, data.Layout):
            raise TypeError(f"command_layout must be a data.Layout, not {command_layout!r}")
        self._command_layout = command_layout
        super().__init__({"command": Out(stream.Signature(command_layout)), "finished": In(1)})

    @property
    def command_layout(self):
        return self._command_layout

    def __eq__(self, other):
        return isinstance(other, TileCommandSignature) and other._command_layout == self._command_layout

    def __hash__(self):
        return hash((TileCommandSignature, self._command_layout))

    def __repr__(self):
        return f"TileCommandSignature({self._command_layout!r})"


class TilePort(wiring.Component):
    """Moves tiles between external memory (through an :class:`~hw.shared.avalon_master.AvalonBurstMaster`) and
    on-chip RAMs whose words are ``beats_per_word`` bus words wide, one command at a time.

    A load writes bus word ``b`` of the command into RAM word ``ram_base + b // beats_per_word`` at bus-word lane
    ``b % beats_per_word`` (byte enables); a store reads RAM words ``ram_base ..`` and sends their bus words, lane
    0 first.  The RAM side is generic: the user routes ``ram_write`` / ``ram_read`` to the RAM the command is for (a
:class:`~hw.shared.buffer_port_demux.BufferPortDemux`).

    Ports
    -----
    ``client`` (In :class:`TileCommandSignature`): ``command`` (a stream of :func:`tile_command_layout`) taken when
    the previous command has finished (``ready`` = not busy); ``finished``: the command's last bus word moved on
    this cycle.  ``ram_write``
    and ``ram_read`` (Out :class:`~hw.shared.dual_port_buffer.BufferPortSignature` of ``ram_bits`` x
    ``2**ram_address_bits`` words, byte granularity): loads write through ``ram_write`` (``write_data`` the bus
    word repeated across ``ram_bits``, ``write_enable`` the bytes of the word's lane; it never reads), stores read
    through ``ram_read`` (one cycle of latency; it never writes).  ``avalon``: the master's
    :class:`~hw.shared.avalon_master.AvalonMMSignature` port.

    Timing
    ------
    A command taken on cycle ``p`` reaches the master on that cycle's edge; the master decides its first burst on
    ``p + 1`` (see :class:`~hw.shared.avalon_master.AvalonBurstMaster`).  Load: a bus word arriving on
    ``readdatavalid`` on cycle ``t`` is written to the RAM on cycle ``t + 2`` (the read FIFO's latency); store:
    the first RAM word is read on ``p``, bus words are offered from ``p + 1`` on every cycle until the last is
    taken (the next word is read on the cycle the current word's last bus word is taken).  ``finished`` is high
    on the cycle of the last bus word (load: written to the RAM; store: accepted by the slave); the next command
    is taken from the following cycle.  :class:`models.shared.tile_port.TilePortModel` computes these cycles.

    FPGA mapping (Cyclone V)
    ------------------------
    The master's read FIFO (one M10K for 256 x 32 bits), its counters, and here two word counters, the beat lane
    decoder and the ``ram_bits``-to-bus-word multiplexer in ALMs.
    """

    def __init__(self, *, ram_bits, ram_address_bits, data_bits=32, address_bits=26, max_burst=128, beats_bits=20,
                 fifo_depth=None):
        if not isinstance(ram_bits, int) or isinstance(ram_bits, bool) or ram_bits < data_bits or ram_bits % data_bits:
            raise ValueError(f"ram_bits must be a positive multiple of data_bits ({data_bits}), not {ram_bits!r}")
        check_int("ram_address_bits", ram_address_bits, 1, 32)
        self._master_parameters = {"data_bits": data_bits, "address_bits": address_bits, "max_burst": max_burst,
                                   "words_bits": beats_bits}
        self._master_parameters["fifo_depth"] = check_burst_master_parameters(**self._master_parameters,
                                                                              fifo_depth=fifo_depth)
        self._ram_bits, self._data_bits = ram_bits, data_bits
        lanes = ram_bits // data_bits
        self._command_layout = tile_command_layout(address_bits=address_bits, beats_bits=beats_bits,
                                                   ram_address_bits=ram_address_bits,
                                                   beats_per_word_bits=lanes.bit_length())
        ram = BufferPortSignature(width=ram_bits, depth=1 << ram_address_bits, granularity=8)
        super().__init__({
            "client": In(TileCommandSignature(self._command_layout)),
            "ram_write": Out(ram), "ram_read": Out(ram),
            "avalon": Out(self.avalon_signature(address_bits=address_bits, max_burst=max_burst, data_bits=data_bits)),
        })

    @staticmethod
    def avalon_signature(*, address_bits, max_burst, data_bits=32):
        """The ``avalon`` port's signature for these parameters (for a parent that exposes the port)."""
        return AvalonMMSignature(data_bits=data_bits, address_bits=address_bits,
                                 burstcount_bits=max_burst.bit_length())

    @property
    def max_burst(self):
        return self._master_parameters["max_burst"]

    @property
    def fifo_depth(self):
        return self._master_parameters["fifo_depth"]

    def elaborate(self, platform):
        m = Module()
        m.submodules.master = master = AvalonBurstMaster(**self._master_parameters)
        writes_only(m, self.ram_write)     # loads write the RAM, stores read it
        reads_only(m, self.ram_read)
        wiring.connect(m, wiring.flipped(self.avalon), master.avalon)
        command = self.client.command.payload
        lane_bytes = self._data_bits // 8

        busy, storing = Signal(), Signal()
        beats_left = Signal.like(command.beats)
        word, lane = Signal.like(command.ram_base), Signal.like(command.beats_per_word)
        beats_per_word = Signal.like(command.beats_per_word)
        taken = self.client.command.valid & ~busy
        m.d.comb += [
            self.client.command.ready.eq(~busy),
            master.read_command.valid.eq(taken & ~command.store),
            master.write_command.valid.eq(taken & command.store),
            master.read_command.payload.address.eq(command.address),
            master.read_command.payload.words.eq(command.beats),
            master.write_command.payload.address.eq(command.address),
            master.write_command.payload.words.eq(command.beats),
        ]
        with m.If(taken):
            m.d.sync += [busy.eq(command.beats != 0), storing.eq(command.store), beats_left.eq(command.beats),
                         word.eq(command.ram_base), lane.eq(0), beats_per_word.eq(command.beats_per_word)]

        # A bus word moves: loads take every word the master delivers, stores offer the current RAM word's lane.
        moved = Signal()
        m.d.comb += [moved.eq(Mux(storing, master.write_data.valid & master.write_data.ready,
                                  master.read_data.valid)),
                     master.read_data.ready.eq(1)]
        last_lane = lane + 1 == beats_per_word
        with m.If(busy & moved):
            m.d.sync += [beats_left.eq(beats_left - 1), lane.eq(Mux(last_lane, 0, lane + 1)),
                         word.eq(Mux(last_lane, word + 1, word))]
            with m.If(beats_left == 1):
                m.d.comb += self.client.finished.eq(1)
                m.d.sync += busy.eq(0)

        # Loads: the bus word repeated across the RAM word, its lane's bytes enabled.
        m.d.comb += [
            self.ram_write.address.eq(word),
            self.ram_write.write_data.eq(master.read_data.payload.replicate(self._ram_bits // self._data_bits)),
            self.ram_write.write_enable.eq(Mux(busy & ~storing & master.read_data.valid,
                                               ((1 << lane_bytes) - 1) << (lane * lane_bytes), 0)),
        ]
        # Stores: read the word of the next cycle's bus word (the command's first word on the cycle it is taken).
        m.d.comb += [
            self.ram_read.read_enable.eq(taken | busy & storing),
            self.ram_read.address.eq(Mux(taken, command.ram_base, Mux(moved & last_lane, word + 1, word))),
            master.write_data.valid.eq(busy & storing),
            master.write_data.payload.data.eq(self.ram_read.read_data.word_select(lane, self._data_bits)),
            master.write_data.payload.byteenable.eq(-1),
        ]
        return m
