"""Compiler of the whole CapsNet image on the streaming accelerator (:mod:`hw.capsnet.streaming_accelerator`):
conv1 and PrimaryCaps from SDRAM through the convolution engine's tiles, then step 2 and routing
(:mod:`models.capsnet.stream_plan`); the SDRAM image, the four descriptors, and the exact cycles of every counter
with the SDRAM model in the loop.

SDRAM image (every region on a 2 KB page): per convolution its biases (block ``b``: ``M`` int32), its kernel slabs
(tile ``(b, c)``: ``Kh*Kw`` words of ``M`` bytes, word ``kh*Kw + kw``, byte ``m`` = ``W[b*M + m, c, kh, kw]``), its
input and its output as maps (channel-major, row-major, rows padded to whole bus words); conv1's output is
PrimaryCaps' input, PrimaryCaps' output is step 2's ``primary`` region.
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.hw.capsnet.descriptor import LayerKind
from nnaccel.hw.capsnet.stream_config import BUS_BYTES, CapsNetStreamConfig
from nnaccel.hw.capsnet.stream_descriptor import image_descriptor_layout
from nnaccel.models.capsnet.conv_timing import ConvEngineTiming
from nnaccel.models.capsnet.stream_plan import PAGE_BYTES, StreamCycles, StreamPlan, compile_stream, stream_cycles

__all__ = ["ConvStreamLayer", "ImageStreamPlan", "compile_image_stream", "image_stream_cycles",
           "padded_row_bytes"]


def padded_row_bytes(width):
    """Bytes of a feature row in SDRAM: ``width`` int8 padded to whole bus words."""
    return -(-width // BUS_BYTES) * BUS_BYTES


@dataclass(frozen=True)
class ConvStreamLayer:
    """One streamed convolution: its geometry and the fields of its descriptor."""

    name: str
    in_shape: tuple          # (C, H, W)
    out_shape: tuple         # (K, Ho, Wo)
    kernel: tuple            # (Kh, Kw)
    stride: int
    blocks: int
    row_groups: int
    column_blocks: int
    tiles: int
    stream: dict             # conv_stream_layout fields
    engine: dict             # the engine's descriptor fields

    @property
    def macs(self):
        channels, _, _ = self.in_shape
        kernels, height, width = self.out_shape
        return kernels * height * width * channels * self.kernel[0] * self.kernel[1]


@dataclass(frozen=True)
class ImageStreamPlan:
    """What the host writes (``image`` regions, ``descriptors`` 0-3) and what it checks."""

    config: CapsNetStreamConfig
    conv_layers: tuple       # (conv1, primary) ConvStreamLayer
    step2: StreamPlan        # step 2 and routing; its regions are part of ``regions``
    regions: dict            # name -> (byte base, bytes)
    image: dict              # name -> uint8 bytes of that region (features zero)
    descriptors: tuple       # four ints: conv1, PrimaryCaps, step 2, routing (unused: 0)

    def input_region(self, image_q):
        """The bytes of the ``image`` region for one int8 network input (C, H, W)."""
        return _map_bytes(np.asarray(image_q, np.int8), self.conv_layers[0].in_shape)

    def feature_map(self, name, region):
        """The int8 map (K, Ho, Wo) from the bytes of region ``name`` ("conv1_output" or "primary")."""
        layer = self.conv_layers[0 if name == "conv1_output" else 1]
        kernels, height, width = layer.out_shape
        rows = np.asarray(region, np.uint8).view(np.int8).reshape(kernels, height, -1)
        return rows[:, :, :width]


def _map_bytes(values, shape):
    channels, height, width = shape
    if values.shape != tuple(shape) or values.dtype != np.int8:
        raise ValueError(f"the map must be int8 {tuple(shape)}, not {values.dtype} {values.shape}")
    rows = np.zeros((channels, height, padded_row_bytes(width)), np.int8)
    rows[:, :, :width] = values
    return rows.view(np.uint8).ravel()


def _conv_layer(config, spec, in_shape, *, addresses):
    """The :class:`ConvStreamLayer` of ``spec`` (a :class:`models.capsnet.plan.ConvSpec`) on ``in_shape``, and its
    slab and bias bytes."""
    weights = np.asarray(spec.weights)
    if weights.dtype.kind not in "iu" or weights.ndim != 4 or weights.size and (weights.min() < -128 or
                                                                                 weights.max() > 127):
        raise ValueError(f"layer {spec.name}: weights must be a 4-D int8 array, not {weights.dtype} {weights.shape}")
    kernels, channels, kernel_height, kernel_width = weights.shape
    in_channels, height, width = in_shape
    modules, lanes, rows = config.conv_modules, config.conv_lanes, config.conv_rows
    if channels != in_channels:
        raise ValueError(f"layer {spec.name}: weights take {channels} input channels, the input has {in_channels}")
    if channels != 1 and channels % 2:
        raise ValueError(f"layer {spec.name}: {channels} input channels: the tiles alternate between two slots, "
                         f"so a layer takes one input channel or an even number")
    out_height = (height - kernel_height) // spec.stride + 1
    out_width = (width - kernel_width) // spec.stride + 1
    in_row, out_row = padded_row_bytes(width), padded_row_bytes(out_width)
    blocks, groups = -(-kernels // modules), -(-out_height // rows)
    column_blocks = -(-out_width // lanes)
    limits = ((in_row, config.conv_row_bytes, "input row bytes"), (out_row, config.conv_row_bytes, "output row bytes"),
              (height, config.max_map_rows, "input rows"),
              (kernel_height * kernel_width, config.max_kernel_words, "kernel words"),
              (blocks, config.max_blocks, "channel blocks"))
    for value, limit, what in limits:
        if value > limit:
            raise ValueError(f"layer {spec.name}: {value} {what}, the accelerator takes at most {limit}")
    kernel_words = kernel_height * kernel_width
    padded = np.zeros((blocks * modules, channels, kernel_words), np.int8)
    padded[:kernels] = weights.reshape(kernels, channels, kernel_words)
    slabs = padded.reshape(blocks, modules, channels, kernel_words).transpose(0, 2, 3, 1)   # (b, c, k, m)
    bias = np.zeros(blocks * modules, np.int64)
    if spec.bias is not None:
        bias[:kernels] = np.asarray(spec.bias, np.int64)
    if bias.min() < -(1 << 31) or bias.max() >= 1 << 31:
        raise ValueError(f"layer {spec.name}: biases must be int32")
    image = channels == 1
    passes = groups * column_blocks
    last_rows = out_height - (groups - 1) * rows
    stream = {
        "tiles": blocks if image else blocks * passes * channels, "image": int(image), "channels": channels,
        "passes": passes, "bias_address": addresses["bias"], "bias_beats": blocks * modules,
        "bias_word_beats": modules, "in_address": addresses["input"], "map_bytes": height * in_row,
        "map_beats": height * in_row // BUS_BYTES, "row_beats": in_row // BUS_BYTES, "in_slot_words": height,
        "slab_address": addresses["slabs"], "slab_bytes": kernel_words * modules,
        "slab_beats": kernel_words * modules // BUS_BYTES, "slab_words": kernel_words,
        "slab_word_beats": modules // BUS_BYTES, "out_address": addresses["output"],
        "channel_bytes": out_height * out_row, "group_bytes": rows * out_row,
        "block_bytes": modules * out_height * out_row, "group_beats": rows * out_row // BUS_BYTES,
        "last_group_beats": last_rows * out_row // BUS_BYTES, "out_row_beats": out_row // BUS_BYTES,
        "channel_words": rows, "slot_words": modules * rows, "groups": blocks * groups, "block_groups": groups,
        "column_blocks": column_blocks, "block_channels": modules,
        "last_block_channels": kernels - (blocks - 1) * modules, "last_block_group": (blocks - 1) * groups}
    engine = {"kind": LayerKind.CONV, "channels": channels, "kernel_words": kernel_words, "row_groups": groups,
              "channel_words": rows, "slot_words": modules * rows, "in_base": 0, "shift": spec.shift, "relu": int(spec.relu),
              "in_height": height, "kernel_height": kernel_height, "kernel_width": kernel_width,
              "stride": spec.stride, "out_height": out_height, "out_width": out_width, "out_channels": kernels,
              "channel_blocks": blocks, "column_blocks": column_blocks, "products": channels * kernel_words,
              "column_step": lanes * spec.stride, "weight_base": 0,
              "bias_base": 0, "out_base": 0}
    layer = ConvStreamLayer(name=spec.name, in_shape=tuple(in_shape), out_shape=(kernels, out_height, out_width),
                            kernel=(kernel_height, kernel_width), stride=spec.stride, blocks=blocks,
                            row_groups=groups, column_blocks=column_blocks, tiles=stream["tiles"], stream=stream,
                            engine=engine)
    bias_bytes = bias.astype("<i4").view(np.uint8)
    return layer, slabs.reshape(-1).view(np.uint8), bias_bytes


def _pack(layout, fields):
    word = 0
    for name, field in layout:
        value = fields.get(name, 0)
        if isinstance(value, dict):
            value = _pack(field.shape, value)
        value = int(value)
        if not 0 <= value < 1 << field.width:
            raise ValueError(f"descriptor field {name} must be from 0 to {(1 << field.width) - 1}, not {value}")
        word |= value << field.offset
    return word


def compile_image_stream(config, conv1, primary, digit_weights, *, image_shape, digit_shift, routing_shift):
    """The SDRAM image and descriptors of a CapsNet on ``config``: ``conv1`` and ``primary``
    (:class:`models.capsnet.plan.ConvSpec`), ``digit_weights`` (capsules, J, D, N) int8, the input's
    ``image_shape`` (1, H, W)."""
    if not isinstance(config, CapsNetStreamConfig):
        raise TypeError(f"config must be a CapsNetStreamConfig, not {config!r}")
    conv1_out = ((np.asarray(conv1.weights).shape[0],) +
                 tuple((size - kernel) // conv1.stride + 1
                       for size, kernel in zip(image_shape[1:], np.asarray(conv1.weights).shape[2:])))
    primary_out = ((np.asarray(primary.weights).shape[0],) +
                   tuple((size - kernel) // primary.stride + 1
                         for size, kernel in zip(conv1_out[1:], np.asarray(primary.weights).shape[2:])))
    grid = config.grid
    if primary_out[1:] != (grid, grid) or padded_row_bytes(grid) != config.row_bytes:
        raise ValueError(f"PrimaryCaps gives {primary_out[1]}x{primary_out[2]} maps, the accelerator's grid is "
                         f"{grid}x{grid} with rows of {config.row_bytes} bytes")
    zeros_primary = np.zeros((primary_out[0], grid, grid), np.int8)
    step2 = compile_stream(config, zeros_primary, digit_weights, shift=digit_shift, routing_shift=routing_shift)

    sizes = {"conv1_biases": -(-conv1_out[0] // config.conv_modules) * config.conv_modules * 4,
             "conv1_slabs": 0, "primary_biases": -(-primary_out[0] // config.conv_modules) * config.conv_modules * 4,
             "primary_slabs": 0, "image": 0, "conv1_output": 0}
    # Bases are assigned after the step-2 regions (which compile_stream placed from 0), each on a page.
    base = max(start + size for start, size in step2.regions.values())
    regions = dict(step2.regions)

    def place(name, size):
        nonlocal base
        base = -(-base // PAGE_BYTES) * PAGE_BYTES
        regions[name] = (base, size)
        base += size

    conv1_channels = np.asarray(conv1.weights).shape[1]
    if tuple(image_shape)[0] != conv1_channels:
        raise ValueError(f"conv1 takes {conv1_channels} input channels, the image has {image_shape[0]}")
    place("image", int(np.prod(image_shape[:2])) * padded_row_bytes(image_shape[2]))
    place("conv1_output", conv1_out[0] * conv1_out[1] * padded_row_bytes(conv1_out[2]))
    place("conv1_biases", sizes["conv1_biases"])
    place("primary_biases", sizes["primary_biases"])
    layers, image = [], dict(step2.image)
    for name, spec, in_shape, input_region, output_region in (
            ("conv1", conv1, tuple(image_shape), "image", "conv1_output"),
            ("primary", primary, conv1_out, "conv1_output", "primary")):
        slab_bytes = (-(-np.asarray(spec.weights).shape[0] // config.conv_modules) * config.conv_modules
                      * int(np.prod(np.asarray(spec.weights).shape[1:])))
        place(f"{name}_slabs", slab_bytes)
        addresses = {"bias": regions[f"{name}_biases"][0], "slabs": regions[f"{name}_slabs"][0],
                     "input": regions[input_region][0], "output": regions[output_region][0]}
        layer, slabs, biases = _conv_layer(config, spec, in_shape, addresses=addresses)
        image[f"{name}_slabs"], image[f"{name}_biases"] = slabs, biases
        layers.append(layer)
    image["image"] = np.zeros(regions["image"][1], np.uint8)
    image["conv1_output"] = np.zeros(regions["conv1_output"][1], np.uint8)
    if base > 1 << config.address_bits:
        raise ValueError(f"the SDRAM image ({base} bytes) exceeds the {config.address_bits}-bit address space")

    layout = image_descriptor_layout(config)
    descriptors = tuple(_pack(layout, {"conv": {"stream": layer.stream, "engine": layer.engine}})
                        for layer in layers)
    descriptors += (step2.descriptor, 0)          # the union's members all start at bit 0
    return ImageStreamPlan(config=config, conv_layers=tuple(layers), step2=step2, regions=regions, image=image,
                           descriptors=descriptors)


class _ConvProgramTiming:
    """:class:`hw.capsnet.conv_tile_program.ConvTileProgram` and the engine's steps on the tile port's model: the
    cycle of every command, tile release, group write; see :func:`image_stream_cycles`."""

    def __init__(self, layer, start, port, engine):
        self.layer, self.port, self.engine = layer, port, engine
        stream = layer.stream
        self.stream = stream
        self.loaded = []                 # per tile: the cycle its last load command finished
        self.stored = []                 # per row group: the cycle its last store command finished
        self.free = start + 1            # the first cycle a command can be taken
        self.start = start

    # ---- the engine's side: steps in order, each when its tile is loaded and its staging slot stored --------
    def _advance_engine(self):
        """Run the engine's steps as far as the loads and stores so far allow."""
        engine = self.engine
        while not engine.finished:
            tile = engine.next_tile
            if tile >= len(self.loaded):
                return
            ready = self.loaded[tile] + 1
            group = engine.next_opens_group
            if group is not None and group >= 2:
                if group - 2 >= len(self.stored):
                    return
                ready = max(ready, self.stored[group - 2] + 1)
            engine.run_step(ready)

    def _release_cycle(self, tile):
        self._advance_engine()
        return self.engine.release_cycles[tile] if tile < len(self.engine.release_cycles) else None

    def _written_cycle(self, group):
        self._advance_engine()
        return self.engine.group_written_cycles[group] if group < len(self.engine.group_written_cycles) else None

    def run(self):
        """Time the layer's commands; returns the cycle the program's ``done`` is high."""
        stream, port, layer = self.stream, self.port, self.layer
        if stream["tiles"] == 0:
            return self.start + 1
        tiles, groups = stream["tiles"], stream["groups"]
        bias_loaded = image_loaded = map_loaded = False
        load_channel = load_pass = 0
        map_address, slab_address = stream["in_address"], stream["slab_address"]
        block_slab_address = slab_address
        store_group = store_block_group = store_channel = 0
        block_address = group_address = channel_address = stream["out_address"]
        while True:
            cycle = self.free
            written = self._written_cycle(store_group) if store_group < groups else None
            store_pending = written is not None and written + 1 <= cycle
            want_image = stream["image"] and not image_loaded
            released = self._release_cycle(len(self.loaded) - 2) if len(self.loaded) >= 2 else self.start
            tile_allowed = len(self.loaded) < tiles and released is not None and released + 1 <= cycle
            if store_pending:
                last_block = store_group >= stream["last_block_group"]
                channels = stream["last_block_channels"] if last_block else stream["block_channels"]
                last_group = store_block_group + 1 == stream["block_groups"]
                beats = stream["last_group_beats"] if last_group else stream["group_beats"]
                self.free = port.store(cycle, channel_address, beats) + 1
                store_channel += 1
                channel_address += stream["channel_bytes"]
                if store_channel == channels:
                    self.stored.append(self.free - 1)
                    store_channel, store_group = 0, store_group + 1
                    if last_group:
                        store_block_group = 0
                        block_address += stream["block_bytes"]
                        group_address = channel_address = block_address
                    else:
                        store_block_group += 1
                        group_address += stream["group_bytes"]
                        channel_address = group_address
            elif not bias_loaded:
                self.free = port.load(cycle, stream["bias_address"], stream["bias_beats"]) + 1
                bias_loaded = True
            elif want_image:
                self.free = port.load(cycle, stream["in_address"], stream["map_beats"]) + 1
                image_loaded = True
            elif tile_allowed and not stream["image"] and not map_loaded:
                self.free = port.load(cycle, map_address, stream["map_beats"]) + 1
                map_loaded = True
            elif tile_allowed:
                finished = port.load(cycle, slab_address, stream["slab_beats"])
                self.free = finished + 1
                self.loaded.append(finished)
                map_loaded = False
                slab_address += stream["slab_bytes"]
                if load_channel + 1 == stream["channels"]:
                    load_channel, map_address = 0, stream["in_address"]
                    if stream["image"] or load_pass + 1 == stream["passes"]:     # a block's last pass
                        load_pass, block_slab_address = 0, slab_address
                    else:
                        load_pass, slab_address = load_pass + 1, block_slab_address
                else:
                    load_channel += 1
                    map_address += stream["map_bytes"]
            elif len(self.loaded) == tiles and store_group == groups:
                return self.free                  # done on the cycle after the last command finished
            else:
                waits = [time + 1 for time in (written, released if len(self.loaded) < tiles else None)
                         if time is not None and time + 1 > cycle]
                if not waits:
                    raise RuntimeError(f"layer {layer.name}: the port program and the engine wait for each other "
                                       f"(cycle {cycle})")
                self.free = min(waits)


