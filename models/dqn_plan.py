"""The layer compiler of the DQN accelerator: a network of conv / dense layers -> descriptors, weight image, placement.

:func:`compile_network` maps every layer the way docs/dqn_accelerator.md ("Mapping a layer") describes and
returns a :class:`Plan`: per layer the descriptor (fields and encoded word), the weight RAM image the host
loads, where each activation tensor lives, and the work the layer does.  Every size comes from the
:class:`hw.dqn_config.DqnConfig` the hardware is built from; every constraint of the hardware is checked here
with an error that names the layer and the bad value.

Placement.  The network input is an image ``[C, H, W]`` at word 0 of activation RAM ``input_ram`` (a first
dense layer reads its ``N`` inputs in packed layout).  Layer ``i`` reads from one RAM and writes the other
(ping-pong); every output tensor goes to the first free word of its RAM, so no tensor is ever overwritten:
the input image stays intact for the next state's load and the host can read back every layer's output.
For the thesis network this gives the table of the doc (RAM1 @0, RAM0 @336, RAM1 @320, RAM0 @624).

Layouts.  A convolution writes an image ``[Cout, out_h, out_w]`` (row ``y`` of channel ``c`` at word
``base + c*out_h + y``).  A dense layer writes packed outputs (output ``n`` at word ``base + n // lanes``,
element ``n % lanes``): the image ``[ceil(N/lanes), 1, lanes]``.  The result writer stores only outputs
``n < N``: the padding elements of the last word keep the RAM's initial ``+0`` (no other tensor is ever placed
there), and the golden model reads them as ``+0``.  A dense layer after a convolution reads the convolution's image
with kernel ``H x W`` (weight index ``(c*H + y)*W + x``, the flattening order of the weights); after a dense
layer it reads the packed image with kernel ``1 x lanes``, the weights of the padding elements being zero.

Weight image.  Layer weights start at ``weight_base``: word ``k`` (``k = (c*Kh + kh)*Kw + kw``) holds, in slot
``m`` (elements ``m*lanes .. m*lanes + lanes - 1``), the weights of output channels ``(m % C)*lanes ..`` for
step ``k``; word ``weight_base + products`` is the bias row in the same slots.  Channels past the layer's
output count are zero.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hw.dqn_config import DqnConfig
from hw.float_format import BINARY32
from hw.layer_descriptor import encode_descriptor
from models.dqn_network import WEIGHT_KEYS, ConvLayer, DenseLayer

__all__ = ["Tensor", "LayerPlan", "Plan", "compile_network", "network_weights", "pack_image", "unpack_image"]


@dataclass(frozen=True)
class Tensor:
    """An activation tensor in one activation RAM: ``shape = (channels, height, width)`` at word ``base``.

    ``packed``: the tensor holds packed outputs (``width == lanes``, element ``n`` of the flat vector at word
    ``base + n // lanes``, element ``n % lanes``); ``elements`` counts the meaningful ones (the rest of the
    last word is padding).
    """

    ram: int
    base: int
    shape: tuple
    packed: bool
    elements: int

    @property
    def words(self):
        channels, height, _ = self.shape
        return channels * height

    def describe(self):
        layout = "packed" if self.packed else "image"
        return f"RAM{self.ram} @{self.base} {layout} [{','.join(map(str, self.shape))}]"


@dataclass(frozen=True)
class LayerPlan:
    """One layer as the hardware runs it (see the module docstring for the mapping)."""

    name: str
    descriptor: dict          # field -> value, as hw.layer_descriptor names them
    encoded: int              # encode_descriptor(config, **descriptor)
    input: Tensor
    output: Tensor
    column_blocks: int        # C: lanes-wide channel blocks; P = modules // C output positions per group
    positions_per_group: int
    groups: int
    out_channels: int
    ideal_macs: int           # multiply-accumulates of the layer itself (no padding, no bias)
    weights: np.ndarray       # (products, column_blocks * lanes) raw bits, padded with zeros
    bias: np.ndarray          # (column_blocks * lanes,) raw bits, padded with zeros

    @property
    def products(self):
        return self.descriptor["products"]

    @property
    def cycles_per_group(self):
        """Products each module accumulates per group: the layer's products plus the bias step."""
        return self.products + 1

    @property
    def product_cycles(self):
        """Cycles the matrix modules take a product: ``groups * (products + 1)``, the layer's minimum time."""
        return self.groups * self.cycles_per_group


