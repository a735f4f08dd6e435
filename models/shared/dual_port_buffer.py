"""Golden model of ``hw.shared.dual_port_buffer.DualPortBuffer``: contents, read latency and read-during-write, per cycle."""

from dataclasses import dataclass

from nnaccel.hw.shared.dual_port_buffer import pack_words

__all__ = ["PortRequest", "DualPortBufferModel"]


@dataclass(frozen=True)
class PortRequest:
    """What one port is asked to do on one cycle (the values on its inputs)."""

    address: int = 0
    read_enable: bool = False
    write_enable: int = 0       # one bit, or one bit per element with a granularity (element 0 at the LSB)
    write_data: int = 0


class DualPortBufferModel:
    """Cycle model of a :class:`~hw.shared.dual_port_buffer.DualPortBuffer` with the same ``width``, ``depth``, ``init``
    and ``granularity``.

    :meth:`step` takes one cycle's two requests and returns the two ``read_data`` values visible on the next
    cycle: a read shows the word as it was before this cycle's writes ("old data"), except that a port writing
    and reading at once shows its own new word; a port that does not read keeps showing its previous word.  With a
    granularity, a write replaces only the elements whose ``write_enable`` bit is set.
    """

    def __init__(self, *, width, depth, init=None, granularity=None):
        self.width = width
        self.depth = depth
        self.granularity = granularity
        self.words = [0] * depth if init is None else pack_words(init, width=width, depth=depth)
        self.read_data = [0, 0]

    def _write_mask(self, write_enable):
        if self.granularity is None:
            return (1 << self.width) - 1 if write_enable else 0
        element = (1 << self.granularity) - 1
        return sum(element << (index * self.granularity)
                   for index in range(self.width // self.granularity) if write_enable >> index & 1)

    def step(self, request_a, request_b):
        requests = (request_a, request_b)
        for request in requests:
            if not 0 <= request.address < self.depth:
                raise ValueError(f"address {request.address} is outside 0..{self.depth - 1}")
        if request_a.write_enable and request_b.write_enable and request_a.address == request_b.address:
            raise ValueError(f"both ports write address {request_a.address} on one cycle: undefined")
        before = self.words.copy()
        for request in requests:
            mask = self._write_mask(request.write_enable)
            word = self.words[request.address]
            self.words[request.address] = (word & ~mask) | (request.write_data & mask)
        for port, request in enumerate(requests):
            if request.read_enable:
                own_write = request.write_enable
                self.read_data[port] = (self.words if own_write else before)[request.address]
        return tuple(self.read_data)
