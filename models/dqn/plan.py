"""The layer compiler of the DQN accelerator: a network of conv / dense layers -> descriptors, weight image, placement.

:func:`compile_network` maps every layer the way docs/dqn_accelerator.md ("Mapping a layer") describes and
returns a :class:`Plan`: per layer the descriptor (fields and encoded word), the weight RAM image the host
loads, where each activation tensor lives, and the work the layer does.  Every size comes from the
:class:`hw.dqn.config.DqnConfig` the hardware is built from; every constraint of the hardware is checked here
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

Passes.  A layer is one pass (one descriptor), or, when it leaves matrix modules idle, a K-split into
partial-sum passes on the idle position slots plus a reduction pass (docs/dqn_accelerator.md, "Splitting a
layer"): a dense layer's kernel columns are cut into chunks (:func:`_split_dense`), a convolution's lone last
position is cut by kernel column (:func:`_split_tail`).  ``split="auto"`` splits where the cycle estimate
:func:`_pass_cycles` says it pays; partial sums live in the layer's output RAM after the tensors placed so far.
"""

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hw.dqn.config import DqnConfig
from hw.shared.float_format import BINARY32
from hw.dqn.descriptor import encode_descriptor
from hw.dqn.matrix_module import matrix_module_latency
from models.dqn.network import WEIGHT_KEYS, ConvLayer, DenseLayer

__all__ = ["Tensor", "LayerPlan", "Plan", "SPLIT_MODES", "compile_network", "network_weights", "pack_image",
           "unpack_image"]

SPLIT_MODES = ("auto", "always", "never")


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
    """One pass of the hardware: one descriptor (see the module docstring for the mapping).  A network layer is
    one pass, or several when the compiler splits it (``network_layer`` names the layer)."""

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
    estimated_cycles: int     # the sequencer's timing for this pass (set-up, products, drain; no stalls)
    weight_words: np.ndarray  # (products + 1, modules * lanes) raw bits: the pass's weight RAM rows, bias last

    @property
    def reduce(self):
        return bool(self.descriptor["reduce"])

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


def _column_blocks(config, name, out_channels):
    """Smallest power of two ``C`` with ``C * lanes >= out_channels``; at most ``modules``."""
    blocks = 1
    while blocks * config.lanes < out_channels:
        blocks *= 2
    if blocks > config.modules:
        raise ValueError(f"{name}: {out_channels} output channels do not fit {config.modules} modules x "
                         f"{config.lanes} lanes (at most {config.modules * config.lanes})")
    return blocks


def _check_groups(name, start, end, positions_per_group, out_width):
    """Every group's output positions must lie in at most two output rows (the feeder holds two rows)."""
    for first in range(start, end, positions_per_group):
        last = min(first + positions_per_group, end) - 1
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

    def mark(self):
        return tuple(self._top)

    def release(self, mark):
        """Free everything placed since :meth:`mark` returned ``mark``."""
        self._top = list(mark)

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


def compile_network(config, layers, weights, *, input_ram=0, split="auto"):
    """Compile ``layers`` (``ConvLayer`` / ``DenseLayer``) with their ``weights`` for ``config`` into a :class:`Plan`.

    ``weights``: one ``(weight, bias)`` pair per layer (float32, shapes ``layer.weight_shape`` and
    ``(out_channels,)``), or a dict in the layout of :mod:`models.dqn.network` for the thesis network.
    ``split``: "auto" splits a layer's accumulations over idle matrix modules where the cycle estimate says
    it pays (see the module docstring), "always" wherever possible, "never" keeps one pass per layer.
    """
    if split not in SPLIT_MODES:
        raise ValueError(f"split must be one of {', '.join(SPLIT_MODES)}, not {split!r}")
    if not isinstance(config, DqnConfig):
        raise TypeError(f"config must be a DqnConfig, not {config!r}")
    if config.fmt != BINARY32:
        raise ValueError(f"the compiler takes float32 weights and activations: config.fmt must be binary32, "
                         f"not {config.fmt.name}")
    layers = tuple(layers)
    if not layers:
        raise ValueError("the network has no layers")
    for layer in layers:
        if not isinstance(layer, (ConvLayer, DenseLayer)):
            raise TypeError(f"layers must be ConvLayer or DenseLayer, not {layer!r}")
    if input_ram not in (0, 1):
        raise ValueError(f"input_ram must be 0 or 1, not {input_ram!r}")
    pairs = network_weights(layers, weights)

    allocator = _Allocator(config)
    source = _input_tensor(config, layers[0], input_ram, allocator)
    work = []
    for layer, (weight, bias) in zip(layers, pairs):
        _check_follows(layer, source)
        geometry = _geometry(config, layer, weight, bias, source)
        work += _layer_passes(config, layer, geometry, allocator, split)
        source = work[-1].output
    if len(work) > config.max_layers:
        raise ValueError(f"the network needs {len(work)} passes ({', '.join(item.name for item in work)}); "
                         f"the descriptor table holds {config.max_layers}")
    planned, weight_base = [], 0
    for index, item in enumerate(work):
        planned.append(_place_pass(config, item, weight_base, last=index == len(work) - 1))
        weight_base += len(planned[-1].weight_words)
    return Plan(config=config, layers=tuple(planned),
                weight_image=np.concatenate([layer.weight_words for layer in planned]))