@dataclass(frozen=True)
class Plan:
    """A compiled network: descriptors, weight image and placement for one :class:`DqnConfig`."""

    config: DqnConfig
    layers: tuple
    weight_image: np.ndarray  # (words, modules * lanes) raw bits: what the host writes to weight RAM words 0..

    @property
    def input(self):
        return self.layers[0].input

    @property
    def output(self):
        return self.layers[-1].output

    @property
    def actions(self):
        """Outputs of the last layer (the Q-values)."""
        return self.layers[-1].out_channels

    @property
    def descriptors(self):
        return [layer.encoded for layer in self.layers]

    def input_words(self, state):
        """The activation words (``(words, row_elements)`` raw bits) of one network input (float32)."""
        state = np.asarray(state)
        channels, height, width = self.input.shape
        if self.input.packed:
            if state.dtype != np.float32 or state.size != self.input.elements:
                raise ValueError(f"the network input must be {self.input.elements} float32 values, "
                                 f"not {state.size} {state.dtype}")
            flat = np.zeros(channels * width, np.float32)
            flat[:self.input.elements] = state.reshape(-1)
            state = flat.reshape(channels, height, width)
        if state.shape != (channels, height, width):
            raise ValueError(f"the network input must have shape {(channels, height, width)}, not {state.shape}")
        return pack_image(state, self.config.row_elements)

    def output_values(self, words):
        """The last layer's outputs (raw bits, ``(actions,)``) from its words (``(words, row_elements)``)."""
        return unpack_image(self.output, words).reshape(-1)[:self.output.elements]


def pack_image(image, row_elements):
    """``image [C, H, W]`` (float32) as activation words: ``(C*H, row_elements)`` raw bits, zeros past ``W``."""
    image = np.asarray(image)
    if image.dtype != np.float32:
        raise ValueError(f"activations must be float32, not {image.dtype}")
    channels, height, width = image.shape
    if width > row_elements:
        raise ValueError(f"an image row of {width} elements does not fit a word of {row_elements}")
    words = np.zeros((channels * height, row_elements), np.uint32)
    words[:, :width] = image.reshape(channels * height, width).view(np.uint32)
    return words


def unpack_image(tensor, words):
    """The tensor ``[C, H, W]`` as raw bits from its words (``(words, row_elements)``, starting at its base)."""
    channels, height, width = tensor.shape
    words = np.asarray(words)
    if words.ndim != 2 or words.shape[0] < tensor.words or words.shape[1] < width:
        raise ValueError(f"{tensor.describe()} needs ({tensor.words}, >= {width}) words, got {words.shape}")
    return words[:tensor.words, :width].reshape(channels, height, width)


def network_weights(layers, weights):
    """``[(weight, bias), ...]`` per layer from a sequence of pairs or a dict of the models.dqn_network layout."""
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


def _column_blocks(config, name, out_channels):
    """Smallest power of two ``C`` with ``C * lanes >= out_channels``; at most ``modules``."""
    blocks = 1
    while blocks * config.lanes < out_channels:
        blocks *= 2
    if blocks > config.modules:
        raise ValueError(f"{name}: {out_channels} output channels do not fit {config.modules} modules x "
                         f"{config.lanes} lanes (at most {config.modules * config.lanes})")
    return blocks


def _check_groups(name, positions, positions_per_group, out_width):
    """Every group's output positions must lie in at most two output rows (the feeder holds two rows)."""
    for first in range(0, positions, positions_per_group):
        last = min(first + positions_per_group, positions) - 1
        if last // out_width - first // out_width > 1:
            raise ValueError(f"{name}: a group of {positions_per_group} output positions spans "
                             f"{last // out_width - first // out_width + 1} rows of {out_width} "
                             f"(positions {first}..{last}); the feeder holds two rows")


