"""The host side of the host port both accelerators share (:mod:`hw.shared.host_port`), for cocotb test modules.

:class:`HostDriver` makes one access per cycle: writes take effect on the next clock edge, reads return one cycle
later; ``run`` writes START and waits for ``done``.  :func:`report_progress` tells the job how far a run got.
"""

import os
import time

from cocotb.simtime import get_sim_time
from cocotb.triggers import ReadOnly, RisingEdge, with_timeout

from testbench.shared.clocking import CLOCK_PERIOD_NS

__all__ = ["HostDriver", "current_cycle", "report_progress"]


def current_cycle():
    return int(get_sim_time("ns")) // CLOCK_PERIOD_NS


class HostDriver:
    """One host access per cycle: writes take effect on the next clock edge, reads return one cycle later."""

    def __init__(self, dut, *, control_target, start_register):
        self.dut = dut
        self._control_target, self._start_register = control_target, start_register

    async def write_block(self, target, base, values):
        """``values[i]`` to ``base + i``, back to back."""
        dut = self.dut
        dut.host_target.value, dut.host_write.value = target, 1
        for offset, value in enumerate(values):
            dut.host_address.value, dut.host_write_data.value = base + offset, value
            await RisingEdge(dut.clk)
        dut.host_write.value = 0

    async def read_block(self, target, addresses):
        """The words at ``addresses``, one read issued per cycle; read i's data is sampled in the cycle after it."""
        dut, addresses, values = self.dut, list(addresses), []
        dut.host_target.value, dut.host_read.value, dut.host_address.value = target, 1, addresses[0]
        for index in range(len(addresses)):
            await RisingEdge(dut.clk)                  # read `index` sampled
            if index + 1 < len(addresses):
                dut.host_address.value = addresses[index + 1]
            else:
                dut.host_read.value = 0
            await ReadOnly()
            assert int(dut.host_read_valid.value), "host_read_valid was low the cycle after a read"
            values.append(int(dut.host_read_data.value))
        await RisingEdge(dut.clk)                      # leave the read-only phase
        return values

    async def run(self, layers, max_cycles):
        """START ``layers`` layers and wait for the rising edge of ``done``; returns the wall seconds it took."""
        dut = self.dut
        start = time.perf_counter()
        await self.write_block(self._control_target, self._start_register, [layers])
        await with_timeout(RisingEdge(dut.done), max_cycles * CLOCK_PERIOD_NS, "ns")
        await RisingEdge(dut.clk)
        return time.perf_counter() - start


def report_progress(config, done, total):
    """Replace the progress file atomically, so the job's reader never sees it empty."""
    if config.get("progress_file"):
        partial = f"{config['progress_file']}.partial"
        with open(partial, "w") as progress:
            progress.write(f"{done} {total}\n")
        os.replace(partial, config["progress_file"])
