"""Cycle-accurate model of the DE1-SoC's FPGA-side SDRAM behind an Avalon-MM slave port.

The board's SDRAM is one ISSI IS42S16320D (64 MB: 4 banks x 8,192 rows x 1,024 columns of 16 bits) driven by
an SDRAM controller at the accelerator's clock.  :class:`SdramTiming` holds the device geometry and timing in
clock cycles (defaults and their sources in its docstring); :class:`SdramModel` is the controller plus the
device as the accelerator's Avalon-MM master sees them: it accepts read burst commands and write beats of
``port_bits``-bit words (the accelerator-side width), splits every word into ``port_bits / 16`` SDRAM beats
(the interconnect's width adapter), and schedules each beat on the SDRAM command bus in acceptance order:

* a beat whose bank has its row open costs one column command (READ or WRITE) on the command bus;
* a closed bank first takes an ACTIVATE and ``trcd`` cycles; a bank with another row open first takes a
  PRECHARGE (no earlier than ``tras`` after its ACTIVATE and ``twr`` after its last WRITE) and ``trp`` cycles
  (open-page policy: rows stay open until a miss or a refresh, as the Intel SDRAM controller core does);
* read data appears on the SDRAM data bus ``cas_latency`` cycles after the READ and reaches the Avalon port
  ``read_return_cycles`` later, a word when its last beat has arrived; a WRITE needs the data bus free of read
  data (one turnaround cycle after the last read beat);
* every ``refresh_interval`` cycles an auto-refresh is due: at the first free command slot from then on the
  controller precharges all open banks (``trp``) and refreshes (``trfc``), leaving every bank closed.

Commands reach the SDRAM ``command_latency`` cycles after the Avalon port accepted them, and the controller
holds at most ``queue_depth`` accepted entries (a read burst is one entry, a write word is one) whose SDRAM
commands have not all issued: ``waitrequest`` is high while the queue is full.

The model is event-driven rather than stepped: accepting an entry schedules all its beats at once (they only
depend on earlier entries), so a cocotb slave (:mod:`testbench.shared.avalon_sdram`) and the compiler's cycle
formulas use the same arithmetic.  Byte address ``a`` maps to SDRAM word ``a >> 1``: column = bits 1-10,
bank = bits 11-12, row = bits 13-25 (row-bank-column: consecutive 2 KB pages rotate through the four banks).
"""

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from nnaccel.hw.shared.parameters import check_int

__all__ = ["SdramTiming", "SdramStatistics", "SdramModel", "DE1_SOC_SDRAM", "DE5_NET_DDR3",
           "sustained_read_bytes_per_cycle"]


def _check_power_of_two(name, value):
    check_int(name, value, 1)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two, not {value!r}")


