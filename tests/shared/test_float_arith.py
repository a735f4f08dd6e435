"""Golden models: the bit-level model against NumPy's arithmetic (for bfloat16: float32 arithmetic rounded once more,
the fast path), TestFloat, an exact rational reference (exhaustive on 8-bit formats); flush-to-zero; calling
conventions."""

from fractions import Fraction

import numpy as np
import pytest

from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32, FloatFormat
from nnaccel.models.shared.float_arith import (bitlevel_add, bitlevel_mul, float_add, float_mul, from_binary32, is_nan,
                                         to_binary32)
from nnaccel.testbench.shared.float_stimulus import random_operands
from nnaccel.testbench.shared.float_stream import check_results
from nnaccel.testbench.shared.testfloat import load_testfloat

BITLEVEL = {"mul": bitlevel_mul, "add": bitlevel_add}
FAST = {"mul": float_mul, "add": float_add}


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
@pytest.mark.parametrize("operation", ["mul", "add"])
def test_bitlevel_model_matches_numpy(fmt, operation):
    a, b = random_operands(fmt, operation, 300_000, seed=31)
    check_results(fmt, a, b, BITLEVEL[operation](fmt, a, b), FAST[operation](fmt, a, b))


@pytest.mark.parametrize("vectors", ["f32_mul_1", "f32_add_1", "f16_mul_1", "f16_add_1", "f32_mul_2", "f32_add_2"])
@pytest.mark.parametrize("model", ["bitlevel", "numpy"])
def test_models_match_testfloat(vectors, model):
    fmt = BINARY16 if vectors.startswith("f16") else BINARY32
    operation = vectors.split("_")[1]
    cases = load_testfloat(vectors)
    got = (BITLEVEL if model == "bitlevel" else FAST)[operation](fmt, cases.a, cases.b)
    check_results(fmt, cases.a, cases.b, got, cases.expected, any_nan=True)


# ---- Exact rational reference ----------------------------------------------------------------

def _decode(fmt, bits):
    """(sign, value) with value a Fraction, "inf" or "nan"."""
    sign = bits >> (fmt.width - 1)
    field = (bits >> fmt.mantissa_bits) & fmt.exponent_all_ones
    mantissa = bits & ((1 << fmt.mantissa_bits) - 1)
    if field == fmt.exponent_all_ones:
        return sign, "nan" if mantissa else "inf"
    significand = mantissa | (1 << fmt.mantissa_bits if field else 0)
    return sign, Fraction(significand) * Fraction(2) ** (max(field, 1) - fmt.bias - fmt.mantissa_bits)


def _encode_rounded(fmt, value):
    """Round the non-zero Fraction ``value`` to nearest even in ``fmt`` (IEEE-754 section 4.3.1)."""
    sign, magnitude = int(value < 0), abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1                                      # now 2**exponent <= magnitude < 2**(exponent+1)
    exponent = max(exponent, 1 - fmt.bias)                 # subnormal quantum below the normal range
    quantum = Fraction(2) ** (exponent - fmt.mantissa_bits)
    units, remainder = divmod(magnitude, quantum)
    if remainder > quantum / 2 or (remainder == quantum / 2 and units % 2):
        units += 1
    # units * quantum is representable (units may reach 2**(m+1): the next binade, still exact)
    field_exponent = exponent + fmt.bias
    if units >> (fmt.mantissa_bits + 1):
        units, field_exponent = units >> 1, field_exponent + 1
    if field_exponent >= fmt.exponent_all_ones:
        return fmt.infinity(sign)
    field = field_exponent if units >> fmt.mantissa_bits else 0
    return (sign << (fmt.width - 1)) | (field << fmt.mantissa_bits) | (int(units) & ((1 << fmt.mantissa_bits) - 1))


def _reference(fmt, operation, a, b):
    (sign_a, x), (sign_b, y) = _decode(fmt, a), _decode(fmt, b)
    if "nan" in (x, y):
        return fmt.canonical_nan
    if operation == "mul":
        sign = sign_a ^ sign_b
        if "inf" in (x, y):
            return fmt.canonical_nan if 0 in (x, y) else fmt.infinity(sign)
        product = x * y * (-1 if sign else 1)
        return _encode_rounded(fmt, product) if product else sign << (fmt.width - 1)
    if x == "inf" or y == "inf":
        if x == y == "inf" and sign_a != sign_b:
            return fmt.canonical_nan
        return fmt.infinity(sign_a if x == "inf" else sign_b)
    total = x * (-1 if sign_a else 1) + y * (-1 if sign_b else 1)
    if total == 0:
        return (sign_a & sign_b) << (fmt.width - 1)       # +0 unless both are negative zeros
    return _encode_rounded(fmt, total)


@pytest.mark.parametrize("fmt", [
    FloatFormat(exponent_bits=4, mantissa_bits=3),
    FloatFormat(exponent_bits=2, mantissa_bits=5),
    pytest.param(FloatFormat(exponent_bits=5, mantissa_bits=2), marks=pytest.mark.extended),
], ids=lambda fmt: fmt.name)
@pytest.mark.parametrize("operation", ["mul", "add"])
def test_bitlevel_model_exhaustive_8bit(fmt, operation):
    # Every pair of 8-bit encodings; the reference is computed once per unordered pair (both
    # operations commute, signed zeros included).
    table = np.zeros((256, 256), dtype=np.int64)
    for x in range(256):
        for y in range(x, 256):
            table[x, y] = table[y, x] = _reference(fmt, operation, x, y)
    a, b = (grid.ravel() for grid in np.meshgrid(np.arange(256), np.arange(256), indexing="ij"))
    check_results(fmt, a, b, BITLEVEL[operation](fmt, a, b), table.ravel())