@dataclass(frozen=True)
class _Geometry:
    """A network layer as a convolution over its input tensor (a dense layer: kernel = the whole input)."""

    name: str
    source: Tensor
    kernel_height: int
    kernel_width: int
    stride: int
    out_height: int
    out_width: int
    out_channels: int
    column_blocks: int
    relu: bool
    weights: np.ndarray       # (in_channels, kernel_height, kernel_width, out_channels) raw bits
    bias: np.ndarray          # (out_channels,) raw bits

    @property
    def positions(self):
        return self.out_height * self.out_width

    @property
    def products(self):
        return self.source.shape[0] * self.kernel_height * self.kernel_width


def _geometry(config, layer, weight, bias, source):
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
    in_channels, _, in_width = source.shape
    if in_width > config.row_elements:
        raise ValueError(f"{name}: input rows of {in_width} elements are wider than a word "
                         f"(row_elements = {config.row_elements})")
    if not isinstance(layer, DenseLayer) and out_width > config.row_elements:
        raise ValueError(f"{name}: output rows of {out_width} elements are wider than a word "
                         f"(row_elements = {config.row_elements})")
    if isinstance(layer, DenseLayer) and config.lanes > config.row_elements:
        raise ValueError(f"{name}: packed outputs need lanes ({config.lanes}) <= row_elements "
                         f"({config.row_elements})")
    weight = _check_array(name, "weight", weight, layer.weight_shape)
    bias = _check_array(name, "bias", bias, (out_channels,))
    # Row (c*Kh + kh)*Kw + kw of the kernel is the dense input index; a packed input's padding has zero weights.
    kernel = np.zeros((in_channels * kernel_height * kernel_width, out_channels), np.uint32)
    flat = weight.reshape(-1, out_channels)
    kernel[:flat.shape[0]] = flat.view(np.uint32)
    kernel = kernel.reshape(in_channels, kernel_height, kernel_width, out_channels)
    return _Geometry(name=name, source=source, kernel_height=kernel_height, kernel_width=kernel_width,
                     stride=stride, out_height=out_height, out_width=out_width, out_channels=out_channels,
                     column_blocks=_column_blocks(config, name, out_channels), relu=layer.relu,
                     weights=kernel, bias=bias.view(np.uint32))


@dataclass(frozen=True)
class _Pass:
    """What one hardware pass computes, before weight RAM and descriptor placement."""

    name: str
    layer: str                # the network layer it belongs to
    input: Tensor
    output: Tensor
    kernel: tuple             # (kernel_height, kernel_width)
    stride: int
    grid: tuple               # (out_height, out_width): the output position grid
    first: tuple              # (oy, ox) of the first position computed
    count: int                # positions computed: first .. first + count - 1 in row-major order
    out_channels: int
    slots: np.ndarray         # (products + 1, modules, lanes) raw bits: the weight rows, bias row last
    relu: bool
    layout: str               # "image", "packed" or "position_major"
    reduce: bool = False
    macs: int = 0


def _replicated_slots(config, geometry, weights, bias):
    """Weight rows where every group position uses the same weights: slot m = channel block m % C."""
    rows = np.concatenate([weights.reshape(-1, geometry.out_channels), bias[None, :]])
    padded = np.zeros((rows.shape[0], geometry.column_blocks * config.lanes), np.uint32)
    padded[:, :geometry.out_channels] = rows
    blocks = padded.reshape(rows.shape[0], geometry.column_blocks, config.lanes)
    return blocks[:, np.arange(config.modules) % geometry.column_blocks]


def _chunk_slots(config, geometry, chunks):
    """Weight rows of a partial-sum pass: group position q uses ``chunks[q]`` ((products, out_channels) bits);
    no bias (the reduction adds it)."""
    column_blocks, lanes = geometry.column_blocks, config.lanes
    products = chunks[0].shape[0]
    slots = np.zeros((products + 1, config.modules, lanes), np.uint32)
    for q, chunk in enumerate(chunks):
        padded = np.zeros((products, column_blocks * lanes), np.uint32)
        padded[:, :geometry.out_channels] = chunk
        slots[:products, q * column_blocks:(q + 1) * column_blocks] = padded.reshape(products, column_blocks, lanes)
    return slots


