# amaranth: UnusedElaboratable=no
"""hw.dqn.flat_word_packer.FlatWordPacker on Amaranth's simulator: the words models.dqn.flat_map.word_writes names for
each group, written with the packer's enables over a RAM of other data, store a channel's output map in flat layout
exactly (every position once, nothing else touched), on the whole group and on a slot's half of the modules (the
writer's packers with two channel slots); Verilog lint clean."""

import dataclasses

import numpy as np
import pytest
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.flat_word_packer import FlatWordPacker
from nnaccel.models.dqn.flat_map import flat_words, word_writes
from nnaccel.sim.lint import lint_verilog

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=5, pad_columns=2, activation_depth=64, weight_depth=16)
SEED = 52


@pytest.mark.parametrize("modules", [4, 2, 1])
@pytest.mark.parametrize("height, width", [(3, 3), (7, 5), (4, 6)])
def test_groups_store_the_flat_map(height, width, modules):
    """One channel; group g gives its positions g*group_lanes .. (the results: random values; lanes past the map
    anything); the words written reproduce the flat layout, the words around keep their data."""
    rng = np.random.default_rng(SEED)
    config = dataclasses.replace(CONFIG, modules=modules)
    group_lanes = modules * CONFIG.lanes
    positions = height * width
    image = rng.integers(1, 1 << 32, (height, width), dtype=np.uint64)
    base = 3
    memory = rng.integers(1, 1 << 32, (48, CONFIG.row_elements), dtype=np.uint64)
    expected = memory.copy()
    start = base * CONFIG.row_elements
    expected.reshape(-1)[start:start + positions] = flat_words(image[None], CONFIG.row_elements)[0].reshape(-1)[
        :positions]
    packer = FlatWordPacker(config=config)
    simulator = Simulator(packer)

    async def testbench(ctx):
        flat_image = image.reshape(positions)
        for first in range(0, positions, group_lanes):
            valid = min(group_lanes, positions - first)
            results = rng.integers(1, 1 << 32, group_lanes, dtype=np.uint64)      # lanes past the map: anything
            results[:valid] = flat_image[first:first + valid]
            ctx.set(packer.results, [[int(value) for value in results[m * CONFIG.lanes:(m + 1) * CONFIG.lanes]]
                                     for m in range(modules)])
            for word, offset in word_writes(first, valid, CONFIG.row_elements):
                ctx.set(packer.word.offset, offset)
                ctx.set(packer.word.valid, valid)
                await ctx.delay(1e-9)
                data = [int(value) for value in ctx.get(packer.data)]
                enable = ctx.get(packer.enable)
                for element in range(CONFIG.row_elements):
                    if enable >> element & 1:
                        memory[base + word, element] = data[element]

    simulator.add_testbench(testbench)
    simulator.run()
    assert (memory == expected).all()


@pytest.mark.parametrize("modules", [4, 2])
def test_lint_clean(modules):
    assert lint_verilog(FlatWordPacker(config=dataclasses.replace(CONFIG, modules=modules)), "flat_word_packer") == []