# ---- Rounding float32 into a format --------------------------------------------------------

FLOAT32_SPECIALS = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 1, 0x807FFFFF,
                             0x477FEFFF, 0x477FF000, 0x477FFFFF, 0x7F7FFFFF, 0x33000000, 0x33000001, 0x387FC000,
                             0x38800000, 0x3F800000, 0x3F808000, 0x3F818000], np.uint32)


@pytest.mark.parametrize("fmt", [BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
def test_from_binary32_rounds_to_nearest_even(fmt):
    """Against independent references: NumPy's float32 -> float16 cast, the bfloat16 rounding by integer
    arithmetic, and the exact rational reference on a sample; NaNs become the canonical NaN."""
    rng = np.random.default_rng(41)
    bits = np.concatenate([rng.integers(0, 1 << 32, 400_000, dtype=np.uint64).astype(np.uint32), FLOAT32_SPECIALS])
    got = from_binary32(fmt, bits)
    nan = np.isnan(bits.view(np.float32))
    if fmt is BINARY16:
        with np.errstate(over="ignore"):
            expected = bits.view(np.float32).astype(np.float16).view(np.uint16)
    else:
        wide = bits.astype(np.uint64)
        expected = ((wide + 0x7FFF + ((wide >> 16) & 1)) >> 16).astype(np.uint16)
    assert np.array_equal(got[~nan], expected[~nan]) and np.all(got[nan] == fmt.canonical_nan)
    for value in np.concatenate([bits[:300], FLOAT32_SPECIALS[~np.isnan(FLOAT32_SPECIALS.view(np.float32))]]):
        sign, magnitude = _decode(BINARY32, int(value))
        exact = (fmt.infinity(sign) if magnitude == "inf" else sign << (fmt.width - 1) if magnitude == 0
                 else _encode_rounded(fmt, magnitude * (-1 if sign else 1)))
        assert from_binary32(fmt, np.uint32(value)) == exact, hex(value)


def test_from_binary32_keeps_binary32_and_refuses_wider_formats():
    bits = np.array([0x7FC00001, 0x3F800000, 1], np.uint32)
    assert np.array_equal(from_binary32(BINARY32, bits), bits)
    assert np.array_equal(from_binary32(BINARY32, bits.view(np.float32)), bits)
    with pytest.raises(ValueError, match="from_binary32 rounds to formats of at most 21 mantissa bits, not e8m22"):
        from_binary32(FloatFormat(exponent_bits=8, mantissa_bits=22), bits)



@pytest.mark.parametrize("fmt", [BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
def test_to_binary32_widens_every_encoding_exactly(fmt):
    """All 65,536 encodings against NumPy's float16 -> float32 cast and bfloat16's 16-bit shift; the way back
    through from_binary32 returns every non-NaN encoding unchanged."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    got = to_binary32(fmt, bits)
    if fmt is BINARY16:
        expected = bits.astype(np.uint16).view(np.float16).astype(np.float32)
    else:
        expected = (bits << 16).view(np.float32)
    nan = is_nan(fmt, bits)
    assert got.dtype == np.float32 and np.all(np.isnan(got[nan]))
    assert np.array_equal(got[~nan].view(np.uint32), expected[~nan].view(np.uint32))
    assert np.array_equal(from_binary32(fmt, got[~nan]), bits[~nan])


def test_to_binary32_keeps_binary32_and_refuses_wider_formats():
    bits = np.array([0x7FC00001, 0x3F800000, 1], np.uint32)
    assert np.array_equal(to_binary32(BINARY32, bits).view(np.uint32), bits)
    with pytest.raises(ValueError, match="to_binary32 widens formats of at most 8 exponent and 23 mantissa bits, "
                                         "not e11m20"):
        to_binary32(FloatFormat(exponent_bits=11, mantissa_bits=20), bits)


# ---- Flush to zero, NaN, calling conventions --------------------------------------------------

@pytest.mark.parametrize("model, a, b, expected", [
    (float_mul, 0x00000001, 0x4B000000, 0x00000000),   # subnormal operand counts as zero
    (float_mul, 0x80800000, 0x3F000000, 0x80000000),   # subnormal result flushed, sign kept
    (float_mul, 0x00800000, 0x3F7FFFFF, 0x00800000),   # rounds up to the smallest normal: kept
    (float_mul, 0x807FFFFF, 0x7F800000, 0x7FC00000),   # flushed subnormal times inf -> NaN
    (float_add, 0x00800000, 0x80000001, 0x00800000),   # subnormal operand counts as zero
    (float_add, 0x00800001, 0x80800000, 0x00000000),   # subnormal difference flushed to +0
    (float_add, 0x80000001, 0x80000001, 0x80000000),   # -0 + -0 after flushing
])
def test_flush_to_zero(model, a, b, expected):
    assert int(model(BINARY32, a, b, flush_to_zero=True)) == expected


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
def test_nan_results_are_canonical(fmt):
    a, b = random_operands(fmt, "mul", 50_000, seed=41)
    for operation in ("mul", "add"):
        for model in (BITLEVEL[operation], FAST[operation]):
            result = model(fmt, a, b)
            assert np.all(result[is_nan(fmt, result)] == fmt.canonical_nan)


def test_calling_conventions():
    result = float_mul(BINARY16, 0x3C00, np.array([0x4000, 0x3800], dtype=np.uint16))   # 1.0 * [2.0, 0.5]
    assert result.dtype == np.uint16 and result.tolist() == [0x4000, 0x3800]
    assert float_add(BINARY32, np.uint32(0x3F800000), np.uint32(0x3F800000)).dtype == np.uint32
    assert bitlevel_add(BFLOAT16, [0x3F80], [0x3F80]).tolist() == [0x4000]
