# amaranth: UnusedElaboratable=no
"""hw.shared.buffer_port_mux.BufferPortMux on Amaranth's simulator in front of a DualPortBuffer: only the selected
initiator writes and reads, every initiator sees the RAM's read data; parameter checks."""

import pytest

from nnaccel.hw.shared.buffer_port_mux import BufferPortMux
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from tests.shared.connected_blocks import ConnectedBlocks, drive, simulate

PORT = BufferPortSignature(width=16, depth=8, granularity=8)


def request(ctx, port, *, address=0, read=0, write_enable=0, write_data=0):
    drive(ctx, ((port.address, address), (port.read_enable, read), (port.write_enable, write_enable),
                (port.write_data, write_data)))


def test_only_the_selected_initiator_reaches_the_ram():
    dut = ConnectedBlocks({"mux": BufferPortMux(port=PORT, count=2),
                           "ram": DualPortBuffer(width=16, depth=8, granularity=8)},
                          lambda blocks: [(blocks["mux"].target, blocks["ram"].a)])
    first, second = dut.mux.initiators
    seen = []

    async def testbench(ctx):
        # Both write word 3 (the second one byte only): the selected first one's word is stored.
        request(ctx, first, address=3, write_enable=0b11, write_data=0xABCD)
        request(ctx, second, address=3, write_enable=0b01, write_data=0x1111)
        await ctx.tick()
        # The second one selected: its read of word 3 happens, the first one's write of word 4 does not.
        ctx.set(dut.mux.select, 1)
        request(ctx, first, address=4, write_enable=0b11, write_data=0x2222)
        request(ctx, second, address=3, read=1)
        await ctx.tick()
        request(ctx, first)
        request(ctx, second, address=4, read=1)
        seen.append((ctx.get(first.read_data), ctx.get(second.read_data)))
        await ctx.tick()
        request(ctx, second)
        seen.append(ctx.get(second.read_data))

    simulate(dut, testbench)
    assert seen == [(0xABCD, 0xABCD), 0]


def test_parameter_errors():
    with pytest.raises(TypeError, match="^port must be a BufferPortSignature, not 16$"):
        BufferPortMux(port=16, count=2)
    with pytest.raises(ValueError, match="^count must be a positive integer, not 0$"):
        BufferPortMux(port=PORT, count=0)
