# amaranth: UnusedElaboratable=no
"""hw.shared.host_buffer_port.HostBufferPort on Amaranth's simulator in front of a DualPortBuffer: host writes of
whole words, reads one cycle later, nothing at an address past the RAM; parameter check."""

import pytest
from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.host_buffer_port import HostBufferPort


class HostRam(Elaboratable):
    def __init__(self):
        self.bridge = HostBufferPort(port=BufferPortSignature(width=24, depth=8, granularity=8))
        self.ram = DualPortBuffer(width=24, depth=8, granularity=8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge, m.submodules.ram = self.bridge, self.ram
        wiring.connect(m, self.bridge.buffer, self.ram.a)
        return m


def test_host_writes_and_reads_words():
    dut = HostRam()
    host = dut.bridge.host
    seen = []

    async def testbench(ctx):
        async def access(address, *, write=0, read=0, write_data=0):
            for signal, value in ((host.address, address), (host.write, write), (host.read, read),
                                  (host.write_data, write_data)):
                ctx.set(signal, value)
            await ctx.tick()
            seen.append(ctx.get(host.read_data))

        await access(5, write=1, write_data=0xABCDEF)
        await access(13, write=1, write_data=0x111111)      # past the 8 words: no alias of word 5
        await access(5, read=1)
        await access(13, read=1)                             # no read: the word of the last one holds

    simulator = Simulator(dut)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.run()
    assert seen[2:] == [0xABCDEF, 0xABCDEF]


def test_parameter_error():
    with pytest.raises(TypeError, match="^port must be a BufferPortSignature, not 24$"):
        HostBufferPort(port=24)