@dataclass(frozen=True)
class SdramTiming:
    """Geometry and timing of an SDR SDRAM and its controller, in clock cycles of the controller's clock.

    Defaults: the DE1-SoC's IS42S16320D (-7 speed grade) at 100 MHz, as programmed by the board's reference
    SDRAM controller settings (the Intel SDRAM controller core with CAS latency 3, refresh every 7.8125 us):

    ============================  =======  ==========================================================
    parameter                     default  source
    ============================  =======  ==========================================================
    ``clock_mhz``                 100      the paper's accelerator clock, shared by the SDRAM
    ``data_bits``                 16       IS42S16320D: x16 device (DQ0-15)
    ``banks, rows, columns``      4, 8192, 1024  IS42S16320D: 32M x 16 = 4 banks x 8K rows x 1K columns
    ``cas_latency``               3        CL programmed by the reference controller (the -7 part
                                           allows 2 at 100 MHz; 3 is the conservative setting)
    ``trcd``                      2        ACTIVATE to READ/WRITE, 15 ns -> 2 cycles at 10 ns
    ``trp``                       2        PRECHARGE period, 15 ns -> 2 cycles
    ``tras``                      5        ACTIVATE to PRECHARGE, 42 ns -> 5 cycles
    ``twr``                       2        write recovery, 14 ns (2 clocks) before a PRECHARGE
    ``trfc``                      7        auto-refresh period, 70 ns in the controller settings
                                           (the device's tRC is 60-63 ns)
    ``refresh_interval``          781      8,192 refreshes per 64 ms: one every 7.8125 us = 781 cycles
    ``command_latency``           1        Avalon acceptance to the first SDRAM command (the
                                           controller's registered command path)
    ``read_return_cycles``        1        SDRAM data bus to ``readdatavalid`` (the controller's
                                           read-data register)
    ``queue_depth``               4        accepted entries (read bursts, write words) the controller
                                           holds before it asserts ``waitrequest``
    ============================  =======  ==========================================================
    """

    clock_mhz: float = 100.0
    data_bits: int = 16
    banks: int = 4
    rows: int = 8192
    columns: int = 1024
    cas_latency: int = 3
    trcd: int = 2
    trp: int = 2
    tras: int = 5
    twr: int = 2
    trfc: int = 7
    refresh_interval: int = 781
    command_latency: int = 1
    read_return_cycles: int = 1
    queue_depth: int = 4

    def __post_init__(self):
        if not isinstance(self.clock_mhz, (int, float)) or isinstance(self.clock_mhz, bool) or self.clock_mhz <= 0:
            raise ValueError(f"clock_mhz must be a positive number, not {self.clock_mhz!r}")
        check_int("data_bits", self.data_bits, 8)
        if self.data_bits % 8:
            raise ValueError(f"data_bits must be a multiple of 8, not {self.data_bits!r}")
        for name in ("banks", "rows", "columns"):
            _check_power_of_two(name, getattr(self, name))
        for name in ("cas_latency", "trcd", "trp", "tras", "trfc", "refresh_interval", "queue_depth"):
            check_int(name, getattr(self, name), 1)
        for name in ("twr", "command_latency", "read_return_cycles"):
            check_int(name, getattr(self, name), 0)
        if self.refresh_interval <= self.trp + self.trfc:
            raise ValueError(f"refresh_interval ({self.refresh_interval}) must exceed trp + trfc "
                             f"({self.trp + self.trfc}): the SDRAM would do nothing but refresh")

    @property
    def beat_bytes(self):
        return self.data_bits // 8

    @property
    def size_bytes(self):
        return self.banks * self.rows * self.columns * self.beat_bytes

    @property
    def row_bytes(self):
        """Bytes of one open row (a page): 2 KB for the IS42S16320D."""
        return self.columns * self.beat_bytes

    @property
    def peak_bytes_per_second(self):
        """One beat per cycle: 200 MB/s for 16 bits at 100 MHz."""
        return self.beat_bytes * self.clock_mhz * 1e6

    def locate(self, byte_address):
        """``(bank, row, column)`` of a byte address (row-bank-column mapping)."""
        word = byte_address // self.beat_bytes
        column = word % self.columns
        bank = (word // self.columns) % self.banks
        row = word // (self.columns * self.banks)
        return bank, row, column


DE1_SOC_SDRAM = SdramTiming()

# A DDR3-class memory with the bandwidth of one of the DE5-Net's DDR3 channels (DDR3-1600, 64 bits: 12.8 GB/s) as an
# accelerator at 100 MHz sees it: 1,024 bits a cycle (16 DDR beats), 8 banks of 8 KB pages (64 of these beats), the
# JEDEC DDR3-1600 timings rounded up to 10 ns cycles (CL, tRCD, tRP 13.75 ns; tRAS 35 ns; tRFC 260 ns for 4 Gbit
# parts), a controller of two cycles each way and an 8-entry queue; 128 rows a bank modelled (8 MB, the memory an
# accelerator's weights take; the rows' count changes no timing).
DE5_NET_DDR3 = SdramTiming(data_bits=1024, banks=8, rows=128, columns=64, cas_latency=2, trcd=2, trp=2, tras=4, twr=2,
                           trfc=26, refresh_interval=781, command_latency=2, read_return_cycles=2, queue_depth=8)


@dataclass
class SdramStatistics:
    """What the model did: column commands (``beats``), row hits, ACTIVATEs into a closed bank (``opens``),
    row misses (PRECHARGE + ACTIVATE), refreshes, and the last cycle the command bus was busy."""

    beats: int = 0
    row_hits: int = 0
    opens: int = 0
    row_misses: int = 0
    refreshes: int = 0
    last_command_cycle: int = -1


@dataclass
class _Bank:
    row: int | None = None
    activated: int = -(1 << 40)
    last_write: int = -(1 << 40)


@dataclass
class SdramModel:
    """The SDRAM, its controller and the width adapter behind one Avalon-MM slave port (see the module docstring).

    ``port_bits``: width of the Avalon data port (a multiple of the SDRAM's ``data_bits``); addresses on the port
    are byte addresses of ``port_bits / 8``-byte-aligned words.  ``memory`` is the byte image (``size_bytes``
    uint8, zeros by default); reads see every write accepted before them.  With ``keep_read_data=False`` the model
    only schedules (no read words are queued): what the compiler's cycle formulas use.

    Use: on every cycle ``c`` (in increasing order) ask :meth:`waitrequest`; if the master's request is accepted
    (not waitrequest), call :meth:`accept_read` (a burst) or :meth:`accept_write` (one word of a write burst);
    :meth:`read_response` gives the word whose ``readdatavalid`` falls on cycle ``c``, if any.
    """

    timing: SdramTiming = DE1_SOC_SDRAM
    port_bits: int = 32
    memory: np.ndarray | None = None
    keep_read_data: bool = True
    statistics: SdramStatistics = field(default_factory=SdramStatistics)

    def __post_init__(self):
        timing = self.timing
        if not isinstance(timing, SdramTiming):
            raise TypeError(f"timing must be an SdramTiming, not {timing!r}")
        check_int("port_bits", self.port_bits, timing.data_bits)
        if self.port_bits % timing.data_bits or self.port_bits > 8 * timing.row_bytes:
            raise ValueError(f"port_bits must be a multiple of the SDRAM's {timing.data_bits} bits up to a row, "
                             f"not {self.port_bits!r}")
        if self.memory is None:
            self.memory = np.zeros(timing.size_bytes, np.uint8)
        elif not isinstance(self.memory, np.ndarray) or self.memory.dtype != np.uint8 or \
                self.memory.shape != (timing.size_bytes,):
            raise ValueError(f"memory must be a uint8 array of {timing.size_bytes} bytes")
        self._banks = [_Bank() for _ in range(timing.banks)]
        self._command_free = 0            # first cycle the command bus is free
        self._data_bus_read_until = -1    # last cycle read data occupies the SDRAM data bus
        self._next_refresh = timing.refresh_interval
        self._last_cycle = -1
        self._queue_ends = deque()        # per accepted entry: the cycle of its last SDRAM command
        self._responses = deque()         # (readdatavalid cycle, word), in cycle order

    @property
    def word_bytes(self):
        return self.port_bits // 8

    @property
    def beats_per_word(self):
        return self.port_bits // self.timing.data_bits

    # ---- the Avalon side -------------------------------------------------------------------------------

    def waitrequest(self, cycle):
        """True while the controller's queue is full on ``cycle`` (entries whose last command is still to come)."""
        self._advance(cycle)
        return len(self._queue_ends) >= self.timing.queue_depth

    def accept_read(self, cycle, address, burstcount):
        """A read burst accepted on ``cycle``: ``burstcount`` words from byte ``address``.  Returns the
        ``readdatavalid`` cycles of its words."""
        self._check_request(cycle, address, burstcount)
        beat = self.timing.beat_bytes
        valid_cycles = []
        earliest = cycle + self.timing.command_latency
        for word in range(burstcount):
            word_address = address + word * self.word_bytes
            for part in range(self.beats_per_word):
                command = self._column_command(word_address + part * beat, earliest, write=False)
                earliest = command + 1
            data_valid = command + self.timing.cas_latency + self.timing.read_return_cycles
            if self.keep_read_data:
                data = int.from_bytes(self.memory[word_address:word_address + self.word_bytes].tobytes(), "little")
                self._responses.append((data_valid, data))
            valid_cycles.append(data_valid)
        self._queue_ends.append(command)
        return valid_cycles

    def accept_write(self, cycle, address, data, byteenable=None):
        """One write word accepted on ``cycle`` at byte ``address`` (``byteenable``: bit ``b`` enables byte ``b``,
        all by default).  Returns the cycle of its last SDRAM WRITE command."""
        self._check_request(cycle, address, 1)
        if byteenable is None:
            byteenable = (1 << self.word_bytes) - 1
        earliest = cycle + self.timing.command_latency
        for part in range(self.beats_per_word):
            command = self._column_command(address + part * self.timing.beat_bytes, earliest, write=True)
            earliest = command + 1
        raw = int(data).to_bytes(self.word_bytes, "little")
        for byte in range(self.word_bytes):
            if byteenable >> byte & 1:
                self.memory[address + byte] = raw[byte]
        self._queue_ends.append(command)
        return command

    def read_response(self, cycle):
        """The word (int) whose ``readdatavalid`` is on ``cycle``, or None.  Ask on every cycle a read is pending."""
        self._advance(cycle)
        if self._responses and self._responses[0][0] < cycle:
            raise RuntimeError(f"the read word due on cycle {self._responses[0][0]} was never collected")
        if self._responses and self._responses[0][0] == cycle:
            return self._responses.popleft()[1]
        return None

    @property
    def reads_pending(self):
        return len(self._responses)

    # ---- the controller and the device -------------------------------------------------------------------

    def _advance(self, cycle):
        if cycle < self._last_cycle:
            raise ValueError(f"cycles must not go back: {cycle} after {self._last_cycle}")
        self._last_cycle = cycle
        while self._queue_ends and self._queue_ends[0] < cycle:
            self._queue_ends.popleft()

    def _check_request(self, cycle, address, burstcount):
        if self.waitrequest(cycle):
            raise RuntimeError(f"a request was accepted on cycle {cycle} while waitrequest was high")
        if not isinstance(burstcount, int) or burstcount < 1:
            raise ValueError(f"burstcount must be a positive integer, not {burstcount!r}")
        if address % self.word_bytes or not 0 <= address <= self.timing.size_bytes - burstcount * self.word_bytes:
            raise ValueError(f"address {address:#x} (burst of {burstcount}) is not a {self.word_bytes}-byte "
                             f"aligned range inside the {self.timing.size_bytes}-byte SDRAM")

    def _refresh_due_before(self, start):
        """Run every refresh due at or before ``start``; return the first cycle after them that is >= ``start``."""
        timing = self.timing
        while self._next_refresh <= start:
            begin = max(self._next_refresh, self._command_free)
            open_banks = [bank for bank in self._banks if bank.row is not None]
            if open_banks:
                begin = max([begin] + [max(bank.activated + timing.tras, bank.last_write + timing.twr)
                                       for bank in open_banks])
                begin += timing.trp
            for bank in self._banks:
                bank.row = None
            self._command_free = begin + timing.trfc
            self._next_refresh += timing.refresh_interval
            self.statistics.refreshes += 1
            start = max(start, self._command_free)
        return start

    def _column_command(self, byte_address, earliest, *, write):
        """Schedule the READ or WRITE of one beat no earlier than ``earliest``; returns its command cycle."""
        timing = self.timing
        bank_index, row, _ = timing.locate(byte_address)
        bank = self._banks[bank_index]
        start = self._refresh_due_before(max(earliest, self._command_free))
        if bank.row == row:
            self.statistics.row_hits += 1
        else:
            if bank.row is None:
                self.statistics.opens += 1
            else:
                self.statistics.row_misses += 1
                start = max(start, bank.activated + timing.tras, bank.last_write + timing.twr) + timing.trp
            bank.row, bank.activated = row, start
            start += timing.trcd
        if write:
            start = max(start, self._data_bus_read_until + 1)
            bank.last_write = start
        else:
            self._data_bus_read_until = start + timing.cas_latency
        self._command_free = start + 1
        self.statistics.beats += 1
        self.statistics.last_command_cycle = start
        return start


def sustained_read_bytes_per_cycle(timing=DE1_SOC_SDRAM, *, port_bits=32, total_bytes=1 << 20, burst_words=128):
    """Bytes per cycle the model delivers to a master that streams ``total_bytes`` sequentially in back-to-back
    read bursts of ``burst_words`` words (the best case: row misses only at page ends, refreshes)."""
    model = SdramModel(timing=timing, port_bits=port_bits, keep_read_data=False)
    word_bytes = port_bits // 8
    cycle, address, last = 0, 0, 0
    while address < total_bytes:
        while model.waitrequest(cycle):
            cycle += 1
        words = min(burst_words, (total_bytes - address) // word_bytes)
        last = model.accept_read(cycle, address, words)[-1]
        address += words * word_bytes
        cycle += 1
    return total_bytes / (last + 1)
