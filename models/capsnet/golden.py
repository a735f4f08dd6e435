"""Bit-exact golden model of the CapsNet accelerator: 8-bit fixed point, the paper's hardware algorithm.

Seed 003 (section III.1, Table 2 algorithm (b)) and how this model realises it:

* Step 1 (conv + PrimaryCaps): the image in Q4.4 (``round(pixel / 255 * 16)``, 0..16); weights
  and features 8-bit dynamic fixed point (each tensor its own power-of-two scale, see
  :class:`FixedCapsNet`); both convolutions are :func:`models.capsnet.int8_layers.conv2d` (exact int32
  sums, bias in the accumulator's scale, round-half-up shift, int8 saturation), the first with
  ReLU.  The PrimaryCaps squash is replaced by the uniform shift of that convolution's
  requantization, ``primary_shift`` (Table 1's "step 1" shift).
* Step 2: ``u_hat_j|i = W_ij u_i`` with :func:`models.capsnet.int8_layers.matvec`, shift ``digit_shift``.
* Steps 3-6, :func:`route_fixed`: one routing iteration with uniform coupling (b_ij = 0 gives
  c_ij = 1/10 for every i, j), so no softmax and no agreement update; the coupling becomes a
  shift folded into the squash shift.  In this order:

  1. ``s_j = sum_i u_hat_j|i`` exactly (int32; at most 1152 * 128 < 2**18 in magnitude),
  2. ``v_j = s_j >> (n + 4)``: :func:`models.capsnet.int8_layers.requantize` (round half up, int8
     saturation) with shift ``squash_shift + COUPLING_SHIFT``; the paper's ``n`` is
     ``squash_shift`` (Table 1's "step 5" shift) and we read its ``+ 4`` as c_ij = 1/10
     rounded to 2**-4,
  3. ``|v_j|^2 = sum_k v_jk^2`` (int32, at most 16 * 128**2),
  4. class = the first j with the largest ``|v_j|^2`` (ties go to the lower digit).

Because every step after the ReLU is linear in the hardware algorithm, the class does not depend
on the squash shifts except through rounding (large shifts flush small vectors to 0) and
saturation (small shifts clip): that is what Table 1 sweeps.

The float model (:func:`classify_float`) runs :mod:`models.capsnet.network` (float64, softmax, squash, r
iterations) on the same weights dequantized, so float-vs-fixed differences come from the
arithmetic and the routing simplifications only; the training script records the accuracy of the
unquantized float32 weights in the weights file's metadata.
"""

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nnaccel.models.capsnet import network as capsnet
from nnaccel.models.capsnet.network import CLASSES, DIGIT_DIM, KERNEL, PRIMARY_DIM, PRIMARY_STRIDE, CapsNetShape
from nnaccel.models.capsnet.int8_layers import INT8_MAX, conv2d, matvec, requantize
from nnaccel.models.shared.input_files import InputError, load_arrays, require_keys

__all__ = ["IMAGE_FRAC_BITS", "COUPLING_SHIFT", "FixedCapsNet", "RoutingResult", "FixedInference",
           "weights_path", "load_capsnet", "save_capsnet", "quantize_capsnet", "quantize_image",
           "step1", "step2", "route_fixed", "classify_fixed", "classify_fixed_batch", "shift_sweep",
           "classify_float"]

IMAGE_FRAC_BITS = 4
COUPLING_SHIFT = 4
DATA_DIR = Path(__file__).with_name("data")
_CHUNK = 32                      # images per batch in the vectorised paths (bounds memory to ~200 MB)
_SHIFT_KEYS = ("conv1_shift", "primary_shift", "digit_shift", "squash_shift")
_FRAC_KEYS = ("conv1_weight_frac", "primary_weight_frac", "digit_weight_frac")
_ARRAY_KEYS = ("conv1_weights", "conv1_bias", "primary_weights", "primary_bias", "digit_weights")
_SIZE_KEYS = ("conv_channels", "primary_types")
_HEADER_KEYS = _SIZE_KEYS + ("variant", "metadata")
_FILE_LAYOUT = "expected a CapsNet weights .npz as models.capsnet.golden.save_capsnet writes it"


