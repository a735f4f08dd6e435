"""matrix_accumulate and accumulate_products: the summation order, signed zeros, ReLU and argument checks,
against NumPy's own IEEE float32 / float16 arithmetic (independent of models.shared.float_arith)."""

import numpy as np
import pytest

from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.models.shared.float_arith import float_mul
from nnaccel.models.dqn.matrix_module import accumulate_products, matrix_accumulate

SEED = 4004
NEGATIVE_ZERO = np.uint32(0x80000000)


def float32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def reference_sum(scalars, vectors, partial_count, native, seed=None):
    """The documented order in NumPy arithmetic: partials k mod P from -0 (partial 0 from ``seed`` if given), then
    the pairwise tree."""
    products = scalars[:, None] * vectors
    partials = [np.full(vectors.shape[1], -0.0, dtype=native) for _ in range(partial_count)]
    if seed is not None:
        partials[0] = seed
    for index, product in enumerate(products):
        partials[index % partial_count] = product + partials[index % partial_count]
    while len(partials) > 1:
        pairs = [partials[2 * pair] + partials[2 * pair + 1] for pair in range(len(partials) // 2)]
        partials = pairs + partials[len(pairs) * 2:]
    return partials[0]


@pytest.mark.parametrize("adder_latency", [0, 1, 2, 3, 4, 5, 8])
@pytest.mark.parametrize("count", [1, 2, 3, 5, 8, 37, 256])
def test_binary32_order_matches_numpy(adder_latency, count):
    rng = np.random.default_rng([SEED, adder_latency, count])
    scalars = (rng.standard_normal(count) * np.exp2(rng.integers(-20, 20, count))).astype(np.float32)
    vectors = (rng.standard_normal((count, 5)) * np.exp2(rng.integers(-20, 20, (count, 5)))).astype(np.float32)
    expected = reference_sum(scalars, vectors, max(adder_latency, 1), np.float32)
    result = matrix_accumulate(BINARY32, float32_bits(scalars), float32_bits(vectors), adder_latency=adder_latency)
    assert np.array_equal(result, float32_bits(expected))


@pytest.mark.parametrize("adder_latency", [0, 1, 2, 3])
@pytest.mark.parametrize("count", [1, 2, 7])
def test_the_seed_starts_partial_zero(adder_latency, count):
    """The bias as the seed: partial 0 starts from it, the others from -0 (the RTL's order, in NumPy)."""
    rng = np.random.default_rng([SEED, 32, adder_latency, count])
    scalars = (rng.standard_normal(count) * np.exp2(rng.integers(-20, 20, count))).astype(np.float32)
    vectors = (rng.standard_normal((count, 5)) * np.exp2(rng.integers(-20, 20, (count, 5)))).astype(np.float32)
    seed = (rng.standard_normal(5) * np.exp2(rng.integers(-20, 20, 5))).astype(np.float32)
    expected = reference_sum(scalars, vectors, max(adder_latency, 1), np.float32, seed=seed)
    result = matrix_accumulate(BINARY32, float32_bits(scalars), float32_bits(vectors), adder_latency=adder_latency,
                               seed=float32_bits(seed))
    assert np.array_equal(result, float32_bits(expected))
    # A seed of -0 is no seed.
    assert np.array_equal(matrix_accumulate(BINARY32, float32_bits(scalars), float32_bits(vectors),
                                            adder_latency=adder_latency, seed=np.full(5, NEGATIVE_ZERO)),
                          matrix_accumulate(BINARY32, float32_bits(scalars), float32_bits(vectors),
                                            adder_latency=adder_latency))


@pytest.mark.parametrize("adder_latency", [1, 2, 3])
def test_binary16_order_matches_numpy(adder_latency):
    rng = np.random.default_rng([SEED, 16, adder_latency])
    scalars = rng.standard_normal(300).astype(np.float16)
    vectors = rng.standard_normal((300, 4)).astype(np.float16)
    expected = reference_sum(scalars, vectors, max(adder_latency, 1), np.float16)
    result = matrix_accumulate(BINARY16, scalars.view(np.uint16), vectors.view(np.uint16),
                               adder_latency=adder_latency)
    assert result.dtype == np.uint16
    assert np.array_equal(result, expected.view(np.uint16))


def test_the_order_is_observable():
    """2**24, 1, 1, -2**24: the partials change the rounding, so the adder latency is part of the result."""
    scalars = float32_bits([1.0, 1.0, 1.0, 1.0])
    vectors = float32_bits([[2.0 ** 24], [1.0], [1.0], [-(2.0 ** 24)]])
    # One partial: 2**24 + 1 rounds to 2**24 (tie to even), twice; minus 2**24 is 0.
    one_partial = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=1)
    # Two partials: (2**24 + 1 -> 2**24) + (1 - 2**24, exact) = 1.
    two_partials = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=2)
    assert [hex(one_partial[0]), hex(two_partials[0])] == ["0x0", "0x3f800000"]


@pytest.mark.parametrize("adder_latency", [1, 2, 3, 4])
def test_a_sum_of_negative_zeros_is_negative_zero(adder_latency):
    """Partials start from -0, not +0: -0 products sum to -0 for any count, also fewer than the partials."""
    for count in (1, 2, 3, 7):
        scalars = float32_bits([0.0] * count)
        vectors = float32_bits([[-1.0, -0.0, 2.0]] * count)
        result = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=adder_latency)
        assert list(result) == [0x80000000, 0x80000000, 0x00000000], (count, [hex(v) for v in result])
        relu = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=adder_latency, relu=True)
        assert list(relu) == [0, 0, 0]


