"""Bit-exact NumPy reference of the integer layer arithmetic the fixed-point engines perform.

Every layer op here is: an exact integer dot product (signed 8-bit operands, 32-bit accumulator,
which never overflows for the shapes used: 9*9*256 products of at most 128*128 is 3.4e8 < 2**31),
plus a bias already in the accumulator's scale, then :func:`requantize`: optional ReLU, an
arithmetic right shift rounding half up, and saturation to signed 8 bits. Integer addition is
associative, so the hardware may accumulate in any order and still match these functions bit for bit.
"""

import numpy as np

__all__ = ["INT8_MIN", "INT8_MAX", "requantize", "conv2d", "matvec"]

INT8_MIN, INT8_MAX = -128, 127
_ACCUMULATOR_LIMIT = 1 << 31


def _check_shift(shift):
    if not isinstance(shift, (int, np.integer)) or not 0 <= shift <= 31:
        raise ValueError(f"shift must be an integer in 0..31, not {shift!r}")


def _check_int8(name, array):
    array = np.asarray(array)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, not {array.dtype}")
    if array.size and (array.min() < INT8_MIN or array.max() > INT8_MAX):
        raise ValueError(f"{name} holds values outside int8 ({array.min()}..{array.max()})")
    return array.astype(np.int64)


def requantize(accumulator, *, shift, relu=False):
    """32-bit accumulators -> int8: ReLU (if asked), ``(acc + 2**(shift-1)) >> shift``, saturate."""
    _check_shift(shift)
    acc = np.asarray(accumulator, dtype=np.int64)
    if acc.size and (acc.min() < -_ACCUMULATOR_LIMIT or acc.max() >= _ACCUMULATOR_LIMIT):
        raise OverflowError("accumulator outside 32 bits: the hardware would wrap; shrink the layer")
    if relu:
        acc = np.maximum(acc, 0)
    if shift:
        acc = (acc + (1 << (shift - 1))) >> shift
    return np.clip(acc, INT8_MIN, INT8_MAX).astype(np.int8)


def conv2d(x, weights, bias=None, *, stride=1, shift, relu=False):
    """Valid convolution. ``x`` (C, H, W) int8, ``weights`` (K, C, kh, kw) int8, ``bias`` (K,) int32
    in the accumulator's scale (or None). Returns (K, Ho, Wo) int8."""
    x = _check_int8("x", x)
    weights = _check_int8("weights", weights)
    if x.ndim != 3 or weights.ndim != 4 or weights.shape[1] != x.shape[0]:
        raise ValueError(f"conv2d needs x (C, H, W) and weights (K, C, kh, kw) with the same C, "
                         f"got {x.shape} and {weights.shape}")
    if not isinstance(stride, (int, np.integer)) or stride < 1:
        raise ValueError(f"stride must be a positive integer, not {stride!r}")
    kernels, _, kh, kw = weights.shape
    if kh > x.shape[1] or kw > x.shape[2]:
        raise ValueError(f"kernel {kh}x{kw} larger than the input {x.shape[1]}x{x.shape[2]}")
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(1, 2))[:, ::stride, ::stride]
    acc = np.einsum("chwij,kcij->khw", windows, weights, dtype=np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64).reshape(kernels, 1, 1)
    return requantize(acc, shift=shift, relu=relu)


def matvec(weights, x, bias=None, *, shift, relu=False):
    """Batched matrix-vector products ``weights`` (..., M, N) @ ``x`` (..., N) -> (..., M) int8,
    broadcasting over the leading axes; ``bias`` (..., M) int32 in the accumulator's scale or None."""
    weights = _check_int8("weights", weights)
    x = _check_int8("x", x)
    if weights.ndim < 2 or x.shape[-1:] != weights.shape[-1:]:
        raise ValueError(f"matvec needs weights (..., M, N) and x (..., N), got {weights.shape} and {x.shape}")
    acc = np.einsum("...mn,...n->...m", weights, x, dtype=np.int64)
    if bias is not None:
        acc = acc + np.asarray(bias, dtype=np.int64)
    return requantize(acc, shift=shift, relu=relu)
