"""Seeded samplers of nnaccel's RTL family (``dse.rtl.hardware``): configurations, the networks its compiler accepts
and the mappings the hardware runs.

Mappings (:class:`models.dqn.mapping.DqnMapping`): per layer, the output positions cut into segments, each with its
column blocks (positions per group) and, for a single position, a K-split over idle modules; the passes in any
order (docs/dse.md, "The RTL family").
"""

import numpy as np

from nnaccel.dse.rtl.hardware import RTL_SPACE, config_from_json
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import ConvLayer, DenseLayer
from nnaccel.models.dqn.plan import check_segment, compile_network, layer_shapes

__all__ = ["block_choices", "sample_config", "sample_network", "sample_layer_mapping", "sample_mapping",
           "random_weights"]


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
    """float32 weights and biases, uniform in +-1 (a seeded generator per network)."""
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
             rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]


def _draw_network(rng, config, max_size):
    size = int(rng.integers(3, max_size + 1))
    channels = int(rng.integers(1, 4))
    outputs_limit = config.modules * config.lanes
    layers = []
    for index in range(int(rng.integers(0, 3))):
        kernel = int(rng.integers(1, min(4, size) + 1))
        stride = int(rng.integers(1, 3))
        out_channels = int(rng.integers(1, min(outputs_limit, 8) + 1))
        layer = ConvLayer(f"c{index + 1}", channels, size, out_channels, kernel, stride)
        layers.append(layer)
        channels, size = out_channels, layer.out_size
    inputs = channels * size * size
    for index in range(int(rng.integers(1, 3))):
        outputs = int(rng.integers(1, min(outputs_limit, 12) + 1))
        layers.append(DenseLayer(f"d{index + 1}", inputs, outputs))
        inputs = outputs
    last = layers[-1]
    layers[-1] = DenseLayer(last.name, last.inputs, last.outputs, relu=False)
    return tuple(layers)


def sample_network(rng, config, *, max_size=10, tries=200):
    """A small random network the compiler accepts on ``config`` with its default mapping: 0..2 convolutions
    (1..3 input channels, kernels 1..4, strides 1..2) then 1..2 dense layers, the last without ReLU."""
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


def block_choices(config, shape):
    """The column blocks a segment of ``shape`` may use on ``config``: powers of two from the fewest that hold its
    output channels up to the modules."""
    blocks, choices = shape.min_column_blocks, []
    while blocks <= config.modules:
        choices.append(blocks)
        blocks *= 2
    return choices


def _sample_segment(rng, config, shape, first, count, *, split=True):
    """Positions ``first .. first + count - 1`` with random legal column blocks (``C = modules``, one position
    per group, always runs), a single position K-split 80 % of the time where a split fits."""
    options = [Segment(first, count, blocks) for blocks in block_choices(config, shape)]
    if split and count == 1 and rng.random() < 0.8:
        splits = [Segment(first, 1, blocks, chunks) for blocks in block_choices(config, shape)
                  for chunks in range(2, shape.kernel_width + 1)]
        options = [segment for segment in splits if _runs(config, shape, segment)] or options
    options = [segment for segment in options if _runs(config, shape, segment)]
    return options[int(rng.integers(len(options)))]


def sample_layer_mapping(rng, config, shape, *, max_passes):
    """A random legal mapping of one layer with at most ``max_passes`` passes: 1..3 segments (cut at random
    positions, the last position cut off alone half the time), random legal column blocks, a random K-split of
    single-position segments where one fits, the segments in random order."""
    positions = shape.positions
    cuts = set()
    if positions > 1:
        wanted = int(rng.integers(0, min(2, positions - 1) + 1))
        if wanted and rng.random() < 0.5:
            cuts.add(positions - 1)
        while len(cuts) < wanted:
            cuts.add(int(rng.integers(1, positions)))
    bounds = [0, *sorted(cuts), positions]
    chosen = [_sample_segment(rng, config, shape, first, end - first) for first, end in zip(bounds, bounds[1:])]
    # Over the pass budget: undo K-splits first (each saves a pass), then run the layer as one segment.
    for index, segment in enumerate(chosen):
        if sum(item.passes for item in chosen) > max_passes and segment.split > 1:
            chosen[index] = Segment(segment.first, 1, segment.column_blocks)
    if len(chosen) > max_passes:
        chosen = [_sample_segment(rng, config, shape, 0, positions, split=False)]
    order = rng.permutation(len(chosen))
    return LayerMapping(tuple(chosen[index] for index in order))


def sample_mapping(rng, config, layers, *, tries=100):
    """A random :class:`DqnMapping` of ``layers`` that compiles on ``config``: within its descriptor table, its
    weight RAM (segments with different column blocks have their own weight rows) and activation RAMs (partial
    sums)."""
    shapes = layer_shapes(config, layers)
    weights = random_weights(layers, 0)
    for _ in range(tries):
        spare = config.max_layers - len(shapes)
        chosen = []
        for shape in shapes:
            chosen.append(sample_layer_mapping(rng, config, shape, max_passes=1 + max(spare, 0)))
            spare -= chosen[-1].passes - 1
        mapping = DqnMapping(tuple(chosen))
        try:
            compile_network(config, layers, weights, mapping=mapping)
        except ValueError:
            continue
        return mapping
    raise RuntimeError(f"no mapping of {len(layers)} layers compiles on {config.module_name} in {tries} draws")