@dataclass(frozen=True)
class FixedCapsNet:
    """Integer parameters of one CapsNet variant plus the shifts of every requantization.

    Arrays: ``conv1_weights`` (C, 1, 9, 9) int8, ``conv1_bias`` (C,) int32, ``primary_weights``
    (T*8, C, 9, 9) int8, ``primary_bias`` (T*8,) int32, ``digit_weights`` (capsules, 10, 16, 8)
    int8.  Biases are in the scale of their layer's accumulator.

    Shifts (requantization, round half up): ``conv1_shift``, ``primary_shift`` (the step-1 squash
    shift), ``digit_shift`` (step 2), ``squash_shift`` (the step-5 ``n``).

    Scales: a weight tensor's integer ``q`` stands for ``q * 2**-frac`` (``*_weight_frac``).
    Feature fraction bits follow: image 4, conv1 output ``4 + conv1_weight_frac - conv1_shift``,
    primary capsules ``conv1_out_frac + primary_weight_frac - primary_shift``, predictions
    ``primary_frac + digit_weight_frac - digit_shift``.
    """

    variant: str
    shape: CapsNetShape
    conv1_weights: np.ndarray
    conv1_bias: np.ndarray
    primary_weights: np.ndarray
    primary_bias: np.ndarray
    digit_weights: np.ndarray
    conv1_shift: int
    primary_shift: int
    digit_shift: int
    squash_shift: int
    conv1_weight_frac: int
    primary_weight_frac: int
    digit_weight_frac: int
    metadata: dict = dataclasses.field(default_factory=dict)

    @property
    def conv1_out_frac(self):
        return IMAGE_FRAC_BITS + self.conv1_weight_frac - self.conv1_shift

    @property
    def primary_frac(self):
        return self.conv1_out_frac + self.primary_weight_frac - self.primary_shift

    @property
    def prediction_frac(self):
        return self.primary_frac + self.digit_weight_frac - self.digit_shift

    def with_shifts(self, **shifts):
        """A copy with other shifts (keyword names from ``conv1_shift primary_shift digit_shift squash_shift``)."""
        unknown = set(shifts) - set(_SHIFT_KEYS)
        if unknown:
            raise ValueError(f"unknown shift names {sorted(unknown)}; choose from {', '.join(_SHIFT_KEYS)}")
        return dataclasses.replace(self, **shifts)

    def float_params(self):
        """The weights dequantized (float64), in :mod:`models.capsnet.network`'s parameter layout."""
        conv1_acc_frac = IMAGE_FRAC_BITS + self.conv1_weight_frac
        primary_acc_frac = self.conv1_out_frac + self.primary_weight_frac
        return {
            "conv1_w": np.ldexp(self.conv1_weights.astype(np.float64), -self.conv1_weight_frac),
            "conv1_b": np.ldexp(self.conv1_bias.astype(np.float64), -conv1_acc_frac),
            "primary_w": np.ldexp(self.primary_weights.astype(np.float64), -self.primary_weight_frac),
            "primary_b": np.ldexp(self.primary_bias.astype(np.float64), -primary_acc_frac),
            "digit_w": np.ldexp(self.digit_weights.astype(np.float64), -self.digit_weight_frac),
        }


@dataclass(frozen=True)
class RoutingResult:
    """Steps 3-6 of one image (or a batch, with leading axes): ``sums`` s_j (..., 10, 16) int32,
    ``digit_caps`` v_j (..., 10, 16) int8, ``squared_lengths`` (..., 10) int32, ``label`` (...) int."""

    sums: np.ndarray
    digit_caps: np.ndarray
    squared_lengths: np.ndarray
    label: np.ndarray


