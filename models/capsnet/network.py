"""The CapsNet of Sabour et al. (2017) for MNIST: layer shapes, operation counts and a float reference.

Layers (SPEC section 3, seed 003 Fig. 1)::

    step 1  conv 9x9, 1 -> C channels, stride 1, ReLU             28x28 -> C x 20x20
            PrimaryCaps conv 9x9, C -> T*8 channels, stride 2     -> T*8 x 6x6, squash
            -> T*36 primary capsules u_i, 8-D
    step 2  u_hat_j|i = W_ij u_i                                  -> capsules x 10 x 16
    3..6    dynamic routing, r iterations (softmax over j, sum over i, squash, agreement)
    class   the digit capsule v_j with the largest length

The full model has C = 256 channels and T = 32 capsule types (1152 capsules); the reduced
variant, for fast tests, C = 32 and T = 8 (288 capsules).  Channel ``t * 8 + d`` of the
PrimaryCaps convolution is dimension ``d`` of capsule type ``t``; capsule index
``i = (t * 6 + y) * 6 + x`` (type-major, then row, then column).

Float parameters (a dict, NumPy float arrays)::

    conv1_w (C, 1, 9, 9)   conv1_b (C,)
    primary_w (T*8, C, 9, 9)   primary_b (T*8,)
    digit_w (capsules, 10, 16, 8)     (no bias, as in the paper)

:func:`forward_float` is the float64 reference with ``iterations`` rounds of routing (the paper's
algorithm (a), Table 2); images are float in [0, 1].
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.hw.shared.parameters import check_positive

__all__ = ["CapsNetShape", "VARIANTS", "variant_shape", "squash", "softmax", "conv2d_float",
           "capsules_from_channels", "primary_capsules_float", "predictions_float", "route_float", "forward_float"]

IMAGE_SIZE = 28
KERNEL = 9
PRIMARY_STRIDE = 2
PRIMARY_DIM = 8
DIGIT_DIM = 16
CLASSES = 10
SQUASH_EPSILON = 1e-9

# Operation weights of the paper's workload model (seed 003 section II): add 1, mul/div 4.
OPS_PER_ADD = 1
OPS_PER_MUL = 4


@dataclass(frozen=True)
class CapsNetShape:
    """Sizes of one CapsNet variant; everything else derives from ``conv_channels`` and ``primary_types``."""

    conv_channels: int
    primary_types: int

    def __post_init__(self):
        for name in ("conv_channels", "primary_types"):
            check_positive(name, getattr(self, name))

    @property
    def conv_size(self):
        return IMAGE_SIZE - KERNEL + 1

    @property
    def primary_size(self):
        return (self.conv_size - KERNEL) // PRIMARY_STRIDE + 1

    @property
    def primary_channels(self):
        return self.primary_types * PRIMARY_DIM

    @property
    def capsules(self):
        return self.primary_types * self.primary_size ** 2

    @property
    def conv1_macs(self):
        return self.conv_channels * self.conv_size ** 2 * KERNEL ** 2

    @property
    def primary_macs(self):
        return self.primary_channels * self.primary_size ** 2 * self.conv_channels * KERNEL ** 2

    @property
    def step1_macs(self):
        return self.conv1_macs + self.primary_macs

    @property
    def step2_macs(self):
        return self.capsules * CLASSES * DIGIT_DIM * PRIMARY_DIM

    @property
    def step1_operations(self):
        """Paper's count: every multiply-accumulate is one mul (4 OP) and one add (1 OP)."""
        return self.step1_macs * (OPS_PER_MUL + OPS_PER_ADD)

    @property
    def routing_operations(self):
        """Hardware routing (1 iteration, shifts): the sum over i of the 10x16 predictions (adds),
        the squared lengths (16 mul + 15 add per class) and the argmax (9 compares as adds)."""
        sums = (self.capsules - 1) * CLASSES * DIGIT_DIM * OPS_PER_ADD
        lengths = CLASSES * (DIGIT_DIM * OPS_PER_MUL + (DIGIT_DIM - 1) * OPS_PER_ADD)
        return sums + lengths + (CLASSES - 1) * OPS_PER_ADD


VARIANTS = {
    "full": CapsNetShape(conv_channels=256, primary_types=32),
    "reduced": CapsNetShape(conv_channels=32, primary_types=8),
}


def variant_shape(variant):
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}, not {variant!r}")
    return VARIANTS[variant]


def squash(s, axis=-1):
    """``|s|^2 / (1 + |s|^2) * s / |s|``: keeps the direction, maps the length into [0, 1)."""
    squared = np.sum(s * s, axis=axis, keepdims=True)
    return s * (squared / (1.0 + squared) / np.sqrt(squared + SQUASH_EPSILON))


def softmax(b, axis=-1):
    e = np.exp(b - b.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def conv2d_float(x, weights, bias, *, stride=1):
    """Valid convolution of a batch: ``x`` (N, C, H, W), ``weights`` (K, C, kh, kw) -> (N, K, Ho, Wo)."""
    kh, kw = weights.shape[2:]
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    n, c, ho, wo = windows.shape[:4]
    columns = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * ho * wo, c * kh * kw)
    out = columns @ weights.reshape(len(weights), -1).T + bias
    return out.reshape(n, ho, wo, -1).transpose(0, 3, 1, 2)


def capsules_from_channels(primary_maps, primary_types):
    """(N, T*8, S, S) PrimaryCaps maps -> (N, T*S*S, 8) capsules (index ``(t * S + y) * S + x``)."""
    n, _, size, _ = primary_maps.shape
    return (primary_maps.reshape(n, primary_types, PRIMARY_DIM, size, size)
            .transpose(0, 1, 3, 4, 2).reshape(n, -1, PRIMARY_DIM))


def primary_capsules_float(images, params, shape):
    """Step 1 in float64: images (N, 28, 28) in [0, 1] -> squashed primary capsules (N, capsules, 8)."""
    x = np.asarray(images, dtype=np.float64)[:, None]
    features = np.maximum(conv2d_float(x, params["conv1_w"], params["conv1_b"]), 0.0)
    maps = conv2d_float(features, params["primary_w"], params["primary_b"], stride=PRIMARY_STRIDE)
    return squash(capsules_from_channels(maps, shape.primary_types))


def predictions_float(primary, params):
    """Step 2: u_hat_j|i = W_ij u_i, (N, capsules, 8) -> (N, capsules, 10, 16)."""
    return np.einsum("ijkd,nid->nijk", params["digit_w"], primary)


def route_float(predictions, iterations):
    """Steps 3-6 (algorithm (a) of seed 003 Table 2): b = 0; r times c = softmax_j(b),
    s_j = sum_i c_ij u_hat_j|i, v_j = squash(s_j), b_ij += u_hat_j|i . v_j. Returns v (N, 10, 16)."""
    if not isinstance(iterations, int) or iterations < 1:
        raise ValueError(f"iterations must be a positive integer, not {iterations!r}")
    logits = np.zeros(predictions.shape[:3])
    for iteration in range(iterations):
        coupling = softmax(logits, axis=2)
        digit_caps = squash(np.einsum("nij,nijk->njk", coupling, predictions))
        if iteration + 1 < iterations:
            logits = logits + np.einsum("nijk,njk->nij", predictions, digit_caps)
    return digit_caps


def forward_float(images, params, shape, *, iterations=3):
    """Digit capsules v (N, 10, 16) for images (N, 28, 28) in [0, 1]; the class is argmax |v_j|."""
    return route_float(predictions_float(primary_capsules_float(images, params, shape), params), iterations)
