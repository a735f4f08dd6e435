"""The layer compiler of the CapsNet accelerator: int8 layers -> descriptors, memory images, placement, cycles.

:func:`compile_layers` maps a chain of :class:`ConvSpec` layers (convolution engine) optionally followed by
one :class:`MatvecSpec` (matrix-vector engine) the way docs/capsnet_accelerator.md describes, for one
:class:`hw.capsnet.config.CapsNetConfig`; :func:`compile_capsnet` builds the CapsNet's three layers (conv1,
PrimaryCaps, DigitCaps predictions) from a :class:`models.capsnet.golden.FixedCapsNet`.  Every constraint of
the hardware is checked here with an error naming the layer and the bad value.

Placement.  The network input is an image ``[C, H, W]`` at word 0 of activation RAM 0; convolution ``i``
reads one RAM and writes the other (ping-pong), each output at the first free word of its RAM, so the host can
read every layer's output after a run.  A matrix-vector layer reads the last convolution's output in place
(capsule ``i = (t*H + y)*W + x``, element ``k`` = channel ``t*N + k``) and writes prediction word ``i*J + j``
(lane ``r`` = row ``r``) from word 0 of the prediction RAM.

Images.  Conv weights: layer ``L`` starts at word ``weight_base``; word ``weight_base + b*products + k``
(``k = (c*Kh + kh)*Kw + kw``) holds in slot ``m`` the weight ``w[b*M + m, c, kh, kw]`` (0 past the last output
channel).  Biases: word ``bias_base + b`` slot ``m`` = ``bias[b*M + m]``.  Matrix-vector weights: word
``(i*J + j)*N + k`` lane ``r`` = ``W[i, j, r, k]`` (0 for ``r >= rows``).

Cycles (what the hardware's per-layer counters must show, checked by the tests): a convolution takes
``1 + groups*products + 1 + 3 + writes + 1`` cycles when ``products >= modules + 5`` (no stall) plus 1 cycle of
launch; a matrix-vector layer ``capsules*J*N + 1 + 3`` plus 1 (:func:`LayerPlan.expected_cycles`).
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from nnaccel.hw.capsnet.config import CapsNetConfig
from nnaccel.hw.capsnet.descriptor import LayerKind, encode_descriptor
from nnaccel.hw.capsnet.int_matrix_module import INT_MATRIX_MODULE_LATENCY
from nnaccel.hw.capsnet.matvec_engine import matvec_result_latency

__all__ = ["ConvSpec", "MatvecSpec", "Tensor", "LayerPlan", "CapsNetPlan", "compile_layers", "compile_capsnet",
           "fitted_config", "pack_int8_rows", "unpack_int8_rows", "LAUNCH_CYCLES"]

LAUNCH_CYCLES = 1       # the top's sequencer: one cycle between layers (LAUNCH state)


@dataclass(frozen=True)
class ConvSpec:
    """A convolution: ``weights`` (K, C, kh, kw) int8, ``bias`` (K,) int32 or None, as ``int8_layers.conv2d``."""

    name: str
    weights: np.ndarray
    bias: np.ndarray | None
    stride: int
    shift: int
    relu: bool


@dataclass(frozen=True)
class MatvecSpec:
    """Prediction vectors: ``weights`` (capsules, J, rows, N) int8 applied to the previous layer's output read as
    capsules (``N`` consecutive channels per capsule type, type-major); as ``int8_layers.matvec`` without bias."""

    name: str
    weights: np.ndarray
    shift: int
    relu: bool = False


@dataclass(frozen=True)
class Tensor:
    """An image ``shape = (channels, height, width)`` at word ``base`` of activation RAM ``ram``."""

    ram: int
    base: int
    shape: tuple

    @property
    def words(self):
        return self.shape[0] * self.shape[1]


@dataclass(frozen=True)
class LayerPlan:
    name: str
    kind: int                 # hw.capsnet.descriptor.LayerKind
    descriptor: dict
    encoded: int
    input: Tensor
    output: Tensor | None     # convolutions: the output image; matrix-vector: None (prediction RAM)
    macs: int                 # the layer's multiply-accumulates
    product_cycles: int       # cycles the engine takes a product
    writes: int               # result writes of the last group (convolution) or 1
    result_latency: int = INT_MATRIX_MODULE_LATENCY    # module input to result write (hw.capsnet.matvec_engine)

    @property
    def expected_cycles(self):
        """Cycles the per-layer counter shows, from the layer's launch to its engine's done (no stalls)."""
        if self.kind == LayerKind.CONV:
            return LAUNCH_CYCLES + 1 + self.product_cycles + 1 + INT_MATRIX_MODULE_LATENCY + self.writes + 1
        return LAUNCH_CYCLES + self.product_cycles + 1 + self.result_latency


@dataclass(frozen=True)
class CapsNetPlan:
    config: CapsNetConfig
    layers: tuple
    conv_weight_image: np.ndarray    # (words, conv_modules) int8
    bias_image: np.ndarray           # (words, conv_modules) int32
    matvec_weight_image: np.ndarray  # (words, matvec_lanes) int8
    prediction_shape: tuple | None   # (capsules, J, rows) of the matrix-vector layer

    @property
    def input(self):
        return self.layers[0].input

    @property
    def descriptors(self):
        return [layer.encoded for layer in self.layers]

    @property
    def prediction_words(self):
        capsules, out_capsules, _ = self.prediction_shape
        return capsules * out_capsules

    def input_words(self, image):
        """The activation words (``(words, row_elements)`` int8) of one network input (int8 ``[C, H, W]``)."""
        image = np.asarray(image)
        if image.shape != self.input.shape or image.dtype != np.int8:
            raise ValueError(f"the network input must be int8 of shape {self.input.shape}, "
                             f"not {image.dtype} {image.shape}")
        return pack_int8_rows(image, self.config.row_elements)

    def tensor_values(self, tensor, words):
        """The image ``tensor`` (int8 ``[C, H, W]``) from its words (``(words, row_elements)``)."""
        return unpack_int8_rows(words, tensor.shape)

    def predictions(self, words):
        """Prediction words ``(capsules*J, matvec_lanes)`` int8 -> ``(capsules, J, rows)``."""
        capsules, out_capsules, rows = self.prediction_shape
        return np.asarray(words, dtype=np.int8)[:, :rows].reshape(capsules, out_capsules, rows)


def pack_int8_rows(image, row_elements):
    """``image [C, H, W]`` int8 as ``(C*H, row_elements)`` int8 words, zeros past ``W``."""
    channels, height, width = image.shape
    if width > row_elements:
        raise ValueError(f"rows of {width} elements do not fit a word of {row_elements}")
    words = np.zeros((channels * height, row_elements), np.int8)
    words[:, :width] = image.reshape(channels * height, width)
    return words


def unpack_int8_rows(words, shape):
    channels, height, width = shape
    return np.asarray(words, dtype=np.int8)[:channels * height, :width].reshape(shape)


def _fail(layer, message):
    raise ValueError(f"layer {layer}: {message}")


def _check_int8(layer, name, array, ndim):
    array = np.asarray(array)
    if array.dtype.kind not in "iu" or array.ndim != ndim:
        _fail(layer, f"{name} must be a {ndim}-D integer array, not {array.dtype} {array.shape}")
    if array.size and (array.min() < -128 or array.max() > 127):
        _fail(layer, f"{name} holds values outside int8 ({array.min()}..{array.max()})")
    return array.astype(np.int64)


def _compile_conv(config, spec, tensor, weight_base, bias_base, out_base):
    weights = _check_int8(spec.name, "weights", spec.weights, 4)
    out_channels, in_channels, kernel_height, kernel_width = weights.shape
    channels, height, width = tensor.shape
    if in_channels != channels:
        _fail(spec.name, f"weights take {in_channels} input channels, the input has {channels}")
    if not 1 <= spec.stride <= 7:
        _fail(spec.name, f"stride must be from 1 to 7, not {spec.stride!r}")
    if not (1 <= kernel_height <= min(height, 31) and 1 <= kernel_width <= min(width, 31)):
        _fail(spec.name, f"kernel {kernel_height}x{kernel_width} does not fit the input {height}x{width} (or 31)")
    out_height = (height - kernel_height) // spec.stride + 1
    out_width = (width - kernel_width) // spec.stride + 1
    modules, lanes = config.conv_modules, config.conv_lanes
    blocks = -(-out_channels // modules)
    column_blocks = -(-out_width // lanes)
    products = in_channels * kernel_height * kernel_width
    bias = np.zeros(out_channels, np.int64) if spec.bias is None else np.asarray(spec.bias, np.int64)
    if bias.shape != (out_channels,) or bias.min() < -(1 << 31) or bias.max() >= 1 << 31:
        _fail(spec.name, f"bias must be {out_channels} int32 values")
    padded = np.zeros((blocks * modules, products), np.int64)
    padded[:out_channels] = weights.reshape(out_channels, products)
    weight_words = padded.reshape(blocks, modules, products).transpose(0, 2, 1).reshape(blocks * products, modules)
    bias_words = np.zeros(blocks * modules, np.int64)
    bias_words[:out_channels] = bias
    output = Tensor(1 - tensor.ram, out_base, (out_channels, out_height, out_width))
    fields = {"kind": LayerKind.CONV, "in_ram": tensor.ram, "in_base": tensor.base, "shift": spec.shift,
              "relu": int(spec.relu), "in_height": height, "kernel_height": kernel_height,
              "kernel_width": kernel_width, "stride": spec.stride, "out_height": out_height, "out_width": out_width,
              "out_channels": out_channels, "channel_blocks": blocks, "column_blocks": column_blocks,
              "products": products, "column_step": lanes * spec.stride, "block_rows": modules * out_height,
              "weight_base": weight_base, "bias_base": bias_base, "out_ram": output.ram, "out_base": out_base,
              "channels": in_channels, "kernel_words": kernel_height * kernel_width, "row_groups": out_height,
              "channel_words": out_height}
    groups = blocks * out_height * column_blocks
    last_block_channels = out_channels - (blocks - 1) * modules
    plan = LayerPlan(name=spec.name, kind=LayerKind.CONV, descriptor=fields, encoded=_encode(config, spec.name, fields),
                     input=tensor, output=output, macs=out_channels * out_height * out_width * products,
                     product_cycles=groups * products, writes=last_block_channels)
    return plan, weight_words, bias_words.reshape(blocks, modules)


def _compile_matvec(config, spec, tensor):
    weights = _check_int8(spec.name, "weights", spec.weights, 4)
    capsules, out_capsules, rows, dims = weights.shape
    channels, height, width = tensor.shape
    if channels % dims or capsules != channels // dims * height * width:
        _fail(spec.name, f"weights for {capsules} capsules of {dims} elements do not match the input {tensor.shape}")
    if rows > config.matvec_lanes:
        _fail(spec.name, f"{rows} rows per matrix exceed the {config.matvec_lanes} lanes")
    if dims < config.matvec_requantize_cycles:
        _fail(spec.name, f"{dims}-element capsules come faster than the {config.matvec_requantize_cycles} cycles "
                         f"the shared requantizers take per result")
    if capsules * out_capsules > config.prediction_depth:
        _fail(spec.name, f"{capsules * out_capsules} predictions exceed the prediction RAM ({config.prediction_depth})")
    padded = np.zeros((capsules, out_capsules, config.matvec_lanes, dims), np.int64)
    padded[:, :, :rows] = weights
    weight_words = padded.transpose(0, 1, 3, 2).reshape(capsules * out_capsules * dims, config.matvec_lanes)
    fields = {"kind": LayerKind.MATVEC, "in_ram": tensor.ram, "in_base": tensor.base, "shift": spec.shift,
              "relu": int(spec.relu), "capsule_types": channels // dims, "grid_height": height, "grid_width": width,
              "type_words": dims * height, "dim_words": height, "in_dims": dims, "out_capsules": out_capsules,
              "matvec_weight_base": 0, "prediction_base": 0}
    plan = LayerPlan(name=spec.name, kind=LayerKind.MATVEC, descriptor=fields,
                     encoded=_encode(config, spec.name, fields), input=tensor, output=None,
                     macs=capsules * out_capsules * rows * dims, product_cycles=capsules * out_capsules * dims,
                     writes=1, result_latency=matvec_result_latency(config))
    return plan, weight_words, (capsules, out_capsules, rows)


def _encode(config, name, fields):
    try:
        return encode_descriptor(config, **fields)
    except ValueError as error:
        _fail(name, str(error))


def _check_depth(what, words, depth):
    if words > depth:
        raise ValueError(f"{what} need {words} words, the RAM has {depth}")


def compile_layers(config, input_shape, layers):
    """Plan for ``layers`` (ConvSpec..., then optionally one MatvecSpec) on an int8 input of ``input_shape``."""
    if not isinstance(config, CapsNetConfig):
        raise TypeError(f"config must be a CapsNetConfig, not {config!r}")
    if config.conv_rows != 1:
        raise ValueError(f"conv_rows must be 1 for the accelerator with on-chip RAMs (more rows per pass is the "
                         f"streamed engine's, models.capsnet.image_stream_plan), not {config.conv_rows}")
    if not layers or len(layers) > config.max_layers:
        raise ValueError(f"between 1 and {config.max_layers} layers, not {len(layers)}")
    if any(not isinstance(spec, (ConvSpec, MatvecSpec)) for spec in layers) or \
            any(isinstance(spec, MatvecSpec) for spec in layers[:-1]):
        raise ValueError("layers must be ConvSpec layers, optionally followed by one MatvecSpec")
    channels, height, width = input_shape
    if width > config.row_elements:
        raise ValueError(f"input rows of {width} elements do not fit a word of {config.row_elements}")
    tensor = Tensor(0, 0, tuple(input_shape))
    free = [tensor.words, 0]                 # first free word of each activation RAM
    plans, weight_words, bias_words = [], [], []
    matvec_words, prediction_shape = np.zeros((0, config.matvec_lanes), np.int64), None
    for spec in layers:
        if isinstance(spec, ConvSpec):
            weight_base = sum(len(words) for words in weight_words)
            bias_base = sum(len(words) for words in bias_words)
            plan, weights, biases = _compile_conv(config, spec, tensor, weight_base, bias_base, free[1 - tensor.ram])
            weight_words.append(weights)
            bias_words.append(biases)
            tensor = plan.output
            free[tensor.ram] += tensor.words
            _check_depth(f"activations in RAM {tensor.ram}", free[tensor.ram], config.activation_depth)
        else:
            plan, matvec_words, prediction_shape = _compile_matvec(config, spec, tensor)
        plans.append(plan)
    conv_image = np.concatenate(weight_words) if weight_words else np.zeros((0, config.conv_modules), np.int64)
    bias_image = np.concatenate(bias_words) if bias_words else np.zeros((0, config.conv_modules), np.int64)
    _check_depth("conv weights", len(conv_image), config.conv_weight_depth)
    _check_depth("biases", len(bias_image), config.bias_depth)
    _check_depth("matrix-vector weights", len(matvec_words), config.matvec_weight_depth)
    return CapsNetPlan(config=config, layers=tuple(plans), conv_weight_image=conv_image.astype(np.int8),
                       bias_image=bias_image.astype(np.int32), matvec_weight_image=matvec_words.astype(np.int8),
                       prediction_shape=prediction_shape)


def fitted_config(plan, *, bank_depth=4096):
    """``plan.config`` with every RAM only as deep as ``plan`` needs, rounded up to whole banks of ``bank_depth``
    words (:mod:`hw.shared.banked_buffer`; a RAM below one bank keeps the power of two above its need).

    The engines are unchanged, so the cycle counts are too; fewer banks mean a smaller model that simulates
    faster (every bank is a Verilator hierarchical block evaluated on every cycle).  Compile the network again
    for the returned configuration (the plan names the configuration it was compiled for)."""
    def depth(words):
        words = max(int(words), 2)
        return -(-words // bank_depth) * bank_depth if words > bank_depth else 1 << (words - 1).bit_length()

    activation_words = max([plan.input.base + plan.input.words] + [layer.output.base + layer.output.words
                                                                  for layer in plan.layers if layer.output])
    return dataclasses.replace(plan.config, activation_depth=depth(activation_words),
                               conv_weight_depth=depth(len(plan.conv_weight_image)),
                               bias_depth=depth(len(plan.bias_image)),
                               matvec_weight_depth=depth(len(plan.matvec_weight_image)),
                               prediction_depth=depth(plan.prediction_words if plan.prediction_shape else 0))


def compile_capsnet(config, net):
    """The CapsNet's steps 1 and 2 (conv1, PrimaryCaps, predictions) of a ``models.capsnet.golden.FixedCapsNet``."""
    from nnaccel.models.capsnet.network import IMAGE_SIZE, PRIMARY_STRIDE

    layers = (ConvSpec("conv1", net.conv1_weights, net.conv1_bias, stride=1, shift=net.conv1_shift, relu=True),
              ConvSpec("primary", net.primary_weights, net.primary_bias, stride=PRIMARY_STRIDE,
                       shift=net.primary_shift, relu=False),
              MatvecSpec("digit", net.digit_weights, shift=net.digit_shift))
    return compile_layers(config, (1, IMAGE_SIZE, IMAGE_SIZE), layers)
