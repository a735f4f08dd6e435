"""Seeded samplers of nnaccel's RTL family (``dse.rtl.hardware``): configurations, the networks its compiler accepts
and the mappings the hardware runs.

Mappings (:class:`models.dqn.mapping.DqnMapping`): per layer, the output positions cut into segments, each with its
column blocks (positions per group) and, for a single position, a K-split over idle modules; the passes in any
order (docs/dse.md, "The RTL family").
"""

import numpy as np

from nnaccel.dse.rtl.hardware import RTL_SPACE, config_from_json
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer
from nnaccel.models.dqn.plan import check_segment, compile_network, layer_shapes, min_column_blocks, with_copy_passes

__all__ = ["block_choices", "sample_config", "sample_network", "sample_layer_mapping", "sample_mapping",
           "sample_case", "NoMappingFound", "random_weights"]


def sample_config(rng, *, space=RTL_SPACE, **fixed):
    """A random :class:`DqnConfig` of ``space``; keyword arguments fix fields (``fmt`` by name)."""
    def pick(choices):
        return choices[int(rng.integers(len(choices)))]

    fields = {"modules": pick(space.modules), "lanes": pick(space.lanes), "fmt": pick(space.formats),
              "multiplier_latency": pick(space.multiplier_latencies), "adder_latency": pick(space.adder_latencies),
              "row_elements": pick(space.row_elements), "activation_depth": pick(space.activation_depths),
              "weight_depth": pick(space.weight_depths), "max_layers": pick(space.max_layers)}
    fields.update(fixed)
    return config_from_json(fields)


def random_weights(layers, seed):
    """float32 weights and biases, uniform in +-1 (a seeded generator per network); a max pool's are 1.0 and -inf
    (what the importer gives it: the largest product is the largest input)."""
    rng = np.random.default_rng(seed)

    def weights(layer):
        if layer.weight_shape is None:
            return None, None
        if getattr(layer, "maximum", False):
            return (np.ones(layer.weight_shape, np.float32), np.full(layer.weight_shape[-1], -np.inf, np.float32))
        return (rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32))

    return [weights(layer) for layer in layers]


def _draw_side(rng, limit):
    return int(rng.integers(3, limit + 1))


def _draw_conv(rng, config, name, channels, height, width):
    """A convolution over ``channels x height x width``: kernels 1..4 and strides 1..2 per axis, zero padding on
    each side (at most the kernel's size less one, the left one at most ``pad_columns``) 60 % of the time, up to
    twice as many output channels as the modules' lanes hold (channel tiles); on a configuration with the max mode,
    40 % of the time a max pool of the same geometry instead."""
    kernel = (int(rng.integers(1, min(4, height) + 1)), int(rng.integers(1, min(4, width) + 1)))
    stride = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    padding = 0
    if rng.random() < 0.6:
        padding = (int(rng.integers(0, kernel[0])), int(rng.integers(0, kernel[0])),
                   int(rng.integers(0, min(kernel[1] - 1, config.pad_columns) + 1)), int(rng.integers(0, kernel[1])))
    if config.max_pooling and rng.random() < 0.4:                   # a max pool: depthwise, the modules' max mode
        return ConvLayer(name, channels, (height, width), channels, kernel, stride, relu=False, padding=padding,
                         groups=channels, maximum=True)
    if channels > 1 and rng.random() < 0.25:                        # depthwise: one group per channel
        return ConvLayer(name, channels, (height, width), channels, kernel, stride, padding=padding, groups=channels)
    out_channels = int(rng.integers(1, min(2 * config.modules * config.lanes, 12) + 1))
    return ConvLayer(name, channels, (height, width), out_channels, kernel, stride, padding=padding)


