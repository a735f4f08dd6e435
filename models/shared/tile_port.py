"""Cycle model of :class:`hw.shared.tile_port.TilePort` on the SDRAM model: the cycle every load and store ends.

The hardware's rules (:class:`hw.shared.avalon_master.AvalonBurstMaster` behind the tile port), one command at a
time, from the cycle ``p`` the command is taken:

* the master decides a burst of ``min(max_burst, words left)`` on a cycle ``d`` (the first is ``p + 1``) and
  drives it from ``d + 1``;
* a read burst is requested only with room in the read FIFO: the words of earlier bursts not yet out of the
  FIFO, plus the burst, at most ``fifo_depth``.  A word arriving on cycle ``t`` (``readdatavalid``) counts until
  cycle ``t + 2``, when the tile port takes it (the FIFO's two cycles of latency), so on cycle ``d`` the words
  still counted are those decided before ``d`` minus those arrived by ``d - 3``;
* a read request is accepted on the first cycle from ``d + 1`` without ``waitrequest``; the next decision is on
  the cycle after it;
* a write burst offers a bus word on every cycle from ``d + 1`` (the tile port's data is always ready); each is
  accepted on a cycle without ``waitrequest``; the next decision is on the cycle after the burst's last word;
* a load ends 2 cycles after its last word arrived, a store on the cycle its last word is accepted; the next
  command can be taken on the following cycle.

Every request goes to one :class:`models.shared.sdram.SdramModel` in order, so a sequence of commands is timed
exactly as the hardware sees it, SDRAM refreshes, row misses and queue stalls included.
"""

from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, SdramModel

__all__ = ["TilePortModel", "READ_FIFO_LATENCY"]

READ_FIFO_LATENCY = 2        # readdatavalid on cycle t -> the word leaves the read FIFO on t + 2


class TilePortModel:
    """The tile port and the SDRAM from cycle 0 (the first cycle after reset, as in the testbench's slave)."""

    def __init__(self, *, timing=DE1_SOC_SDRAM, port_bits=32, max_burst=128, fifo_depth=256, sdram=None):
        # ``sdram``: the memory's model where it is not a plain SdramModel of ``timing`` (a RandomDelaySdram)
        self.sdram = SdramModel(timing=timing, port_bits=port_bits, keep_read_data=False) if sdram is None else sdram
        self.max_burst, self.fifo_depth = max_burst, fifo_depth
        self.word_bytes = port_bits // 8
        self.bytes_read = self.bytes_written = 0

    def _accept(self, cycle):
        while self.sdram.waitrequest(cycle):
            cycle += 1
        return cycle

    def _bursts(self, address, beats):
        while beats:
            count = min(beats, self.max_burst)
            yield address, count
            address, beats = address + count * self.word_bytes, beats - count

    def load(self, taken, address, beats):
        """A load of ``beats`` bus words from byte ``address`` taken on cycle ``taken``: its ``finished`` cycle."""
        decide, decided, arrivals = taken + 1, 0, []
        for burst_address, count in self._bursts(address, beats):
            excess = decided + count - self.fifo_depth          # words that must have left the FIFO first
            if excess > 0:
                decide = max(decide, arrivals[excess - 1] + READ_FIFO_LATENCY + 1)
            accepted = self._accept(decide + 1)
            arrivals += self.sdram.accept_read(accepted, burst_address, count)
            decided += count
            decide = accepted + 1
        self.bytes_read += beats * self.word_bytes
        return arrivals[-1] + READ_FIFO_LATENCY

    def store(self, taken, address, beats):
        """A store of ``beats`` bus words to byte ``address`` taken on cycle ``taken``: its ``finished`` cycle."""
        decide, cycle = taken + 1, taken
        for burst_address, count in self._bursts(address, beats):
            cycle = decide
            for word in range(count):
                cycle = self._accept(cycle + 1)
                self.sdram.accept_write(cycle, burst_address + word * self.word_bytes, 0)
            decide = cycle + 1
        self.bytes_written += beats * self.word_bytes
        return cycle
