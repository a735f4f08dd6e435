"""The CapsNet streamed from SDRAM (the DE1-SoC design of docs/capsnet_accelerator.md, "On the DE1-SoC"): the
memory map of the SDRAM image, the tiles of every step, and their cycles with the SDRAM model in the loop.

Tiles.  A convolution runs in *passes* (channel block ``b`` of ``M = conv_modules`` output channels, a group of up
to ``rotations`` output rows, a column block of ``L = conv_lanes`` output columns); a pass runs over the input
channels, one *tile* each: the channel's whole input map (``H x W`` bytes) and the block's kernel slab for it
(``Kh*Kw`` words of ``M`` bytes, exactly the compiler's conv weight words ``b*products + c*Kh*Kw ..``), then
``Kh*Kw*rows`` compute cycles: every weight word is applied to the group's ``rows`` output rows on consecutive
cycles (``rows`` accumulators per lane), so PrimaryCaps reads each weight once.  With one input channel (conv1)
the tile is the same for every pass of a block and is loaded once per block.  The block's biases (``M`` int32)
come with its first tile.  Results leave when a pass's last column block is done: per channel the group's rows,
contiguous in the dense channel-major layout.  The prediction step has one tile per capsule: its 10 x 8 weight
words of 16 bytes (1,280 bytes) and, with the first capsule of each capsule type, the type's 8 PrimaryCaps
channels (288 bytes); 80 compute cycles; the capsule's 10 prediction vectors (160 bytes) written after it.

Cycles (:func:`schedule`): two tile buffers (double buffering); one loader issues every tile's bursts in order,
a tile's loads starting once the buffer it fills is free (the compute of the tile two before it has ended); a
tile computes when it is loaded and the previous compute has ended; writes are issued when their tile's compute
has ended, before any later-ready read.  Every burst goes through :class:`models.shared.sdram.SdramModel` on one
Avalon port (:class:`hw.shared.avalon_master.AvalonBurstMaster` timing: a request the cycle after it is decided,
a decision the cycle after the previous request was accepted or the previous write burst ended; a read word
reaches the tile ``TILE_WRITE_LATENCY`` cycles after ``readdatavalid``).  This is the design's cycle model
before the hardware exists: the accelerator's counters are to match its integration version exactly.
"""

from dataclasses import dataclass

from models.capsnet.network import CLASSES, DIGIT_DIM, IMAGE_SIZE, KERNEL, PRIMARY_DIM
from models.shared.sdram import DE1_SOC_SDRAM, SdramModel

__all__ = ["PORT_BITS", "MAX_BURST", "ROTATIONS", "Region", "Tile", "StepCycles", "memory_map", "step1_tiles",
           "step2_tiles", "schedule"]

PORT_BITS = 32                # the accelerator's Avalon data width: conv rows of 20 and 28 bytes are whole words
MAX_BURST = 128               # words per burst (the paper's components: bursts up to 128)
ROTATIONS = 6                 # output rows per pass: accumulators per lane (PrimaryCaps: all 6 rows)
PAGE_BYTES = 2048             # regions start on SDRAM pages
TILE_WRITE_LATENCY = 3        # readdatavalid -> read FIFO (2) -> tile RAM write (1)
ROUTING_RECORD_BYTES = 1024   # s_j (10 x 16 int32), v_j (160 int8), |v_j|^2 (10 int32), class


@dataclass(frozen=True)
class Region:
    name: str
    base: int
    size: int


@dataclass(frozen=True)
class Tile:
    """``reads`` and ``writes``: ((byte address, bytes), ...); ``compute``: cycles the engine works on the tile."""

    reads: tuple
    compute: int
    writes: tuple = ()


@dataclass(frozen=True)
class StepCycles:
    """A step's schedule: ``cycles`` from the first request to the last write accepted, ``compute`` (sum of the
    tiles' compute cycles), ``stall`` (cycles the engine waited for a tile), bytes read and written."""

    cycles: int
    compute: int
    stall: int
    bytes_read: int
    bytes_written: int

    def needed_bytes_per_cycle(self):
        """Bandwidth for the engine never to wait: the step's traffic over its compute cycles."""
        return (self.bytes_read + self.bytes_written) / self.compute


