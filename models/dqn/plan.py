"""The layer compiler of the DQN accelerator: a network of conv / dense layers and a mapping -> descriptors, weight
image, placement and the predicted counters of every pass.

:func:`compile_network` runs every layer the way its :class:`models.dqn.mapping.DqnMapping` says (by default
:func:`default_mapping`: the mapping of docs/dqn_accelerator.md, "Mapping a layer", with the K-splits that pay)
and returns a :class:`Plan`: per pass the descriptor (fields and encoded word), the weight RAM image the host
loads, where each activation tensor lives, the work the pass does and the four counters the hardware will read
back (:mod:`models.dqn.timing`).  Every size comes from the :class:`hw.dqn.config.DqnConfig` the hardware is
built from; every constraint of the hardware is checked here with an error that names the layer and the
broken constraint (:func:`check_mapping` for the mapping's).

Number format.  Weights, biases and network inputs are given as float32 and rounded to the configuration's
format (``config.fmt``: binary32, bfloat16, binary16) to nearest even by
:func:`models.shared.float_arith.from_binary32`; everything the hardware computes then stays in that format.

Placement.  A network is a graph: each layer reads the output of its ``source`` (the previous layer by default,
``""`` the network input), an add two named outputs.  The network input is an image ``[C, H, W]`` in activation
RAM ``input_ram`` (a first dense layer reads its ``N`` inputs in packed layout).  Every tensor gets a RAM
(:func:`assign_rams`: a convolution or dense pass reads one RAM and writes the other, an add reads both addends
from one RAM and writes either; where no assignment exists a copy pass is inserted) and words by its lifetime,
from the pass that writes it to the last pass that reads it: each tensor takes the lowest words of its RAM that
no tensor live at the same time holds, so later tensors overwrite dead ones (:attr:`Plan.overwritten` names
them; ``allocation="keep"`` never reuses a word, so the host can read back every layer's output).  A dense
layer's packed output takes words no tensor of the run used (its last word's padding must read ``+0``); the
network output lives to the end of the run.  For the thesis network: RAM1 @0, RAM0 @0, RAM1 @320, RAM0 @336.

Layouts.  A convolution writes an image ``[Cout, out_h, out_w]`` (row ``y`` of channel ``c`` at word
``base + c*out_h + y``).  A dense layer writes packed outputs (output ``n`` at word ``base + n // lanes``,
element ``n % lanes``): the image ``[ceil(N/lanes), 1, lanes]``.  The result writer stores only outputs
``n < N``: the padding elements of the last word keep the RAM's initial ``+0`` (no other tensor of the run is
placed there), and the golden model reads them as ``+0``.  A grouped convolution runs in channel tiles of whole
groups; a tile's pass reads only its groups' input channels (``in_base`` at the first one's row word) with a
block-diagonal slice of the weights (``in_channels / groups * Kh * Kw`` non-zero products per output of the
pass's ``tile_inputs * Kh * Kw``).  A dense layer after a convolution reads the convolution's image
with kernel ``H x W`` (weight index ``(c*H + y)*W + x``, the flattening order of the weights); after a dense
layer it reads the packed image with kernel ``1 x lanes``, the weights of the padding elements being zero.

Passes (:func:`pass_shapes`).  Each segment of a layer's mapping is one pass over its positions, or, split
``S`` ways (a single position), a partial-sum pass and a reduction pass (docs/dqn_accelerator.md, "Splitting a
layer"): the position's kernel columns are cut into ``S`` chunks of ``w = Kw / S`` columns; chunk ``q`` runs on
group position ``q`` as a ``Kh x w`` convolution at stride ``w`` (position ``q`` of that grid reads input
columns ``ox*stride + q*w ..``); or (:func:`split_chunk`: ``S`` does not divide ``Kw``) the kernel's two row halves
times ``S / 2`` column chunks run as a ``Kh/2 x w`` convolution at strides ``Kh/2 x w`` on a grid ``S / 2`` wide,
the halves on the group's two rows.  The partial sums are written position-major into the layer's output RAM after
the tensors placed so far; the reduction adds them and the bias into the layer's output.

Weight image.  A pass's weights start at its ``weight_base``: word ``k`` (``k = (c*Kh + kh)*Kw + kw``) holds, in
slot ``m`` (elements ``m*lanes .. m*lanes + lanes - 1``), the weights of output channels ``(m % C)*lanes ..`` for
step ``k``; word ``weight_base + products`` is the bias row in the same slots.  Channels past the layer's
output count are zero.  Passes of one layer over positions with the same ``C`` share their rows.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.descriptor import descriptor_bits, encode_descriptor
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.hw.shared.float_format import BINARY32
from nnaccel.models.dqn.flat_map import (flat_descriptor_fields, flat_layer, flat_pass_fits, flat_pass_rows,
                                         flat_view, flat_words, maps_per_slot)
from nnaccel.models.dqn.handoff import start_delay
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import WEIGHT_KEYS, AddLayer, ConvLayer, DenseLayer
from nnaccel.models.dqn.timing import LAYOUTS, pass_counters
from nnaccel.models.shared.float_arith import from_binary32

__all__ = ["Tensor", "LayerPlan", "Plan", "LayerShape", "PassShape", "SPLIT_MODES", "TILING_MODES", "ALLOCATION_MODES",
           "compile_network", "assign_rams", "with_copy_passes",
           "check_config", "layer_shapes", "pass_shapes", "pass_timing", "pass_handoffs", "output_offset",
           "tensor_words", "reads_previous", "check_mapping",
           "check_segment", "split_chunk",
           "default_mapping", "group_column_blocks", "group_positions", "group_rows", "min_column_blocks", "pass_note",
           "network_weights",
           "pack_image", "unpack_image"]

SPLIT_MODES = ("auto", "always", "never")
TILING_MODES = ("widest", "fastest")
ALLOCATION_MODES = ("lifetimes", "keep")
COUNTERS = ("cycles", "product_cycles", "stall_cycles", "drain_cycles")


@dataclass(frozen=True)
class Tensor:
    """An activation tensor in one activation RAM: ``shape = (channels, height, width)`` at word ``base``.

    ``packed``: the tensor holds packed outputs (``width == lanes``, element ``n`` of the flat vector at word
    ``base + n // lanes``, element ``n % lanes``); ``elements`` counts the meaningful ones (the rest of the
    last word is padding).  ``flat``: ``(H, W)`` of a map in flat layout (``shape`` is then its flat view ``(C,
    ceil(H*W / row_elements), row_elements)``: models/dqn/flat_map.py); ``()`` otherwise.
    """

    ram: int
    base: int
    shape: tuple
    packed: bool
    elements: int
    flat: tuple = ()

    @property
    def words(self):
        channels, height, _ = self.shape
        return channels * height

    def describe(self):
        layout = "packed" if self.packed else f"flat {self.flat[0]}x{self.flat[1]}" if self.flat else "image"
        return f"RAM{self.ram} @{self.base} {layout} [{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class LayerPlan:
    """One pass of the hardware: one descriptor (see the module docstring for the mapping).  A network layer is
    one pass, or several when its mapping has several segments or splits one (``network_layer`` names it)."""

    name: str
    network_layer: str
    descriptor: dict          # field -> value, as hw.dqn.descriptor names them
    encoded: int              # encode_descriptor(config, **descriptor)
    input: Tensor
    output: Tensor
    column_blocks: int        # C: lanes-wide channel blocks; P = modules // C output positions per group
    positions_per_group: int
    groups: int
    out_channels: int
    ideal_macs: int           # multiply-accumulates of the network layer done here (no padding, no bias)
    predicted: dict           # the pass's counters as the hardware will count them (models.dqn.timing)
    weight_words: np.ndarray  # (products + 1, modules * lanes) raw bits: the pass's weight RAM rows, bias last
    first_channel: int = 0    # the pass's channel tile: output channels first_channel .. + out_channels - 1
    note: str = ""            # why the pass leaves modules idle, for the report (pass_note); "" if it does not

    @property
    def reduce(self):
        return bool(self.descriptor["reduce"])

    @property
    def products(self):
        return self.descriptor["products"]

    @property
    def cycles_per_group(self):
        """Products each module accumulates per group (the bias is the accumulation's seed: no product)."""
        return self.products

    @property
    def product_cycles(self):
        """Cycles the matrix modules take a product: ``groups * products``, the layer's minimum time."""
        return self.groups * self.cycles_per_group

    @property
    def estimated_cycles(self):
        """The pass's cycles (set-up, products, stalls, drain): its cycle counter, predicted."""
        return self.predicted["cycles"]


@dataclass(frozen=True)
class Plan:
    """A compiled network: descriptors, weight image and placement for one :class:`DqnConfig` and mapping."""

    config: DqnConfig
    mapping: DqnMapping
    layers: tuple
    weight_image: np.ndarray  # (words, modules * lanes) raw bits: what the host writes to weight RAM words 0..
    network_input: Tensor = None  # where the host writes the network input
    tensors: dict = None      # tensor name (a layer's, "" the input, "<pass> partial sums") -> Tensor
    overwritten: tuple = ()   # names of the tensors a later tensor overwrites (not readable after the run)
    network: tuple = ()       # the layers compiled, with the copy passes the compiler inserted

    @property
    def input(self):
        return self.network_input

    @property
    def input_shape(self):
        """The network input's shape ``(C, H, W)`` (a map in flat layout: its map's, not its view's)."""
        channels = self.input.shape[0]
        return (channels, *self.input.flat) if self.input.flat else self.input.shape

    @property
    def activation_words(self):
        """Words each activation RAM holds at most: ``(RAM 0, RAM 1)``."""
        tops = [0, 0]
        for tensor in self.tensors.values():
            tops[tensor.ram] = max(tops[tensor.ram], tensor.base + tensor.words)
        return tuple(tops)

    @property
    def output(self):
        return self.layers[-1].output

    @property
    def actions(self):
        """Outputs of the last layer (the Q-values): a channel-tiled layer's last tile holds its highest channels."""
        last = self.layers[-1]
        return last.first_channel + last.out_channels

    @property
    def argmax_passes(self):
        """The passes whose outputs feed the argmax (descriptor bit ``last``), in run order."""
        return [layer for layer in self.layers if layer.descriptor["last"]]

    @property
    def descriptors(self):
        return [layer.encoded for layer in self.layers]

    @property
    def estimated_cycles(self):
        return sum(layer.estimated_cycles for layer in self.layers)

    @property
    def notes(self):
        """The passes' notes (modules left idle, and why), in pass order."""
        return [layer.note for layer in self.layers if layer.note]

    def input_words(self, state):
        """The activation words (``(words, row_elements)`` raw bits of the format) of one network input (float32)."""
        state = np.asarray(state)
        channels, height, width = self.input.shape
        if self.input.flat:                    # the map's positions in raster order over the channel's words
            if state.shape != (channels, *self.input.flat):
                raise ValueError(f"the network input must have shape {(channels, *self.input.flat)}, not {state.shape}")
            state = flat_words(state, width)
        if self.input.packed:
            if state.dtype != np.float32 or state.size != self.input.elements:
                raise ValueError(f"the network input must be {self.input.elements} float32 values, "
                                 f"not {state.size} {state.dtype}")
            flat = np.zeros(channels * width, np.float32)
            flat[:self.input.elements] = state.reshape(-1)
            state = flat.reshape(channels, height, width)
        if state.shape != (channels, height, width):
            raise ValueError(f"the network input must have shape {(channels, height, width)}, not {state.shape}")
        return pack_image(state, self.config.row_elements, self.config.fmt)

    def output_values(self, words):
        """The last layer's outputs (raw bits, ``(actions,)``) from its words (``(words, row_elements)``)."""
        values = unpack_image(self.output, words)
        if self.output.flat:                   # each channel's map, without the last word's elements past it
            values = values.reshape(values.shape[0], -1)[:, :self.output.flat[0] * self.output.flat[1]]
        return values.reshape(-1)[:self.output.elements]


def pack_image(image, row_elements, fmt=BINARY32):
    """``image [C, H, W]`` (float32) as activation words of ``fmt``: ``(C*H, row_elements)`` raw bits rounded to
    the format, zeros past ``W``."""
    image = np.asarray(image)
    if image.dtype != np.float32:
        raise ValueError(f"activations must be float32, not {image.dtype}")
    channels, height, width = image.shape
    if width > row_elements:
        raise ValueError(f"an image row of {width} elements does not fit a word of {row_elements}")
    words = np.zeros((channels * height, row_elements), np.uint32)
    words[:, :width] = from_binary32(fmt, image.reshape(channels * height, width))
    return words


def unpack_image(tensor, words):
    """The tensor ``[C, H, W]`` as raw bits from its words (``(words, row_elements)``, starting at its base)."""
    channels, height, width = tensor.shape
    words = np.asarray(words)
    if words.ndim != 2 or words.shape[0] < tensor.words or words.shape[1] < width:
        raise ValueError(f"{tensor.describe()} needs ({tensor.words}, >= {width}) words, got {words.shape}")
    return words[:tensor.words, :width].reshape(channels, height, width)


def network_weights(layers, weights):
    """``[(weight, bias), ...]`` per layer from a sequence of pairs or a dict of the models.dqn.network layout."""
    if isinstance(weights, Mapping):
        keys = [key[:-2] for key in WEIGHT_KEYS[::2]]
        if len(layers) > len(keys):
            raise ValueError(f"a weights dict names {len(keys)} layers ({', '.join(keys)}); "
                             f"pass a list of (weight, bias) pairs for {len(layers)} layers")
        missing = [f"{key}{part}" for key in keys[:len(layers)] for part in ("_w", "_b")
                   if f"{key}{part}" not in weights]
        if missing:
            raise ValueError(f"weights are missing {', '.join(missing)}")
        return [(weights[f"{key}_w"], weights[f"{key}_b"]) for key in keys[:len(layers)]]
    pairs = list(weights)
    if len(pairs) != len(layers):
        raise ValueError(f"{len(layers)} layers need {len(layers)} (weight, bias) pairs, not {len(pairs)}")
    return pairs


# ---- Layer shapes: each network layer as the convolution the hardware runs ----------------------------------

@dataclass(frozen=True)
class LayerShape:
    """A network layer as a convolution over the tensor it reads (a dense layer: kernel = the whole input).

    ``in_shape`` / ``out_shape`` are the tensors as they lie in the activation RAMs (a dense layer's output is
    packed: ``[ceil(N / lanes), 1, lanes]``); ``stride`` is ``(stride_y, stride_x)``, ``padding`` ``(top, bottom,
    left, right)``.  A layer with more output channels than ``modules * lanes`` runs in channel *tiles* of at
    most that many (:meth:`tile_channels`); ``min_column_blocks`` is the smallest power of two ``C`` with ``C *
    lanes >=`` the first tile's channels."""

    name: str
    dense: bool
    in_shape: tuple
    in_packed: bool
    in_elements: int
    kernel_height: int
    kernel_width: int
    stride: tuple
    padding: tuple
    out_height: int
    out_width: int
    out_channels: int
    out_shape: tuple
    relu: bool
    min_column_blocks: int
    tile_size: int
    add: bool = False         # a residual add (AddLayer): out_height = C*H row words, out_channels = W elements
    skip: str = ""            # its second addend: the output of this layer ("" = the network input)
    source: str = ""          # the tensor it reads (an add: its first addend): that layer's output, "" the input
    groups: int = 1           # a grouped convolution: a channel tile reads only its groups' input channels
    maximum: bool = False     # a max pool: one channel per tile, the modules' max mode
    flat: tuple = ()          # (H, W): it reads a map of H x W in flat layout (in_shape: its view)
    write_grid: tuple = ()    # (rows, width): the writer's second output grid (out_shape: a flat view or an image)
    flat_out: tuple = ()      # (H, W): it writes a map of H x W in flat layout (out_shape: its view)

    @property
    def positions(self):
        return self.flat[0] * self.flat[1] if self.flat and not self.dense else self.out_height * self.out_width

    @property
    def flat_pass(self):
        """A depthwise layer run by the flat pass (hw/dqn/flat_stepper.py)."""
        return bool(self.flat) and self.groups > 1

    @property
    def tiles(self):
        """Channel tiles: passes over slices of ``tile_size`` output channels (one for most layers)."""
        return -(-self.out_channels // self.tile_size)

    def tile_channels(self, tile):
        """``(first output channel, channels)`` of channel tile ``tile``."""
        first = tile * self.tile_size
        return first, min(self.tile_size, self.out_channels - first)

    def tile_inputs(self, tile):
        """``(first input channel, channels)`` that channel tile ``tile`` reads: all of them, or (a grouped
        convolution, whose tiles hold whole groups) its groups' own."""
        if self.groups == 1:
            return 0, self.in_shape[0]
        first, channels = self.tile_channels(tile)
        per_output = self.in_shape[0] // self.groups, self.out_channels // self.groups
        return first // per_output[1] * per_output[0], channels // per_output[1] * per_output[0]

    @property
    def products(self):
        """Products per output of the first channel tile (an add: its 2 addends)."""
        return 2 if self.add else self.tile_inputs(0)[1] * self.kernel_height * self.kernel_width

    @property
    def out_elements(self):
        return self.out_channels * (1 if self.dense else self.positions)


def min_column_blocks(config, out_channels):
    """Smallest power of two ``C`` with ``C * lanes >= out_channels`` (at most ``modules``: more channels run in
    tiles)."""
    blocks = 1
    while blocks * config.lanes < out_channels and blocks < config.modules:
        blocks *= 2
    return blocks


def _check_follows(layer, in_shape, in_packed, in_elements):
    """``layer`` must read the previous layer's output tensor as it is."""
    if isinstance(layer, AddLayer):
        if in_packed:
            raise ValueError(f"{layer.name}: an add cannot read the packed output of a dense layer")
    elif isinstance(layer, ConvLayer):
        expected = (layer.in_channels, layer.in_height, layer.in_width)
        if in_packed:
            raise ValueError(f"{layer.name}: a convolution cannot read the packed output of a dense layer")
        if in_shape != expected:
            raise ValueError(f"{layer.name}: expects an input image {expected}, the previous layer makes "
                             f"{in_shape}")
    elif layer.inputs != in_elements:
        raise ValueError(f"{layer.name}: expects {layer.inputs} inputs, the previous layer makes {in_elements}")


def _add_shape(config, layer, source, in_shape, in_elements):
    """An add as the hardware runs it: one position per row word (``C*H`` of them, one per group: all modules
    take their vectors from the word read), the word's ``W`` elements as its output channels."""
    channels, height, width = in_shape
    if -(-width // config.lanes) * config.lanes > min(config.row_elements, config.modules * config.lanes):
        raise ValueError(f"{layer.name}: an add of {width}-element rows needs {-(-width // config.lanes)} modules "
                         f"of {config.lanes} lanes inside a word of {config.row_elements} elements; the "
                         f"configuration has {config.modules} modules")
    return LayerShape(name=layer.name, dense=False, in_shape=in_shape, in_packed=False, in_elements=in_elements,
                      kernel_height=1, kernel_width=1, stride=(1, 1), padding=(0, 0, 0, 0), out_height=channels * height,
                      out_width=1, out_channels=width, out_shape=in_shape, relu=layer.relu,
                      min_column_blocks=config.modules, tile_size=config.modules * config.lanes, add=True,
                      skip=layer.skip, source=source)


def _layer_shape(config, layer, source, in_shape, in_packed, in_elements):
    name = layer.name
    if isinstance(layer, AddLayer):
        return _add_shape(config, layer, source, in_shape, in_elements)
    if isinstance(layer, ConvLayer):
        layer.check_geometry()
        out_channels, kernel_height, kernel_width = layer.out_channels, layer.kernel_height, layer.kernel_width
        stride, padding = (layer.stride_y, layer.stride_x), layer.border
        out_height, out_width = layer.out_height, layer.out_width
        out_shape = (out_channels, out_height, out_width)
        if in_shape[2] > config.row_elements:
            raise ValueError(f"{name}: input rows of {in_shape[2]} elements are wider than a word "
                             f"(row_elements = {config.row_elements})")
        if layer.pad_left > config.pad_columns:
            raise ValueError(f"{name}: a left padding of {layer.pad_left} columns exceeds the feeder's "
                             f"{config.pad_columns} (pad_columns)")
        if (out_width - 1) * layer.stride_x - layer.pad_left >= config.row_elements:
            raise ValueError(f"{name}: the last window starts at column {(out_width - 1) * layer.stride_x - layer.pad_left}"
                             f", past a word of {config.row_elements} elements (row_elements)")
    else:
        out_channels, kernel_height, kernel_width = layer.outputs, in_shape[1], in_shape[2]
        stride, padding, out_height, out_width = (1, 1), (0, 0, 0, 0), 1, 1
        out_shape = (-(-out_channels // config.lanes), 1, config.lanes)
    if in_shape[2] > config.row_elements:
        raise ValueError(f"{name}: input rows of {in_shape[2]} elements are wider than a word "
                         f"(row_elements = {config.row_elements})")
    if isinstance(layer, ConvLayer) and out_width > config.row_elements:
        raise ValueError(f"{name}: output rows of {out_width} elements are wider than a word "
                         f"(row_elements = {config.row_elements})")
    if isinstance(layer, DenseLayer) and config.lanes > config.row_elements:
        raise ValueError(f"{name}: packed outputs need lanes ({config.lanes}) <= row_elements "
                         f"({config.row_elements})")
    tile_size = config.modules * config.lanes
    groups = layer.groups if isinstance(layer, ConvLayer) else 1
    if groups > 1 and out_channels // groups > tile_size:
        raise ValueError(f"{name}: a group of {out_channels // groups} output channels exceeds the "
                         f"{tile_size} that one pass computes (modules x lanes)")
    shape = LayerShape(name=name, dense=isinstance(layer, DenseLayer), in_shape=in_shape, in_packed=in_packed,
                       in_elements=in_elements, kernel_height=kernel_height, kernel_width=kernel_width, stride=stride,
                       padding=padding, out_height=out_height, out_width=out_width, out_channels=out_channels,
                       out_shape=out_shape, relu=layer.relu,
                       min_column_blocks=min_column_blocks(config, min(out_channels, tile_size)), tile_size=tile_size,
                       source=source, groups=groups)
    if isinstance(layer, ConvLayer) and layer.maximum:
        return _max_pool_tiles(config, replace(shape, maximum=True))
    return _fastest_group_tiles(config, shape) if groups > 1 else shape


def _max_pool_tiles(config, shape):
    """A max pool in tiles of one channel: a tile of several would put its block-diagonal zero products into the
    maximum.  Its pass computes one lane per module (``1 / lanes`` of the MACs), every module on output positions."""
    if not config.max_pooling:
        raise ValueError(f"{shape.name}: max pooling needs the matrix modules' max mode, which this configuration "
                         f"lacks (DqnConfig(max_pooling=True))")
    return _with_tile(config, shape, 1)


def check_config(config):
    """Raise if no network can be compiled for ``config``: a TypeError if it is no ``DqnConfig``, a ValueError if
    its descriptor does not fit the host data port."""
    if not isinstance(config, DqnConfig):
        raise TypeError(f"config must be a DqnConfig, not {config!r}")
    bits = descriptor_bits(config)
    if bits > config.host_data_bits:
        raise ValueError(f"{config.module_name}: a descriptor of {bits} bits does not fit the host data "
                         f"port of {config.host_data_bits} bits (the widest RAM word): more row elements or lanes")


def _shape_cycles(config, shape, split="never"):
    """Predicted cycles of ``shape`` under its default mapping, by default without K-splits."""
    passes = pass_shapes(config, shape, _default_layer_mapping(config, shape, split))
    return pass_timing(config, passes)["cycles"].sum()


def _with_tile(config, shape, tile_size):
    return replace(shape, tile_size=tile_size,
                   min_column_blocks=min_column_blocks(config, min(shape.out_channels, tile_size)))


def _group_tile_sizes(config, shape):
    """A grouped convolution's channel tiles, narrowest first: whole groups, as many as fill ``C`` column blocks for
    ``C = 1, 2, 4 .. modules``."""
    per_group = shape.out_channels // shape.groups
    sizes, blocks = [], 1
    while blocks <= config.modules:
        tile_size = max(1, min(shape.groups, blocks * config.lanes // per_group)) * per_group
        if tile_size <= config.modules * config.lanes and tile_size not in sizes:
            sizes.append(tile_size)
        blocks *= 2
    return sizes


def _fastest_group_tiles(config, shape):
    """A grouped convolution with the channel tile of fewest predicted cycles: tiles of whole groups, as many as
    fill ``C`` column blocks for ``C = 1, 2, 4 .. modules``.  A depthwise layer's tile of ``k`` channels reads
    ``k`` input channels: ``k * Kh * Kw`` products per group, ``1 / k`` of them with a non-zero weight, so the
    narrowest tile that fills a block's lanes (``k = lanes``, ``C = 1``) is usually fastest."""
    return min((_with_tile(config, shape, size) for size in _group_tile_sizes(config, shape)),
               key=lambda item: _shape_cycles(config, item))


def _within_the_table(config, shapes):
    """``shapes`` with the grouped convolutions' tiles widened, the layer of most tiles first, until the tiles fit
    the descriptor table (``max_layers``) or none can widen: the fastest tiles are the narrowest where a pass sets
    up in a cycle, and a network of many depthwise layers would need more passes than the table holds.  A max
    pool's tiles never widen (one channel each: :func:`_max_pool_tiles`); where they leave too many passes the
    compiler refuses the network, naming them (:func:`compile_network`)."""
    shapes = list(shapes)
    while sum(shape.tiles for shape in shapes) > config.max_layers:
        wider = [(shape.tiles, index) for index, shape in enumerate(shapes)
                 if shape.groups > 1 and not shape.maximum and shape.tile_size < _group_tile_sizes(config, shape)[-1]]
        if not wider:
            break
        index = max(wider)[1]
        shape = shapes[index]
        sizes = _group_tile_sizes(config, shape)
        shapes[index] = _with_tile(config, shape, sizes[sizes.index(shape.tile_size) + 1])
    return tuple(shapes)


def _fastest_tiles(config, shape):
    """``shape`` with the channel tile size of fewest predicted cycles (ties: the widest tile).  A tile of ``C *
    lanes`` channels runs ``modules / C`` positions per group: narrower tiles read the input again but write
    fewer rows per group, which pays where the result writer, not the matrix modules, bounds a group."""
    best, best_cycles = shape, None
    blocks = shape.min_column_blocks
    while blocks >= 1:
        candidate = _with_tile(config, shape, blocks * config.lanes)
        cycles = _shape_cycles(config, candidate)
        if best_cycles is None or cycles < best_cycles:
            best, best_cycles = candidate, cycles
        blocks //= 2
    return best


def _chosen_tile(config, shape, tile_size):
    """``shape`` with output-channel tiles of ``tile_size`` channels (None: as it is), a mapping's choice for a
    convolution or dense layer that is no grouped convolution, max pool or add."""
    if tile_size is None:
        return shape
    if shape.add or shape.groups > 1 or shape.maximum:
        raise ValueError(f"{shape.name}: its channel tiles are the compiler's (an add, a grouped convolution or a max "
                         f"pool), not a mapping's choice of {tile_size!r}")
    if not isinstance(tile_size, int) or not 0 < tile_size <= config.modules * config.lanes:
        raise ValueError(f"{shape.name}: a channel tile holds 1 .. {config.modules * config.lanes} output channels "
                         f"(modules x lanes), not {tile_size!r}")
    return _with_tile(config, shape, tile_size)


def layer_shapes(config, layers, *, tiling="widest"):
    """The :class:`LayerShape` of every layer of a network (``ConvLayer`` / ``DenseLayer`` / ``AddLayer``) on
    ``config``.  ``tiling``: the output-channel tile of a convolution: "widest" (``modules * lanes`` channels,
    tiles only where there are more), or "fastest" (the tile size of fewest predicted cycles: :func:`_fastest_tiles`),
    or a dict of layer names to tile sizes (channels; the layers it leaves out "widest")."""
    check_config(config)
    if not isinstance(tiling, dict) and tiling not in TILING_MODES:
        raise ValueError(f"tiling must be one of {', '.join(TILING_MODES)}, not {tiling!r} (or a dict of layer names "
                         f"to tile sizes)")
    layers = tuple(layers)
    if not layers:
        raise ValueError("the network has no layers")
    for layer in layers:
        if not isinstance(layer, (ConvLayer, DenseLayer, AddLayer)):
            raise TypeError(f"layers must be ConvLayer, DenseLayer or AddLayer, not {layer!r}")
    first = layers[0]
    if isinstance(first, AddLayer):
        raise ValueError(f"{first.name}: an add needs a layer before it")
    if isinstance(first, ConvLayer):
        network_input = ((first.in_channels, first.in_height, first.in_width), False,
                         first.in_channels * first.in_height * first.in_width)
    else:
        network_input = ((-(-first.inputs // config.lanes), 1, config.lanes), True, first.inputs)
    shapes, outputs, previous = [], {"": network_input}, ""
    for layer in layers:
        if not layer.name or layer.name in outputs:
            raise ValueError(f"layer names must be unique and not empty: {layer.name!r}")
        source_name = previous if layer.source is None else layer.source
        if source_name not in outputs:
            raise ValueError(f"{layer.name}: reads {source_name!r}, which is no earlier layer")
        source = outputs[source_name]
        _check_follows(layer, *source)
        if isinstance(layer, AddLayer) and outputs.get(layer.skip, (None,))[:2] != source[:2]:
            known = outputs.get(layer.skip)
            raise ValueError(f"{layer.name}: the addend {layer.skip or 'network input'!r} is "
                             f"{'no earlier layer' if known is None else known[0]}, the addend "
                             f"{source_name or 'network input'!r} is {source[0]}")
        shape = _layer_shape(config, layer, source_name, *source)
        if isinstance(tiling, dict):
            shapes.append(_chosen_tile(config, shape, tiling.get(layer.name)))
        else:
            shapes.append(_fastest_tiles(config, shape) if tiling == "fastest" and isinstance(layer, ConvLayer)
                          and shape.groups == 1 else shape)
        outputs[layer.name] = (shapes[-1].out_shape, shapes[-1].dense, shapes[-1].out_elements)
        previous = layer.name
    shapes = _flat_layouts(config, layers, shapes)
    return _within_the_table(config, _flat_view_tiles(config, shapes) if tiling == "widest" else shapes)


def _flat_view_tiles(config, shapes):
    """``shapes`` with each 1 x 1 layer on a flat view in the channel tiles of fewest predicted cycles (narrower tiles
    write fewer words a group: a writer-bound group becomes product-bound, and the flat pass after it waits for a
    shorter last group), where the descriptor table holds the tiles."""
    tiled = tuple(_fastest_tiles(config, shape) if shape.flat and not shape.dense and shape.groups == 1 else shape
                  for shape in shapes)
    return tiled if sum(shape.tiles for shape in tiled) <= config.max_layers else shapes


# ---- The flat map: depthwise layers with the lanes over a channel's positions ------------------------------------

def _pointwise(layer):
    """A 1 x 1 convolution of stride 1 without padding: it reads the flat layout as it reads an image (its view)."""
    return (isinstance(layer, ConvLayer) and layer.groups == 1 and not layer.maximum and not any(layer.border)
            and (layer.kernel_height, layer.kernel_width, layer.stride_y, layer.stride_x) == (1, 1, 1, 1))


class _Graph:
    """The network's tensors: each layer's source and each tensor's readers (by layer name; "" the input)."""

    def __init__(self, layers):
        self.layers = {layer.name: layer for layer in layers}
        self.sources = {layer.name: layer.source if layer.source is not None else (layers[index - 1].name if index
                                                                                   else "")
                        for index, layer in enumerate(layers)}
        self.readers = {}
        for layer in layers:
            for name in (self.sources[layer.name], getattr(layer, "skip", None)):
                if name is not None:
                    self.readers.setdefault(name, []).append(layer)


def _flat_tensors_hold(graph, flat, passes, packed_input):
    """Whether the tensors ``flat`` can lie in flat layout with the layers ``passes`` run as flat passes: each is
    written by a convolution (a flat pass, or any other through the second output grid) or is the network's image
    input, and read only by flat passes, 1 x 1 convolutions (on the view) and dense layers (their weights laid out
    on the view); a flat pass reads and writes flat tensors."""
    for tensor in flat:
        producer = graph.layers.get(tensor)
        if producer is None and packed_input or producer is not None and not isinstance(producer, ConvLayer):
            return False
        for reader in graph.readers.get(tensor, []):
            if not (reader.name in passes or _pointwise(reader) or isinstance(reader, DenseLayer)):
                return False
    return all(graph.sources[name] in flat and name in flat for name in passes)


def _flat_shape(config, shape, layer, reads_flat, writes_flat):
    """``shape`` with its tensors in the layouts given: a flat pass runs on the map's grid, all its channels in one
    pass; a 1 x 1 convolution reading the flat view walks the view's grid (``positions`` = the map's); a dense layer
    reads the view (its weights laid out on it); a convolution writing a layout other than its walk's has the second
    output grid (``write_grid``)."""
    row_elements = config.row_elements
    _, height, width = shape.in_shape
    if reads_flat:
        shape = replace(shape, in_shape=flat_view(shape.in_shape, row_elements), flat=(height, width))
        if shape.dense:               # a map in one word a channel: the view's first H*W elements, an image
            channels, rows, elements = shape.in_shape
            if rows == 1:
                shape = replace(shape, in_shape=(channels, 1, height * width))
            return replace(shape, kernel_height=shape.in_shape[1], kernel_width=shape.in_shape[2])
        if shape.groups > 1:          # a flat pass (at stride 2 its output map is a quarter of its input's)
            out_map = (shape.out_height, shape.out_width)
            return replace(shape, out_shape=flat_view(shape.out_shape, row_elements), tile_size=shape.out_channels,
                           min_column_blocks=1, flat_out=out_map)
        _, rows, elements = shape.in_shape
        if not writes_flat:
            return replace(shape, out_height=rows, out_width=elements, write_grid=shape.out_shape[1:])
        return replace(shape, out_height=rows, out_width=elements, out_shape=flat_view(shape.out_shape, row_elements),
                       flat_out=shape.flat)
    view = flat_view(shape.out_shape, row_elements)
    return replace(shape, out_shape=view, write_grid=view[1:], flat_out=(shape.out_height, shape.out_width)) \
        if writes_flat else shape


def _flat_layouts(config, layers, shapes):
    """``shapes`` with the flat passes and the flat layout where they make the network faster: each depthwise layer
    the flat pass fits (:func:`~models.dqn.flat_map.flat_pass_fits`), with its input and output in flat layout, where
    every tensor in flat layout can be (:func:`_flat_tensors_hold`) and the layers touched take fewer predicted
    cycles than before."""
    if not config.flat_slots:
        return shapes
    graph = _Graph(layers)
    original = list(shapes)
    index_of = {shape.name: index for index, shape in enumerate(shapes)}
    flat, passes = set(), set()

    def laid_out(names, flat_tensors, flat_passes):
        return [original[index_of[name]] if not (graph.sources[name] in flat_tensors or name in flat_tensors) else
                _flat_shape(config, original[index_of[name]], graph.layers[name], graph.sources[name] in flat_tensors,
                            name in flat_tensors) for name in names]

    for layer in layers:
        if not flat_pass_fits(config, layer):
            continue
        trial_flat, trial_passes = flat | {graph.sources[layer.name], layer.name}, passes | {layer.name}
        if not _flat_tensors_hold(graph, trial_flat, trial_passes, original[0].in_packed):
            continue
        touched = {layer.name} | {reader.name for tensor in trial_flat for reader in graph.readers.get(tensor, [])} \
            | {tensor for tensor in trial_flat if tensor}
        before = sum(_shape_cycles(config, shape) for shape in laid_out(touched, flat, passes))
        after = sum(_shape_cycles(config, shape) for shape in laid_out(touched, trial_flat, trial_passes))
        if after < before:
            flat, passes = trial_flat, trial_passes
    for layer in layers:              # a 1 x 1 layer on a view that only dense layers read: its output flat too
        readers = graph.readers.get(layer.name, [])
        if layer.name in flat or graph.sources[layer.name] not in flat or not _pointwise(layer) or not readers \
                or not all(isinstance(reader, DenseLayer) for reader in readers):
            continue
        trial_flat = flat | {layer.name}
        touched = {layer.name} | {reader.name for reader in readers}
        before = sum(_shape_cycles(config, shape, "auto") for shape in laid_out(touched, flat, passes))
        after = sum(_shape_cycles(config, shape, "auto") for shape in laid_out(touched, trial_flat, passes))
        if after < before:
            flat = trial_flat
    return laid_out([layer.name for layer in layers], flat, passes)


# ---- Passes: what a layer's mapping makes the hardware run -----------------------------------------------------

class PassShape(NamedTuple):
    """One pass of a layer as the descriptor describes it, without addresses or weights (a named tuple: the
    design-space cost model expands thousands of cases per second through :func:`pass_shapes`).

    ``kind``: "positions" (a segment's output positions), "flat" (a flat pass: every channel's positions, layout
    "flat"), "partials" (a split position's partial sums, one per
    group position), "sum" (their reduction with the bias) or "add" (a residual add: one row word per position,
    ``in_channels`` = the 2 addends, layout "row_words": position-major, each word written whole).  ``grid`` and
    ``first`` are the output grid the pass walks and its first position ``(oy, ox)``; ``in_channels`` counts the
    channels read (a reduction: the partial sums); ``stride`` is ``(stride_y, stride_x)``, ``padding`` ``(top,
    left)`` (the bottom and right borders follow from the input's size); ``first_channel`` is the first output
    channel of the pass's channel tile (``out_channels`` from there on); ``first_in_channel`` the first input
    channel it reads (a grouped convolution's tile reads ``in_channels`` channels from there on); ``write_grid`` the
    writer's second output grid ``(rows, width)`` (``()``: ``grid``).  A flat pass whose slots take ``maps = k > 1``
    one-word maps each (:func:`~models.dqn.flat_map.maps_per_slot`) runs, as the descriptor says, ``C / k`` channels
    of ``count = (k - 1)*F + H*W`` positions (``grid``: the map's ``H x W``)."""

    name: str
    layer: str
    kind: str
    segment: Segment
    in_channels: int
    kernel: tuple
    stride: tuple
    padding: tuple
    grid: tuple
    first: tuple
    count: int
    column_blocks: int
    first_channel: int
    out_channels: int
    layout: str
    relu: bool
    first_in_channel: int = 0
    maximum: bool = False
    write_grid: tuple = ()
    maps: int = 1

    @property
    def products(self):
        """Products per group: a flat pass's are its kernel's steps (one channel per group)."""
        return self.kernel[0] * self.kernel[1] * (1 if self.kind == "flat" else self.in_channels)

    @property
    def reduce(self):
        """The pass takes its vectors from activation words (a reduction or an add)."""
        return self.kind in ("sum", "add")

    @property
    def first_position(self):
        return self.first[0] * self.grid[1] + self.first[1]


def _split_names(shape, segment, tile_suffix):
    """Names of a split segment's two passes (the thesis network's: "FC_2 partials", "CONV_2 tail", "... sum")."""
    if shape.positions == 1:
        return f"{shape.name}{tile_suffix} partials", f"{shape.name}{tile_suffix} sum"
    if segment.first == shape.positions - 1:
        return f"{shape.name}{tile_suffix} tail", f"{shape.name}{tile_suffix} sum"
    return f"{shape.name}{tile_suffix} @{segment.first} partials", f"{shape.name}{tile_suffix} @{segment.first} sum"


def pass_shapes(config, shape, layer_mapping):
    """The passes (:class:`PassShape`, in the order they run) of layer ``shape`` under ``layer_mapping``
    (assumed legal: see :func:`check_mapping`)."""
    layout = "packed" if shape.dense else "image"
    grid = (shape.out_height, shape.out_width)
    top, bottom, left, right = shape.padding
    stride_y, stride_x = shape.stride
    if shape.add:
        return [PassShape(name=shape.name if len(layer_mapping.segments) == 1 else
                          f"{shape.name} {segment.first}..{segment.last}", layer=shape.name, kind="add",
                          segment=segment, in_channels=2, kernel=(1, 1), stride=(1, 1), padding=(0, 0), grid=grid,
                          first=(segment.first, 0), count=segment.count, column_blocks=segment.column_blocks,
                          first_channel=0, out_channels=shape.out_channels, layout="row_words", relu=shape.relu)
                for segment in layer_mapping.segments]
    if shape.flat_pass:              # the map's grid at stride 1 (stride 2: its even rows and columns written)
        maps = maps_per_slot(config, flat_layer(dict(
            in_channels=shape.out_channels, in_height=shape.flat[0], in_width=shape.flat[1],
            kernel_height=shape.kernel_height, kernel_width=shape.kernel_width, stride_y=stride_y, pad_top=top,
            pad_left=left)))
        channels = shape.out_channels // maps
        return [PassShape(name=shape.name, layer=shape.name, kind="flat", segment=segment, in_channels=channels,
                          kernel=(shape.kernel_height, shape.kernel_width), stride=shape.stride, padding=(top, left),
                          grid=shape.flat, first=(0, 0), count=(maps - 1) * config.row_elements + shape.positions,
                          column_blocks=1, first_channel=0, out_channels=channels, layout="flat", relu=shape.relu,
                          maps=maps) for segment in layer_mapping.segments]
    passes, named = [], set()
    for segment in layer_mapping.segments:
        first = divmod(segment.first, shape.out_width)
        first_channel, out_channels = shape.tile_channels(segment.tile)
        tile_suffix = f" [{first_channel}:{first_channel + out_channels}]" if shape.tiles > 1 else ""
        first_in_channel, in_channels = shape.tile_inputs(segment.tile)
        common = dict(layer=shape.name, segment=segment, in_channels=in_channels, padding=(top, left),
                      column_blocks=segment.column_blocks, first_channel=first_channel, out_channels=out_channels,
                      first_in_channel=first_in_channel, maximum=shape.maximum, write_grid=shape.write_grid)
        if segment.split == 1:
            name = f"{shape.name}{tile_suffix}"
            name = name if name not in named else f"{name} {segment.first}..{segment.last}"
            named.add(name)
            passes.append(PassShape(name=name, kind="positions", kernel=(shape.kernel_height, shape.kernel_width),
                                    stride=shape.stride, grid=grid, first=first, count=segment.count, layout=layout,
                                    relu=shape.relu, **common))
            continue
        chunk_height, chunk_width = split_chunk(shape, segment.split)
        _, in_height, in_width = shape.in_shape
        partials_name, sum_name = _split_names(shape, segment, tile_suffix)
        if chunk_height == shape.kernel_height:     # column chunks: a row of the grid of stride chunk_width
            chunk_grid = (shape.out_height, (in_width + left + right - chunk_width) // chunk_width + 1)
            chunk_first = (first[0], first[1] * stride_x // chunk_width)
        else:                                       # two rows of column chunks, the kernel's halves, one per row
            chunk_grid = ((in_height + top + bottom - chunk_height) // chunk_height + 1, segment.split // 2)
            chunk_first = (first[0] * stride_y // chunk_height, 0)
        passes.append(PassShape(
            name=partials_name, kind="partials", kernel=(chunk_height, chunk_width),
            stride=(stride_y if chunk_height == shape.kernel_height else chunk_height, chunk_width), grid=chunk_grid,
            first=chunk_first, count=segment.split, layout="position_major", relu=False, **common))
        passes.append(PassShape(name=sum_name, kind="sum", kernel=(1, 1), stride=(1, 1), grid=grid, first=first,
                                count=1, layout=layout, relu=shape.relu,
                                **(common | dict(in_channels=segment.split, padding=(0, 0)))))
    return passes


def reads_previous(passes):
    """Per pass of a run (PassShape, in order): whether it reads the activation RAM the pass before it writes: a
    layer's first pass reads the previous layer's output, a sum its partial sums; a layer's other passes read its
    input, in the other RAM."""
    return [index == 0 or work.kind == "sum" or work.layer != passes[index - 1].layer
            for index, work in enumerate(passes)]


def pass_timing(config, passes, reads=None, handoffs=None, delays=None, run=None):
    """The four predicted counters (:data:`COUNTERS`) of ``passes`` (PassShape, one run in the order it runs) on
    ``config``: int64 arrays.  ``reads``: per pass whether it reads the activation RAM the pass before it writes (the
    sequencer compares the two RAMs); by default :func:`reads_previous`, a chain's answer.  ``handoffs``: per pass
    whether it hands its last group off to the next, ``delays`` its start delay (:func:`pass_handoffs`); by default
    none.  ``run``: per pass the run it belongs to (several runs at once, each's passes consecutive; default one)."""
    def column(read):
        return np.array([read(work) for work in passes], dtype=np.int64)

    return pass_counters(positions_per_group=column(lambda work: group_positions(config, work)),
                         count=column(lambda work: work.count), products=column(lambda work: work.products),
                         latency=matrix_module_latency(config.multiplier_latency, config.adder_latency),
                         out_channels=column(lambda work: work.out_channels), lanes=config.lanes,
                         layout=column(lambda work: LAYOUTS[work.layout]), reduce=column(lambda work: work.reduce),
                         first_column=column(lambda work: work.first[1]),
                         out_width=column(lambda work: (work.write_grid or work.grid)[1]),
                         run=0 if run is None else run,
                         reads_previous=reads_previous(passes) if reads is None else reads, handoff=handoffs,
                         start_delay=delays, row_elements=config.row_elements, flat_loads=config.flat_loads,
                         flat_slots=config.flat_slots,
                         flat_strides=column(lambda work: work.stride[0] if work.kind == "flat" else 1),
                         staged=column(lambda work: staged(config, work)))


def staged(config, work):
    """Whether pass ``work`` has two groups in flight where it can (the writer's second staging register, built
    with the flat map): a pass in image or flat layout that does not read the RAM it writes
    (models.dqn.timing.staged_stalls)."""
    return bool(config.flat_slots) and work.layout in ("image", "flat") and not work.reduce


def group_positions(config, work):
    """Output positions a group of pass ``work`` computes: ``modules / C``, a flat pass's a slot's lanes (of each of
    its ``flat_slots`` channels)."""
    return config.flat_group_lanes if work.kind == "flat" else config.modules // work.column_blocks


def pass_handoffs(config, passes, reads, words):
    """Per pass of a run (PassShape, in order): whether it hands its last group off to the next pass, and its start
    delay (:mod:`models.dqn.handoff`; 0: none): ``(handoffs, delays)``, where they are safe and the predicted cycles
    are fewer for them.  ``reads`` as :func:`pass_timing`; ``words``: per pass ``(in_base, in_height, out_base)``,
    its input's word and rows per channel and its output's word (absolute, or relative to one tensor where a pass
    reads the one before)."""
    latency = matrix_module_latency(config.multiplier_latency, config.adder_latency)
    handoffs, delays = [False] * len(passes), [0] * len(passes)
    for index in range(1, len(passes)):
        if not reads[index]:
            continue
        for handoff in (False, True):
            delay = start_delay(config, passes[index - 1], passes[index], handoff=handoff,
                                out_base=words[index - 1][2], in_base=words[index][0], in_height=words[index][1],
                                latency=latency)
            if delay is not None:
                handoffs[index - 1], delays[index] = handoff, delay
    if not any(delays):
        return handoffs, delays
    alone = pass_timing(config, passes, reads)["cycles"]
    early = pass_timing(config, passes, reads, handoffs, delays)["cycles"]
    keep = [bool(delay) and early[index] < alone[index] for index, delay in enumerate(delays)]
    return ([handoff and keep[index + 1] for index, handoff in enumerate(handoffs[:-1])] + [False],
            [delay if keep[index] else 0 for index, delay in enumerate(delays)])


# ---- Mappings: the hardware's constraints and the default ------------------------------------------------------

def group_rows(start, end, positions_per_group, out_width):
    """The most output rows a group of positions ``start .. end - 1`` (in groups of ``positions_per_group``)
    touches, and the first group that touches that many: ``(rows, first position, last position)``."""
    worst = (0, start, start)
    for first in range(start, end, positions_per_group):
        last = min(first + positions_per_group, end) - 1
        rows = last // out_width - first // out_width + 1
        if rows > worst[0]:
            worst = (rows, first, last)
    return worst


def _check_groups(name, start, end, positions_per_group, out_width):
    """Every group's output positions must lie in at most two output rows (the feeder holds two rows)."""
    rows, first, last = group_rows(start, end, positions_per_group, out_width)
    if rows > 2:
        raise ValueError(f"{name}: a group of {positions_per_group} output positions spans {rows} rows of "
                         f"{out_width} (positions {first}..{last}); the feeder holds two rows")


def _check_coverage(shape, layer_mapping):
    for tile in range(shape.tiles):
        where = shape.name if shape.tiles == 1 else f"{shape.name} tile {tile}"
        expected = 0
        for segment in layer_mapping.tile_segments(tile):
            if segment.first > expected:
                raise ValueError(f"{where}: positions {expected}..{segment.first - 1} are in no segment")
            if segment.first < expected:
                raise ValueError(f"{where}: positions {segment.first}..{min(segment.last, expected - 1)} are in "
                                 f"two segments")
            expected = segment.last + 1
        if expected != shape.positions:
            if expected < shape.positions:
                raise ValueError(f"{where}: positions {expected}..{shape.positions - 1} are in no segment")
            raise ValueError(f"{where}: the segments end at position {expected - 1}, the layer has "
                             f"{shape.positions} (0..{shape.positions - 1})")
    extra = [segment.describe() for segment in layer_mapping.segments if segment.tile >= shape.tiles]
    if extra:
        raise ValueError(f"{shape.name}: segments {', '.join(extra)} name channel tiles past the layer's "
                         f"{shape.tiles} ({shape.out_channels} output channels in tiles of {shape.tile_size})")


def check_segment(config, shape, segment):
    """Raise a ValueError naming the layer, the segment and the constraint if the hardware cannot run ``segment``
    of layer ``shape``."""
    where = f"{shape.name}: segment {segment.describe()}"
    blocks = segment.column_blocks
    if shape.flat_pass:
        if (segment.first, segment.count, blocks, segment.split) != (0, shape.positions, 1, 1):
            raise ValueError(f"{where}: a flat pass runs all {shape.positions} positions of every channel as one "
                             f"segment of 1 column block without a K-split")
        return
    if blocks & (blocks - 1):
        raise ValueError(f"{where}: column_blocks {blocks} is not a power of two (positions are spread over "
                         f"modules by shifts)")
    if blocks > config.modules:
        raise ValueError(f"{where}: {blocks} column blocks exceed the {config.modules} matrix modules")
    _, tile_channels = shape.tile_channels(min(segment.tile, shape.tiles - 1))
    if blocks * config.lanes < tile_channels:
        raise ValueError(f"{where}: {blocks} column blocks of {config.lanes} lanes hold {blocks * config.lanes} "
                         f"of the {tile_channels} output channels")
    positions_per_group = config.modules // blocks
    if shape.add and (blocks != config.modules or segment.split != 1):
        raise ValueError(f"{where}: an add reads one word per step for all modules: it runs with {config.modules} "
                         f"column blocks (one row word per group) and no K-split")
    if shape.write_grid and (segment.first, segment.split) != (0, 1) or positions_per_group > (
            shape.write_grid or (0, config.modules))[1]:
        raise ValueError(f"{where}: a second output grid of width {shape.write_grid[1]} is walked from position 0 "
                         f"without a K-split, at most {shape.write_grid[1]} positions per group")
    if segment.split == 1:
        _check_groups(shape.name, segment.first, segment.first + segment.count, positions_per_group,
                      shape.out_width)
        return
    if segment.count != 1:
        raise ValueError(f"{where}: a K-split (S{segment.split}) takes a single-position segment, not "
                         f"{segment.count} positions")
    chunk = split_chunk(shape, segment.split)
    if chunk is None:
        raise ValueError(f"{where}: {segment.split} chunks divide neither the kernel width {shape.kernel_width} nor "
                         f"its two row halves ({shape.kernel_height} x {shape.kernel_width} kernel)")
    if segment.split > positions_per_group:
        raise ValueError(f"{where}: {segment.split} partial sums need {segment.split} position slots, "
                         f"{blocks} column blocks leave {positions_per_group} ({config.modules} modules)")
    if blocks * config.lanes > config.row_elements:
        raise ValueError(f"{where}: a partial sum of {blocks} column blocks x {config.lanes} lanes does not fit a "
                         f"word of {config.row_elements} elements (row_elements)")
    chunk_height, chunk_width = chunk
    oy, ox = divmod(segment.first, shape.out_width)
    column, row = ox * shape.stride[1], oy * shape.stride[0]
    if chunk_height == shape.kernel_height and column % chunk_width:
        raise ValueError(f"{where}: chunks of {chunk_width} kernel columns run at stride {chunk_width}, so the window "
                         f"must start on a multiple of {chunk_width}; it starts at (padded) input column {column}")
    if chunk_height != shape.kernel_height and (column or row % chunk_height):
        raise ValueError(f"{where}: the kernel's row halves run as two rows of a grid {segment.split // 2} chunks "
                         f"wide, so the window must start at (padded) input column 0 and on a multiple of "
                         f"{chunk_height} rows; it starts at row {row}, column {column}")


def split_chunk(shape, split):
    """The kernel chunk ``(rows, columns)`` of each partial sum of a K-split in ``split`` chunks of layer ``shape``:
    the kernel columns in ``split`` chunks, or, where ``split`` does not divide them, the kernel's two row halves
    each in ``split / 2`` column chunks (partial sum ``q``: half ``q // (split / 2)``, column chunk ``q % (split /
    2)``; the two halves are two rows of the group, the second row slot at stride ``Kh / 2``); None if neither."""
    if shape.kernel_width % split == 0:
        return shape.kernel_height, shape.kernel_width // split
    if split % 2 == 0 and shape.kernel_height % 2 == 0 and shape.kernel_width % (split // 2) == 0:
        return shape.kernel_height // 2, shape.kernel_width // (split // 2)
    return None


def check_mapping(config, shapes, mapping):
    """Raise a ValueError naming the layer and the constraint if ``mapping`` is not one the hardware can run
    (docs/dqn_accelerator.md; descriptor field widths and RAM sizes are checked when the plan is built)."""
    if not isinstance(mapping, DqnMapping):
        raise TypeError(f"mapping must be a DqnMapping, not {mapping!r}")
    if len(mapping.layers) != len(shapes):
        raise ValueError(f"the mapping has {len(mapping.layers)} layer mappings, the network {len(shapes)} layers")
    for shape, layer_mapping in zip(shapes, mapping.layers):
        _check_coverage(shape, layer_mapping)
        for segment in layer_mapping.segments:
            check_segment(config, shape, segment)


def group_column_blocks(config, shape, blocks):
    """The fewest column blocks, ``blocks`` or more, whose groups of ``modules / C`` positions each lie in two
    output rows of ``shape`` (``C = modules``, one position per group, always does) and, with a second output grid,
    are no more positions than its width (the walker moves its origin one row down at most)."""
    while blocks < config.modules and (
            group_rows(0, shape.positions, config.modules // blocks, shape.out_width)[0] > 2
            or shape.write_grid and config.modules // blocks > shape.write_grid[1]):
        blocks *= 2
    return blocks


def _split_candidates(config, shape, blocks):
    """The compiler's K-splits of a layer run with ``blocks`` column blocks: a dense layer's kernel columns in as many
    equal chunks as fit the idle position slots; a convolution's last position alone in its group, one chunk per
    kernel column, or its first position, the kernel's row halves times its columns (:func:`split_chunk`)."""
    slots = config.modules // blocks
    if blocks * config.lanes > config.row_elements or shape.tiles > 1 or shape.add or shape.groups > 1 \
            or shape.write_grid:
        return []
    width, positions = shape.kernel_width, shape.positions
    if shape.dense:
        chunks = max(divisor for divisor in range(1, min(slots, width) + 1) if width % divisor == 0)
        return [LayerMapping.whole(1, blocks, chunks)] if chunks >= 2 else []
    if positions % slots != 1 or positions == 1:
        return []
    candidates = []
    if 2 <= width <= slots:
        candidates.append(LayerMapping((Segment(0, positions - 1, blocks), Segment(positions - 1, 1, blocks, width))))
    if 2 * width <= slots and shape.kernel_height % 2 == 0:
        # The other positions first: their first group lies in one row and may take the previous layer's handoff
        # (the partial sums' group spans two).
        candidates.append(LayerMapping((Segment(1, positions - 1, blocks), Segment(0, 1, blocks, 2 * width))))
    legal = []
    for candidate in candidates:
        try:
            for segment in candidate.segments:
                check_segment(config, shape, segment)
        except ValueError:
            continue
        legal.append(candidate)
    return legal


def _default_layer_mapping(config, shape, split):
    if shape.flat_pass:
        return LayerMapping((Segment(0, shape.positions, 1),))
    segments = []
    for tile in range(shape.tiles):
        blocks = shape.min_column_blocks if shape.add else min_column_blocks(config, shape.tile_channels(tile)[1])
        segments.append(Segment(0, shape.positions, group_column_blocks(config, shape, blocks), tile=tile))
    whole = LayerMapping(tuple(segments))
    candidates = [] if split == "never" else _split_candidates(config, shape, segments[0].column_blocks)
    if not candidates:
        return whole
    options = candidates if split == "always" else [whole, *candidates]
    cycles = [pass_timing(config, pass_shapes(config, shape, mapping))["cycles"].sum() for mapping in options]
    return options[int(np.argmin(cycles))]


def default_mapping(config, layers, *, split="auto"):
    """The compiler's mapping of ``layers``: per layer and channel tile the fewest column blocks that hold its
    output channels and keep every group in two output rows (docs/dqn_accelerator.md, "Mapping a layer") and, with
    ``split`` "auto", the K-split of idle modules where the predicted cycles say it pays ("always": wherever
    possible, the fastest of the splits; "never": none), the splits that save fewest cycles undone where the
    descriptor table holds no more passes."""
    if split not in SPLIT_MODES:
        raise ValueError(f"split must be one of {', '.join(SPLIT_MODES)}, not {split!r}")
    shapes = layers if all(isinstance(layer, LayerShape) for layer in layers) else layer_shapes(config, layers)
    return DqnMapping(_splits_within_the_table(config, shapes, [_default_layer_mapping(config, shape, split)
                                                                for shape in shapes]))


def _splits_within_the_table(config, shapes, layer_mappings):
    """``layer_mappings`` of ``shapes`` with their K-splits undone (a split costs a pass), those that save fewest
    predicted cycles first, until the passes fit the descriptor table (``max_layers``) or no split is left."""
    mappings = list(layer_mappings)

    def saved(index):
        return _shape_cycles(config, shapes[index]) - pass_timing(
            config, pass_shapes(config, shapes[index], mappings[index]))["cycles"].sum()

    splits = sorted((index for index, mapping in enumerate(mappings) if mapping.passes > len(mapping.segments)),
                    key=saved)
    for index in splits:
        if sum(mapping.passes for mapping in mappings) <= config.max_layers:
            break
        mappings[index] = _default_layer_mapping(config, shapes[index], "never")
    return tuple(mappings)


def pass_note(config, shape, work):
    """A line for the report when a pass of output positions leaves modules idle beyond its last group (fewer
    positions per group than its channels allow, and why) or lanes idle (a max pool), and for a flat pass (its lanes
    busy per group); "" otherwise."""
    if work.kind == "flat":
        busy = config.flat_slots * work.maps * min(config.flat_group_lanes, work.grid[0] * work.grid[1])
        channels = config.flat_slots * work.maps
        slots = f"{channels} channels' " if channels > 1 else "one channel's "
        strided = (f" at stride 1, the {-(-work.grid[0] // 2)}x{-(-work.grid[1] // 2)} positions of its even rows and "
                   f"columns written" if work.stride[0] == 2 else "")
        return (f"{work.name}: a flat pass, the lanes over {slots}{work.grid[0]}x{work.grid[1]} positions "
                f"({busy} of {config.macs} lanes busy in a group){strided}")
    if work.kind != "positions":
        return ""
    if work.maximum:
        return (f"{work.name}: max pooling, one channel per pass (a wider tile would put its zero weights' products "
                f"into the maximum): 1 of {config.lanes} lanes busy")
    needed = min_column_blocks(config, work.out_channels)
    if work.column_blocks == needed:
        return ""
    positions_per_group = config.modules // work.column_blocks
    idle = config.modules - positions_per_group * -(-work.out_channels // config.lanes)
    wide = group_rows(0, shape.positions, config.modules // needed, shape.out_width)[0] > 2
    reason = (f"a group must lie in two output rows of {shape.out_width}" if wide
              else f"the mapping gives it {work.column_blocks} column blocks")
    return f"{work.name}: {positions_per_group} positions per group, {idle} of {config.modules} modules idle: {reason}"


# ---- The compiler ------------------------------------------------------------------------------------------------

class _Parities:
    """Which tensors share an activation RAM: a union-find over tensor names with, per name, the parity of its RAM
    relative to its set's root (0: the same RAM, 1: the other)."""

    def __init__(self):
        self._parent, self._parity = {}, {}

    def find(self, name):
        """``(root, parity of name's RAM relative to root's)``."""
        parent = self._parent.setdefault(name, name)
        self._parity.setdefault(name, 0)
        if parent == name:
            return name, 0
        root, parity = self.find(parent)
        self._parent[name], self._parity[name] = root, self._parity[name] ^ parity
        return root, self._parity[name]

    def join(self, first, second, differ):
        """Require ``first`` and ``second`` in different RAMs (``differ`` 1) or one RAM (0); False if they are
        already bound the other way."""
        (root, parity), (other_root, other_parity) = self.find(first), self.find(second)
        if root == other_root:
            return parity ^ other_parity == differ
        self._parent[other_root], self._parity[other_root] = root, parity ^ other_parity ^ differ
        return True


def assign_rams(shapes, input_ram=0):
    """The activation RAM of every tensor (``{layer name: 0 or 1}``, ``""`` the network input in ``input_ram``) and
    the adds whose addends no assignment puts in one RAM: ``(rams, conflicts)``.

    A convolution or dense pass reads one RAM and writes the other; an add reads both addends from one RAM and may
    write either (it reads on port 1, docs/dqn_accelerator.md).  The constraints are parities between tensors,
    solved in layer order by a union-find; an add whose addends are already bound to different RAMs (ResNet's
    block with a 1x1 shortcut convolution: two convolutions on one path, one on the other) is a conflict, which
    :func:`compile_network` resolves with a copy pass."""
    parities, conflicts = _Parities(), []
    parities.find("")
    for shape in shapes:
        parities.find(shape.name)
        if shape.add:
            if not parities.join(shape.source, shape.skip, 0):
                conflicts.append(shape.name)
        else:
            parities.join(shape.source, shape.name, 1)
    input_root, input_parity = parities.find("")
    rams = {}
    for name in ["", *(shape.name for shape in shapes)]:
        root, parity = parities.find(name)
        rams[name] = input_ram ^ input_parity ^ parity if root == input_root else parity
    return rams, conflicts


def _copy_name(base, names):
    name, index = f"{base or 'input'}_copy", 1
    while name in names:
        index += 1
        name = f"{base or 'input'}_copy{index}"
    return name


def with_copy_passes(config, layers, pairs=None, *, input_ram=0, tiling="widest"):
    """``(layers, pairs)`` as the compiler runs them: with a copy pass before each add whose addends no RAM
    assignment puts in one RAM (:func:`assign_rams`), a 1x1 depthwise convolution with weights 1.0 and bias +0
    (``x*1 + 0`` is ``x``, except ``-0`` becomes ``+0``) named ``<addend>_copy`` that moves the second addend into
    the first addend's RAM.  ``pairs``: the layers' ``(weight, bias)``, or None (the copies' pairs are still given).
    The design-space cost model counts the copies through this function."""
    layers = tuple(layers)
    pairs = [(None, None)] * len(layers) if pairs is None else list(pairs)
    shapes = layer_shapes(config, layers, tiling=tiling)
    conflicts = assign_rams(shapes, input_ram)[1]
    names = {layer.name for layer in layers}
    copied_layers, copied_pairs = [], []
    for layer, pair, shape in zip(layers, pairs, shapes):
        if shape.name in conflicts:
            channels, height, width = shape.in_shape
            name = _copy_name(shape.skip, names)
            names.add(name)
            copied_layers.append(ConvLayer(name, channels, (height, width), channels, 1, 1, relu=False,
                                           groups=channels, source=shape.skip))
            copied_pairs.append((np.ones((1, 1, 1, channels), np.float32), np.zeros(channels, np.float32)))
            layer = replace(layer, source=shape.source, skip=name)
        copied_layers.append(layer)
        copied_pairs.append(pair)
    return tuple(copied_layers), copied_pairs


@dataclass
class _Span:
    """A tensor to place: its RAM, shape and the passes it lives through (written at ``start``, last read at
    ``end``); ``fresh``: it must take words no tensor of the run ever used (a packed tensor's padding elements are
    never written and must read as the RAM's initial +0)."""

    name: str
    ram: int
    shape: tuple
    packed: bool
    elements: int
    start: int
    end: int
    fresh: bool = False
    base: int = 0

    @property
    def words(self):
        return self.shape[0] * self.shape[1]


def _allocate(config, spans):
    """Place ``spans`` (in order of ``start``) at the lowest words of their RAM free through their lifetime; a
    tensor placed after another over the same words overwrites it.  Returns ``{name: Tensor}`` and the names of
    the tensors some later tensor overwrites."""
    placed, overwritten = [], set()
    for span in sorted(spans, key=lambda item: item.start):
        same_ram = [other for other in placed if other.ram == span.ram]
        base = max([other.base + other.words for other in same_ram], default=0) if span.fresh else 0
        live = sorted((other.base, other.base + other.words) for other in same_ram
                      if other.start <= span.end and span.start <= other.end)
        for low, high in live:
            if base + span.words <= low:
                break
            base = max(base, high)
        if base + span.words > config.activation_depth:
            raise ValueError(f"{span.name or 'the network input'}: activation RAM {span.ram} is too small: the tensor needs words {base}.."
                             f"{base + span.words - 1} beside the tensors live with it, the RAM has "
                             f"{config.activation_depth} words")
        span.base = base
        overwritten.update(other.name for other in same_ram
                           if other.base < base + span.words and base < other.base + other.words)
        placed.append(span)
    tensors = {span.name: Tensor(ram=span.ram, base=span.base, shape=span.shape, packed=span.packed,
                                 elements=span.elements) for span in placed}
    return tensors, overwritten


def _lifetimes(placed, last_pass, keep):
    """``{tensor: [first pass writing it, last pass reading it]}`` of the passes ``placed`` (``(work, input,
    output, addend)`` tensor names); the network input is written before the run (-1), the network output read
    after it; with ``keep`` every tensor lives to the end of the run."""
    spans = {"": [-1, -1]}
    for index, (_, source, output, addend) in enumerate(placed):
        spans.setdefault(output, [index, index])
        for name in (source, addend):
            if name is not None:
                spans[name][1] = index
    for name, span in spans.items():
        if keep or name == placed[-1][2]:
            span[1] = last_pass
    return spans


def _check_array(name, what, array, shape):
    array = np.asarray(array)
    if array.shape != shape:
        raise ValueError(f"{name}: {what} must have shape {shape}, not {array.shape}")
    if array.dtype != np.float32:
        raise ValueError(f"{name}: {what} must be float32, not {array.dtype}")
    return array


def _kernel_bits(config, shape, layer, weight, bias):
    """``(in_channels, Kh, Kw, out_channels)`` weight bits and ``(out_channels,)`` bias bits in the format; row
    ``(c*Kh + kh)*Kw + kw`` of the kernel is the dense input index, a packed input's padding has zero weights (and
    the elements of a flat map's view past the map)."""
    weight = _check_array(shape.name, "weight", weight, layer.weight_shape)
    bias = _check_array(shape.name, "bias", bias, (shape.out_channels,))
    if shape.groups > 1:                      # block-diagonal: output channel n reads only its group's inputs
        per_input, per_output = weight.shape[0], shape.out_channels // shape.groups
        full = np.zeros((shape.in_shape[0], *weight.shape[1:]), np.float32)
        for group in range(shape.groups):
            outputs = slice(group * per_output, (group + 1) * per_output)
            full[group * per_input:(group + 1) * per_input, ..., outputs] = weight[..., outputs]
        weight = full
    if shape.dense and shape.flat:            # a flat map's inputs on its view: zeros past each channel's map
        channels, rows, elements = shape.in_shape
        on_view = np.zeros((channels, rows * elements, shape.out_channels), np.float32)
        on_view[:, :shape.flat[0] * shape.flat[1]] = weight.reshape(channels, -1, shape.out_channels)
        weight = on_view
    kernel = np.zeros((shape.in_shape[0] * shape.kernel_height * shape.kernel_width, shape.out_channels), np.uint32)
    flat = weight.reshape(-1, shape.out_channels)
    kernel[:flat.shape[0]] = from_binary32(config.fmt, flat)
    return kernel.reshape(shape.in_shape[0], shape.kernel_height, shape.kernel_width, shape.out_channels), \
        from_binary32(config.fmt, bias)


def _slots(config, blocks, rows, out_channels):
    """Weight rows where every group position uses the same weights: slot m = channel block m % C."""
    padded = np.zeros((rows.shape[0], blocks * config.lanes), np.uint32)
    padded[:, :out_channels] = rows
    return padded.reshape(rows.shape[0], blocks, config.lanes)[:, np.arange(config.modules) % blocks]


def _chunk_slots(config, blocks, chunks, out_channels, seed=0):
    """Weight rows of a partial-sum pass: group position q uses ``chunks[q]`` ((products, out_channels) bits);
    no bias (the reduction adds it): the seed row is ``seed`` (bits; a sum's ``+0``, a max pool's ``-inf``)."""
    products = chunks[0].shape[0]
    slots = np.zeros((products + 1, config.modules, config.lanes), np.uint32)
    slots[products] = seed
    for q, chunk in enumerate(chunks):
        padded = np.zeros((products, blocks * config.lanes), np.uint32)
        padded[:, :out_channels] = chunk
        slots[:products, q * blocks:(q + 1) * blocks] = padded.reshape(products, blocks, config.lanes)
    return slots


def _pass_weights(config, work, kernel, bias):
    """``(products + 1, modules, lanes)`` weight rows of a pass, bias row last (its channel tile's slice); a flat
    pass's rows (:func:`models.dqn.flat_map.flat_pass_rows`)."""
    blocks, out_channels = work.column_blocks, work.out_channels
    if work.kind == "add":                                                 # vectors from RAM, no bias
        return np.zeros((work.products + 1, config.modules, config.lanes), np.uint32)
    if work.kind == "flat":                  # the lanes' coordinates, then each channel's steps and bias
        channels = np.arange(out_channels * work.maps)
        depthwise = kernel[channels, :, :, channels].transpose(1, 2, 0)[None]       # (1, kh, kw, C)
        return flat_pass_rows(config, work.grid[1], depthwise, bias, work.maps)
    tile = slice(work.first_channel, work.first_channel + out_channels)
    kernel, bias = kernel[work.first_in_channel:work.first_in_channel + work.in_channels, ..., tile], bias[tile]
    if work.kind == "positions":
        return _slots(config, blocks, np.concatenate([kernel.reshape(-1, out_channels), bias[None, :]]), out_channels)
    if work.kind == "partials":
        (height, width), columns = work.kernel, kernel.shape[2] // work.kernel[1]
        chunks = [kernel[:, q // columns * height:(q // columns + 1) * height,
                         q % columns * width:(q % columns + 1) * width].reshape(-1, out_channels)
                  for q in range(work.count)]
        # A max pool's partial maxima start from -inf, as its unsplit pass does (its bias): from +0, a window of
        # negative elements would give 0.
        return _chunk_slots(config, blocks, chunks, out_channels,
                            seed=config.fmt.infinity(sign=1) if work.maximum else 0)
    unused = np.zeros((work.in_channels, out_channels), np.uint32)          # a reduction's vectors come from RAM
    return _slots(config, blocks, np.concatenate([unused, bias[None, :]]), out_channels)


def output_offset(work, out_shape, packed):
    """The word of a pass's output in its layer's output tensor (``out_shape``, ``packed`` or not): a channel tile
    writes its slice (channel n of the tile is channel first_channel + n); partial sums are a tensor of their own."""
    if work.layout == "position_major":
        return 0
    return work.first_channel // out_shape[2] if packed else work.first_channel * out_shape[1]


def tensor_words(work, shape):
    """A pass of layer ``shape``: its input's word and rows per channel and its output's word, relative to the
    tensors it reads and writes (``(in_base, in_height, out_base)``, as :func:`pass_handoffs` takes them): a sum
    reads its partial sums from their first word (one row a partial sum), whatever channel tile it reduces; every
    other pass its layer's input from its tile's first input channel (a grouped convolution's groups)."""
    out_base = output_offset(work, shape.out_shape, shape.dense)
    if work.kind == "sum":
        return 0, 1, out_base
    return work.first_in_channel * shape.in_shape[1], shape.in_shape[1], out_base


def _descriptor(config, work, source, output, weight_base, last, addend):
    """The descriptor of a pass; ``addend``: an add's second addend (the first is ``source``)."""
    first_position = work.first_position
    step_distance = {"add": (addend.base - source.base) % config.activation_depth if addend else 0, "sum": 1}.get(
        work.kind, 0)
    out_base = output.base + output_offset(work, output.shape, output.packed)
    return dict(
        in_ram=source.ram, in_base=source.base, in_channels=work.in_channels, in_height=source.shape[1],
        in_width=source.shape[2], kernel_height=work.kernel[0], kernel_width=work.kernel[1], stride_y=work.stride[0],
        stride_x=work.stride[1], pad_top=work.padding[0], pad_left=work.padding[1],
        out_height=(work.write_grid or work.grid)[0],
        out_width=work.grid[1], positions=first_position + work.count, first_position=first_position,
        first_oy=work.first[0], first_ox=work.first[1], first_row=work.first[0] * work.stride[0],
        first_column=work.first[1] * work.stride[1], column_blocks_log2=work.column_blocks.bit_length() - 1,
        out_channels=work.out_channels, products=work.products, weight_base=weight_base, out_ram=output.ram,
        out_base=out_base, packed_output=int(work.layout not in ("image", "flat")),
        position_major=int(work.layout in ("position_major", "row_words")), reduce=int(work.reduce),
        step_distance=step_distance, relu=int(work.relu), last=int(last), handoff=0, start_delay=0,
        **({"maximum": int(work.maximum)} if config.max_pooling else {}),
        **({"first_channel": work.first_channel} if config.argmax_tiles else {})) \
        | _flat_fields(config, work, source)


def _feeds_argmax(config, placed, index):
    """Whether pass ``index`` of ``placed`` has the ``last`` bit: the run's last pass, or with ``argmax_tiles``
    every pass writing the network's output (a channel-tiled last layer's tiles, in channel order)."""
    if config.argmax_tiles:
        return placed[index][2] == placed[-1][2]
    return index == len(placed) - 1


def _flat_fields(config, work, source):
    """The descriptor's flat fields (a configuration with the flat map): a flat pass's own and its map's geometry
    (``in_height`` x ``in_width``, ``positions``), zeros for the other passes."""
    if not config.flat_slots:
        return {}
    if work.kind != "flat":
        return dict.fromkeys(("flat", "channel_words", "window_word", "window_element", "lane_rows", "lane_columns",
                              "out_channel_words", "lane_advance", "out_advance_word", "out_advance_element"),
                             0) | {"write_width": work.write_grid[1] if work.write_grid else 0}
    height, width = source.flat
    layer = flat_layer(dict(in_channels=work.in_channels, in_height=height, in_width=width, kernel_height=work.kernel[0],
                            kernel_width=work.kernel[1], stride_y=work.stride[0], pad_top=work.padding[0],
                            pad_left=work.padding[1]))
    fields = flat_descriptor_fields(config, layer)
    return fields | dict(in_height=height, in_width=width, write_width=0,
                         channel_words=fields["channel_words"] * work.maps)


def _flat_outputs(work):
    """A flat pass as the positions of its output map (at stride 2 a quarter of those it computes), over every
    channel (``maps`` of them a slot's)."""
    grid = tuple(-(-extent // work.stride[0]) for extent in work.grid)
    return work._replace(grid=grid, count=grid[0] * grid[1], out_channels=work.out_channels * work.maps)


def _real_macs(work, in_shape, inputs_per_output):
    """Multiply-accumulates of a pass with real input elements (a reduction has none; padding is not counted; a
    packed input's padding elements are: they are the dense layer's zero-weight columns); each output reads
    ``inputs_per_output`` of the pass's input channels (fewer than all in a grouped convolution)."""
    if work.reduce:
        return 0
    _, in_height, in_width = in_shape
    oy, ox = np.divmod(np.arange(work.first_position, work.first_position + work.count), work.grid[1])
    rows = oy[:, None] * work.stride[0] - work.padding[0] + np.arange(work.kernel[0])
    columns = ox[:, None] * work.stride[1] - work.padding[1] + np.arange(work.kernel[1])
    real_rows = ((rows >= 0) & (rows < in_height)).sum(1)
    real_columns = ((columns >= 0) & (columns < in_width)).sum(1)
    return int((real_rows * real_columns).sum()) * inputs_per_output * work.out_channels


def compile_network(config, layers, weights, *, input_ram=0, split="auto", mapping=None, tiling="widest",
                    allocation="lifetimes"):
    """Compile ``layers`` (``ConvLayer`` / ``DenseLayer`` / ``AddLayer``, a graph through their ``source`` and
    ``skip``) with their ``weights`` for ``config`` into a :class:`Plan`.

    ``weights``: one ``(weight, bias)`` pair per layer (float32, shapes ``layer.weight_shape`` and
    ``(out_channels,)``), or a dict in the layout of :mod:`models.dqn.network` for the thesis network; rounded to
    ``config.fmt``.  ``mapping``: a :class:`DqnMapping` (checked by :func:`check_mapping`); by default
    :func:`default_mapping` with ``split`` ("auto": K-splits where the predicted cycles say they pay, "always",
    "never").  ``tiling``: the convolutions' output-channel tiles (:func:`layer_shapes`; a given mapping must use
    the same tiles).  ``allocation``: "lifetimes" (a tensor's words are free again after the last pass that reads
    it; :attr:`Plan.overwritten` names the tensors a later one overwrites) or "keep" (no tensor is ever
    overwritten: every layer's output can be read back after the run).  Where no assignment of RAMs puts an add's
    addends in one RAM, a copy pass is inserted (:func:`assign_rams`; its layer is named ``<addend>_copy``).
    """
    if split not in SPLIT_MODES:
        raise ValueError(f"split must be one of {', '.join(SPLIT_MODES)}, not {split!r}")
    if allocation not in ALLOCATION_MODES:
        raise ValueError(f"allocation must be one of {', '.join(ALLOCATION_MODES)}, not {allocation!r}")
    shapes = layer_shapes(config, layers, tiling=tiling)
    if input_ram not in (0, 1):
        raise ValueError(f"input_ram must be 0 or 1, not {input_ram!r}")
    layers = tuple(layers)
    pairs = network_weights(layers, weights)
    copied, pairs = with_copy_passes(config, layers, pairs, input_ram=input_ram, tiling=tiling)
    given = {layer.name for layer in layers}
    copy_sources = {layer.name: layer.source for layer in copied if layer.name not in given}
    if copy_sources:
        if mapping is not None and len(mapping.layers) != len(copied):
            raise ValueError(f"{', '.join(copy_sources)}: copy passes the adds need; give a mapping for the network "
                             f"with them (models.dqn.plan.with_copy_passes) or none")
        layers = copied
        shapes = layer_shapes(config, layers, tiling=tiling)
    copy_notes = {shape.skip: f"a copy pass: {shape.name} reads both addends from one RAM, and no assignment of RAMs "
                              f"puts {shape.source or 'the input'} and {copy_sources[shape.skip] or 'the input'} in one"
                  for shape in shapes if shape.add and shape.skip in copy_sources}
    rams = assign_rams(shapes, input_ram)[0]
    if mapping is None:
        mapping = default_mapping(config, shapes, split=split)
    elif split != "auto":
        raise ValueError(f"give a mapping or a split mode, not both (split={split!r})")
    check_mapping(config, shapes, mapping)
    passes = [pass_shapes(config, shape, layer_mapping) for shape, layer_mapping in zip(shapes, mapping.layers)]
    count = sum(len(layer_passes) for layer_passes in passes)
    if count > config.max_layers:
        per_layer = [layer_passes[0].name if len(layer_passes) == 1 else f"{shape.name}: {len(layer_passes)}"
                     for shape, layer_passes in zip(shapes, passes)]
        pools = [f"{shape.name} is a max pool of {shape.out_channels} channels, one pass a channel"
                 for shape in shapes if shape.maximum and shape.tiles > 1]
        raise ValueError(f"the network needs {count} passes ({', '.join(per_layer)}); the descriptor table holds "
                         f"{config.max_layers}" + "".join(f"; {pool}" for pool in pools))
    kernels = {shape.name: (None, None) if shape.add else _kernel_bits(config, shape, layer, *pair)
               for shape, layer, pair in zip(shapes, layers, pairs)}

    placed = []                 # (PassShape, input tensor, output tensor, an add's second addend): tensor names
    for shape, layer_passes in zip(shapes, passes):
        for work in layer_passes:
            if work.kind == "partials":
                placed.append((work, shape.source, f"{work.name} partial sums", None))
            else:                                      # a sum reads the partial sums of the pass before it
                placed.append((work, placed[-1][2] if work.kind == "sum" else shape.source, shape.name,
                               shape.skip if shape.add else None))
    described = {"": (shapes[0].in_shape, shapes[0].in_packed, shapes[0].in_elements, rams[""])}
    for shape in shapes:
        described[shape.name] = (shape.out_shape, shape.dense, shape.out_elements, rams[shape.name])
    for work, _, output, _ in placed:
        if work.kind == "partials":
            described[output] = ((work.count, 1, work.column_blocks * config.lanes), True,
                                 work.count * work.column_blocks * config.lanes, rams[work.layer])
    lifetimes = _lifetimes(placed, len(placed), allocation == "keep")
    shapes_by_name = {shape.name: shape for shape in shapes}
    spans = [_Span(name, ram, tensor_shape, packed, elements, *lifetimes[name],
                   fresh=name in shapes_by_name and shapes_by_name[name].dense)
             for name, (tensor_shape, packed, elements, ram) in described.items()]
    tensors, overwritten = _allocate(config, spans)
    for shape in shapes:                       # the maps in flat layout: read (flat), written (flat_out)
        for name, flat in ((shape.source, shape.flat), (shape.name, shape.flat_out)):
            if flat:
                tensors[name] = replace(tensors[name], flat=flat)
    # A graph's pass may read a tensor other than the previous pass's output: whether it waits for the previous
    # pass's writes is decided by the RAMs, as the sequencer decides it.
    reads = [index == 0 or tensors[source].ram == tensors[placed[index - 1][2]].ram
             for index, (_, source, _, _) in enumerate(placed)]

    described_passes, rows, weight_base, shared = [], [], 0, {}
    for index, (work, source_name, output_name, addend_name) in enumerate(placed):
        shape = shapes_by_name[work.layer]
        source, output = tensors[source_name], tensors[output_name]
        # A grouped convolution's tile reads its groups' input channels; its sum reads its partial sums, all of them.
        if shape.groups > 1 and work.kind != "sum":
            channels, height, width = source.shape
            read = work.in_channels * work.maps
            source = replace(source, base=source.base + work.first_in_channel * height,
                             shape=(read, height, width), elements=read * height * width)
        weight_words = _pass_weights(config, work, *kernels[work.layer]).reshape(-1, config.modules * config.lanes)
        key = (work.layer, work.column_blocks, work.first_channel) if work.kind == "positions" else None
        base = shared.get(key, weight_base)
        if base == weight_base:
            if weight_base + len(weight_words) > config.weight_depth:
                raise ValueError(f"{work.name}: the weight RAM is too small: the layers up to {work.name} need "
                                 f"{weight_base + len(weight_words)} words, the RAM has {config.weight_depth}")
            rows.append(weight_words)
            weight_base += len(weight_words)
            if key is not None:
                shared[key] = base
        addend = tensors[addend_name] if addend_name is not None else None
        descriptor = _descriptor(config, work, source, output, base, _feeds_argmax(config, placed, index), addend)
        described_passes.append((work, shape, source, output, weight_words, descriptor))
    works = [work for work, *_ in placed]
    handoffs, delays = pass_handoffs(config, works, reads, [(descriptor["in_base"], descriptor["in_height"],
                                                             descriptor["out_base"])
                                                            for *_, descriptor in described_passes])
    timing = pass_timing(config, works, reads, handoffs, delays)
    planned = []
    for index, (work, shape, source, output, weight_words, descriptor) in enumerate(described_passes):
        descriptor["handoff"], descriptor["start_delay"] = int(handoffs[index]), delays[index]
        try:
            encoded = encode_descriptor(config, **descriptor)
        except ValueError as error:
            raise ValueError(f"{work.name}: {error}") from None
        positions_per_group = group_positions(config, work)
        groups = -(-work.count // positions_per_group) * (work.out_channels // config.flat_slots
                                                          if work.kind == "flat" else 1)
        inputs_per_output = shape.in_shape[0] // shape.groups if shape.groups > 1 else work.in_channels
        planned.append(LayerPlan(
            name=work.name, network_layer=work.layer, descriptor=descriptor, encoded=encoded, input=source,
            output=output, column_blocks=work.column_blocks, positions_per_group=positions_per_group,
            groups=groups, out_channels=work.out_channels,
            ideal_macs=_real_macs(_flat_outputs(work) if work.kind == "flat" else work,
                                  (source.shape[0], *source.flat) if work.kind == "flat" else source.shape,
                                  inputs_per_output),
            predicted={name: int(timing[name][index]) for name in COUNTERS}, weight_words=weight_words,
            first_channel=work.first_channel,
            note=(f"{work.name}: {copy_notes[work.layer]}" if work.layer in copy_notes
                  else pass_note(config, shape, work))))
    return Plan(config=config, mapping=mapping, layers=tuple(planned), weight_image=np.concatenate(rows),
                network_input=tensors[""], tensors=tensors, overwritten=tuple(sorted(overwritten)), network=layers)
