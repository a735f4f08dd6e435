"""Seeded random operand pairs for the float units, biased toward the cases that break them.

:func:`random_operands` mixes, for any :class:`hw.shared.float_format.FloatFormat`:

* uniformly random bit patterns (every class appears, mostly normal numbers);
* operands whose exponent field sits at an edge (0 = subnormal, 1, 2, around the bias, the largest
  finite exponents, all ones) with edge or random mantissas;
* special operands (signed zeros and infinities, quiet and signalling NaNs, the largest finite,
  smallest normal and smallest subnormal numbers) against random partners;
* exact ties, operands constructed so the exact result lies halfway between two neighbours
  (products: an odd significand times 1.5 * 2**k; sums: a plus an odd multiple of its half-ulp);
* multiplication: products aimed at the overflow and underflow (subnormal / zero) boundaries;
  addition: cancellation, ``a`` plus almost ``-a``.
"""

import numpy as np

from nnaccel.models.shared.float_arith import bits_dtype

__all__ = ["random_operands"]


def random_operands(fmt, operation, count, *, seed):
    """``(a, b)``: ``count`` operand pairs for ``operation`` ("mul" or "add"), reproducible from ``seed``."""
    if operation not in ("mul", "add"):
        raise ValueError(f"operation must be 'mul' or 'add', not {operation!r}")
    rng = np.random.default_rng(seed)
    generator = _Generator(fmt, rng)
    targeted = generator.product_range_edges if operation == "mul" else generator.cancellations
    ties = generator.product_ties if operation == "mul" else generator.sum_ties
    parts = [(generator.uniform, 0.2), (generator.exponent_edges, 0.2), (generator.specials, 0.1),
             (ties, 0.25), (targeted, 0.25)]
    sizes = [int(count * share) for _, share in parts]
    sizes[0] += count - sum(sizes)
    pairs = [make(size) for (make, _), size in zip(parts, sizes)]
    a = np.concatenate([pair[0] for pair in pairs])
    b = np.concatenate([pair[1] for pair in pairs])
    swap = rng.random(count) < 0.5                      # either operand may be the special one
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    order = rng.permutation(count)
    dtype = bits_dtype(fmt)
    return a[order].astype(dtype), b[order].astype(dtype)