@dataclass(frozen=True)
class FixedInference:
    """Every intermediate of one fixed-point inference: what the hardware is checked against."""

    image: np.ndarray            # (1, 28, 28) int8, Q4.4
    features: np.ndarray         # (C, 20, 20) int8, conv1 output after ReLU
    primary: np.ndarray          # (capsules, 8) int8, u_i
    predictions: np.ndarray      # (capsules, 10, 16) int8, u_hat_j|i
    routing: RoutingResult

    @property
    def label(self):
        return int(self.routing.label)


def weights_path(variant):
    capsnet.variant_shape(variant)
    return DATA_DIR / f"capsnet_{variant}.npz"


def save_capsnet(net, path):
    """Write ``net`` as a compressed ``.npz`` (arrays, shifts, fraction bits, JSON metadata), atomically."""
    path = Path(path)
    record = {key: getattr(net, key) for key in _ARRAY_KEYS}
    record.update({key: np.int64(getattr(net, key)) for key in _SHIFT_KEYS + _FRAC_KEYS})
    record.update(variant=np.str_(net.variant), conv_channels=np.int64(net.shape.conv_channels),
                  primary_types=np.int64(net.shape.primary_types), metadata=np.str_(json.dumps(net.metadata)))
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        np.savez_compressed(handle, **record)
    partial.replace(path)


def load_capsnet(variant="full", *, path=None):
    """The shipped quantized weights of ``variant`` ("full" or "reduced"), or those in ``path``.

    A file is checked before use: no pickles, exactly the keys :func:`save_capsnet` writes, integer
    scalars, int8 weights and int32 biases in the shapes its ``conv_channels`` and ``primary_types`` give;
    every fault is an :class:`models.shared.input_files.InputError` naming the file.
    """
    if path is None:
        path = weights_path(variant)
        if not path.exists():
            raise InputError(f"{path}: no shipped CapsNet weights for the {variant} variant; train them with "
                             f"`nnaccel train capsnet --variant {variant} --out {path}`")
    arrays = load_arrays(path, expected=_FILE_LAYOUT)
    require_keys(path, arrays, _ARRAY_KEYS + _SHIFT_KEYS + _FRAC_KEYS + _HEADER_KEYS, expected=_FILE_LAYOUT)
    scalars = {key: _integer_scalar(path, key, arrays[key]) for key in _SHIFT_KEYS + _FRAC_KEYS + _SIZE_KEYS}
    try:
        shape = CapsNetShape(conv_channels=scalars.pop("conv_channels"), primary_types=scalars.pop("primary_types"))
    except ValueError as error:
        raise InputError(f"{path}: {error} ({_FILE_LAYOUT})") from None
    try:
        metadata = json.loads(_text_scalar(path, "metadata", arrays["metadata"]))
    except json.JSONDecodeError as error:
        raise InputError(f"{path}: metadata is not JSON: {error} ({_FILE_LAYOUT})") from None
    if not isinstance(metadata, dict):
        raise InputError(f"{path}: metadata must be a JSON object, not {type(metadata).__name__} ({_FILE_LAYOUT})")
    for key in _ARRAY_KEYS:
        want = np.int32 if key.endswith("_bias") else np.int8
        if arrays[key].dtype != want:
            raise InputError(f"{path}: {key} is {arrays[key].dtype}, not {np.dtype(want)} ({_FILE_LAYOUT})")
    net = FixedCapsNet(variant=_text_scalar(path, "variant", arrays["variant"]), shape=shape,
                       **{key: arrays[key] for key in _ARRAY_KEYS}, **scalars, metadata=metadata)
    try:
        _check_shapes(net)
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None
    return net


def _integer_scalar(path, key, array):
    if array.shape != () or array.dtype.kind not in "iu":
        raise InputError(f"{path}: {key} is a {array.dtype} array of shape {array.shape}, not one integer "
                         f"({_FILE_LAYOUT})")
    value = int(array)
    if key in _SHIFT_KEYS and not 0 <= value < 32:
        raise InputError(f"{path}: {key} is {value}, expected a shift from 0 to 31")
    return value


