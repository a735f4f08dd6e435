"""One block reaching several RAMs through one port: a selectable 1-to-N demultiplexer of
:class:`BufferPortSignature`."""

from amaranth.hdl import Array, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature

__all__ = ["BufferPortDemux"]


class BufferPortDemux(wiring.Component):
    """An initiator (a tile port, an engine that reads one of two RAMs) on the ports of several RAMs; ``select``
    names the RAM a request goes to.

    Parameters (keyword-only, read-only properties)
    -----------------------------------------------
    initiator : BufferPortSignature
        The initiator's port.
    targets : dict of name -> BufferPortSignature
        The RAMs' ports, in ``select`` order.  Each has the initiator's granularity, no wider a word and no wider
        an address: a narrower RAM takes the low bits of ``address``, ``write_data`` and ``write_enable``; a request
        past a RAM's ``depth`` words reaches no RAM.

    Ports
    -----
    select : In(range(len(targets)))
        The RAM this cycle's request (``read_enable``, ``write_enable``) goes to; the other RAMs see neither.
    initiator : In(initiator)
        ``read_data`` is the word of the RAM the last read went to (zero-extended), held like a RAM's own.
    targets : Out(Signature: one member per target, named as in ``targets``)
        To the RAMs' ports.

    Timing: requests combinational; ``read_data`` follows a read by the RAM's own one cycle (a register remembers
    the RAM read last).

    FPGA mapping (Cyclone V): the enables' decoder (with the targets' address range checks), the read-data
    multiplexer and the register of the RAM read last in ALMs; address and write data fan out as wires.
    """

    def __init__(self, *, initiator, targets):
        if not isinstance(initiator, BufferPortSignature):
            raise TypeError(f"initiator must be a BufferPortSignature, not {initiator!r}")
        if not isinstance(targets, dict) or not targets:
            raise TypeError(f"targets must be a non-empty dict of names to BufferPortSignature, not {targets!r}")
        for name, target in targets.items():
            if not isinstance(target, BufferPortSignature):
                raise TypeError(f"targets[{name!r}] must be a BufferPortSignature, not {target!r}")
            if (target.granularity != initiator.granularity or target.width > initiator.width
                    or target.depth > initiator.depth):
                raise ValueError(f"targets[{name!r}] ({target!r}) must not be wider or deeper than the initiator "
                                 f"({initiator!r}) and must have its granularity")
        self._initiator, self._targets = initiator, dict(targets)
        super().__init__({"select": In(range(len(targets))), "initiator": In(initiator),
                          "targets": Out(wiring.Signature({name: Out(target) for name, target in targets.items()}))})

    @property
    def initiator_signature(self):
        return self._initiator

    @property
    def target_signatures(self):
        return dict(self._targets)

    def elaborate(self, platform):
        m = Module()
        initiator = self.initiator
        targets = [getattr(self.targets, name) for name in self._targets]
        for index, (target, signature) in enumerate(zip(targets, self._targets.values())):
            selected = (self.select == index) & (initiator.address < signature.depth)
            m.d.comb += [target.address.eq(initiator.address[:len(target.address)]),
                         target.write_data.eq(initiator.write_data[:len(target.write_data)]),
                         target.write_enable.eq(Mux(selected, initiator.write_enable[:len(target.write_enable)], 0)),
                         target.read_enable.eq(initiator.read_enable & selected)]
        read_target = Signal.like(self.select)
        with m.If(initiator.read_enable):
            m.d.sync += read_target.eq(self.select)
        m.d.comb += initiator.read_data.eq(Array(target.read_data for target in targets)[read_target])
        return m