def _residual_block(rng, channels, height, width):
    """Two shape-keeping convolutions (kernels 1..3 per axis, stride 1, padded SAME) and the add of
    the block's input: the input and the second convolution's output share an activation RAM."""
    kernel = (int(rng.integers(1, min(3, height) + 1)), int(rng.integers(1, min(3, width) + 1)))
    padding = ((kernel[0] - 1) // 2, kernel[0] // 2, (kernel[1] - 1) // 2, kernel[1] // 2)
    return [ConvLayer(f"r{index + 1}", channels, (height, width), channels, kernel, 1, relu=index == 0,
                      padding=padding) for index in range(2)]


def _strided_block(channels, height, width):
    """A ResNet downsampling block: a 3x3 stride-2 convolution (padded 1) to twice the channels, a 3x3 one, and a 1x1
    stride-2 shortcut convolution of the block's input (its ``source``), added: the compiler's copy pass moves the
    shortcut into the other path's RAM."""
    wide = 2 * channels
    first = ConvLayer("s1", channels, (height, width), wide, 3, 2, padding=1)
    out = (first.out_height, first.out_width)
    return [first, ConvLayer("s2", wide, out, wide, 3, 1, padding=1, relu=False),
            ConvLayer("shortcut", channels, (height, width), wide, 1, 2, relu=False, source=""),
            AddLayer("add", skip="shortcut", source="s2")]


def _separable_block(rng, channels, height, width, slots):
    """A depthwise-separable block (MobileNet's, DS-CNN's): a 1x1 expansion to 2..6 channels (a multiple of the flat
    map's ``slots``), a depthwise convolution with a 3x3, 3x2 or 2x3 kernel padded SAME, of stride 1 or (40 %, a 3 x 3
    kernel, maps of 3 x 3 or more) stride 2 (TFLite's SAME: padded unevenly where a side is even), a 1x1 projection
    to 1..6 channels: on a configuration with the flat map its depthwise layer takes the flat pass where the compiler
    predicts it faster."""
    middle, out_channels = int(rng.integers(2, 7)), int(rng.integers(1, 7))
    middle = max(slots, middle - middle % slots)
    kernel = [(3, 3), (3, 2), (2, 3)][int(rng.integers(3))]
    padding = ((kernel[0] - 1) // 2, kernel[0] // 2, (kernel[1] - 1) // 2, kernel[1] // 2)
    stride = 1
    if height >= 3 and width >= 3 and rng.random() < 0.4:
        kernel, stride = (3, 3), 2
        padding = (height % 2, 1, width % 2, 1)        # SAME: one row above and below if odd, one below if even
    depthwise = ConvLayer("depthwise", middle, (height, width), middle, kernel, stride, padding=padding, groups=middle)
    return [ConvLayer("expand", channels, (height, width), middle, 1, 1), depthwise,
            ConvLayer("project", middle, (depthwise.out_height, depthwise.out_width), out_channels, 1, 1)]


def _draw_network(rng, config, max_size):
    channels, height, width = int(rng.integers(1, 4)), _draw_side(rng, max_size), _draw_side(rng, max_size)
    outputs_limit = min(2 * config.modules * config.lanes, 12)
    layers = []
    draw = rng.random()
    if config.flat_slots and draw < 0.6:                            # the flat map's configurations: its block
        if rng.random() < 0.5:                                      # a convolution writing its input (second grid)
            first = _draw_conv(rng, config, "c0", channels, height, width)
            if first.out_height >= 2 and first.out_width >= 2 and not first.maximum:
                layers.append(first)
                channels, height, width = first.out_channels, first.out_height, first.out_width
        layers += _separable_block(rng, channels, height, width, config.flat_slots)
        channels, height, width = layers[-1].out_channels, layers[-1].out_height, layers[-1].out_width
    elif draw < 0.25:
        layers += _residual_block(rng, channels, height, width) + [AddLayer("add", skip="")]
    elif draw < 0.4 and height >= 3 and width >= 3 and not config.flat_slots:
        layers += _strided_block(channels, height, width)
        channels, height, width = 2 * channels, layers[0].out_height, layers[0].out_width
    for index in range(int(rng.integers(0, 3 - len(layers) // 3))):
        layer = _draw_conv(rng, config, f"c{index + 1}", channels, height, width)
        layers.append(layer)
        channels, height, width = layer.out_channels, layer.out_height, layer.out_width
    inputs = channels * height * width
    for index in range(int(rng.integers(1, 3))):
        outputs = int(rng.integers(1, outputs_limit + 1))
        layers.append(DenseLayer(f"d{index + 1}", inputs, outputs))
        inputs = outputs
    last = layers[-1]
    layers[-1] = DenseLayer(last.name, last.inputs, last.outputs, relu=False)
    return tuple(layers)


def sample_network(rng, config, *, max_size=10, tries=200):
    """A small random network the compiler accepts on ``config`` with its default mapping: a quarter of the time
    a residual block first (two convolutions and the add of the network input), 15 % a downsampling block with a
    1x1 stride-2 shortcut convolution (a graph, with a copy pass), then 0..2 convolutions (1..3 input channels,
    rectangular images, kernels 1..4 and strides 1..2 per axis, zero padding per side; a quarter of them
    depthwise, with the max mode 40 % max pools) and 1..2 dense layers, the last without ReLU; layers may have more
    output channels than ``modules x lanes`` (channel tiles).  With the flat map, 60 % of the networks start with a
    depthwise-separable block instead of the residual or downsampling one, half of them after a convolution."""
    for _ in range(tries):
        layers = _draw_network(rng, config, min(max_size, config.row_elements))
        try:
            compile_network(config, layers, random_weights(layers, 0))
        except ValueError:
            continue
        return layers
    raise RuntimeError(f"no network the compiler accepts on {config.module_name} in {tries} draws")


# ---- Mappings -----------------------------------------------------------------------------------------------

def _runs(config, shape, segment):
    try:
        check_segment(config, shape, segment)
    except ValueError:
        return False
    return True


def block_choices(config, shape, tile=0):
    """The column blocks a segment of channel tile ``tile`` of ``shape`` may use on ``config``: powers of two from
    the fewest that hold the tile's output channels up to the modules."""
    blocks, choices = min_column_blocks(config, shape.tile_channels(tile)[1]), []
    while blocks <= config.modules:
        choices.append(blocks)
        blocks *= 2
    return choices


def _sample_segment(rng, config, shape, first, count, tile, *, split=True):
    """Positions ``first .. first + count - 1`` of channel tile ``tile`` with random legal column blocks (``C =
    modules``, one position per group, always runs), a single position K-split 80 % of the time where a split
    fits."""
    choices = block_choices(config, shape, tile)
    options = [Segment(first, count, blocks, tile=tile) for blocks in choices]
    if split and count == 1 and rng.random() < 0.8:
        splits = [Segment(first, 1, blocks, chunks, tile) for blocks in choices
                  for chunks in range(2, 2 * shape.kernel_width + 1)]
        options = [segment for segment in splits if _runs(config, shape, segment)] or options
    options = [segment for segment in options if _runs(config, shape, segment)]
    return options[int(rng.integers(len(options)))]


def _sample_tile_segments(rng, config, shape, tile, max_passes):
    positions = shape.positions
    cuts = set()
    if positions > 1:
        wanted = int(rng.integers(0, min(2, positions - 1) + 1))
        if wanted and rng.random() < 0.5:
            cuts.add(positions - 1)
        while len(cuts) < wanted:
            cuts.add(int(rng.integers(1, positions)))
    bounds = [0, *sorted(cuts), positions]
    chosen = [_sample_segment(rng, config, shape, first, end - first, tile) for first, end in zip(bounds, bounds[1:])]
    # Over the pass budget: undo K-splits first (each saves a pass), then run the tile as one segment.
    for index, segment in enumerate(chosen):
        if sum(item.passes for item in chosen) > max_passes and segment.split > 1:
            chosen[index] = Segment(segment.first, 1, segment.column_blocks, tile=tile)
    if len(chosen) > max_passes:
        chosen = [_sample_segment(rng, config, shape, 0, positions, tile, split=False)]
    return chosen


def sample_layer_mapping(rng, config, shape, *, max_passes):
    """A random legal mapping of one layer with at most ``max_passes`` passes (if its channel tiles leave room):
    per channel tile 1..3 segments (cut at random positions, the last position cut off alone half the time),
    random legal column blocks, a random K-split of single-position segments where one fits; the segments of all
    tiles in random order.  A flat pass runs as one pass; a layer with a second output grid one segment per tile."""
    if shape.flat_pass:                     # all positions of every channel in one pass
        return LayerMapping((Segment(0, shape.positions, 1),))
    if shape.write_grid:                    # a second output grid: walked from position 0, one segment per tile
        return LayerMapping(tuple(_sample_segment(rng, config, shape, 0, shape.positions, tile, split=False)
                                  for tile in range(shape.tiles)))
    chosen = []
    for tile in range(shape.tiles):
        budget = max(1, max_passes - sum(segment.passes for segment in chosen) - (shape.tiles - 1 - tile))
        chosen.extend(_sample_tile_segments(rng, config, shape, tile, budget))
    order = rng.permutation(len(chosen))
    return LayerMapping(tuple(chosen[index] for index in order))


def sample_mapping(rng, config, layers, *, tries=100):
    """A random :class:`DqnMapping` of ``layers`` that compiles on ``config``: within its descriptor table, its
    weight RAM (segments with different column blocks have their own weight rows) and activation RAMs (partial
    sums); the mapping covers the copy passes the compiler inserts (``models.dqn.plan.with_copy_passes``)."""
    shapes = layer_shapes(config, with_copy_passes(config, layers)[0])
    weights = random_weights(layers, 0)
    for _ in range(tries):
        spare = config.max_layers - sum(shape.tiles for shape in shapes)
        chosen = []
        for shape in shapes:
            chosen.append(sample_layer_mapping(rng, config, shape, max_passes=shape.tiles + max(spare, 0)))
            spare -= chosen[-1].passes - shape.tiles
        mapping = DqnMapping(tuple(chosen))
        try:
            compile_network(config, layers, weights, mapping=mapping)
        except ValueError:
            continue
        return mapping
    raise NoMappingFound(f"no mapping of {len(layers)} layers compiles on {config.module_name} in {tries} draws")


class NoMappingFound(RuntimeError):
    """:func:`sample_mapping` drew no mapping that compiles (the network compiles with the compiler's mapping)."""


def sample_case(rng, config, *, max_size=10, networks=8):
    """A random network (:func:`sample_network`) and a random mapping of it (:func:`sample_mapping`) that compile on
    ``config``: ``(layers, mapping)``.  A network of which no random mapping compiles (say, column blocks beyond the
    compiler's put more weight rows than the RAM holds) gives way to another, drawn on smaller images (``max_size``
    less one a draw, 3 at least); after ``networks`` such draws the last network takes the compiler's mapping,
    which compiles (:func:`sample_network` checked it)."""
    for draw in range(networks):
        layers = sample_network(rng, config, max_size=max(3, max_size - draw))
        try:
            return layers, sample_mapping(rng, config, layers)
        except NoMappingFound:
            continue
    return layers, compile_network(config, layers, random_weights(layers, 0)).mapping
