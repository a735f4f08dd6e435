"""The DE1-SoC SDRAM as an Avalon-MM slave in a cocotb testbench: :class:`models.shared.sdram.SdramModel` on the
DUT's master port (``{prefix}address``, ``burstcount``, ``read``, ``write``, ``writedata``, ``byteenable`` from the
DUT; ``waitrequest``, ``readdata``, ``readdatavalid`` to it; ``prefix`` is ``avalon__`` for a component whose
``avalon`` member is an :class:`hw.shared.avalon_master.AvalonMMSignature`).

Cycle convention (as :mod:`testbench.shared.stream_tb`): cycle 0 is the first cycle after reset.  At the start of
cycle ``c`` the slave drives ``waitrequest`` (the controller's queue is full) and the read word whose
``readdatavalid`` falls on ``c``; after the DUT's logic settled (``ReadOnly``) it samples the request, and a
``read`` or ``write`` with ``waitrequest`` low is accepted on cycle ``c``.  A write burst's address and
``burstcount`` are taken from its first beat; later beats go to the following words.  Protocol errors
(``read`` and ``write`` together, a burst count of 0 or above ``max_burst``, a request that changes or is
withdrawn while ``waitrequest`` holds it, a read inside a write burst) fail the test.

``cocotbext-avalon`` (PyPI) was considered: its memory slave has a fixed read latency and one beat per cycle, with
waitrequest only from a pause pattern, so it cannot show row misses, refresh or the 16-bit width conversion; its
timing hooks are private methods.  This slave keeps the timing in one tested model that the compiler's cycle
formulas also use.
"""

import cocotb
from cocotb.triggers import ReadOnly

from nnaccel.models.shared.sdram import SdramModel

__all__ = ["AvalonSdramSlave"]


class AvalonSdramSlave:
    """Serve the DUT's Avalon-MM master port from ``model`` (an :class:`SdramModel`) on every cycle.

    ``requests`` records every accepted request as ``(cycle, "read" | "write", address, burstcount)`` (a write
    burst once, on its first beat); ``read_beats`` counts the words returned.
    """

    def __init__(self, dut, model, *, prefix="avalon__", max_burst=128):
        if not isinstance(model, SdramModel):
            raise TypeError(f"model must be an SdramModel, not {model!r}")
        self.model = model
        self.max_burst = max_burst
        signal = {name: getattr(dut, prefix + name) for name in
                  ("address", "burstcount", "read", "write", "writedata", "byteenable", "waitrequest", "readdata",
                   "readdatavalid")}
        self._signal = signal
        self.requests = []
        self.read_beats = 0
        self._write_burst = None          # [next word address, words left] of the write burst in progress
        self._held = None                 # the request seen last cycle under waitrequest
        signal["waitrequest"].value = 1
        signal["readdatavalid"].value = 0
        signal["readdata"].value = 0

    def start(self, next_cycle):
        """Run the slave from cycle 0 (call right after reset) until the test ends."""
        return cocotb.start_soon(self._serve(next_cycle))

    async def _serve(self, next_cycle):
        signal, model = self._signal, self.model
        cycle = 0
        while True:
            waitrequest = model.waitrequest(cycle)
            signal["waitrequest"].value = int(waitrequest)
            word = model.read_response(cycle)
            signal["readdatavalid"].value = int(word is not None)
            if word is not None:
                signal["readdata"].value = word
                self.read_beats += 1
            await ReadOnly()
            self._sample(cycle, waitrequest)
            await next_cycle()
            cycle += 1

    def _sample(self, cycle, waitrequest):
        signal = self._signal
        read, write = int(signal["read"].value), int(signal["write"].value)
        if read and write:
            raise AssertionError(f"cycle {cycle}: read and write are both high")
        if not (read or write):
            if self._held is not None:
                raise AssertionError(f"cycle {cycle}: the request {self._held} was withdrawn under waitrequest")
            return
        written = (int(signal["writedata"].value), int(signal["byteenable"].value)) if write else None
        request = (read, int(signal["address"].value), int(signal["burstcount"].value), written)
        if self._held is not None and request != self._held:
            raise AssertionError(f"cycle {cycle}: the request {self._held} changed to {request} while "
                                 f"waitrequest held it")
        self._held = request if waitrequest else None
        if waitrequest:
            return
        _, address, burstcount, _ = request
        if read:
            if self._write_burst is not None:
                raise AssertionError(f"cycle {cycle}: a read request inside a write burst")
            self._check_burstcount(cycle, burstcount)
            self.model.accept_read(cycle, address, burstcount)
            self.requests.append((cycle, "read", address, burstcount))
            return
        if self._write_burst is None:
            self._check_burstcount(cycle, burstcount)
            self._write_burst = [address, burstcount]
            self.requests.append((cycle, "write", address, burstcount))
        word_address = self._write_burst[0]
        self.model.accept_write(cycle, word_address, *written)
        self._write_burst[0] += self.model.word_bytes
        self._write_burst[1] -= 1
        if self._write_burst[1] == 0:
            self._write_burst = None

    def _check_burstcount(self, cycle, burstcount):
        if not 1 <= burstcount <= self.max_burst:
            raise AssertionError(f"cycle {cycle}: burstcount {burstcount} outside 1..{self.max_burst}")