def image_stream_cycles(plan, start, port):
    """:class:`~models.capsnet.stream_plan.StreamCycles` (every :class:`~hw.capsnet.streaming_accelerator.StreamStep`)
    of a run of ``plan`` (an :class:`ImageStreamPlan`, or a
    :class:`~models.capsnet.stream_plan.StreamPlan` for step 2 and routing alone) STARTed on cycle ``start`` with the
    SDRAM in the state ``port`` (a :class:`~models.shared.tile_port.TilePortModel` that has timed everything before).

    Steps follow the accelerator: step 0 starts on ``start + 1``; a convolution step starting on ``q`` starts its
    engine and its port program on ``q``; the next step starts two cycles after both ended (the engine's ``done``,
    the program's ``done``; a step without tiles ends on ``q + 1``); step 2 and routing are
    :func:`~models.capsnet.stream_plan.stream_cycles` from the cycle step 2 starts, whose counter also counts that
    cycle."""
    conv_layers, step2 = ((), plan) if isinstance(plan, StreamPlan) else (plan.conv_layers, plan.step2)
    read_before, written_before = port.bytes_read, port.bytes_written
    begin, steps = start + 1, []
    for index in range(2):
        layer = conv_layers[index] if conv_layers else None
        if layer is None or layer.tiles == 0:
            end, counters = begin + 1, (0, 0, 2)
        else:
            engine = ConvEngineTiming(layer, modules=plan.config.conv_modules, rows=plan.config.conv_rows,
                                      start=begin)
            program_done = _ConvProgramTiming(layer, begin, port, engine).run()
            end = max(engine.done_cycle, program_done)
            products, stalls, drain = engine.counters
            counters = (products, stalls, drain + end + 1 - engine.done_cycle)     # then the last stores
        steps.append((end + 2 - begin, *counters))
        begin = end + 2
    matvec = stream_cycles(step2, begin, port)
    (cycles, products, stalls, drain), routing = matvec.steps
    steps += [(cycles + 1, products, stalls + 1, drain), routing]
    return StreamCycles(total=matvec.end - start, steps=tuple(steps), end=matvec.end,
                             bytes_read=port.bytes_read - read_before, bytes_written=port.bytes_written - written_before)
