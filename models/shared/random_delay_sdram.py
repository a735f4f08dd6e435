"""An SDRAM whose Avalon port also stalls and answers late at random, reproducibly: the memory a cycle formula is
checked against where it must hold for any delays, not only the SDRAM's own.

:class:`RandomDelaySdram` is :class:`models.shared.sdram.SdramModel` plus, from a seed, ``waitrequest`` on about
``stall_percent`` of the cycles (a function of the cycle alone) and each read burst's words ``0 .. max_delay``
cycles later (a function of the burst's number; the words stay in order, one a cycle at most).  The same seed gives
the same delays to the testbench's slave (:class:`testbench.shared.avalon_sdram.AvalonSdramSlave`) and to a cycle
formula's :class:`models.shared.tile_port.TilePortModel`, so the formula can be exact.
"""

from dataclasses import dataclass

from nnaccel.models.shared.sdram import SdramModel

__all__ = ["RandomDelaySdram"]

_MIX = 0x9E3779B97F4A7C15          # a 64-bit odd constant: the cycle and burst numbers spread over the hash


def _draw(seed, index, stream):
    """A reproducible pseudo-random 32-bit number for ``index`` of ``stream`` under ``seed``."""
    value = (int(seed) * _MIX + int(index) * 0xBF58476D1CE4E5B9 + stream * 0x94D049BB133111EB) & (1 << 64) - 1
    value ^= value >> 31
    value = (value * 0xD6E8FEB86659FD93) & (1 << 64) - 1
    return (value ^ value >> 32) & 0xFFFFFFFF


@dataclass
class RandomDelaySdram(SdramModel):
    """:class:`SdramModel` with random ``waitrequest`` cycles and late read bursts (see the module docstring)."""

    seed: int = 0
    stall_percent: int = 20
    max_delay: int = 40

    def __post_init__(self):
        super().__post_init__()
        self._bursts = 0
        self._last_valid = -1

    def waitrequest(self, cycle):
        queue_full = super().waitrequest(cycle)
        return queue_full or _draw(self.seed, cycle, 0) % 100 < self.stall_percent

    def accept_read(self, cycle, address, burstcount):
        delay = _draw(self.seed, self._bursts, 1) % (self.max_delay + 1)
        self._bursts += 1
        valid = super().accept_read(cycle, address, burstcount)
        late = []
        for when in valid:
            self._last_valid = max(when + delay, self._last_valid + 1)
            late.append(self._last_valid)
        if self.keep_read_data:                 # the words just queued, in order, at their late cycles
            queued = list(self._responses)[-burstcount:]
            for _ in range(burstcount):
                self._responses.pop()
            self._responses.extend((when, word) for when, (_, word) in zip(late, queued))
        return late
