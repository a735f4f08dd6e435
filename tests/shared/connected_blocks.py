"""Test helpers for blocks on RAM ports: blocks joined by ``wiring.connect`` as one design, run on Amaranth's
simulator."""

from amaranth.hdl import Elaboratable, Module
from amaranth.lib import wiring
from amaranth.sim import Simulator


class ConnectedBlocks(Elaboratable):
    """``blocks`` (``{name: component}``) as submodules, with ``connections(blocks)`` -> ``[(initiator, target)]``
    joined by ``wiring.connect``; each block is an attribute of its name."""

    def __init__(self, blocks, connections):
        self._blocks, self._connections = blocks, connections
        for name, block in blocks.items():
            setattr(self, name, block)

    def elaborate(self, platform):
        m = Module()
        for name, block in self._blocks.items():
            m.submodules[name] = block
        for initiator, target in self._connections(self._blocks):
            wiring.connect(m, initiator, target)
        return m


def simulate(design, testbench):
    """Run ``testbench`` (an ``async def testbench(ctx)``) on ``design`` with a clock."""
    simulator = Simulator(design)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.run()


def drive(ctx, values):
    """Set every ``(signal, value)`` of ``values``."""
    for signal, value in values:
        ctx.set(signal, value)
