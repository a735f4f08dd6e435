"""The DQN accelerator's two activation RAMs: the running layer reads one and writes one, the host has them
while no run does."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.interfaces import ActivationSelectSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.host_memory_bridge import HostMemoryBridge
from nnaccel.hw.shared.host_port import ADDRESS_BITS
from nnaccel.hw.shared.run_control import HostMemorySignature

__all__ = ["ActivationBuffers"]


class ActivationBuffers(DqnBlock):
    """Two ``activation_depth`` x ``row_elements``-element true dual-port RAMs (ping-pong between layers) and the
    steering of their ports.

    Ports
    -----
    select : In(:class:`~hw.dqn.interfaces.ActivationSelectSignature`)
        ``busy`` (a run owns the RAMs), ``read_ram`` (the RAM the layer reads this cycle), ``in_ram`` (the RAM of
        the read data: ``read_ram`` of the cycle before), ``out_ram`` (the RAM it writes).
    reads0, reads1 : In(BufferPortSignature)
        The layer's reads: port 0 and port 1 of RAM ``read_ram`` while ``busy``; ``read_data`` is RAM ``in_ram``'s
        port (a pass's first read may come on its first cycle, while the previous pass's last read data, one
        cycle old, is still taken from its RAM).
    writes0, writes1 : In(BufferPortSignature)
        The layer's writes: port 0 and port 1 of RAM ``out_ram`` while ``busy``.  Port 0 belongs to
        ``writes0`` while it writes (before ``reads0``) and port 1 to ``writes1`` while it writes (before
        ``reads1``): a reduction layer reads and writes one RAM, reading on port 1 only, and writes on port 1 only
        after its last read; a pass handing its last group off writes it on port 1 only while the next pass reads
        that RAM on port 0.
    host0, host1 : In(HostMemorySignature)
        The host's access to RAM 0 / 1 (through a :class:`~hw.shared.host_memory_bridge.HostMemoryBridge`) on its
        port 0 when the layer neither reads nor writes that RAM (the host control block only accesses memories
        while no run is busy).

    Timing: the RAMs' (:class:`~hw.shared.dual_port_buffer.DualPortBuffer`: one-cycle reads, the data holding
    until the next read of that port); the steering is combinational.
    FPGA: two RAMs of ``activation_word_bits`` x ``activation_depth`` (M20K on Stratix V: 2 x 135 blocks for the
    thesis' 2,688 x 1,024; the second write port costs no RAM: both ports of a true dual-port block) and a 3:1
    mux per port-0 input and per port-1 input (a 2:1 before the writer used port 1) and an OR of each write
    port's enables, in ALMs.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        self._port = port = BufferPortSignature(width=config.activation_word_bits, depth=config.activation_depth,
                                                granularity=config.fmt.width)
        self._host = host = HostMemorySignature(width=config.activation_word_bits, address_bits=ADDRESS_BITS)
        super().__init__(config, {"select": In(ActivationSelectSignature()), "reads0": In(port), "reads1": In(port),
                          "writes0": In(port), "writes1": In(port), "host0": In(host), "host1": In(host)})

    def elaborate(self, platform):
        m = Module()
        config, select = self._config, self.select
        for index, host in enumerate((self.host0, self.host1)):
            m.submodules[f"ram{index}"] = ram = DualPortBuffer(
                width=config.activation_word_bits, depth=config.activation_depth, granularity=config.fmt.width)
            m.submodules[f"host_bridge{index}"] = bridge = HostMemoryBridge(host=self._host, buffer=self._port)
            wiring.connect(m, wiring.flipped(host), bridge.host)
            reading = select.busy & (select.read_ram == index)
            writing = select.busy & (select.out_ram == index)
            with m.If(writing & self.writes0.write_enable.any()):
                _drive(m, ram.a, self.writes0)
            with m.Elif(reading):
                _drive(m, ram.a, self.reads0)
            with m.Else():
                _drive(m, ram.a, bridge.buffer)
            with m.If(writing & self.writes1.write_enable.any()):
                _drive(m, ram.b, self.writes1)
            with m.Elif(reading):
                _drive(m, ram.b, self.reads1)
            m.d.comb += bridge.buffer.read_data.eq(ram.a.read_data)
            with m.If(select.in_ram == index):
                m.d.comb += [self.reads0.read_data.eq(ram.a.read_data), self.reads1.read_data.eq(ram.b.read_data)]
            with m.If(select.out_ram == index):
                m.d.comb += [self.writes0.read_data.eq(ram.a.read_data), self.writes1.read_data.eq(ram.b.read_data)]
        return m


def _drive(m, ram_port, user):
    """Give the RAM port ``ram_port`` to ``user`` (a flipped BufferPortSignature interface) this cycle."""
    m.d.comb += [ram_port.address.eq(user.address), ram_port.read_enable.eq(user.read_enable),
                 ram_port.write_enable.eq(user.write_enable), ram_port.write_data.eq(user.write_data)]
