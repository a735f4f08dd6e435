"""The DeepMind Atari DQN (small variant) of the thesis: layer shapes, weights and a float64 reference.

Layers (thesis Table 3.x / SPEC section 1)::

    CONV_1  4x84x84 -> 16 filters 8x8, stride 4, ReLU -> 16x20x20
    CONV_2 16x20x20 -> 32 filters 4x4, stride 2, ReLU -> 32x9x9
    FC_1   2592 -> 256, ReLU      (input flattened channel-major: index = (c * 9 + y) * 9 + x)
    FC_2    256 -> actions        (no activation; at most 32 actions)

Besides the thesis' layers, :class:`ConvLayer` takes rectangular images, kernels and strides and zero padding per
side and grouped (depthwise) convolutions, and :class:`AddLayer` adds two earlier outputs (a residual shortcut).
A network is a graph: every layer reads the previous layer's output unless its ``source`` names an earlier layer
(``""``: the network input).  ``models.dqn.plan`` compiles them for the accelerator.

Weights are stored as the thesis stores them, ``[in_channel, filter_h, filter_w, out_channel]``
for convolutions and ``[in, out]`` for fully connected layers, float32, with a float32 bias per
output.  A weights file is an ``.npz`` with the keys ``conv1_w conv1_b conv2_w conv2_b fc1_w fc1_b
fc2_w fc2_b`` in those shapes (:func:`save_weights`, :func:`load_weights` check them).

Trained weights ship in :data:`TRAINED_WEIGHTS` (``data/dqn_breakout.npz``, 18 actions, trained for Breakout by
:mod:`train.dqn.trainer`, ``nnaccel train dqn``; ``data/dqn_breakout.json`` says how).  :func:`seeded_weights` draws untrained He-uniform
weights (uniform in +-sqrt(6 / fan_in), NumPy ``default_rng(seed)``, layer by layer in the order above) and small
uniform biases (+-0.01), which exercise every datapath with realistic magnitudes.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nnaccel.hw.shared.parameters import check_int
from nnaccel.models.shared.input_files import InputError, check_batch, load_arrays, require_keys

MAX_ACTIONS = 32
TRAINED_WEIGHTS = Path(__file__).with_name("data") / "dqn_breakout.npz"
WEIGHT_KEYS = ("conv1_w", "conv1_b", "conv2_w", "conv2_b", "fc1_w", "fc1_b", "fc2_w", "fc2_b")


def _pair(name, value):
    """``value`` (an int or an ``(h, w)`` pair) as an ``(h, w)`` tuple of ints."""
    pair = (value, value) if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(pair) != 2 or not all(isinstance(item, int) and not isinstance(item, bool) for item in pair):
        raise ValueError(f"{name} must be an integer or an (h, w) pair of integers, not {value!r}")
    return pair


def _border(value):
    """``padding`` (an int, ``(pad_h, pad_w)`` or ``(top, bottom, left, right)``) as ``(top, bottom, left,
    right)``."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * 4
    border = tuple(value)
    if len(border) == 2:
        border = (border[0], border[0], border[1], border[1])
    if len(border) != 4 or not all(isinstance(item, int) and not isinstance(item, bool) for item in border):
        raise ValueError(f"padding must be an integer, (pad_h, pad_w) or (top, bottom, left, right), not {value!r}")
    return border


def _real_taps(out_count, stride, pad, kernel, size):
    """Per kernel offset along one axis, the output positions whose tap reads a real input element (not padding)."""
    positions = np.arange(out_count) * stride - pad
    return [int(np.count_nonzero((positions + offset >= 0) & (positions + offset < size))) for offset in range(kernel)]


