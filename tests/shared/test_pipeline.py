# amaranth: UnusedElaboratable=no
"""hw.shared.pipeline.Pipeline: register placement by priority, valid travelling with the data, checks."""

import pytest
from amaranth.hdl import ClockDomain, Module, Signal
from amaranth.sim import Simulator

from nnaccel.hw.shared.pipeline import Pipeline


def _delays(latency, cut_priority=("second", "first")):
    """Cycles from input to output of a two-cut datapath (x -> +1 -> *2), and the results seen."""
    m = Module()
    m.domains.sync = ClockDomain()          # present even when latency 0 places no register
    data, valid = Signal(8), Signal()
    out, out_valid = Signal(8), Signal()
    pipeline = Pipeline(m, latency=latency, cut_priority=cut_priority, valid=valid)
    first = pipeline.cut("first", {"value": data + 1})
    second = pipeline.cut("second", first["value"] * 2)
    pipeline.check_complete()
    m.d.comb += [out.eq(second), out_valid.eq(pipeline.valid)]
    seen = []
    simulator = Simulator(m)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        for cycle in range(12):
            presenting = cycle in (1, 2, 5)
            ctx.set(valid, presenting)
            ctx.set(data, cycle)
            if ctx.get(out_valid):
                seen.append((cycle, ctx.get(out)))
            await ctx.tick()

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


@pytest.mark.parametrize("latency", [0, 1, 2, 5])
def test_latency_and_throughput(latency):
    assert _delays(latency) == [(cycle + latency, (cycle + 1) * 2) for cycle in (1, 2, 5)]


def test_priority_order_does_not_change_results():
    assert _delays(1, ("first", "second")) == _delays(1, ("second", "first"))


def test_checks():
    m = Module()
    with pytest.raises(ValueError, match=r"^cut_priority must name distinct cut points, not \('a', 'a'\)$"):
        Pipeline(m, latency=1, cut_priority=("a", "a"), valid=Signal())
    pipeline = Pipeline(m, latency=1, cut_priority=("a", "b"), valid=Signal())
    with pytest.raises(ValueError, match=r"^cut point 'c' is not pending; pending cut points: \['a', 'b'\]$"):
        pipeline.cut("c", Signal())
    pipeline.cut("a", Signal())
    with pytest.raises(ValueError, match=r"^cut points never placed: \['b'\]$"):
        pipeline.check_complete()
