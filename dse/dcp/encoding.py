"""DCP's codes: the 7-entry layer code, the (M, N, 2) dataflow code and its relaxed form, and the
pieces of "nearest legal dataflow" that do not depend on the design space.

The patent (SPEC section 5) encodes:

- a layer as ``(Y, X, R, S, K, C, T)`` (``dse.shared.layer.Layer.to_code``);
- a dataflow as an ``(M, N, 2)`` integer code: M memory levels, N layer dimensions; per level the
  first entry is the parallel dimension with the number of PEs it gets, the other entries the
  remaining dimensions in loop order (outermost first) with their tile sizes; each entry is
  (dimension index, size). ``dse.shared.mapping.Mapping.to_code`` is this code for the template
  (M = 3 levels DRAM / GB / RF, N = 7 dimensions N K C Y X R S).

The code lists entries in loop order, so its first channel is a permutation: a gradient cannot
move it smoothly. The *relaxed code* has the same (M, N, 2) shape and the same content, indexed
by dimension instead of by slot: ``relaxed[m, n] = (slot of dimension n at level m, log2 of its
size)``, slot 0 being the parallel entry. Both channels relax to real numbers: a level's loop
order is the dimensions sorted by slot score, its parallel entry the lowest score, and a size
is ``2 ** log_size``. ``relax`` and ``exact_code`` convert a code both ways, exactly.

Predictor features (``layer_features``, ``relaxed_features``) are the log2 of every size and
bound, so that products (tiles, steps, PEs used) are sums the network sees directly.
"""

from functools import cache

import numpy as np

from nnaccel.dse.shared.layer import LayerType

LAYER_FEATURES = 10     # log2 Y X R S K C, log2 stride, one-hot T (conv, depthwise, dense)


def layer_features(layers):
    """(batch, 10) float32 features of a sequence of ``Layer``: the layer code in log2 (types
    one-hot) plus the stride."""
    rows = []
    for layer in layers:
        y, x, r, s, k, c, layer_type = layer.to_code()
        one_hot = [float(layer_type == t) for t in LayerType]
        rows.append([*np.log2([y, x, r, s, k, c, layer.stride]), *one_hot])
    return np.asarray(rows, dtype=np.float32).reshape(-1, LAYER_FEATURES)


def relax(codes):
    """Integer codes (batch, M, N, 2) in slot order -> relaxed codes (batch, M, N, 2) float64
    indexed by dimension: (slot, log2 size)."""
    codes = np.asarray(codes)
    batch, levels, dims, _ = codes.shape
    relaxed = np.empty(codes.shape, dtype=np.float64)
    rows = np.arange(batch)[:, None, None]
    level_index = np.arange(levels)[None, :, None]
    slots = np.broadcast_to(np.arange(dims), (batch, levels, dims))
    relaxed[rows, level_index, codes[..., 0], 0] = slots
    relaxed[rows, level_index, codes[..., 0], 1] = np.log2(codes[..., 1])
    return relaxed


def exact_code(relaxed):
    """A relaxed code whose sizes are exact powers of two of integers -> the integer code
    (M, N, 2) in slot order; the inverse of ``relax`` (used for round trips and in tests)."""
    relaxed = np.asarray(relaxed, dtype=np.float64)
    order = np.argsort(relaxed[..., 0], axis=-1, kind="stable")
    sizes = np.rint(2.0 ** relaxed[..., 1]).astype(np.int64)
    return np.stack([order, np.take_along_axis(sizes, order, axis=-1)], axis=-1)


def relaxed_features(relaxed):
    """Predictor input of relaxed codes (batch, M, N, 2): slots scaled to 0..1 and log2 sizes,
    flattened to (batch, M * N * 2). Works on NumPy arrays and torch tensors alike."""
    dims = relaxed.shape[-2]
    scaled = relaxed[..., 0:1] / (dims - 1)
    both = (np.concatenate if isinstance(relaxed, np.ndarray) else _torch_cat)(
        [scaled, relaxed[..., 1:2]], -1)
    return both.reshape(relaxed.shape[0], -1)


def _torch_cat(parts, axis):
    import torch

    return torch.cat(parts, dim=axis)


@cache
def divisors(value):
    return tuple(d for d in range(1, value + 1) if value % d == 0)


@cache
def _factorizations(bound, levels):
    """Every ordered factorization of ``bound`` into ``levels`` factors, (count, levels) int."""
    if levels == 1:
        return np.array([[bound]], dtype=np.int64)
    rows = [np.concatenate([np.full((len(rest), 1), first), rest], axis=1)
            for first in divisors(bound) for rest in [_factorizations(bound // first, levels - 1)]]
    return np.concatenate(rows)


def factorizations(bound, levels):
    """Every ordered way to write ``bound`` as a product of ``levels`` positive integers."""
    return _factorizations(int(bound), int(levels))


def nearest_factorization(bound, targets, *, forced_one=()):
    """The factorization of ``bound`` into ``len(targets)`` sizes closest to the real log2
    sizes ``targets`` (least squares in log2), with the levels in ``forced_one`` held at 1.
    Ties go to the first in ``factorizations`` order (outer levels smaller)."""
    options = factorizations(bound, len(targets))
    if forced_one:
        options = options[np.all(options[:, list(forced_one)] == 1, axis=1)]
    distance = ((np.log2(options) - np.asarray(targets, dtype=np.float64)) ** 2).sum(axis=1)
    return options[int(np.argmin(distance))]