def _text_scalar(path, key, array):
    if array.shape != () or array.dtype.kind != "U":
        raise InputError(f"{path}: {key} is a {array.dtype} array of shape {array.shape}, not one string "
                         f"({_FILE_LAYOUT})")
    return str(array)


def _check_shapes(net):
    shape = net.shape
    expected = {
        "conv1_weights": (shape.conv_channels, 1, KERNEL, KERNEL),
        "conv1_bias": (shape.conv_channels,),
        "primary_weights": (shape.primary_channels, shape.conv_channels, KERNEL, KERNEL),
        "primary_bias": (shape.primary_channels,),
        "digit_weights": (shape.capsules, CLASSES, DIGIT_DIM, PRIMARY_DIM),
    }
    for key, want in expected.items():
        got = getattr(net, key).shape
        if got != want:
            raise ValueError(f"{key} has shape {got}, expected {want} for {shape}")


# --- quantization -------------------------------------------------------------------------------

def _weight_frac(weights):
    """Most fraction bits that keep every weight inside int8 (8-bit dynamic fixed point)."""
    return int(np.floor(np.log2(INT8_MAX / np.max(np.abs(weights)))))


def _to_int(values, frac, dtype):
    limit = np.iinfo(dtype)
    return np.clip(np.floor(np.ldexp(values, frac) + 0.5), limit.min, limit.max).astype(dtype)


def _float_ranges(float_params, shape, images_u8, percentile):
    """Fraction bits that put the ``percentile`` of |conv1 output|, |PrimaryCaps output| and
    |u_hat| (float model, before the squash) over ``images_u8`` at the top of int8."""
    layers = {"features": [], "maps": [], "predictions": []}
    for start in range(0, len(images_u8), _CHUNK):
        x = np.asarray(images_u8[start:start + _CHUNK], dtype=np.float64)[:, None] / 255.0
        features = np.maximum(capsnet.conv2d_float(x, float_params["conv1_w"], float_params["conv1_b"]), 0.0)
        maps = capsnet.conv2d_float(features, float_params["primary_w"], float_params["primary_b"],
                                    stride=PRIMARY_STRIDE)
        capsules = capsnet.capsules_from_channels(maps, shape.primary_types)
        for key, values in zip(layers, (features, maps, capsnet.predictions_float(capsules, float_params))):
            layers[key].append(np.abs(values).ravel().astype(np.float32))
    return [int(np.floor(np.log2(INT8_MAX / np.percentile(np.concatenate(v), percentile)))) for v in layers.values()]


