# amaranth: UnusedElaboratable=no
"""hw.shared.host_buffer_port.HostBufferPort on Amaranth's simulator in front of a DualPortBuffer: host writes of
whole words, reads one cycle later, nothing at an address past the RAM; parameter check."""

import pytest

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.host_buffer_port import HostBufferPort
from tests.shared.connected_blocks import ConnectedBlocks, drive, simulate


def test_host_writes_and_reads_words():
    dut = ConnectedBlocks({"bridge": HostBufferPort(port=BufferPortSignature(width=24, depth=8, granularity=8)),
                           "ram": DualPortBuffer(width=24, depth=8, granularity=8)},
                          lambda blocks: [(blocks["bridge"].buffer, blocks["ram"].a)])
    host = dut.bridge.host
    seen = []

    async def testbench(ctx):
        for address, write, read, write_data in ((5, 1, 0, 0xABCDEF),
                                                 (13, 1, 0, 0x111111),     # past the 8 words: no alias of word 5
                                                 (5, 0, 1, 0),
                                                 (13, 0, 1, 0)):           # no read: the last word read holds
            drive(ctx, ((host.address, address), (host.write, write), (host.read, read),
                        (host.write_data, write_data)))
            await ctx.tick()
            seen.append(ctx.get(host.read_data))

    simulate(dut, testbench)
    assert seen[2:] == [0xABCDEF, 0xABCDEF]


def test_parameter_error():
    with pytest.raises(TypeError, match="^port must be a BufferPortSignature, not 24$"):
        HostBufferPort(port=24)
