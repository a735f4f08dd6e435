"""Several blocks taking turns on one RAM port: a selectable N-to-1 multiplexer of :class:`BufferPortSignature`."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.parameters import check_positive

__all__ = ["BufferPortMux"]


class BufferPortMux(wiring.Component):
    """``count`` initiators (an engine, the host, ...) on one port of a RAM; ``select`` names the one that drives it.

    Parameters (keyword-only, read-only properties): ``port`` (the :class:`BufferPortSignature` of the RAM's port
    and of every initiator), ``count`` (initiators, at least 1).

    Ports
    -----
    select : In(range(count))
        The initiator whose ``address``, ``read_enable``, ``write_enable`` and ``write_data`` reach the RAM this
        cycle; the others' requests are dropped (their writes do not happen, their reads do not read).
    initiators : In(port).array(count)
        The initiators' ports; every one sees the RAM's ``read_data``.
    target : Out(port)
        To the RAM's port.

    Timing: combinational (no register, no latency); the RAM's read latency is unchanged, and ``read_data`` holds
    the last word read by whichever initiator read it.

    FPGA mapping (Cyclone V): a ``count``:1 multiplexer of the address, enables and write data in ALMs (nothing for
    ``count`` = 1).
    """

    def __init__(self, *, port, count):
        if not isinstance(port, BufferPortSignature):
            raise TypeError(f"port must be a BufferPortSignature, not {port!r}")
        check_positive("count", count)
        self._port, self._count = port, count
        super().__init__({"select": In(range(count)), "initiators": In(port).array(count), "target": Out(port)})

    @property
    def port(self):
        return self._port

    @property
    def count(self):
        return self._count

    def elaborate(self, platform):
        m = Module()
        target = self.target
        with m.Switch(self.select):
            for index, initiator in enumerate(self.initiators):
                m.d.comb += initiator.read_data.eq(target.read_data)
                with m.Case(index):
                    m.d.comb += [target.address.eq(initiator.address), target.read_enable.eq(initiator.read_enable),
                                 target.write_enable.eq(initiator.write_enable),
                                 target.write_data.eq(initiator.write_data)]
        return m
