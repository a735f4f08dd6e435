"""An Avalon-MM burst master: long reads and writes of external memory as streams on the accelerator side."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.parameters import check_int

__all__ = ["AvalonMMSignature", "AvalonBurstMaster", "avalon_command_layout", "avalon_write_layout",
           "check_burst_master_parameters"]


def check_burst_master_parameters(*, data_bits, address_bits, max_burst, words_bits, fifo_depth):
    """Check :class:`AvalonBurstMaster`'s parameters (``ValueError`` naming the bad one); returns the FIFO depth
    (``2 * max_burst`` when ``fifo_depth`` is None)."""
    check_int("data_bits", data_bits, 8, 1024)
    if data_bits & (data_bits - 1):
        raise ValueError(f"data_bits must be a power of two, not {data_bits!r}")
    check_int("address_bits", address_bits, 1, 64)
    check_int("max_burst", max_burst, 1, 1 << 11)
    if max_burst & (max_burst - 1):
        raise ValueError(f"max_burst must be a power of two (Avalon burstcount), not {max_burst!r}")
    check_int("words_bits", words_bits, 1, 32)
    fifo_depth = 2 * max_burst if fifo_depth is None else fifo_depth
    check_int("fifo_depth", fifo_depth, max_burst, 1 << 16)
    return fifo_depth


class AvalonMMSignature(wiring.Signature):
    """An Avalon-MM master port with bursts, from the master's side: ``address`` (byte address of a
    ``data_bits``-aligned word), ``burstcount`` (words, 1 .. ``2**(burstcount_bits-1)``), ``read``, ``write``,
    ``writedata``, ``byteenable`` (Out); ``waitrequest``, ``readdata``, ``readdatavalid`` (In)."""

    def __init__(self, *, data_bits, address_bits, burstcount_bits):
        self._params = (data_bits, address_bits, burstcount_bits)
        super().__init__({
            "address": Out(address_bits), "burstcount": Out(burstcount_bits), "read": Out(1), "write": Out(1),
            "writedata": Out(data_bits), "byteenable": Out(data_bits // 8),
            "waitrequest": In(1), "readdata": In(data_bits), "readdatavalid": In(1),
        })

    def __eq__(self, other):
        return isinstance(other, AvalonMMSignature) and self._params == other._params

    def __repr__(self):
        data_bits, address_bits, burstcount_bits = self._params
        return (f"AvalonMMSignature(data_bits={data_bits}, address_bits={address_bits}, "
                f"burstcount_bits={burstcount_bits})")


def avalon_command_layout(address_bits, words_bits):
    """Payload of a read or write command: ``address`` (byte address of the first word), ``words`` (how many;
    0 does nothing)."""
    return data.StructLayout({"address": address_bits, "words": words_bits})


def avalon_write_layout(data_bits):
    """Payload of a write word: ``data`` and ``byteenable`` (bit ``b`` writes byte ``b``)."""
    return data.StructLayout({"data": data_bits, "byteenable": data_bits // 8})


class AvalonBurstMaster(wiring.Component):
    """Reads and writes runs of ``data_bits``-bit words of an Avalon-MM slave (external memory) in bursts of up to
    ``max_burst`` words, with stream interfaces (``amaranth.lib.stream``) on the accelerator side.

    Ports
    -----
    ``read_command`` (In stream, :func:`avalon_command_layout`): read ``words`` words from byte ``address``; taken
    when the previous read command has been issued in full.  ``read_data`` (Out stream, ``data_bits``): the words
    in address order, commands in order.  ``write_command`` (In stream, same layout) and ``write_data`` (In
    stream, :func:`avalon_write_layout`): the words to write, in address order.  ``busy`` (Out 1): a command is
    not finished on the bus, or read words are still to arrive.  ``avalon`` (:class:`AvalonMMSignature`): the
    master port (Verilog ``avalon__address``, ...).

    Bus protocol (Avalon-MM, pipelined reads, bursts)
    -------------------------------------------------
    A command is cut into bursts of ``min(max_burst, words left)``.  A read burst is one request cycle (``read``,
    ``address``, ``burstcount`` held until ``waitrequest`` is low); its words come back on ``readdatavalid`` in
    order, any number of cycles later, and the next burst may be requested before they arrive (pipelined reads).
    A read burst is requested only when the read FIFO (``fifo_depth`` words) has room for it beside every word
    already requested, so ``readdatavalid`` never finds the FIFO full (Avalon reads cannot be stalled).  A write
    burst holds ``address`` and ``burstcount`` for its duration and asserts ``write`` on every cycle the
    ``write_data`` stream has a word (an idle beat, ``write`` low, when it has none; the Avalon specification
    allows it); a beat is taken when ``waitrequest`` is low.  When both a read and a write burst could start, they
    take turns.  ``read`` and ``write`` are never high together.

    Timing
    ------
    A burst's request is decided on one cycle and driven from the next (registered ``address``, ``burstcount``,
    ``read``); after a read request is accepted, or the last beat of a write burst, the next decision is on the
    following cycle, so a request is on the bus at most every second cycle (a burst of ``n`` words keeps a 16-bit
    SDRAM busy for ``n * data_bits / 16`` cycles, so this never limits bandwidth for bursts of 2 words or more).
    ``read_data`` has the FIFO's latency: a word arriving on ``readdatavalid`` on cycle ``t`` is valid on the
    stream from cycle ``t + 2`` (:class:`amaranth.lib.fifo.SyncFIFOBuffered`: block RAM plus output register).

    FPGA mapping (Cyclone V)
    ------------------------
    The read FIFO is one block RAM (``fifo_depth x data_bits``: an M10K for 256 x 32 bits) with its output
    register; address and word counters, the burst-length minimum and the credit comparison are ALMs.  On a
    DE1-SoC the port connects through the Platform Designer interconnect to the SDRAM controller (which
    converts ``data_bits`` to the SDRAM's 16 bits); :mod:`testbench.shared.avalon_sdram` models that path.
    """

    def __init__(self, *, data_bits=32, address_bits=26, max_burst=128, words_bits=20, fifo_depth=None):
        fifo_depth = check_burst_master_parameters(data_bits=data_bits, address_bits=address_bits,
                                                   max_burst=max_burst, words_bits=words_bits, fifo_depth=fifo_depth)
        self._data_bits, self._address_bits, self._max_burst = data_bits, address_bits, max_burst
        self._words_bits, self._fifo_depth = words_bits, fifo_depth
        command = avalon_command_layout(address_bits, words_bits)
        super().__init__({
            "read_command": In(stream.Signature(command)),
            "read_data": Out(stream.Signature(data_bits)),
            "write_command": In(stream.Signature(command)),
            "write_data": In(stream.Signature(avalon_write_layout(data_bits))),
            "busy": Out(1),
            "avalon": Out(AvalonMMSignature(data_bits=data_bits, address_bits=address_bits,
                                            burstcount_bits=max_burst.bit_length())),
        })

    @property
    def data_bits(self):
        return self._data_bits

    @property
    def max_burst(self):
        return self._max_burst

    @property
    def fifo_depth(self):
        return self._fifo_depth

    @property
    def module_name(self):
        return (f"avalon_master_d{self._data_bits}_a{self._address_bits}_b{self._max_burst}"
                f"_w{self._words_bits}_f{self._fifo_depth}")

    def elaborate(self, platform):
        m = Module()
        bus = self.avalon
        word_bytes = self._data_bits // 8
        m.submodules.read_fifo = read_fifo = fifo.SyncFIFOBuffered(width=self._data_bits, depth=self._fifo_depth)
        wiring.connect(m, read_fifo.r_stream, wiring.flipped(self.read_data))
        m.d.comb += [read_fifo.w_stream.payload.eq(bus.readdata), read_fifo.w_stream.valid.eq(bus.readdatavalid)]

        def command_register(port):
            address, words = Signal(self._address_bits), Signal(self._words_bits)
            m.d.comb += port.ready.eq(words == 0)
            with m.If(port.valid & port.ready):
                m.d.sync += [address.eq(port.payload.address), words.eq(port.payload.words)]
            burst = Mux(words > self._max_burst, self._max_burst, words)
            return address, words, burst

        read_address, read_words, read_burst = command_register(self.read_command)
        write_address, write_words, write_burst = command_register(self.write_command)

        # Read credit: words requested but not yet arrived, plus words waiting in the FIFO.
        outstanding = Signal(range(self._fifo_depth + 1))
        arrived = bus.readdatavalid
        reserved = Signal.like(outstanding)
        m.d.comb += reserved.eq(outstanding + read_fifo.level)
        can_read = (read_words != 0) & (reserved + read_burst <= self._fifo_depth)
        can_write = (write_words != 0) & self.write_data.valid
        last_was_write = Signal()
        beats_left = Signal(range(self._max_burst + 1))

        requested = Signal.like(outstanding)          # words added to ``outstanding`` by this cycle's decision
        m.d.sync += outstanding.eq(outstanding + requested - arrived)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(can_read & ~(can_write & ~last_was_write)):
                    m.d.comb += requested.eq(read_burst)
                    m.d.sync += [bus.address.eq(read_address), bus.burstcount.eq(read_burst),
                                 read_address.eq(read_address + read_burst * word_bytes),
                                 read_words.eq(read_words - read_burst), last_was_write.eq(0)]
                    m.next = "READ"
                with m.Elif(can_write):
                    m.d.sync += [bus.address.eq(write_address), bus.burstcount.eq(write_burst),
                                 beats_left.eq(write_burst),
                                 write_address.eq(write_address + write_burst * word_bytes),
                                 write_words.eq(write_words - write_burst), last_was_write.eq(1)]
                    m.next = "WRITE"
            with m.State("READ"):
                m.d.comb += bus.read.eq(1)
                with m.If(~bus.waitrequest):
                    m.next = "IDLE"
            with m.State("WRITE"):
                m.d.comb += [bus.write.eq(self.write_data.valid), bus.writedata.eq(self.write_data.payload.data),
                             bus.byteenable.eq(self.write_data.payload.byteenable),
                             self.write_data.ready.eq(~bus.waitrequest)]
                with m.If(self.write_data.valid & ~bus.waitrequest):
                    m.d.sync += beats_left.eq(beats_left - 1)
                    with m.If(beats_left == 1):
                        m.next = "IDLE"
        m.d.comb += self.busy.eq((beats_left != 0) | bus.read | (read_words != 0) | (write_words != 0)
                                 | (outstanding != 0))
        return m