def test_count_below_partials_is_the_plain_sum():
    scalars = float32_bits([3.0, -0.5])
    vectors = float32_bits([[1.0, 2.0 ** -149], [4.0, 0.0]])
    result = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=5)
    assert list(result.view(np.float32)) == [1.0, 3.0 * 2.0 ** -149]


def test_relu_clears_results_with_the_sign_bit():
    scalars = float32_bits([1.0])
    vectors = np.array([[0x3F800000, 0xBF800000, 0x80000000, 0x7F800000, 0xFF800000]], dtype=np.uint32)
    result = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=2, relu=True)
    assert [hex(v) for v in result] == ["0x3f800000", "0x0", "0x0", "0x7f800000", "0x0"]


def test_nan_results_are_canonical():
    scalars = float32_bits([np.inf, 1.0])
    vectors = float32_bits([[0.0, 1.0], [1.0, np.nan]])
    result = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=2)
    assert [hex(v) for v in result] == [hex(BINARY32.canonical_nan)] * 2


def test_bfloat16_results_are_16_bits():
    scalars = np.array([0x3F80, 0x4000], dtype=np.uint16)                # 1, 2
    vectors = np.array([[0x3FC0, 0xC000], [0x3F80, 0x3F80]], dtype=np.uint16)  # [1.5, -2], [1, 1]
    result = matrix_accumulate(BFLOAT16, scalars, vectors, adder_latency=2)
    assert result.dtype == np.uint16
    assert [hex(v) for v in result] == ["0x4060", "0x0"]                  # 3.5, +0


def test_accumulate_products_sums_every_trailing_index_independently():
    """The DQN model's use: products of shape (K, positions, channels), each (position, channel) one lane."""
    rng = np.random.default_rng(SEED)
    scalars = float32_bits(rng.standard_normal((9, 3)))       # 9 products for each of 3 positions
    weights = float32_bits(rng.standard_normal((9, 4)))       # 4 channels
    products = float_mul(BINARY32, scalars[:, :, None], weights[:, None, :])
    result = accumulate_products(BINARY32, products, adder_latency=3, relu=True)
    assert result.shape == (3, 4)
    for position in range(3):
        expected = matrix_accumulate(BINARY32, scalars[:, position], weights, adder_latency=3, relu=True)
        assert np.array_equal(result[position], expected)


def test_accumulate_products_rejects_no_products():
    with pytest.raises(ValueError, match=r"^products must have shape \(K, \.\.\.\) with K >= 1, not \(0, 4\)$"):
        accumulate_products(BINARY32, np.zeros((0, 4), np.uint32), adder_latency=2)


@pytest.mark.parametrize(("scalars", "vectors", "arguments", "message"), [
    (np.zeros(0, np.uint32), np.zeros((0, 2), np.uint32), {},
     r"scalars must have shape \(K,\) with K >= 1, not \(0,\)"),
    (np.zeros((2, 1), np.uint32), np.zeros((2, 2), np.uint32), {},
     r"scalars must have shape \(K,\) with K >= 1, not \(2, 1\)"),
    (np.zeros(2, np.uint32), np.zeros((3, 2), np.uint32), {},
     r"vectors must have shape \(K, lanes\) with K = 2, not \(3, 2\)"),
    (np.zeros(2, np.uint32), np.zeros((2, 2), np.uint32), {"adder_latency": -1},
     r"adder_latency must be a non-negative integer, not -1"),
])
def test_rejects_bad_arguments(scalars, vectors, arguments, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        matrix_accumulate(BINARY32, scalars, vectors, **{"adder_latency": 2, **arguments})


@pytest.mark.parametrize("adder_latency", [1, 2, 3])
def test_max_mode_is_the_largest_product(adder_latency):
    """The max mode's result does not depend on the order (the maximum is a total order with NaN on top): NumPy's
    largest product, +0 where the largest is a zero and some product is +0, the canonical NaN where any is NaN;
    the default seed is -inf, so a window of -inf products gives -inf; ReLU after it."""
    rng = np.random.default_rng(SEED)
    values = rng.standard_normal((7, 64)).astype(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32)
    special = rng.random(values.shape) < 0.1
    values[special] = rng.choice(specials, size=int(special.sum()))
    values[:, :3] = -0.0                                  # all -0; -0 with a +0 in the middle, then first
    values[3, 1] = values[0, 2] = 0.0
    values[:, 3] = -np.inf
    values[:, 4] = np.float32(1e-45) * -np.arange(1, 8)   # negative subnormals: the one nearest zero wins
    products = float32_bits(values)
    got = accumulate_products(BINARY32, products, adder_latency=adder_latency, maximum=True)
    with np.errstate(invalid="ignore"):
        largest = np.nanmax(np.where(np.isnan(values), -np.inf, values), axis=0)
    positive_zero = (largest == 0) & np.any(float32_bits(values) == 0, axis=0)
    expected = float32_bits(np.where(positive_zero, np.float32(0.0), largest))
    expected[np.any(np.isnan(values), axis=0)] = 0x7FC00000
    assert np.array_equal(got, expected)
    assert got[0] == NEGATIVE_ZERO and got[1] == got[2] == 0 and got[3] == 0xFF800000
    assert got[4] == float32_bits(np.float32(-1e-45))
    with_relu = accumulate_products(BINARY32, products, adder_latency=adder_latency, maximum=True, relu=True)
    assert np.array_equal(with_relu, np.where(expected >> 31, 0, expected))
