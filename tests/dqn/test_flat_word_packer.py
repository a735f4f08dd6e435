# amaranth: UnusedElaboratable=no
"""hw.dqn.flat_word_packer.FlatWordPacker on Amaranth's simulator: the words models.dqn.flat_map.word_writes names for
each slot of each group, written with the packer's enables over a RAM of other data, store a channel's output map in
flat layout exactly (every position once, nothing else touched), with one slot and with two; Verilog lint clean."""

import numpy as np
import pytest
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.flat_word_packer import FlatWordPacker
from nnaccel.models.dqn.flat_map import flat_words, word_writes
from nnaccel.sim.lint import lint_verilog

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=5, pad_columns=2, activation_depth=64, weight_depth=16)
GROUP_LANES = CONFIG.modules * CONFIG.lanes
SEED = 52


@pytest.mark.parametrize("slots", [1, 2, 4])
@pytest.mark.parametrize("height, width", [(3, 3), (7, 5), (4, 6)])
def test_groups_store_the_flat_map(height, width, slots):
    """A tensor of as many channels as slots; group g gives slot s channel s's positions g*slot_lanes .. (the
    results: random values); the words written reproduce the flat layout, the words around keep their data."""
    rng = np.random.default_rng(SEED)
    slot_lanes = GROUP_LANES // slots
    positions = height * width
    image = rng.integers(1, 1 << 32, (slots, height, width), dtype=np.uint64)
    channel_words = -(-positions // CONFIG.row_elements)
    base = 3
    memory = rng.integers(1, 1 << 32, (48, CONFIG.row_elements), dtype=np.uint64)
    expected = memory.copy()
    flat = flat_words(image, CONFIG.row_elements)
    for channel in range(slots):
        words = flat[channel].reshape(-1)
        start = (base + channel * channel_words) * CONFIG.row_elements
        expected.reshape(-1)[start:start + positions] = words[:positions]
    packer = FlatWordPacker(config=CONFIG, slots=slots)
    simulator = Simulator(packer)

    async def testbench(ctx):
        flat_image = image.reshape(slots, positions)
        for first in range(0, positions, slot_lanes):
            valid = min(slot_lanes, positions - first)
            results = np.zeros(GROUP_LANES, dtype=np.uint64)
            for slot in range(slots):
                results[slot * slot_lanes:slot * slot_lanes + valid] = flat_image[slot, first:first + valid]
            results[results == 0] = rng.integers(1, 1 << 32)        # lanes past the map: anything
            ctx.set(packer.results, [[int(value) for value in results[m * CONFIG.lanes:(m + 1) * CONFIG.lanes]]
                                     for m in range(CONFIG.modules)])
            for slot in range(slots):
                for word, offset in word_writes(first, valid, CONFIG.row_elements):
                    if slots > 1:
                        ctx.set(packer.word.slot, slot)
                    ctx.set(packer.word.offset, offset)
                    ctx.set(packer.word.valid, valid)
                    await ctx.delay(1e-9)
                    data = [int(value) for value in ctx.get(packer.data)]
                    enable = ctx.get(packer.enable)
                    address = base + slot * channel_words + word
                    for element in range(CONFIG.row_elements):
                        if enable >> element & 1:
                            memory[address, element] = data[element]

    simulator.add_testbench(testbench)
    simulator.run()
    assert (memory == expected).all()


def test_rejects_slots_that_do_not_divide_the_modules():
    with pytest.raises(ValueError, match="slots must divide the 4 modules, not 3"):
        FlatWordPacker(config=CONFIG, slots=3)


@pytest.mark.parametrize("slots", [1, 2])
def test_lint_clean(slots):
    assert lint_verilog(FlatWordPacker(config=CONFIG, slots=slots), "flat_word_packer") == []