def quantize_capsnet(float_params, shape, range_images, *, variant, percentile=99.99, sweep_images=None,
                     sweep_labels=None, primary_offsets=range(-3, 4), squash_shifts=range(0, 11), metadata=None):
    """Quantize float weights (:mod:`models.capsnet.network` layout) into a :class:`FixedCapsNet`.

    Weights get the most fraction bits that fit int8.  ``conv1_shift`` and first ``primary_shift``
    / ``digit_shift`` put the ``percentile`` of each layer's float outputs over ``range_images``
    (uint8, (N, 28, 28)) at the top of int8.  With ``sweep_images`` / ``sweep_labels`` (training
    images, never the test split), ``primary_shift`` (that first value plus one of
    ``primary_offsets``) and ``squash_shift`` (one of ``squash_shifts``) are then the pair of best
    accuracy there (the smallest on ties); otherwise ``squash_shift`` is the middle of ``squash_shifts``.
    """
    fracs = {key: _weight_frac(float_params[name]) for key, name in
             zip(_FRAC_KEYS, ("conv1_w", "primary_w", "digit_w"))}
    conv1_out_frac, primary_frac, prediction_frac = _float_ranges(float_params, shape, range_images, percentile)
    conv1_shift = IMAGE_FRAC_BITS + fracs["conv1_weight_frac"] - conv1_out_frac
    primary_shift = conv1_out_frac + fracs["primary_weight_frac"] - primary_frac
    digit_shift = primary_frac + fracs["digit_weight_frac"] - prediction_frac
    conv1_acc_frac = IMAGE_FRAC_BITS + fracs["conv1_weight_frac"]
    primary_acc_frac = conv1_out_frac + fracs["primary_weight_frac"]
    squash_choices = list(squash_shifts)
    net = FixedCapsNet(
        variant=variant, shape=shape,
        conv1_weights=_to_int(float_params["conv1_w"], fracs["conv1_weight_frac"], np.int8),
        conv1_bias=_to_int(float_params["conv1_b"], conv1_acc_frac, np.int32),
        primary_weights=_to_int(float_params["primary_w"], fracs["primary_weight_frac"], np.int8),
        primary_bias=_to_int(float_params["primary_b"], primary_acc_frac, np.int32),
        digit_weights=_to_int(float_params["digit_w"], fracs["digit_weight_frac"], np.int8),
        conv1_shift=conv1_shift, primary_shift=primary_shift, digit_shift=digit_shift,
        squash_shift=squash_choices[len(squash_choices) // 2], metadata=dict(metadata or {}), **fracs)
    _check_shapes(net)
    if sweep_labels is not None:
        primary_choices = [primary_shift + offset for offset in primary_offsets if primary_shift + offset >= 0]
        grid = shift_sweep(sweep_images, sweep_labels, net, primary_choices, squash_choices)
        best = np.unravel_index(np.argmax(grid), grid.shape)      # first best: the smallest shifts
        net = net.with_shifts(primary_shift=primary_choices[best[0]], squash_shift=squash_choices[best[1]])
    return net


# --- the fixed-point algorithm, one image ---------------------------------------------------------

def quantize_image(image_u8):
    """(28, 28) uint8 pixels -> (1, 28, 28) int8 in Q4.4: ``round(p / 255 * 16)`` (half up), 0..16."""
    image = np.asarray(image_u8)
    if image.dtype != np.uint8 or image.shape[-2:] != (capsnet.IMAGE_SIZE, capsnet.IMAGE_SIZE):
        raise ValueError(f"expected uint8 images of 28x28 pixels, got {image.dtype} {image.shape}")
    q4 = (image.astype(np.int32) * (2 << IMAGE_FRAC_BITS) + 255) // 510
    return q4.astype(np.int8)[..., None, :, :]


def _conv1(image_q, net):
    return conv2d(image_q, net.conv1_weights, net.conv1_bias, shift=net.conv1_shift, relu=True)


def _primary(features, net):
    maps = conv2d(features, net.primary_weights, net.primary_bias, stride=PRIMARY_STRIDE, shift=net.primary_shift)
    return capsnet.capsules_from_channels(maps[None], net.shape.primary_types)[0]


def step1(image_u8, net):
    """Step 1 of one image: (28, 28) uint8 -> primary capsules u_i, (capsules, 8) int8."""
    return _primary(_conv1(quantize_image(image_u8), net), net)


def step2(primary, net):
    """Step 2: u_hat_j|i = W_ij u_i for (..., capsules, 8) int8 -> (..., capsules, 10, 16) int8."""
    weights = net.digit_weights.reshape(net.shape.capsules, CLASSES * DIGIT_DIM, PRIMARY_DIM)
    predictions = matvec(weights, primary, shift=net.digit_shift)
    return predictions.reshape(*predictions.shape[:-1], CLASSES, DIGIT_DIM)


def route_fixed(predictions, *, squash_shift):
    """Steps 3-6 of the hardware algorithm (1 iteration, uniform coupling, squash as a shift) on
    u_hat (..., capsules, 10, 16) int8; the order of operations is in the module docstring."""
    predictions = np.asarray(predictions)
    if predictions.dtype != np.int8 or predictions.shape[-2:] != (CLASSES, DIGIT_DIM):
        raise ValueError(f"expected int8 predictions (..., capsules, 10, 16), got {predictions.dtype} "
                         f"{predictions.shape}")
    sums = predictions.sum(axis=-3, dtype=np.int32)
    digit_caps = requantize(sums, shift=squash_shift + COUPLING_SHIFT)
    squared_lengths = np.square(digit_caps, dtype=np.int32).sum(axis=-1, dtype=np.int32)
    return RoutingResult(sums=sums, digit_caps=digit_caps, squared_lengths=squared_lengths,
                         label=np.argmax(squared_lengths, axis=-1))


def classify_fixed(image_u8, net):
    """The whole fixed-point inference of one (28, 28) uint8 image, every intermediate kept."""
    image = quantize_image(image_u8)
    features = _conv1(image, net)
    primary = _primary(features, net)
    predictions = step2(primary, net)
    return FixedInference(image=image, features=features, primary=primary, predictions=predictions,
                          routing=route_fixed(predictions, squash_shift=net.squash_shift))


# --- vectorised paths for whole test splits ---------------------------------------------------------

def _exact_conv_accumulators(x, weights, bias, stride):
    """Integer convolution sums of a batch, computed with float64 BLAS: every product and partial
    sum is an integer below 2**53, so the result is exact and equals :func:`conv2d`'s accumulator."""
    acc = capsnet.conv2d_float(x.astype(np.float64), weights.astype(np.float64),
                               bias.astype(np.float64), stride=stride)
    return acc.astype(np.int64)


def _primary_accumulators(images_u8, net):
    """(N, 28, 28) uint8 -> PrimaryCaps accumulators (N, T*8, 6, 6) int64 (before the step-1 shift)."""
    features = requantize(_exact_conv_accumulators(quantize_image(images_u8), net.conv1_weights,
                                                   net.conv1_bias, 1), shift=net.conv1_shift, relu=True)
    return _exact_conv_accumulators(features, net.primary_weights, net.primary_bias, PRIMARY_STRIDE)


def _capsules(accumulators, net, primary_shift):
    return capsnet.capsules_from_channels(requantize(accumulators, shift=primary_shift), net.shape.primary_types)


def classify_fixed_batch(images_u8, net):
    """Labels (N,) of the fixed-point model for (N, 28, 28) uint8 images; bit-identical to
    :func:`classify_fixed` image by image (tests check), only faster."""
    return shift_sweep(images_u8, None, net, [net.primary_shift], [net.squash_shift])


def shift_sweep(images_u8, labels, net, primary_shifts, squash_shifts):
    """Table 1: accuracy for every (step-1 ``primary_shift``, step-5 ``squash_shift``) pair, as a
    (len(primary_shifts), len(squash_shifts)) array; the other shifts stay as in ``net``.
    With ``labels=None`` returns the predicted labels (N,) of the single pair given."""
    images_u8 = np.asarray(images_u8)
    predicted = np.zeros((len(primary_shifts), len(squash_shifts), len(images_u8)), dtype=np.int64)
    for start in range(0, len(images_u8), _CHUNK):
        accumulators = _primary_accumulators(images_u8[start:start + _CHUNK], net)
        for row, primary_shift in enumerate(primary_shifts):
            predictions = step2(_capsules(accumulators, net, primary_shift), net)
            for column, squash_shift in enumerate(squash_shifts):
                predicted[row, column, start:start + _CHUNK] = route_fixed(predictions, squash_shift=squash_shift).label
    if labels is None:
        return predicted[0, 0]
    return (predicted == np.asarray(labels)).mean(axis=2)


def classify_float(images_u8, net, *, iterations=3):
    """Float64 reference (softmax, squash, ``iterations`` routing rounds) on the dequantized
    weights: returns (labels (N,), digit capsules (N, 10, 16))."""
    images_u8 = np.asarray(images_u8)
    params = net.float_params()
    digit_caps = np.concatenate([
        capsnet.forward_float(images_u8[start:start + _CHUNK] / 255.0, params, net.shape, iterations=iterations)
        for start in range(0, len(images_u8), _CHUNK)])
    return np.argmax(np.sum(digit_caps ** 2, axis=-1), axis=-1), digit_caps
