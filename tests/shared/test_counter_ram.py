# amaranth: UnusedElaboratable=no
"""hw.shared.counter_ram.CounterRam on Amaranth's simulator (HostControl's counter tests run it too, through the
host port: tests/shared/test_host_control.py): two runs, each layer's word read from the first idle cycle; a layer
the second run did not reach keeps the first run's counts; the parameter checks."""

import pytest
from amaranth.sim import Simulator

from nnaccel.hw.shared.counter_ram import CounterRam

BITS = 12


def _counts(word):
    return [word >> (index * BITS) & ((1 << BITS) - 1) for index in range(4)]


def test_each_layers_counts_from_the_first_idle_cycle():
    counters = CounterRam(max_layers=4, counter_bits=BITS)
    simulator = Simulator(counters)
    simulator.add_clock(1e-6)
    read = {}

    async def testbench(ctx):
        # Run 1: layers 0, 1, 2 for 3, 2, 4 cycles, an issue on every cycle of layer 1, a stall on layer 2's last.
        # Run 2: layer 0 alone for 5 cycles, draining on each.
        for run, layers in enumerate([[(0, 3, {}), (1, 2, {"issue": 1}), (2, 4, {})], [(0, 5, {"draining": 1})]]):
            ctx.set(counters.start, 1)
            await ctx.tick()
            ctx.set(counters.start, 0)
            ctx.set(counters.busy, 1)
            for layer, cycles, events in layers:
                ctx.set(counters.layer_index, layer)
                for cycle in range(cycles):
                    stall = int(layer == 2 and cycle == cycles - 1)
                    ctx.set(counters.events, {"issue": 0, "stall": stall, "draining": 0} | events)
                    await ctx.tick()
            ctx.set(counters.busy, 0)
            ctx.set(counters.events, {"issue": 1, "stall": 1, "draining": 1})     # not counted: idle
            for layer in range(3):
                ctx.set(counters.read_layer, layer)
                await ctx.tick()
                read[run, layer] = _counts(ctx.get(counters.read_data))

    simulator.add_testbench(testbench)
    simulator.run()
    assert [read[0, layer] for layer in range(3)] == [[3, 0, 0, 0], [2, 2, 0, 0], [4, 0, 1, 0]]
    assert [read[1, layer] for layer in range(3)] == [[5, 0, 0, 5], [2, 2, 0, 0], [4, 0, 1, 0]]


def test_parameters_are_checked():
    with pytest.raises(ValueError, match="max_layers"):
        CounterRam(max_layers=0, counter_bits=BITS)
    with pytest.raises(ValueError, match="counter_bits"):
        CounterRam(max_layers=4, counter_bits=0)
    counters = CounterRam(max_layers=4, counter_bits=BITS)
    assert (counters.max_layers, counters.counter_bits) == (4, BITS)
