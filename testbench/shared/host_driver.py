"""The host side of the host port every accelerator shares (:mod:`hw.shared.host_port`), for cocotb test modules.

:class:`HostDriver` makes one access per cycle: writes take effect on the next clock edge, reads return one cycle
later; ``run`` writes START and waits for ``done``; ``read_counters`` reads TOTAL_CYCLES and the layers' counters
(the register map of :mod:`hw.shared.host_control`, common to every accelerator).  :func:`report_progress` tells
the job how far a run got.
"""

import os
import time

import numpy as np
from cocotb.simtime import get_sim_time
from cocotb.triggers import ReadOnly, RisingEdge, with_timeout

from nnaccel.hw.shared.host_control import COUNTERS_PER_LAYER, ControlRegister, HostTarget, LayerCounter, layer_counter_address
from nnaccel.testbench.shared.clocking import CLOCK_PERIOD_NS

__all__ = ["HostDriver", "IDLE_HOST", "current_cycle", "report_progress"]

# The host port's request inputs at rest: what the clock-and-reset helper holds through reset.
IDLE_HOST = {"host__write": 0, "host__read": 0}


def current_cycle():
    return int(get_sim_time("ns")) // CLOCK_PERIOD_NS


class HostDriver:
    """One host access per cycle: writes take effect on the next clock edge, reads return one cycle later."""

    def __init__(self, dut):
        self.dut = dut

    async def write_block(self, target, base, values):
        """``values[i]`` to ``base + i``, back to back."""
        dut = self.dut
        dut.host__target.value, dut.host__write.value = int(target), 1
        for offset, value in enumerate(values):
            dut.host__address.value, dut.host__write_data.value = base + offset, int(value)
            await RisingEdge(dut.clk)
        dut.host__write.value = 0

    async def read_block(self, target, addresses):
        """The words at ``addresses``, one read issued per cycle; read i's data is sampled in the cycle after it."""
        dut, addresses, values = self.dut, [int(address) for address in addresses], []
        dut.host__target.value, dut.host__read.value, dut.host__address.value = int(target), 1, addresses[0]
        for index in range(len(addresses)):
            await RisingEdge(dut.clk)                  # read `index` sampled
            if index + 1 < len(addresses):
                dut.host__address.value = addresses[index + 1]
            else:
                dut.host__read.value = 0
            await ReadOnly()
            assert int(dut.host__read_data__valid.value), "the read data was not valid the cycle after a read"
            values.append(int(dut.host__read_data__payload.value))
        await RisingEdge(dut.clk)                      # leave the read-only phase
        return values

    async def run(self, layers, max_cycles):
        """START ``layers`` layers and wait for the rising edge of ``done``; returns the wall seconds it took."""
        dut = self.dut
        start = time.perf_counter()
        await self.write_block(HostTarget.CONTROL, ControlRegister.START, [layers])
        await with_timeout(RisingEdge(dut.host__done), max_cycles * CLOCK_PERIOD_NS, "ns")
        await RisingEdge(dut.clk)
        return time.perf_counter() - start

    async def read_counters(self, layers):
        """TOTAL_CYCLES and the counters of layers ``0 .. layers-1``: ``(total, array (layers, COUNTERS_PER_LAYER))``,
        columns in :class:`~hw.shared.host_control.LayerCounter` order."""
        addresses = [layer_counter_address(layer, counter) for layer in range(layers) for counter in LayerCounter]
        total, *counters = await self.read_block(HostTarget.CONTROL, [ControlRegister.TOTAL_CYCLES] + addresses)
        return total, np.reshape(counters, (layers, COUNTERS_PER_LAYER))


def report_progress(config, done, total):
    """Replace the progress file atomically, so the job's reader never sees it empty."""
    if config.get("progress_file"):
        partial = f"{config['progress_file']}.partial"
        with open(partial, "w") as progress:
            progress.write(f"{done} {total}\n")
        os.replace(partial, config["progress_file"])