@dataclass(frozen=True)
class ConvLayer:
    """A convolution ``in_channels x in_height x in_width -> out_channels x out_height x out_width``.

    ``in_size``, ``kernel`` and ``stride`` are an int (square) or an ``(h, w)`` pair; ``padding`` (zeros around
    the input) an int, ``(pad_h, pad_w)`` or ``(top, bottom, left, right)`` (TFLite's SAME with stride 2 pads
    unevenly).  ``groups``: output channel ``n`` reads only the ``in_channels / groups`` input channels of its group
    ``n // (out_channels / groups)`` (``groups = in_channels = out_channels``: a depthwise convolution).  Weights
    ``weight_shape = (in_channels / groups, kh, kw, out_channels)``; ``macs`` counts the products with real input
    elements (none with padding).  ``source``: the layer whose output it reads (``None``: the previous layer,
    ``""``: the network input).  A list given for a pair is kept as a tuple.  The compiler (``models.dqn.plan``)
    checks the geometry: :meth:`check_geometry`.  ``maximum``: a max pool (depthwise, ``groups = in_channels =
    out_channels``, every weight 1.0 and the bias ``-inf``): each output is the largest product of its window instead
    of their sum (the matrix modules' max mode, ``DqnConfig(max_pooling=True)``); padding reads as ``+0``, so a
    padded max pool is exact only on a non-negative input.
    """

    name: str
    in_channels: int
    in_size: object
    out_channels: int
    kernel: object
    stride: object
    relu: bool = True
    padding: object = 0
    groups: int = 1
    source: str = None
    maximum: bool = False

    def __post_init__(self):
        for field_name in ("in_size", "kernel", "stride", "padding"):
            value = getattr(self, field_name)
            if isinstance(value, list):
                object.__setattr__(self, field_name, tuple(value))

    def check_geometry(self):
        """Raise a ValueError naming the layer if its sizes are not positive integers, its padding negative or its
        kernel larger than the padded input."""
        for name, value in (("in_channels", self.in_channels), ("out_channels", self.out_channels)):
            check_int(f"{self.name}: {name}", value, 1)
        for name, pair in (("in_size", self._in), ("kernel", self._kernel), ("stride", self._stride)):
            for item in pair:
                check_int(f"{self.name}: {name}", item, 1)
        for item in self.border:
            check_int(f"{self.name}: padding", item, 0)
        check_int(f"{self.name}: groups", self.groups, 1)
        if self.maximum and not self.groups == self.in_channels == self.out_channels:
            raise ValueError(f"{self.name}: a max pool is depthwise: groups = in_channels = out_channels, not "
                             f"{self.groups}, {self.in_channels}, {self.out_channels}")
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ValueError(f"{self.name}: {self.groups} groups do not divide {self.in_channels} input and "
                             f"{self.out_channels} output channels")
        if self.out_height < 1 or self.out_width < 1:
            raise ValueError(f"{self.name}: a {self.kernel_height}x{self.kernel_width} kernel does not fit the "
                             f"padded input {self.in_height + self.pad_top + self.pad_bottom}x"
                             f"{self.in_width + self.pad_left + self.pad_right}")

    @property
    def _in(self):
        return _pair("in_size", self.in_size)

    @property
    def _kernel(self):
        return _pair("kernel", self.kernel)

    @property
    def _stride(self):
        return _pair("stride", self.stride)

    @property
    def border(self):
        """``(top, bottom, left, right)`` zero padding."""
        return _border(self.padding)

    in_height = property(lambda self: self._in[0])
    in_width = property(lambda self: self._in[1])
    kernel_height = property(lambda self: self._kernel[0])
    kernel_width = property(lambda self: self._kernel[1])
    stride_y = property(lambda self: self._stride[0])
    stride_x = property(lambda self: self._stride[1])
    pad_top = property(lambda self: self.border[0])
    pad_bottom = property(lambda self: self.border[1])
    pad_left = property(lambda self: self.border[2])
    pad_right = property(lambda self: self.border[3])

    @property
    def out_height(self):
        return (self.in_height + self.pad_top + self.pad_bottom - self.kernel_height) // self.stride_y + 1

    @property
    def out_width(self):
        return (self.in_width + self.pad_left + self.pad_right - self.kernel_width) // self.stride_x + 1

    @property
    def out_size(self):
        """The output's side (square outputs only)."""
        if self.out_height != self.out_width:
            raise ValueError(f"{self.name}: the output is {self.out_height}x{self.out_width}, not square")
        return self.out_height

    @property
    def padded(self):
        return any(self.border)

    @property
    def macs(self):
        rows = _real_taps(self.out_height, self.stride_y, self.pad_top, self.kernel_height, self.in_height)
        columns = _real_taps(self.out_width, self.stride_x, self.pad_left, self.kernel_width, self.in_width)
        return self.out_channels * self.in_channels // self.groups * sum(rows) * sum(columns)

    @property
    def weight_shape(self):
        return (self.in_channels // self.groups, self.kernel_height, self.kernel_width, self.out_channels)


@dataclass(frozen=True)
class DenseLayer:
    """A fully connected layer ``inputs -> outputs`` (weights ``(inputs, outputs)``) over the output of ``source``
    (``None``: the previous layer, ``""``: the network input), flattened channel-major."""

    name: str
    inputs: int
    outputs: int
    relu: bool = True
    source: str = None

    @property
    def macs(self):
        return self.inputs * self.outputs

    @property
    def weight_shape(self):
        return (self.inputs, self.outputs)


@dataclass(frozen=True)
class AddLayer:
    """A residual add: the output image of ``source`` (``None``: the previous layer) plus the output of layer
    ``skip`` (``""``: the network input), element by element, ReLU optional.  No weights (its ``(weight, bias)``
    pair is ignored: pass ``(None, None)``); the compiler places both addends in one activation RAM
    (``models.dqn.plan``)."""

    name: str
    skip: str
    relu: bool = True
    source: str = None
    macs = 0
    weight_shape = None


def dqn_layers(actions=18):
    """The four layers of the thesis' network for ``actions`` outputs (1..32)."""
    check_int("actions", actions, 1, MAX_ACTIONS)
    return (ConvLayer("CONV_1", 4, 84, 16, 8, 4),
            ConvLayer("CONV_2", 16, 20, 32, 4, 2),
            DenseLayer("FC_1", 32 * 9 * 9, 256),
            DenseLayer("FC_2", 256, actions, relu=False))


def reduced_layers():
    """A small conv-conv-dense-dense network for :data:`hw.dqn.config.REDUCED_CONFIG` (2 modules x 4 lanes).
    Compiled with ``split="always"``, c2's last position (9 positions, 2 per group) and d2 (one position of
    two slots) become partial sums and reductions, so every kind of pass runs."""
    return (ConvLayer("c1", 2, 10, 4, 3, 2), ConvLayer("c2", 4, 4, 4, 2, 1),
            DenseLayer("d1", 4 * 3 * 3, 7), DenseLayer("d2", 7, 3, relu=False))


def weight_shapes(actions=18):
    shapes = {}
    for key, layer in zip(("conv1", "conv2", "fc1", "fc2"), dqn_layers(actions)):
        shapes[f"{key}_w"] = layer.weight_shape
        shapes[f"{key}_b"] = (layer.weight_shape[-1],)
    return shapes


def seeded_weights(actions=18, seed=0):
    """He-uniform float32 weights and small biases, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    weights = {}
    for key, shape in weight_shapes(actions).items():
        if key.endswith("_w"):
            fan_in = int(np.prod(shape[:-1]))
            limit = np.sqrt(6.0 / fan_in)
        else:
            limit = 0.01
        weights[key] = rng.uniform(-limit, limit, size=shape).astype(np.float32)
    return weights


def check_weights(weights):
    """Validate a weights dict; returns the number of actions it encodes."""
    missing = [key for key in WEIGHT_KEYS if key not in weights]
    if missing:
        raise ValueError(f"weights are missing {', '.join(missing)} (expected keys: {', '.join(WEIGHT_KEYS)})")
    actions = weights["fc2_w"].shape[-1] if weights["fc2_w"].ndim == 2 else None
    if actions is None or not 1 <= actions <= MAX_ACTIONS:
        raise ValueError(f"fc2_w must have shape (256, actions) with 1..{MAX_ACTIONS} actions, "
                         f"not {weights['fc2_w'].shape}")
    for key, shape in weight_shapes(actions).items():
        array = weights[key]
        if array.shape != shape:
            raise ValueError(f"{key} must have shape {shape}, not {array.shape}")
        if array.dtype != np.float32:
            raise ValueError(f"{key} must be float32, not {array.dtype}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{key} holds NaN or infinite values")
    return actions


def save_weights(path, weights):
    check_weights(weights)
    path = Path(path)
    temporary = path.with_name(path.name + ".partial.npz")
    np.savez(temporary, **{key: weights[key] for key in WEIGHT_KEYS})
    temporary.replace(path)   # never leave a half-written weights file under the real name


def load_weights(path):
    """The weights in the ``.npz`` at ``path``, checked; raises :class:`models.shared.input_files.InputError`
    naming the file for anything unreadable, missing, extra, misshapen, not float32 or not finite."""
    expected = f"expected a weights .npz with the float32 arrays {', '.join(WEIGHT_KEYS)}"
    weights = load_arrays(path, expected=expected)
    require_keys(path, weights, WEIGHT_KEYS, expected=expected)
    try:
        check_weights(weights)
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None
    return weights


def check_states(states):
    """Validate states ``(N, 4, 84, 84)`` float32 (a single state is promoted); returns the batch."""
    states = np.asarray(states)
    if states.ndim == 3:
        states = states[None]
    return check_batch(states, (4, 84, 84), "states")


def reference_q_values(weights, state):
    """Q-values of one ``(4, 84, 84)`` state in float64 (no float32 rounding anywhere)."""
    conv1, conv2, fc1, fc2 = dqn_layers(check_weights(weights))
    activation = np.asarray(state, dtype=np.float64)
    for layer, key in ((conv1, "conv1"), (conv2, "conv2")):
        activation = _conv_float64(activation, weights[f"{key}_w"], weights[f"{key}_b"], layer)
    activation = activation.reshape(-1)
    for layer, key in ((fc1, "fc1"), (fc2, "fc2")):
        activation = activation @ weights[f"{key}_w"].astype(np.float64) + weights[f"{key}_b"]
        if layer.relu:
            activation = np.maximum(activation, 0.0)
    return activation


def _conv_float64(image, weight, bias, layer):
    top, bottom, left, right = layer.border
    image = np.pad(image, ((0, 0), (top, bottom), (left, right)))
    windows = np.lib.stride_tricks.sliding_window_view(image, (layer.kernel_height, layer.kernel_width), axis=(1, 2))
    windows = windows[:, ::layer.stride_y, ::layer.stride_x][:, :layer.out_height, :layer.out_width]
    out = np.einsum("cyxij,cijo->oyx", windows, weight.astype(np.float64)) + bias[:, None, None]
    return np.maximum(out, 0.0) if layer.relu else out
