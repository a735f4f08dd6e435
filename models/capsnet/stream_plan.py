"""Step 2 and routing on the streaming CapsNet accelerator (:mod:`hw.capsnet.streaming_accelerator`): their SDRAM
image, their descriptor, and the exact cycles of their counters with the SDRAM model in the loop
(:mod:`models.capsnet.image_stream_plan` puts the convolutions in front for the whole image).

SDRAM image (every region on a 2 KB page): ``primary`` the PrimaryCaps output, channel ``t*N + d`` row ``y`` at
``((t*N + d)*G + y) * row_bytes`` (rows padded to ``row_bytes``); ``weights`` word ``(i*J + j)*N + k`` of ``D``
bytes, byte ``r`` = ``W[i, j, r, k]``; ``predictions`` word ``i*J + j`` of ``D`` bytes (u_hat_j|i).

Cycles (:func:`stream_cycles`), from the START cycle ``s``: the port program of the accelerator's docstring on
:class:`models.shared.tile_port.TilePortModel` (commands taken from ``s + 1``, each on the cycle after the
previous one finished, a store no earlier than the cycle after its tile's products are done); tile ``k`` (capsules
``tile_columns`` of one grid row) starts on the cycle after it is loaded and the engine is idle and ends
``tile_columns*J*N + 1 + latency`` cycles later (:func:`LayerPlan.expected_cycles <models.capsnet.plan.LayerPlan>`
without the launch: run, read-to-module, :func:`~hw.capsnet.matvec_engine.matvec_result_latency`: the module's 3
and the shared requantizers' cycles), its last prediction vector on that last cycle; the routing engine's last class
:func:`~hw.capsnet.routing_engine.routing_finish_cycles` later; the run ends on the cycle after both the
routing and the last store have finished.
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.hw.capsnet.matvec_engine import matvec_result_latency
from nnaccel.hw.capsnet.routing_engine import routing_finish_cycles
from nnaccel.hw.capsnet.stream_config import BUS_BYTES, CapsNetStreamConfig
from nnaccel.hw.capsnet.stream_descriptor import stream_descriptor_layout

__all__ = ["StreamPlan", "StreamCycles", "compile_stream", "stream_cycles", "PAGE_BYTES"]

PAGE_BYTES = 2048


@dataclass(frozen=True)
class StreamPlan:
    config: CapsNetStreamConfig
    capsule_types: int
    regions: dict                # name -> (byte base, bytes)
    image: dict                  # name -> uint8 bytes of that region
    descriptor: int

    @property
    def tiles(self):
        return self.capsule_types * self.config.grid * self.config.row_tiles

    @property
    def capsules(self):
        return self.capsule_types * self.config.grid ** 2

    def predictions(self, region):
        """u_hat (capsules, J, D) int8 from the bytes of the ``predictions`` region."""
        config = self.config
        return np.asarray(region, np.uint8).view(np.int8).reshape(self.capsules, config.classes, config.digit_dims)


@dataclass(frozen=True)
class StreamCycles:
    """What the counters show: ``total`` (TOTAL_CYCLES) and per :class:`~hw.capsnet.streaming_accelerator.StreamStep`
    ``(cycles, product cycles, stall cycles, drain cycles)``; ``end`` the cycle the run ended; SDRAM traffic."""

    total: int
    steps: tuple
    end: int
    bytes_read: int
    bytes_written: int


def _pack(layout, fields):
    word = 0
    for name, field in layout:
        value = int(fields[name])
        if not 0 <= value < 1 << field.width:
            raise ValueError(f"descriptor field {name} must be from 0 to {(1 << field.width) - 1}, not {value}")
        word |= value << field.offset
    return word


def compile_stream(config, primary_maps, digit_weights, *, shift, routing_shift):
    """The SDRAM image and descriptor for ``primary_maps`` (T*N, G, G) int8 (the PrimaryCaps output) and
    ``digit_weights`` (capsules, J, D, N) int8 (``FixedCapsNet.digit_weights``)."""
    if not isinstance(config, CapsNetStreamConfig):
        raise TypeError(f"config must be a CapsNetStreamConfig, not {config!r}")
    grid, dims = config.grid, config.primary_dims
    primary_maps, digit_weights = np.asarray(primary_maps), np.asarray(digit_weights)
    channels = primary_maps.shape[0]
    if primary_maps.dtype != np.int8 or primary_maps.shape[1:] != (grid, grid) or channels % dims:
        raise ValueError(f"primary_maps must be int8 (T*{dims}, {grid}, {grid}), not {primary_maps.dtype} "
                         f"{primary_maps.shape}")
    types = channels // dims
    if not 1 <= types <= config.max_types:
        raise ValueError(f"{types} capsule types: the accelerator takes 1 to {config.max_types}")
    capsules = types * grid * grid
    expected = (capsules, config.classes, config.digit_dims, dims)
    if digit_weights.dtype != np.int8 or digit_weights.shape != expected:
        raise ValueError(f"digit_weights must be int8 {expected}, not {digit_weights.dtype} {digit_weights.shape}")
    rows = np.zeros((channels, grid, config.row_bytes), np.int8)
    rows[:, :, :grid] = primary_maps
    image = {"primary": rows.view(np.uint8).ravel(),
             "weights": digit_weights.transpose(0, 1, 3, 2).copy().view(np.uint8).ravel(),
             "predictions": np.zeros(capsules * config.classes * config.vector_bytes, np.uint8)}
    regions, base = {}, 0
    for name, values in image.items():
        regions[name] = (base, len(values))
        base += -(-len(values) // PAGE_BYTES) * PAGE_BYTES
    if base > 1 << config.address_bits:
        raise ValueError(f"the SDRAM image ({base} bytes) exceeds the {config.address_bits}-bit address space")
    descriptor = _pack(stream_descriptor_layout(config), {
        "primary_base": regions["primary"][0], "weights_base": regions["weights"][0],
        "predictions_base": regions["predictions"][0], "capsule_types": types, "shift": shift,
        "routing_shift": routing_shift})
    return StreamPlan(config=config, capsule_types=types, regions=regions, image=image, descriptor=descriptor)


def stream_cycles(plan, start, port):
    """:class:`StreamCycles` of a run STARTed on cycle ``start`` with the SDRAM in the state ``port`` (a
    :class:`~models.shared.tile_port.TilePortModel` that has timed everything before; runs of one simulation
    share it)."""
    config = plan.config
    type_tiles, tiles = config.grid * config.row_tiles, plan.tiles
    (primary, _), (weights, _), (predictions, _) = (plan.regions[name] for name in ("primary", "weights", "predictions"))
    type_beats = config.type_rows * config.row_bytes // BUS_BYTES
    weight_beats = config.tile_weight_words * config.vector_bytes // BUS_BYTES
    prediction_beats = config.tile_predictions * config.vector_bytes // BUS_BYTES
    product_cycles = config.tile_weight_words
    drain_cycles = 1 + matvec_result_latency(config.matvec_config)
    compute_cycles = product_cycles + drain_cycles        # start .. done, after the start cycle
    read_before, written_before = port.bytes_read, port.bytes_written

    free = start + 1                 # the first cycle the next command can be taken
    loaded, done = [], []            # per tile: the cycle its loads finished, its products' last cycle

    def compute_until(tile):
        while len(done) <= tile:
            index = len(done)
            begin = max(loaded[index] + 1, done[-1] + 1 if done else start + 1)
            done.append(begin + compute_cycles)

    def load(tile):
        nonlocal free
        capsule_type, index = divmod(tile, type_tiles)
        if index == 0:
            free = port.load(free, primary + capsule_type * type_beats * BUS_BYTES, type_beats) + 1
        loaded.append(port.load(free, weights + tile * weight_beats * BUS_BYTES, weight_beats))
        free = loaded[-1] + 1

    def store(tile):
        nonlocal free
        compute_until(tile)
        free = port.store(max(free, done[tile] + 1), predictions + tile * prediction_beats * BUS_BYTES,
                          prediction_beats) + 1

    for tile in range(min(2, tiles)):
        load(tile)
    for tile in range(tiles):
        store(tile)
        if tile + 2 < tiles:
            load(tile + 2)
    compute_until(tiles - 1)
    routing_end = done[-1] + routing_finish_cycles(config.classes, config.digit_dims)
    end = max(routing_end + 1, free)
    busy = [(done[-1] - start), (end - done[-1])]
    engine_busy = tiles * compute_cycles
    steps = ((busy[0], tiles * product_cycles, busy[0] - engine_busy, tiles * drain_cycles),
             (busy[1], 0, 0, 0))
    return StreamCycles(total=end - start, steps=steps, end=end, bytes_read=port.bytes_read - read_before,
                        bytes_written=port.bytes_written - written_before)
