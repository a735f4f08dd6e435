"""The host's access to a memory (:class:`~hw.shared.run_control.HostMemorySignature`) as a port of a
:class:`~hw.shared.dual_port_buffer.DualPortBuffer` (:class:`~hw.shared.dual_port_buffer.BufferPortSignature`)."""

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.host_port import ADDRESS_BITS
from nnaccel.hw.shared.run_control import HostMemorySignature

__all__ = ["HostMemoryBridge"]


class HostMemoryBridge(wiring.Component):
    """Turns the host control block's memory port into a RAM port.

    Parameters: ``buffer`` (a :class:`BufferPortSignature`) and ``host`` (a :class:`HostMemorySignature` of the same
    width, whose address reaches the buffer's depth; by default the host control block's: the buffer's width and
    :data:`~hw.shared.host_port.ADDRESS_BITS`).

    Ports: ``host`` In(host): ``address``, ``write_data``, ``write``, ``read`` in, ``read_data`` out;
    ``buffer`` Out(buffer): ``address`` (the host's), ``write_data``, ``read_enable`` = ``read``, every
    ``write_enable`` bit = ``write`` (all elements of a word), ``read_data`` in.  An address past the buffer's
    depth reads and writes nothing (a read leaves ``read_data`` at the last word read).

    Timing: combinational both ways (the RAM's one-cycle read is the host's).
    FPGA: one comparator of the address against the depth, in ALMs.
    """

    def __init__(self, *, buffer, host=None):
        if host is None and isinstance(buffer, BufferPortSignature):
            host = HostMemorySignature(width=buffer.width, address_bits=ADDRESS_BITS)
        if not isinstance(host, HostMemorySignature):
            raise TypeError(f"host must be a HostMemorySignature, not {host!r}")
        if not isinstance(buffer, BufferPortSignature):
            raise TypeError(f"buffer must be a BufferPortSignature, not {buffer!r}")
        if buffer.width != host.width:
            raise ValueError(f"the buffer's {buffer.width}-bit word is not the host's {host.width} bits")
        if buffer.depth > 1 << host.address_bits:
            raise ValueError(f"the host's {host.address_bits}-bit address does not reach the buffer's "
                             f"{buffer.depth} words")
        self._depth = buffer.depth
        super().__init__({"host": In(host), "buffer": Out(buffer)})

    def elaborate(self, platform):
        m = Module()
        host, buffer = self.host, self.buffer
        in_range = host.address < self._depth
        m.d.comb += [buffer.address.eq(host.address), buffer.write_data.eq(host.write_data),
                     buffer.read_enable.eq(host.read & in_range),
                     buffer.write_enable.eq(Mux(host.write & in_range, -1, 0)),
                     host.read_data.eq(buffer.read_data)]
        return m
