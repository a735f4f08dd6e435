# amaranth: UnusedElaboratable=no
"""hw.shared.host_memory_bridge.HostMemoryBridge on Amaranth's simulator, in front of a DualPortBuffer: the host's
writes store whole words, its reads return them a cycle later, an address past the depth neither writes nor
reads; the checks on its parameters."""

import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.sim import Simulator

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.host_memory_bridge import HostMemoryBridge
from nnaccel.hw.shared.run_control import HostMemorySignature

HOST = HostMemorySignature(width=16, address_bits=6)
BUFFER = BufferPortSignature(width=16, depth=8, granularity=4)


def test_writes_and_reads_through_the_bridge():
    m = Module()
    m.submodules.bridge = bridge = HostMemoryBridge(host=HOST, buffer=BUFFER)
    m.submodules.ram = ram = DualPortBuffer(width=16, depth=8, granularity=4)
    wiring.connect(m, bridge.buffer, ram.a)
    host, reads = bridge.host, []
    simulator = Simulator(m)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        ctx.set(host.write, 1)
        for address, value in ((3, 0xBEEF), (8 + 3, 0x1234), (7, 0xCAFE)):   # 11 is past the depth: ignored
            ctx.set(host.address, address)
            ctx.set(host.write_data, value)
            await ctx.tick()
        ctx.set(host.write, 0)
        ctx.set(host.read, 1)
        for address in (3, 7, 8 + 7):                                       # 15: no read, the data holds
            ctx.set(host.address, address)
            await ctx.tick()
            reads.append(ctx.get(host.read_data))

    simulator.add_testbench(testbench)
    simulator.run()
    assert reads == [0xBEEF, 0xCAFE, 0xCAFE]


@pytest.mark.parametrize("arguments, error, message", [
    ({"host": BUFFER}, TypeError, "host must be a HostMemorySignature, not BufferPortSignature"),
    ({"buffer": HOST}, TypeError, "buffer must be a BufferPortSignature, not HostMemorySignature"),
    ({"buffer": BufferPortSignature(width=8, depth=8)}, ValueError,
     "the buffer's 8-bit word is not the host's 16 bits"),
    ({"buffer": BufferPortSignature(width=16, depth=65)}, ValueError,
     "the host's 6-bit address does not reach the buffer's 65 words"),
])
def test_rejects_bad_parameters(arguments, error, message):
    with pytest.raises(error, match=f"^{message}"):
        HostMemoryBridge(**({"host": HOST, "buffer": BUFFER} | arguments))


def test_the_default_host_side_is_the_host_control_blocks():
    """Without ``host``, the bridge takes the host control block's memory port for the buffer's width."""
    from nnaccel.hw.shared.host_port import ADDRESS_BITS
    bridge = HostMemoryBridge(buffer=BUFFER)
    assert bridge.signature.members["host"].signature == HostMemorySignature(width=16, address_bits=ADDRESS_BITS).flip()
