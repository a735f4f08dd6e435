# amaranth: UnusedElaboratable=no
"""hw.shared.descriptor_ram.DescriptorRam on Amaranth's simulator: runs of random layer lengths (two cycles or
more, as a sequencer holds ``layer_index``), each busy cycle's ``descriptor`` against the entry ``layer_index``
selects; entries rewritten between runs, a run STARTed on the cycle after the last write (busy from the cycle
after); the parameter check."""

import numpy as np
import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from nnaccel.hw.shared.descriptor_ram import DescriptorRam
from nnaccel.hw.shared.run_control import RunSignature

SEED = 2931
LAYOUT = data.StructLayout({"kind": 3, "base": 13})
ENTRIES = 12


def test_every_busy_cycle_shows_the_running_layers_entry():
    rng = np.random.default_rng(SEED)
    table = DescriptorRam(run=RunSignature(max_layers=ENTRIES, descriptor_layout=LAYOUT))
    simulator = Simulator(table)
    simulator.add_clock(1e-6)
    checked = []

    async def testbench(ctx):
        for run in range(4):
            entries = rng.integers(0, 1 << LAYOUT.size, ENTRIES).tolist()
            # Entry 0 written last on the runs STARTed at once: the tightest case.
            for address in range(ENTRIES)[::-1] if run % 2 == 0 else rng.permutation(ENTRIES).tolist():
                ctx.set(table.write, 1)
                ctx.set(table.write_address, address)
                ctx.set(table.write_data.as_value(), entries[address])
                await ctx.tick()
            ctx.set(table.write, 0)
            # The START cycle (idle), on the cycle after the last write, or later.
            await ctx.tick().repeat(1 if run % 2 == 0 else int(rng.integers(2, 5)))
            layers = int(rng.integers(1, ENTRIES + 1))
            ctx.set(table.busy, 1)
            for layer in range(layers):
                ctx.set(table.layer_index, layer)
                for _ in range(int(rng.integers(2, 6))):
                    checked.append((ctx.get(table.descriptor.as_value()), entries[layer]))
                    await ctx.tick()
            ctx.set(table.busy, 0)
            ctx.set(table.layer_index, 0)

    simulator.add_testbench(testbench)
    simulator.run()
    assert len(checked) > 50
    assert [shown for shown, _ in checked] == [entry for _, entry in checked]


def test_the_parameter_is_checked():
    with pytest.raises(TypeError, match="run must be a RunSignature, not 5"):
        DescriptorRam(run=5)
    run = RunSignature(max_layers=4, descriptor_layout=LAYOUT)
    assert DescriptorRam(run=run).run == run
