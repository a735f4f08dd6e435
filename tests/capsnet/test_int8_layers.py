"""The integer layer arithmetic shared by the fixed-point engines and the golden models."""

import numpy as np
import pytest

from nnaccel.models.capsnet.int8_layers import conv2d, matvec, requantize


def test_requantize_rounds_half_up():
    # 3/2 = 1.5 -> 2; -3/2 = -1.5 -> -1; 5/4 = 1.25 -> 1; 6/4 = 1.5 -> 2; -6/4 = -1.5 -> -1; -7/4 -> -2
    got = requantize(np.array([3, -3]), shift=1).tolist() + requantize(np.array([5, 6, -6, -7]), shift=2).tolist()
    assert got == [2, -1, 1, 2, -1, -2]


def test_requantize_saturates_to_int8():
    assert requantize(np.array([1000, -1000, 127, -128]), shift=0).tolist() == [127, -128, 127, -128]
    # 600 / 4 = 150 saturates; 509 / 4 = 127.25 -> 127; 510 / 4 = 127.5 rounds up to 128 and saturates
    assert requantize(np.array([600, 509, 510, -514]), shift=2).tolist() == [127, 127, 127, -128]
    assert requantize(np.array([1]), shift=0).dtype == np.int8


def test_requantize_relu_comes_before_the_shift():
    assert requantize(np.array([-1, -300, 3, 300]), shift=1, relu=True).tolist() == [0, 0, 2, 127]


@pytest.mark.parametrize("shift", [-1, 32, 1.5, "3"])
def test_requantize_checks_the_shift(shift):
    with pytest.raises(ValueError, match=f"shift must be an integer in 0..31, not {shift!r}"):
        requantize(np.array([1]), shift=shift)


def test_requantize_rejects_accumulators_beyond_32_bits():
    with pytest.raises(OverflowError, match="accumulator outside 32 bits"):
        requantize(np.array([2 ** 31]), shift=0)
    assert requantize(np.array([-2 ** 31, 2 ** 31 - 1]), shift=31).tolist() == [-1, 1]


def test_conv2d_hand_computed():
    x = np.array([[[1, 2, 3], [4, 5, 6], [7, 8, 9]]], dtype=np.int8)
    weights = np.array([[[[1, 0], [0, -1]]], [[[2, 1], [1, 2]]]], dtype=np.int8)
    # kernel 0: x[y,x] - x[y+1,x+1] = -4 everywhere; kernel 1: 2a + b + c + 2d
    out = conv2d(x, weights, np.array([1, -2]), shift=0)
    assert out.tolist() == [[[-3, -3], [-3, -3]], [[16, 22], [34, 40]]]
    assert conv2d(x, weights, shift=1, stride=2).tolist() == [[[-2]], [[9]]]    # -4/2; 18/2
    assert conv2d(x, weights, shift=0, relu=True)[0].tolist() == [[0, 0], [0, 0]]


def test_conv2d_matches_a_direct_loop():
    rng = np.random.default_rng(5)
    x = rng.integers(-128, 128, (3, 7, 7)).astype(np.int8)
    weights = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    bias = rng.integers(-5000, 5000, 4).astype(np.int32)
    expected = np.zeros((4, 3, 3), dtype=np.int64)
    for k in range(4):
        for y in range(3):
            for col in range(3):
                window = x[:, 2 * y:2 * y + 3, 2 * col:2 * col + 3].astype(np.int64)
                expected[k, y, col] = np.sum(window * weights[k]) + bias[k]
    rounded = np.clip((np.maximum(expected, 0) + 64) >> 7, -128, 127)
    assert np.array_equal(conv2d(x, weights, bias, stride=2, shift=7, relu=True), rounded)


def test_matvec_hand_computed_and_broadcast():
    weights = np.array([[1, 2], [-3, 4]], dtype=np.int8)
    assert matvec(weights, np.array([5, 6], dtype=np.int8), np.array([1, 0]), shift=0).tolist() == [18, 9]
    batch = np.array([[1, 1], [2, -1]], dtype=np.int8)
    assert matvec(weights, batch, shift=1).tolist() == [[2, 1], [0, -5]]   # 3/2, 1/2; 0/2, -10/2


def test_operands_must_be_int8_integers():
    with pytest.raises(TypeError, match="x must be an integer array, not float64"):
        conv2d(np.zeros((1, 3, 3)), np.zeros((1, 1, 2, 2), dtype=np.int8), shift=0)
    with pytest.raises(ValueError, match=r"weights holds values outside int8 \(128..128\)"):
        matvec(np.array([[128]]), np.array([1]), shift=0)


def test_shape_errors():
    x = np.zeros((2, 5, 5), dtype=np.int8)
    with pytest.raises(ValueError, match=r"conv2d needs x \(C, H, W\) and weights \(K, C, kh, kw\) with the same C, "
                                         r"got \(2, 5, 5\) and \(1, 3, 3, 3\)"):
        conv2d(x, np.zeros((1, 3, 3, 3), dtype=np.int8), shift=0)
    with pytest.raises(ValueError, match="stride must be a positive integer, not 0"):
        conv2d(x, np.zeros((1, 2, 3, 3), dtype=np.int8), stride=0, shift=0)
    with pytest.raises(ValueError, match="kernel 6x6 larger than the input 5x5"):
        conv2d(x, np.zeros((1, 2, 6, 6), dtype=np.int8), shift=0)
    with pytest.raises(ValueError, match=r"matvec needs weights \(..., M, N\) and x \(..., N\), got \(2, 3\) and \(2,\)"):
        matvec(np.zeros((2, 3), dtype=np.int8), np.zeros(2, dtype=np.int8), shift=0)