class _Generator:
    def __init__(self, fmt, rng):
        self.fmt = fmt
        self.rng = rng
        self.mantissa_mask = (1 << fmt.mantissa_bits) - 1

    def _encode(self, sign, field, mantissa):
        fmt = self.fmt
        sign, field, mantissa = (np.asarray(part, dtype=np.int64) for part in (sign, field, mantissa))
        return (sign << (fmt.width - 1)) | (field << fmt.mantissa_bits) | (mantissa & self.mantissa_mask)

    def _signs(self, count):
        return self.rng.integers(0, 2, count)

    def _mantissas(self, count):
        return self.rng.integers(0, 1 << self.fmt.mantissa_bits, count)

    def _finite_fields(self, count, low=1):
        return self.rng.integers(low, self.fmt.exponent_all_ones, count)

    def _edge_operands(self, count):
        fmt = self.fmt
        edge_fields = np.array([0, 0, 1, 2, fmt.bias - 1, fmt.bias, fmt.bias + 1,
                                fmt.exponent_all_ones - 2, fmt.exponent_all_ones - 1, fmt.exponent_all_ones])
        edge_mantissas = np.array([0, 1, 1 << (fmt.mantissa_bits - 1), self.mantissa_mask, self.mantissa_mask - 1])
        field = self.rng.choice(edge_fields, count)
        mantissa = np.where(self.rng.random(count) < 0.5, self.rng.choice(edge_mantissas, count),
                            self._mantissas(count))
        return self._encode(self._signs(count), field, mantissa)

    def uniform(self, count):
        return tuple(self.rng.integers(0, 1 << self.fmt.width, count) for _ in range(2))

    def exponent_edges(self, count):
        return self._edge_operands(count), self._edge_operands(count)

    def specials(self, count):
        fmt = self.fmt
        top = 1 << (fmt.mantissa_bits - 1)
        magnitudes = np.array([
            0, fmt.infinity(), fmt.canonical_nan, fmt.infinity() | 1, fmt.infinity() | top | 1,
            fmt.infinity() - 1,                              # largest finite
            1 << fmt.mantissa_bits,                          # smallest normal
            1,                                               # smallest subnormal
            (1 << fmt.mantissa_bits) - 1,                    # largest subnormal
            fmt.bias << fmt.mantissa_bits,                   # 1.0
        ])
        special = self.rng.choice(magnitudes, count) | (self._signs(count) << (fmt.width - 1))
        partner = np.where(self.rng.random(count) < 0.5, self.rng.choice(magnitudes, count),
                           self.rng.integers(0, 1 << fmt.width, count))
        return special, partner | (self._signs(count) << (fmt.width - 1))

    def _product_exponent_targets(self, count):
        """Biased exponents for a product: everywhere, or near the subnormal and overflow edges."""
        fmt = self.fmt
        anywhere = self.rng.integers(-fmt.mantissa_bits - 3, fmt.exponent_all_ones + 2, count)
        low = self.rng.integers(-fmt.mantissa_bits - 3, 3, count)
        high = self.rng.integers(fmt.exponent_all_ones - 3, fmt.exponent_all_ones + 2, count)
        which = self.rng.integers(0, 3, count)
        return np.choose(which, [anywhere, low, high])

    def _product_partner_fields(self, a_field, count):
        """Exponent field of b so that a * b lands near a chosen target exponent (clipped to finite)."""
        target = self._product_exponent_targets(count)
        return np.clip(target - a_field + self.fmt.bias, 0, self.fmt.exponent_all_ones - 1)

    def product_ties(self, count):
        # significand s times 1.5: the product 3*s needs one bit more than the kept ones when s < 4/3 (in
        # units of the hidden bit), two bits more above; an odd s (below) or an s = 2 mod 4 (above) makes
        # the dropped bits exactly one half. The exponent target moves the tie through the normal,
        # subnormal and overflow ranges.
        a_field = self._finite_fields(count)
        significand = (1 << self.fmt.mantissa_bits) | self._mantissas(count)
        one_bit_more = 3 * significand < 1 << (self.fmt.mantissa_bits + 2)
        significand = np.where(one_bit_more, significand | 1, (significand & ~3) | 2)
        a = self._encode(self._signs(count), a_field, significand)
        b_field = self._product_partner_fields(a_field, count)
        b_mantissa = np.where(b_field == 0, 3 << max(self.fmt.mantissa_bits - 2, 0), 1 << (self.fmt.mantissa_bits - 1))
        return a, self._encode(self._signs(count), b_field, b_mantissa)

    def product_range_edges(self, count):
        a_field = self._finite_fields(count, low=0)
        a = self._encode(self._signs(count), a_field, self._mantissas(count))
        b_field = self._product_partner_fields(a_field, count)
        return a, self._encode(self._signs(count), b_field, self._mantissas(count))

    def sum_ties(self, count):
        # b = (2k + 1) half-ulps of a: a + b lies exactly halfway between two neighbours of a's binade
        # (or, after a carry or borrow across the binade, the rounding position moves and near-ties remain).
        fmt = self.fmt
        a_field = self.rng.integers(min(fmt.mantissa_bits + 2, fmt.exponent_all_ones - 1), fmt.exponent_all_ones, count)
        a = self._encode(self._signs(count), a_field, self._mantissas(count))
        odd_bits = self.rng.integers(1, fmt.mantissa_bits + 2, count)        # bit length of 2k + 1
        odd = (self.rng.integers(0, 1 << fmt.mantissa_bits, count) & ((1 << (odd_bits - 1)) - 1)) * 2 + 1
        odd |= 1 << (odd_bits - 1)
        b_field = a_field - fmt.mantissa_bits - 2 + odd_bits
        b_mantissa = odd << (fmt.mantissa_bits + 1 - odd_bits)
        valid = b_field >= 1
        b = self._encode(self._signs(count), np.where(valid, b_field, 0), np.where(valid, b_mantissa, 0))
        return a, b

    def cancellations(self, count):
        # b = -a with its low mantissa bits replaced and sometimes its exponent moved by one.
        fmt = self.fmt
        a_field = self._finite_fields(count, low=0)
        a_mantissa = self._mantissas(count)
        a_sign = self._signs(count)
        low_bits = self.rng.integers(0, fmt.mantissa_bits + 1, count)
        low_mask = (1 << low_bits) - 1
        b_mantissa = (a_mantissa & ~low_mask) | (self._mantissas(count) & low_mask)
        b_field = np.clip(a_field + self.rng.choice([-1, 0, 0, 0, 1], count), 0, fmt.exponent_all_ones - 1)
        return self._encode(a_sign, a_field, a_mantissa), self._encode(1 - a_sign, b_field, b_mantissa)
