"""Clock and reset for every cocotb test module: a 10 ns clock on ``clk`` and a synchronous ``rst``.

A purely combinational design (no ``clk`` port, e.g. a float unit with latency 0) still gets a
cycle time base: its cycles are 10 ns timer steps.

The clock is cocotb's C++ clock (``impl="gpi"``): it toggles ``clk`` from the simulator's timed
callbacks without waking Python, where the default Python clock runs a coroutine step per edge.  On
the reduced DQN accelerator that is 3.1 times the simulated cycles per second (200 inferences,
``benchmarks/dqn/bench_simulation_speed.py --reduced``), with every bit and counter the same.
"""

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer

CLOCK_PERIOD_NS = 10


async def start_clock_and_reset(dut, *, reset_cycles=2, hold=None):
    """Start the clock, set ``hold`` (port name -> value), pulse reset; return a ``next_cycle`` coroutine function.

    On return the simulation stands at the start of cycle 0 (reset released); ``await next_cycle()``
    advances to the start of the following cycle.
    """
    for name, value in (hold or {}).items():
        getattr(dut, name).value = int(value)
    if not hasattr(dut, "clk"):
        async def next_timestep():
            await Timer(CLOCK_PERIOD_NS, unit="ns")
        return next_timestep

    cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns", impl="gpi").start())
    async def next_edge():
        await RisingEdge(dut.clk)
    if hasattr(dut, "rst"):
        dut.rst.value = 1
    for _ in range(reset_cycles):
        await next_edge()
    if hasattr(dut, "rst"):
        dut.rst.value = 0
    return next_edge
