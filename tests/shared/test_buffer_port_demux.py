# amaranth: UnusedElaboratable=no
"""hw.shared.buffer_port_demux.BufferPortDemux on Amaranth's simulator in front of two DualPortBuffers of different
widths: writes go to the selected RAM only (a narrower one takes the low bits, nothing past its depth), read data
comes from the RAM read last; parameter checks."""

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from nnaccel.hw.shared.buffer_port_demux import BufferPortDemux
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer

INITIATOR = BufferPortSignature(width=32, depth=16, granularity=8)
NARROW = BufferPortSignature(width=16, depth=8, granularity=8)


class DemuxedRams(Elaboratable):
    def __init__(self):
        self.demux = BufferPortDemux(initiator=INITIATOR, targets={"narrow": NARROW, "wide": INITIATOR})
        self.narrow = DualPortBuffer(width=16, depth=8, granularity=8)
        self.wide = DualPortBuffer(width=32, depth=16, granularity=8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.demux, m.submodules.narrow, m.submodules.wide = self.demux, self.narrow, self.wide
        wiring.connect(m, self.demux.targets.narrow, self.narrow.a)
        wiring.connect(m, self.demux.targets.wide, self.wide.a)
        return m


def test_requests_go_to_the_selected_ram():
    dut = DemuxedRams()
    port = dut.demux.initiator
    seen = []

    async def testbench(ctx):
        async def access(select, address, *, read=0, write_enable=0, write_data=0):
            for signal, value in ((dut.demux.select, select), (port.address, address), (port.read_enable, read),
                                  (port.write_enable, write_enable), (port.write_data, write_data)):
                ctx.set(signal, value)
            await ctx.tick()
            seen.append(ctx.get(port.read_data))

        await access(0, 2, write_enable=0b1111, write_data=0x12345678)     # narrow word 2 = 0x5678
        await access(1, 2, write_enable=0b0011, write_data=0xCAFEF00D)     # wide word 2 = 0x0000F00D
        await access(0, 9, write_enable=0b1111, write_data=0xFFFFFFFF)     # past the narrow RAM: no write to word 1
        await access(0, 2, read=1)
        await access(1, 2, read=1)
        await access(0, 1)                                                 # no read: the wide word holds
        await access(0, 1, read=1)

    simulator = Simulator(dut)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.run()
    assert seen[3:] == [0x5678, 0xF00D, 0xF00D, 0]


def test_parameter_errors():
    with pytest.raises(TypeError, match="^initiator must be a BufferPortSignature, not 32$"):
        BufferPortDemux(initiator=32, targets={"narrow": NARROW})
    with pytest.raises(TypeError, match="^targets must be a non-empty dict"):
        BufferPortDemux(initiator=INITIATOR, targets={})
    with pytest.raises(ValueError, match="^targets\\['wide'\\] .* must not be wider or deeper than the initiator"):
        BufferPortDemux(initiator=NARROW, targets={"wide": INITIATOR})