def _blocks(channels, modules):
    return -(-channels // modules)


def memory_map(shape, conv_modules):
    """``{name: Region}`` of the SDRAM image for a :class:`models.capsnet.network.CapsNetShape` and ``conv_modules``
    output channels per block: parameters (conv weights in the compiler's word order, biases as int32, DigitCaps
    weights as 16-byte words ``(i*10 + j)*8 + k``), then the features (image 28 x 28, conv1 output, PrimaryCaps
    output: dense int8, channel-major, row-major), the predictions (``(i*10 + j)*16 + r``) and the routing record.
    Every region starts on a 2 KB page."""
    channels, primary = shape.conv_channels, shape.primary_channels
    conv_size, primary_size = shape.conv_size, shape.primary_size
    products = KERNEL * KERNEL
    sizes = (("conv1_weights", _blocks(channels, conv_modules) * products * conv_modules),
             ("conv1_biases", _blocks(channels, conv_modules) * conv_modules * 4),
             ("primary_weights", _blocks(primary, conv_modules) * channels * products * conv_modules),
             ("primary_biases", _blocks(primary, conv_modules) * conv_modules * 4),
             ("digit_weights", shape.capsules * CLASSES * PRIMARY_DIM * DIGIT_DIM),
             ("image", IMAGE_SIZE * IMAGE_SIZE),
             ("conv1_output", channels * conv_size * conv_size),
             ("primary_output", primary * primary_size * primary_size),
             ("predictions", shape.capsules * CLASSES * DIGIT_DIM),
             ("routing", ROUTING_RECORD_BYTES))
    regions, base = {}, 0
    for name, size in sizes:
        regions[name] = Region(name, base, size)
        base += -(-size // PAGE_BYTES) * PAGE_BYTES
    return regions


def _conv_tiles(*, in_channels, in_size, out_channels, out_size, modules, lanes, inputs, weights, biases, outputs):
    products = KERNEL * KERNEL
    map_bytes = in_size * in_size
    tiles = []
    for block in range(_blocks(out_channels, modules)):
        channels = min(modules, out_channels - block * modules)
        bias = ((biases.base + block * modules * 4, modules * 4),)
        for first_row in range(0, out_size, ROTATIONS):
            rows = min(ROTATIONS, out_size - first_row)
            column_blocks = _blocks(out_size, lanes)
            for column_block in range(column_blocks):
                for channel in range(in_channels):
                    slab = (weights.base + (block * in_channels + channel) * products * modules, products * modules)
                    reads = (bias if first_row == column_block == channel == 0 else ()) + \
                        ((inputs.base + channel * map_bytes, map_bytes), slab)
                    if in_channels == 1 and (first_row, column_block) != (0, 0):
                        reads = ()                         # the block's only tile is still in its buffer
                    last = column_block == column_blocks - 1 and channel == in_channels - 1
                    writes = tuple((outputs.base + ((block * modules + n) * out_size + first_row) * out_size,
                                    rows * out_size) for n in range(channels)) if last else ()
                    tiles.append(Tile(reads=reads, compute=products * rows, writes=_merge(writes)))
    return tiles


def _merge(ranges):
    """Adjacent (address, bytes) ranges as one."""
    merged = []
    for address, size in ranges:
        if merged and merged[-1][0] + merged[-1][1] == address:
            merged[-1] = (merged[-1][0], merged[-1][1] + size)
        else:
            merged.append((address, size))
    return tuple(merged)


def step1_tiles(shape, regions, *, conv_modules, conv_lanes):
    """Tiles of conv1 and PrimaryCaps, in order (see the module docstring)."""
    common = {"modules": conv_modules, "lanes": conv_lanes}
    conv1 = _conv_tiles(in_channels=1, in_size=IMAGE_SIZE, out_channels=shape.conv_channels,
                        out_size=shape.conv_size, inputs=regions["image"], weights=regions["conv1_weights"],
                        biases=regions["conv1_biases"], outputs=regions["conv1_output"], **common)
    primary = _conv_tiles(in_channels=shape.conv_channels, in_size=shape.conv_size,
                          out_channels=shape.primary_channels, out_size=shape.primary_size,
                          inputs=regions["conv1_output"], weights=regions["primary_weights"],
                          biases=regions["primary_biases"], outputs=regions["primary_output"], **common)
    return conv1, primary


def step2_tiles(shape, regions):
    """One tile per capsule: its weights (and its type's PrimaryCaps channels first), 80 products, 160 bytes out."""
    grid = shape.primary_size * shape.primary_size
    type_bytes = PRIMARY_DIM * grid
    capsule_weights = CLASSES * PRIMARY_DIM * DIGIT_DIM
    tiles = []
    for capsule in range(shape.capsules):
        capsule_type = capsule // grid
        reads = ((regions["primary_output"].base + capsule_type * type_bytes, type_bytes),) if capsule % grid == 0 else ()
        reads += ((regions["digit_weights"].base + capsule * capsule_weights, capsule_weights),)
        writes = ((regions["predictions"].base + capsule * CLASSES * DIGIT_DIM, CLASSES * DIGIT_DIM),)
        tiles.append(Tile(reads=reads, compute=CLASSES * PRIMARY_DIM, writes=writes))
    return tiles


def _bursts(ranges, word_bytes):
    for address, size in ranges:
        if address % word_bytes or size % word_bytes:
            raise ValueError(f"range {address:#x} + {size} is not whole {word_bytes}-byte words")
        words = size // word_bytes
        while words:
            count = min(words, MAX_BURST)
            yield address, count
            address, words = address + count * word_bytes, words - count


class _Port:
    """The Avalon master's port into the SDRAM model: requests in the order they are made."""

    def __init__(self, model):
        self.model, self.free = model, 0

    def _accept_cycle(self, ready):
        cycle = max(ready + 1, self.free)               # decided on ``cycle - 1``, requested on ``cycle``
        while self.model.waitrequest(cycle):
            cycle += 1
        return cycle

    def read(self, ready, address, words):
        cycle = self._accept_cycle(ready)
        self.free = cycle + 1
        return self.model.accept_read(cycle, address, words)[-1]

    def write(self, ready, address, words):
        cycle = self._accept_cycle(ready)
        for word in range(words):
            while self.model.waitrequest(cycle):
                cycle += 1
            self.model.accept_write(cycle, address + word * self.model.word_bytes, 0)
            cycle += 1
        self.free = cycle
        return cycle - 1


def schedule(tiles, *, timing=DE1_SOC_SDRAM, port_bits=PORT_BITS, start=0):
    """:class:`StepCycles` of ``tiles`` run from cycle ``start`` with double-buffered tiles (module docstring)."""
    port = _Port(SdramModel(timing=timing, port_bits=port_bits, keep_read_data=False))
    word_bytes = port_bits // 8
    compute_end = [start, start]                 # of the two tiles before the current one
    pending_writes = []                          # (ready cycle, address, words), in order
    loads_issued, stall, last = start, 0, start

    def flush_writes(until):
        nonlocal last
        while pending_writes and pending_writes[0][0] <= until:
            ready, address, words = pending_writes.pop(0)
            last = max(last, port.write(ready, address, words))

    for tile in tiles:
        ready = max(compute_end[-2], loads_issued)
        loaded = ready
        for address, words in _bursts(tile.reads, word_bytes):
            flush_writes(max(ready, port.free))
            loaded = port.read(ready, address, words) + TILE_WRITE_LATENCY
            loads_issued = port.free
        begin = max(loaded, compute_end[-1])
        stall += begin - compute_end[-1]
        end = begin + tile.compute
        compute_end = [compute_end[-1], end]
        pending_writes += [(end, address, words) for address, words in _bursts(tile.writes, word_bytes)]
        last = max(last, end)
    flush_writes(float("inf"))
    return StepCycles(cycles=last - start, compute=sum(tile.compute for tile in tiles), stall=stall,
                      bytes_read=sum(size for tile in tiles for _, size in tile.reads),
                      bytes_written=sum(size for tile in tiles for _, size in tile.writes))
