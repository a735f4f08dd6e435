"""models.capsnet.streaming: the SDRAM memory map, the tiles of steps 1 and 2 (every parameter and feature byte
where the design says, each weight read once), and the double-buffered schedule on hand-worked cases."""

import numpy as np
import pytest

from hw.capsnet.config import CapsNetConfig
from models.capsnet.golden import load_capsnet
from models.capsnet.network import VARIANTS
from models.capsnet.plan import compile_capsnet
from models.capsnet.streaming import Tile, memory_map, schedule, step1_tiles, step2_tiles
from models.shared.sdram import DE1_SOC_SDRAM

MODULES, LANES = 8, 6


@pytest.mark.parametrize("variant", ["reduced", "full"])
def test_memory_map(variant):
    regions = memory_map(VARIANTS[variant], MODULES)
    spans = sorted((region.base, region.base + region.size) for region in regions.values())
    assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:]))
    assert all(region.base % 2048 == 0 for region in regions.values())
    assert spans[-1][1] <= DE1_SOC_SDRAM.size_bytes
    if variant == "full":
        sizes = {name: region.size for name, region in regions.items()}
        assert sizes["primary_weights"] == 256 * 256 * 81 and sizes["digit_weights"] == 1152 * 10 * 16 * 8
        assert (sizes["conv1_output"], sizes["primary_output"], sizes["predictions"]) == (102_400, 9_216, 184_320)


def test_weight_regions_hold_the_compilers_conv_words():
    """The conv weight regions are the compiler's conv weight image (conv1 words, then PrimaryCaps words)."""
    net = load_capsnet("reduced")
    plan = compile_capsnet(CapsNetConfig(conv_modules=MODULES, conv_lanes=LANES, conv_weight_depth=1 << 20), net)
    regions = memory_map(net.shape, MODULES)
    assert regions["conv1_weights"].size + regions["primary_weights"].size == plan.conv_weight_image.size
    assert regions["primary_biases"].size == plan.layers[1].descriptor["channel_blocks"] * MODULES * 4


def covered(ranges, region):
    """Bytes of ``region`` touched by ``ranges``, as a count per byte."""
    counts = np.zeros(region.size, np.int64)
    for address, size in ranges:
        if region.base <= address < region.base + region.size:
            counts[address - region.base:address - region.base + size] += 1
    return counts


def test_tiles_read_every_weight_once_and_write_every_output_once():
    shape = VARIANTS["reduced"]
    regions = memory_map(shape, MODULES)
    conv1, primary = step1_tiles(shape, regions, conv_modules=MODULES, conv_lanes=LANES)
    step2 = step2_tiles(shape, regions)
    reads = [r for tile in conv1 + primary + step2 for r in tile.reads]
    writes = [w for tile in conv1 + primary + step2 for w in tile.writes]
    for name in ("conv1_weights", "primary_weights", "digit_weights", "primary_output"):
        assert (covered(reads, regions[name]) == 1).all(), name
    blocks = shape.primary_channels // MODULES
    assert (covered(reads, regions["conv1_output"]) == blocks).all()          # input maps: once per block
    assert (covered(reads, regions["image"]) == shape.conv_channels // MODULES).all()
    for name in ("conv1_output", "primary_output", "predictions"):
        assert (covered(writes, regions[name]) == 1).all(), name
    # compute: conv1 4 row groups (6, 6, 6, 2) x 4 column blocks x 81 per block; PrimaryCaps 6 x 81 per tile
    assert sum(tile.compute for tile in conv1) == shape.conv_channels // MODULES * 4 * 20 * 81
    assert sum(tile.compute for tile in primary) == blocks * shape.conv_channels * 6 * 81
    assert sum(tile.compute for tile in step2) == shape.capsules * 80


def test_schedule_of_one_tile_by_hand():
    """Decided on 0, requested and accepted on 1; ACTIVATE 2, READs 4..11 (4 words of 2 beats); the last word on
    readdatavalid at 11 + 3 + 1 = 15, in the tile at 18; compute 18..28."""
    result = schedule([Tile(reads=((0, 16),), compute=10)])
    assert (result.cycles, result.compute, result.stall, result.bytes_read) == (28, 10, 18, 16)


def test_double_buffering_hides_loads_under_compute():
    """Tile 1 loads while tile 0 computes (its buffer is free): no stall after the first load; tile 2 waits for
    tile 0's buffer, which frees at 118, and still loads within tile 1's compute."""
    tiles = [Tile(reads=((4096 * k, 16),), compute=100) for k in range(3)]
    result = schedule(tiles)
    assert (result.cycles, result.stall) == (318, 18)


def test_memory_bound_and_write_traffic():
    """No compute: the schedule is the SDRAM's: 64 KB in 128-word bursts at about 1.97 bytes per cycle
    (a 2 KB page every 1,024 beats costs an ACTIVATE, a refresh every 781 cycles 11)."""
    tiles = [Tile(reads=((512 * k, 512),), compute=0) for k in range(128)]
    result = schedule(tiles)
    assert 64 * 1024 / result.cycles == pytest.approx(1.96, abs=0.02)
    writes = schedule([Tile(reads=(), compute=0, writes=((0, 4096),))])
    assert writes.bytes_written == 4096 and 4096 / writes.cycles == pytest.approx(1.95, abs=0.03)
