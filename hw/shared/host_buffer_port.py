"""The host's access to a RAM port: :class:`HostMemorySignature` (from the host control block) as a
:class:`BufferPortSignature` (to a RAM or a :class:`~hw.shared.buffer_port_mux.BufferPortMux`)."""

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.host_port import ADDRESS_BITS
from nnaccel.hw.shared.run_control import HostMemorySignature

__all__ = ["HostBufferPort"]


class HostBufferPort(wiring.Component):
    """Adapts one host memory port to a RAM port of ``port`` (a :class:`BufferPortSignature`; read-only property).

    Ports
    -----
    host : In(HostMemorySignature(width=port.width, address_bits=ADDRESS_BITS))
        From :class:`~hw.shared.host_control.HostControl` (``memory.<name>``).
    buffer : Out(port)
        ``address`` = the host's word address (its low bits), ``write_enable`` all ones on a host write (whole
        words), ``read_enable`` on a host read; the RAM's ``read_data`` goes back to the host.  A host address
        past the RAM's ``depth`` words reads and writes nothing (no alias of a lower word).

    Timing: combinational; the host sees the RAM's one-cycle read latency, which is what the host control block
    expects.

    FPGA mapping: the address range check (a comparator, or a NOR of the high bits for a power-of-two depth) and
    the enables in ALMs.
    """

    def __init__(self, *, port):
        if not isinstance(port, BufferPortSignature):
            raise TypeError(f"port must be a BufferPortSignature, not {port!r}")
        self._port = port
        super().__init__({"host": In(HostMemorySignature(width=port.width, address_bits=ADDRESS_BITS)),
                          "buffer": Out(port)})

    @property
    def port(self):
        return self._port

    def elaborate(self, platform):
        m = Module()
        host, buffer = self.host, self.buffer
        inside = host.address < self._port.depth
        m.d.comb += [buffer.address.eq(host.address[:len(buffer.address)]), buffer.write_data.eq(host.write_data),
                     buffer.write_enable.eq(Mux(host.write & inside, -1, 0)), buffer.read_enable.eq(host.read & inside),
                     host.read_data.eq(buffer.read_data)]
        return m
