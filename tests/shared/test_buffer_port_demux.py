# amaranth: UnusedElaboratable=no
"""hw.shared.buffer_port_demux.BufferPortDemux on Amaranth's simulator in front of two DualPortBuffers of different
widths: writes go to the selected RAM only (a narrower one takes the low bits, nothing past its depth), read data
comes from the RAM read last; parameter checks."""

import pytest

from nnaccel.hw.shared.buffer_port_demux import BufferPortDemux
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from tests.shared.connected_blocks import ConnectedBlocks, drive, simulate

INITIATOR = BufferPortSignature(width=32, depth=16, granularity=8)
NARROW = BufferPortSignature(width=16, depth=8, granularity=8)


def test_requests_go_to_the_selected_ram():
    dut = ConnectedBlocks(
        {"demux": BufferPortDemux(initiator=INITIATOR, targets={"narrow": NARROW, "wide": INITIATOR}),
         "narrow": DualPortBuffer(width=16, depth=8, granularity=8),
         "wide": DualPortBuffer(width=32, depth=16, granularity=8)},
        lambda blocks: [(blocks["demux"].targets.narrow, blocks["narrow"].a),
                        (blocks["demux"].targets.wide, blocks["wide"].a)])
    port = dut.demux.initiator
    seen = []

    async def testbench(ctx):
        async def access(select, address, *, read=0, write_enable=0, write_data=0):
            drive(ctx, ((dut.demux.select, select), (port.address, address), (port.read_enable, read),
                        (port.write_enable, write_enable), (port.write_data, write_data)))
            await ctx.tick()
            seen.append(ctx.get(port.read_data))

        await access(0, 2, write_enable=0b1111, write_data=0x12345678)     # narrow word 2 = 0x5678
        await access(1, 2, write_enable=0b0011, write_data=0xCAFEF00D)     # wide word 2 = 0x0000F00D
        await access(0, 9, write_enable=0b1111, write_data=0xFFFFFFFF)     # past the narrow RAM: no write to word 1
        await access(0, 2, read=1)
        await access(1, 2, read=1)
        await access(0, 1)                                                 # no read: the wide word holds
        await access(0, 1, read=1)

    simulate(dut, testbench)
    assert seen[3:] == [0x5678, 0xF00D, 0xF00D, 0]


def test_parameter_errors():
    with pytest.raises(TypeError, match="^initiator must be a BufferPortSignature, not 32$"):
        BufferPortDemux(initiator=32, targets={"narrow": NARROW})
    with pytest.raises(TypeError, match="^targets must be a non-empty dict"):
        BufferPortDemux(initiator=INITIATOR, targets={})
    with pytest.raises(ValueError, match="^targets\\['wide'\\] .* must not be wider or deeper than the initiator"):
        BufferPortDemux(initiator=NARROW, targets={"wide": INITIATOR})
