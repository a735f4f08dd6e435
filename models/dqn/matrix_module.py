"""Golden model of ``hw.dqn.matrix_module.MatrixModule``: the same products, summed in the same order, bit for bit."""

import numpy as np

from nnaccel.hw.dqn.matrix_module import partial_sum_count
from nnaccel.hw.shared.parameters import check_non_negative
from nnaccel.models.shared.float_arith import bits_dtype, float_add, float_max, float_mul

__all__ = ["matrix_accumulate", "accumulate_products"]


def matrix_accumulate(fmt, scalars, vectors, *, adder_latency, relu=False, seed=None, maximum=False):
    """One accumulation of ``MatrixModule``: ``seed + sum_k scalars[k] * vectors[k]`` per lane, as raw bits of
    ``fmt``.

    ``scalars`` is ``(K,)`` and ``vectors`` ``(K, lanes)``, both raw bits of ``fmt`` (unsigned integers); ``K`` is
    the accumulation's ``count``; ``seed`` ``(lanes,)`` (default: the identity).  Returns the ``(lanes,)`` result
    bits the RTL emits: the products ``float_mul(scalars[k], vectors[k, l])`` summed (or with ``maximum``, the max
    mode, their maximum taken) by :func:`accumulate_products`.
    """
    scalars = np.asarray(scalars)
    vectors = np.asarray(vectors)
    if scalars.ndim != 1 or scalars.shape[0] < 1:
        raise ValueError(f"scalars must have shape (K,) with K >= 1, not {scalars.shape!r}")
    if vectors.ndim != 2 or vectors.shape[0] != scalars.shape[0]:
        raise ValueError(f"vectors must have shape (K, lanes) with K = {scalars.shape[0]}, not {vectors.shape!r}")
    products = float_mul(fmt, np.broadcast_to(scalars[:, None], vectors.shape), vectors)
    return accumulate_products(fmt, products, adder_latency=adder_latency, relu=relu, seed=seed, maximum=maximum)


def accumulate_products(fmt, products, *, adder_latency, relu=False, seed=None, maximum=False):
    """Sum ``products`` (raw bits of ``fmt``, shape ``(K, ...)``) over the first axis in ``MatrixModule``'s order.

    Every trailing index is one lane (or any independent accumulation of the same length: the DQN model passes
    ``(K, positions, channels)``).  The order is the RTL's: ``P = partial_sum_count(adder_latency)`` partials,
    partial 0 starting at ``seed`` (raw bits broadcast to a product's shape; default ``-0``: the bias), the others
    at ``-0``; product ``k`` is added as ``partial[k % P] = float_add(product_k, partial[k % P])``;
    then a pairwise tree sums the partials level by level (``v[2i] + v[2i+1]``, an odd last value passed on);
    then ReLU, if asked, turns every result with the sign bit set into ``+0``.  With ``maximum`` (the module's max
    mode) every ``float_add`` is a ``float_max`` and the identity (the partials' start, the default seed) is
    ``-inf`` instead of ``-0``.
    """
    products = np.asarray(products)
    if products.ndim < 1 or products.shape[0] < 1:
        raise ValueError(f"products must have shape (K, ...) with K >= 1, not {products.shape!r}")
    check_non_negative("adder_latency", adder_latency)

    combine = float_max if maximum else float_add
    identity = np.full(products.shape[1:], fmt.infinity(sign=1) if maximum else 1 << (fmt.width - 1),
                       dtype=bits_dtype(fmt))
    partials = [identity] * partial_sum_count(adder_latency)
    if seed is not None:
        partials[0] = np.broadcast_to(np.asarray(seed).astype(identity.dtype), identity.shape)
    for index, product in enumerate(products):
        partials[index % len(partials)] = combine(fmt, product, partials[index % len(partials)])

    values = partials
    while len(values) > 1:
        values = ([combine(fmt, values[2 * pair], values[2 * pair + 1]) for pair in range(len(values) // 2)]
                  + values[len(values) - len(values) % 2:])
    (total,) = values

    if relu:
        total = np.where(total >> (fmt.width - 1) & 1, 0, total).astype(total.dtype)
    return total