def _check_array(name, what, array, shape):
    array = np.asarray(array)
    if array.shape != shape:
        raise ValueError(f"{name}: {what} must have shape {shape}, not {array.shape}")
    if array.dtype != np.float32:
        raise ValueError(f"{name}: {what} must be float32, not {array.dtype}")
    return array


class _Allocator:
    """First free word of each activation RAM; tensors are never overwritten."""

    def __init__(self, config):
        self._depth = config.activation_depth
        self._top = [0, 0]

    def place(self, name, ram, shape, *, packed, elements):
        base, words = self._top[ram], shape[0] * shape[1]
        if base + words > self._depth:
            raise ValueError(f"{name}: activation RAM {ram} is too small: the tensor needs words {base}.."
                             f"{base + words - 1}, the RAM has {self._depth} words")
        self._top[ram] = base + words
        return Tensor(ram=ram, base=base, shape=shape, packed=packed, elements=elements)


def _input_tensor(config, layer, ram, allocator):
    if isinstance(layer, ConvLayer):
        shape = (layer.in_channels, layer.in_size, layer.in_size)
        return allocator.place(f"{layer.name} input", ram, shape, packed=False, elements=int(np.prod(shape)))
    return allocator.place(f"{layer.name} input", ram, (-(-layer.inputs // config.lanes), 1, config.lanes),
                           packed=True, elements=layer.inputs)


def _check_follows(layer, source):
    """``layer`` must read ``source`` (the previous layer's output tensor) as it is."""
    if isinstance(layer, ConvLayer):
        expected = (layer.in_channels, layer.in_size, layer.in_size)
        if source.packed:
            raise ValueError(f"{layer.name}: a convolution cannot read the packed output of a dense layer")
        if source.shape != expected:
            raise ValueError(f"{layer.name}: expects an input image {expected}, the previous layer makes "
                             f"{source.shape}")
    elif layer.inputs != source.elements:
        raise ValueError(f"{layer.name}: expects {layer.inputs} inputs, the previous layer makes {source.elements}")


def compile_network(config, layers, weights, *, input_ram=0):
    """Compile ``layers`` (``ConvLayer`` / ``DenseLayer``) with their ``weights`` for ``config`` into a :class:`Plan`.

    ``weights``: one ``(weight, bias)`` pair per layer (float32, shapes ``layer.weight_shape`` and
    ``(out_channels,)``), or a dict in the layout of :mod:`models.dqn_network` for the thesis network.
    """
    if not isinstance(config, DqnConfig):
        raise TypeError(f"config must be a DqnConfig, not {config!r}")
    if config.fmt != BINARY32:
        raise ValueError(f"the compiler takes float32 weights and activations: config.fmt must be binary32, "
                         f"not {config.fmt.name}")
    layers = tuple(layers)
    if not layers:
        raise ValueError("the network has no layers")
    if len(layers) > config.max_layers:
        raise ValueError(f"the network has {len(layers)} layers; the descriptor table holds {config.max_layers}")
    for layer in layers:
        if not isinstance(layer, (ConvLayer, DenseLayer)):
            raise TypeError(f"layers must be ConvLayer or DenseLayer, not {layer!r}")
    if input_ram not in (0, 1):
        raise ValueError(f"input_ram must be 0 or 1, not {input_ram!r}")
    pairs = network_weights(layers, weights)

    allocator = _Allocator(config)
    source = _input_tensor(config, layers[0], input_ram, allocator)
    planned, weight_rows, weight_base = [], [], 0
    for index, (layer, (weight, bias)) in enumerate(zip(layers, pairs)):
        _check_follows(layer, source)
        plan = _plan_layer(config, layer, weight, bias, source, allocator, weight_base,
                           last=index == len(layers) - 1)
        planned.append(plan)
        weight_rows.append(_weight_words(config, plan))
        weight_base += plan.cycles_per_group
        source = plan.output
    return Plan(config=config, layers=tuple(planned), weight_image=np.concatenate(weight_rows))


def _plan_layer(config, layer, weight, bias, source, allocator, weight_base, *, last):
    name = layer.name
    if isinstance(layer, ConvLayer):
        if layer.kernel > layer.in_size or layer.stride < 1:
            raise ValueError(f"{name}: kernel {layer.kernel} stride {layer.stride} do not fit an input of "
                             f"{layer.in_size}")
        out_channels, kernel_height, kernel_width = layer.out_channels, layer.kernel, layer.kernel
        stride, out_height, out_width = layer.stride, layer.out_size, layer.out_size
    else:
        out_channels, kernel_height, kernel_width = layer.outputs, source.shape[1], source.shape[2]
        stride, out_height, out_width = 1, 1, 1
    in_channels, in_height, in_width = source.shape
    if in_width > config.row_elements:
        raise ValueError(f"{name}: input rows of {in_width} elements are wider than a word "
                         f"(row_elements = {config.row_elements})")
    if not isinstance(layer, DenseLayer) and out_width > config.row_elements:
        raise ValueError(f"{name}: output rows of {out_width} elements are wider than a word "
                         f"(row_elements = {config.row_elements})")
    if isinstance(layer, DenseLayer) and config.lanes > config.row_elements:
        raise ValueError(f"{name}: packed outputs need lanes ({config.lanes}) <= row_elements "
                         f"({config.row_elements})")

    column_blocks = _column_blocks(config, name, out_channels)
    positions_per_group = config.modules // column_blocks
    positions = out_height * out_width
    _check_groups(name, positions, positions_per_group, out_width)
    products = in_channels * kernel_height * kernel_width
    if weight_base + products + 1 > config.weight_depth:
        raise ValueError(f"{name}: the weight RAM is too small: the layers up to {name} need "
                         f"{weight_base + products + 1} words, the RAM has {config.weight_depth}")

    weight = _check_array(name, "weight", weight, layer.weight_shape)
    bias = _check_array(name, "bias", bias, (out_channels,))
    padded_channels = column_blocks * config.lanes
    weight_bits = np.zeros((products, padded_channels), np.uint32)
    flat = weight.reshape(-1, out_channels)       # row = (c*Kh + kh)*Kw + kw, or the dense input index
    weight_bits[:flat.shape[0], :out_channels] = flat.view(np.uint32)
    bias_bits = np.zeros(padded_channels, np.uint32)
    bias_bits[:out_channels] = bias.view(np.uint32)

    out_ram = 1 - source.ram
    if isinstance(layer, ConvLayer):
        output = allocator.place(f"{name} output", out_ram, (out_channels, out_height, out_width), packed=False,
                                 elements=out_channels * positions)
    else:
        output = allocator.place(f"{name} output", out_ram, (-(-out_channels // config.lanes), 1, config.lanes),
                                 packed=True, elements=out_channels)

    descriptor = dict(
        in_ram=source.ram, in_base=source.base, in_channels=in_channels, in_height=in_height,
        kernel_height=kernel_height, kernel_width=kernel_width, stride=stride, out_height=out_height,
        out_width=out_width, positions=positions, column_blocks_log2=column_blocks.bit_length() - 1,
        out_channels=out_channels, products=products, weight_base=weight_base, out_ram=out_ram,
        out_base=output.base, packed_output=int(output.packed), relu=int(layer.relu), last=int(last))
    try:
        encoded = encode_descriptor(config, **descriptor)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    return LayerPlan(name=name, descriptor=descriptor, encoded=encoded, input=source, output=output,
                     column_blocks=column_blocks, positions_per_group=positions_per_group,
                     groups=-(-positions // positions_per_group), out_channels=out_channels,
                     ideal_macs=layer.macs, weights=weight_bits, bias=bias_bits)


def _weight_words(config, plan):
    """The layer's weight RAM words: ``(products + 1, modules * lanes)``, slot ``m`` = channel block ``m % C``."""
    rows = np.concatenate([plan.weights, plan.bias[None, :]])          # (products + 1, C * lanes)
    blocks = rows.reshape(rows.shape[0], plan.column_blocks, config.lanes)
    return blocks[:, np.arange(config.modules) % plan.column_blocks].reshape(rows.shape[0], -1)
