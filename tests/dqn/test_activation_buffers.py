# amaranth: UnusedElaboratable=no
"""hw.dqn.activation_buffers.ActivationBuffers on Amaranth's simulator: while busy the layer's reads go to RAM
``read_ram`` and come from RAM ``in_ram`` (both ports), its writes go to RAM ``out_ram`` (both ports), a reduction
reads one RAM on port 1 while it writes it on port 0, and on port 1 after its reads; while idle the host reads and
writes each RAM."""

import pytest
from amaranth.sim import Simulator

from nnaccel.hw.dqn.activation_buffers import ActivationBuffers
from nnaccel.hw.dqn.config import DqnConfig

CONFIG = DqnConfig(modules=2, lanes=2, row_elements=4, activation_depth=16, weight_depth=16, max_layers=2)
ALL_ELEMENTS = (1 << CONFIG.row_elements) - 1


def word(tag, address):
    """A distinct 4-element word for RAM ``tag`` at ``address``."""
    return sum(((tag << 8) | (address << 4) | element) << (32 * element) for element in range(CONFIG.row_elements))


@pytest.mark.parametrize("in_ram, out_ram", [(0, 1), (1, 0), (1, 1)])
def test_layer_reads_in_ram_and_writes_out_ram(in_ram, out_ram):
    buffers = ActivationBuffers(config=CONFIG)
    seen = {}
    simulator = Simulator(buffers)
    simulator.add_clock(1e-6)

    async def host_access(ctx, ram, address, value=None):
        host = (buffers.host0, buffers.host1)[ram]
        ctx.set(host.address, address)
        if value is None:
            ctx.set(host.read, 1)
            await ctx.tick()
            ctx.set(host.read, 0)
            return ctx.get(host.read_data)
        ctx.set(host.write_data, value)
        ctx.set(host.write, 1)
        await ctx.tick()
        ctx.set(host.write, 0)

    async def testbench(ctx):
        for ram in range(2):                                  # idle: the host fills both RAMs
            for address in range(4):
                await host_access(ctx, ram, address, word(ram, address))
        select = buffers.select
        ctx.set(select.busy, 1)
        ctx.set(select.read_ram, in_ram)       # the addresses' RAM; its data's (in_ram) is the same, a cycle later
        ctx.set(select.in_ram, in_ram)
        ctx.set(select.out_ram, out_ram)
        for port, address in ((buffers.reads0, 1), (buffers.reads1, 2)):
            ctx.set(port.address, address)
            ctx.set(port.read_enable, 1)
        ctx.set(buffers.writes0.address, 3)
        ctx.set(buffers.writes0.write_data, word(7, 3))
        ctx.set(buffers.writes0.write_enable, ALL_ELEMENTS if in_ram != out_ram else 0)
        ctx.set(buffers.writes1.address, 0)                   # port 1 writes another word on the same cycle
        ctx.set(buffers.writes1.write_data, word(8, 0))
        ctx.set(buffers.writes1.write_enable, ALL_ELEMENTS if in_ram != out_ram else 0)
        await ctx.tick()
        seen["reads"] = [ctx.get(buffers.reads0.read_data), ctx.get(buffers.reads1.read_data)]
        if in_ram == out_ram:                                 # a reduction: port 1 reads while port 0 writes,
            ctx.set(buffers.reads0.read_enable, 0)            # then both ports write
            ctx.set(buffers.writes0.write_enable, ALL_ELEMENTS)
            await ctx.tick()
            ctx.set(buffers.reads1.read_enable, 0)
            ctx.set(buffers.writes1.write_enable, ALL_ELEMENTS)
            await ctx.tick()
        for port in (buffers.reads0, buffers.reads1):
            ctx.set(port.read_enable, 0)
        ctx.set(buffers.writes0.write_enable, 0)
        ctx.set(buffers.writes1.write_enable, 0)
        ctx.set(select.busy, 0)
        seen["after"] = [[await host_access(ctx, ram, address) for address in range(4)] for ram in range(2)]

    simulator.add_testbench(testbench)
    simulator.run()
    if in_ram != out_ram:
        assert seen["reads"] == [word(in_ram, 1), word(in_ram, 2)]
    else:                                                     # port 0 belongs to the writes
        assert seen["reads"][1] == word(in_ram, 2)
    expected = [[word(ram, address) for address in range(4)] for ram in range(2)]
    expected[out_ram][3] = word(7, 3)
    expected[out_ram][0] = word(8, 0)
    assert seen["after"] == expected