def _bias_slots(config, geometry, reductions):
    """Weight rows of a reduction pass: ``reductions`` unused rows (its vectors come from the input RAM), then
    the bias row."""
    return _replicated_slots(config, geometry, np.zeros((reductions, geometry.out_channels), np.uint32),
                             geometry.bias)


def _pass_cycles(config, work):
    """Estimated cycles of a pass (the sequencer's timing, docs/dqn_accelerator.md): set-up (3 + the positions of
    its first group), groups x (products + 1), then the drain: matrix-module latency + the last group's writes
    + 3."""
    positions_per_group = config.modules // _column_blocks(config, work.name, work.out_channels)
    groups = -(-work.count // positions_per_group)
    products = work.slots.shape[0] - 1
    last = work.count - (groups - 1) * positions_per_group
    blocks = -(-work.out_channels // config.lanes)
    if work.layout == "image":
        rows = 1 if (work.first[1] + (groups - 1) * positions_per_group) % work.grid[1] + last <= work.grid[1] else 2
        writes = work.out_channels * rows
    else:
        writes = blocks * (last if work.layout == "position_major" else 1)
    return 3 + min(positions_per_group, work.count) + groups * (products + 1) + matrix_module_latency(config.multiplier_latency, config.adder_latency) + writes + 3


def _whole_layer(config, geometry, output, *, count=None):
    layout = "packed" if output.packed else "image"
    count = geometry.positions if count is None else count
    return _Pass(name=geometry.name, layer=geometry.name, input=geometry.source, output=output,
                 kernel=(geometry.kernel_height, geometry.kernel_width), stride=geometry.stride,
                 grid=(geometry.out_height, geometry.out_width), first=(0, 0), count=count,
                 out_channels=geometry.out_channels,
                 slots=_replicated_slots(config, geometry, geometry.weights, geometry.bias),
                 relu=geometry.relu, layout=layout,
                 macs=count * geometry.products * geometry.out_channels)


def _reduction(config, geometry, partials, output, position, reductions):
    """Sum ``reductions`` partial vectors (words of ``partials``) plus the bias into output ``position``."""
    oy, ox = divmod(position, geometry.out_width)
    return _Pass(name=f"{geometry.name} sum", layer=geometry.name, input=partials, output=output, kernel=(1, 1), stride=1,
                 grid=(geometry.out_height, geometry.out_width), first=(oy, ox), count=1,
                 out_channels=geometry.out_channels, slots=_bias_slots(config, geometry, reductions),
                 relu=geometry.relu, layout="packed" if output.packed else "image", reduce=True)


def _split_dense(config, geometry, output, allocator):
    """A dense layer whose single position leaves P - 1 position slots idle: its kernel columns are cut into S
    chunks (S = the largest divisor of the kernel width <= P), one per slot, computed as S partial sums, then
    summed by a reduction pass.  None if the layer cannot be split."""
    slots = config.modules // geometry.column_blocks
    width = geometry.kernel_width
    chunks = max(divisor for divisor in range(1, min(slots, width) + 1) if width % divisor == 0)
    if chunks < 2 or geometry.column_blocks * config.lanes > config.row_elements:
        return None
    chunk = width // chunks
    partials = allocator.place(f"{geometry.name} partial sums", output.ram, (chunks, 1, geometry.column_blocks * config.lanes),
                               packed=True, elements=chunks * geometry.column_blocks * config.lanes)
    in_channels = geometry.source.shape[0]
    weights = [geometry.weights[:, :, q * chunk:(q + 1) * chunk].reshape(-1, geometry.out_channels)
               for q in range(chunks)]
    partial_pass = _Pass(name=f"{geometry.name} partials", layer=geometry.name, input=geometry.source, output=partials,
                         kernel=(geometry.kernel_height, chunk), stride=chunk, grid=(1, chunks), first=(0, 0),
                         count=chunks, out_channels=geometry.out_channels,
                         slots=_chunk_slots(config, geometry, weights), relu=False, layout="position_major",
                         macs=chunks * in_channels * geometry.kernel_height * chunk * geometry.out_channels)
    return [partial_pass, _reduction(config, geometry, partials, output, 0, chunks)]


def _split_tail(config, geometry, output, allocator):
    """A convolution whose last group holds one position: that position is computed as kernel-width partial
    sums (kernel column q on group position q, a ``Kh x 1`` convolution over the input at stride 1), then
    summed by a reduction pass; the other positions run as before.  None if the layer cannot be split."""
    slots = config.modules // geometry.column_blocks
    kernel_width = geometry.kernel_width
    if geometry.positions % slots != 1 or geometry.positions == 1 or not 2 <= kernel_width <= slots \
            or geometry.column_blocks * config.lanes > config.row_elements:
        return None
    tail = geometry.positions - 1
    oy, ox = divmod(tail, geometry.out_width)
    in_channels, in_height, in_width = geometry.source.shape
    partials = allocator.place(f"{geometry.name} tail partial sums", output.ram,
                               (kernel_width, 1, geometry.column_blocks * config.lanes), packed=True,
                               elements=kernel_width * geometry.column_blocks * config.lanes)
    weights = [geometry.weights[:, :, q:q + 1].reshape(-1, geometry.out_channels) for q in range(kernel_width)]
    partial_pass = _Pass(name=f"{geometry.name} tail", layer=geometry.name, input=geometry.source, output=partials,
                         kernel=(geometry.kernel_height, 1), stride=1,
                         grid=(in_height - geometry.kernel_height + 1, in_width),
                         first=(oy * geometry.stride, ox * geometry.stride), count=kernel_width,
                         out_channels=geometry.out_channels, slots=_chunk_slots(config, geometry, weights),
                         relu=False, layout="position_major",
                         macs=in_channels * geometry.kernel_height * kernel_width * geometry.out_channels)
    return [_whole_layer(config, geometry, output, count=tail), partial_pass,
            _reduction(config, geometry, partials, output, tail, kernel_width)]



def _layer_passes(config, layer, geometry, allocator, split):
    """The passes that compute ``layer``: the whole layer, or a K-split (see :func:`_split_dense`,
    :func:`_split_tail`) when ``split`` is "always", or "auto" and the estimate says it is faster."""
    out_ram = 1 - geometry.source.ram
    if isinstance(layer, ConvLayer):
        output = allocator.place(f"{layer.name} output", out_ram,
                                 (geometry.out_channels, geometry.out_height, geometry.out_width), packed=False,
                                 elements=geometry.out_channels * geometry.positions)
    else:
        output = allocator.place(f"{layer.name} output", out_ram,
                                 (-(-geometry.out_channels // config.lanes), 1, config.lanes), packed=True,
                                 elements=geometry.out_channels)
    whole = [_whole_layer(config, geometry, output)]
    if split == "never":
        return whole
    mark = allocator.mark()
    splitter = _split_dense if isinstance(layer, DenseLayer) else _split_tail
    passes = splitter(config, geometry, output, allocator)
    if passes is None:
        return whole
    if split == "auto" and sum(_pass_cycles(config, work) for work in passes) >= _pass_cycles(config, whole[0]):
        allocator.release(mark)
        return whole
    return passes


def _place_pass(config, work, weight_base, *, last):
    """The :class:`LayerPlan` of one pass whose weight rows start at ``weight_base``."""
    name = work.name
    column_blocks = _column_blocks(config, name, work.out_channels)
    positions_per_group = config.modules // column_blocks
    out_height, out_width = work.grid
    first = work.first[0] * out_width + work.first[1]
    end = first + work.count
    _check_groups(name, first, end, positions_per_group, out_width)
    products = work.slots.shape[0] - 1
    if weight_base + products + 1 > config.weight_depth:
        raise ValueError(f"{name}: the weight RAM is too small: the layers up to {name} need "
                         f"{weight_base + products + 1} words, the RAM has {config.weight_depth}")
    source, output = work.input, work.output
    in_channels = products if work.reduce else source.shape[0]
    descriptor = dict(
        in_ram=source.ram, in_base=source.base, in_channels=in_channels, in_height=source.shape[1],
        kernel_height=work.kernel[0], kernel_width=work.kernel[1], stride=work.stride, out_height=out_height,
        out_width=out_width, positions=end, first_position=first, first_oy=work.first[0], first_ox=work.first[1],
        first_row=work.first[0] * work.stride, first_column=work.first[1] * work.stride,
        column_blocks_log2=column_blocks.bit_length() - 1, out_channels=work.out_channels, products=products,
        weight_base=weight_base, out_ram=output.ram, out_base=output.base,
        packed_output=int(work.layout != "image"), position_major=int(work.layout == "position_major"),
        reduce=int(work.reduce), relu=int(work.relu), last=int(last))
    try:
        encoded = encode_descriptor(config, **descriptor)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    return LayerPlan(name=name, network_layer=work.layer, descriptor=descriptor, encoded=encoded,
                     input=source, output=output, column_blocks=column_blocks,
                     positions_per_group=positions_per_group, groups=-(-work.count // positions_per_group),
                     out_channels=work.out_channels, ideal_macs=work.macs,
                     estimated_cycles=_pass_cycles(config, work), weight_words=work.slots.reshape(products + 1, -1))
