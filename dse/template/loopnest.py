"""Data reuse of a loop-nest mapping on the template, vectorized over a batch of cases.

The nest a mapping describes (levels DRAM, GB, RF; see ``dse.template.mapping``), outermost first::

    DRAM temporal loops          (tiles move DRAM -> GB)
      GB temporal loops          (tiles move GB -> array)
        spatial loops            (every level's parallel entry: the PEs, all below the GB)
          RF temporal loops      (operands move RF -> MAC, one MAC per PE per cycle)

The tile a level holds is spanned by every loop inside it: the RF holds the RF loops' extents,
the GB the GB loops' x spatial x RF loops' extents. An input tile spans
``(rows - 1) * stride + filter_rows`` input rows (and the same for columns).

How often a tile is loaded (Timeloop's rule): walking outward from the level, loops whose
dimension the tensor does not depend on reuse the resident tile until the first loop it does
depend on; from there on every iteration of every loop reloads it. Loops of size 1 are
transparent. For outputs, a reload after the first of the same output tile fetches partial sums
back; every residency ends with a write-back. Across the array a tile that does not depend on a
spatial dimension is sent once (multicast) and an output that does not depend on one is reduced
before it reaches the GB. Not modelled: sliding-window overlap between consecutive input tiles
(each tile is fetched whole), double buffering, the array's interconnect energy.

All counts are float64 arrays of shape (batch,).
"""

import numpy as np

from nnaccel.dse.shared.layer import DIM_INDEX, LayerType

TENSORS = ("W", "I", "O")
LEVELS = ("DRAM", "GB", "RF")

_N, _K, _C, _Y, _X, _R, _S = (DIM_INDEX[d] for d in ("N", "K", "C", "Y", "X", "R", "S"))


def _relevance_table():
    """relevance[layer type, tensor, dim]: does the tensor's index depend on the dim."""
    table = np.zeros((len(LayerType), len(TENSORS), len(DIM_INDEX)), dtype=bool)
    for layer_type in (LayerType.CONV, LayerType.DENSE):
        table[layer_type, 0, [_K, _C, _R, _S]] = True
        table[layer_type, 2, [_N, _K, _Y, _X]] = True
    table[LayerType.DEPTHWISE, 0, [_C, _R, _S]] = True
    table[LayerType.DEPTHWISE, 2, [_N, _C, _Y, _X]] = True
    table[:, 1, [_N, _C, _Y, _X, _R, _S]] = True
    return table


RELEVANCE = _relevance_table()


def footprints(extents, layer_type, stride):
    """Words of W, I, O in a tile spanning ``extents`` (batch, 7); returns (batch, 3)."""
    relevant = RELEVANCE[layer_type]
    weights = np.prod(np.where(relevant[:, 0], extents, 1.0), axis=1)
    outputs = np.prod(np.where(relevant[:, 2], extents, 1.0), axis=1)
    rows = (extents[:, _Y] - 1) * stride + extents[:, _R]
    cols = (extents[:, _X] - 1) * stride + extents[:, _S]
    inputs = extents[:, _N] * extents[:, _C] * rows * cols
    return np.stack([weights, inputs, outputs], axis=1)


def _loads(loop_dims, loop_sizes, relevant):
    """Tile loads and distinct tiles under the loops above a level, per tensor: (batch, 3) each.

    ``loop_dims`` / ``loop_sizes`` (batch, P) are the loops above the level, outermost first;
    ``relevant`` (batch, 3, 7) the tensor-dimension relevance.
    """
    batch, loops = loop_dims.shape
    rows = np.arange(batch)[:, None, None]
    tensors = np.arange(len(TENSORS))[None, :, None]
    depends = relevant[rows, tensors, loop_dims[:, None, :]] & (loop_sizes[:, None, :] > 1)
    running = np.cumprod(loop_sizes, axis=1)
    any_dependent = depends.any(axis=2)
    innermost = loops - 1 - np.argmax(depends[:, :, ::-1], axis=2)
    loads = np.where(any_dependent, np.take_along_axis(running, innermost, axis=1), 1.0)
    distinct = np.prod(np.where(depends, loop_sizes[:, None, :], 1.0), axis=2)
    return loads, distinct


def analyse(codes, layer_type, stride):
    """Tile sizes and load counts of a batch of mappings.

    ``codes`` (batch, 3, 7, 2) are mappings in DCP's encoding (dimension index, size);
    ``layer_type`` and ``stride`` (batch,) integer arrays. Returns a dict of arrays:
    ``spatial`` (batch, 7) PE unrolling per dim, ``temporal`` (batch, 3, 7) loop sizes per level
    and dim, ``pes_used``, ``steps`` (temporal iterations = cycles at one MAC per PE),
    ``rf_tile`` / ``array_tile`` / ``gb_tile`` / ``dram_tile`` (batch, 3) words of W, I, O,
    ``rf_loads`` / ``rf_distinct`` / ``gb_loads`` / ``gb_distinct`` (batch, 3).
    """
    codes = np.asarray(codes)
    dims = codes[..., 0].astype(np.intp)
    sizes = codes[..., 1].astype(np.float64)
    batch, levels, _ = dims.shape
    is_parallel = dims[:, :, 0, None] == np.arange(len(DIM_INDEX))
    spatial = np.prod(np.where(is_parallel, sizes[:, :, 0, None], 1.0), axis=1)
    temporal = np.ones((batch, levels, len(DIM_INDEX)))
    np.put_along_axis(temporal, dims[:, :, 1:], sizes[:, :, 1:], axis=2)

    rf_extents = temporal[:, 2]
    array_extents = spatial * rf_extents
    gb_extents = temporal[:, 1] * array_extents
    dram_extents = temporal[:, 0] * gb_extents
    relevant = RELEVANCE[layer_type]
    above_gb = (dims[:, 0, 1:], sizes[:, 0, 1:])
    above_rf = (dims[:, :2, 1:].reshape(batch, -1), sizes[:, :2, 1:].reshape(batch, -1))
    rf_loads, rf_distinct = _loads(*above_rf, relevant)
    gb_loads, gb_distinct = _loads(*above_gb, relevant)
    return {
        "spatial": spatial,
        "temporal": temporal,
        "bounds": dram_extents,
        "pes_used": np.prod(spatial, axis=1),
        "steps": np.prod(temporal, axis=(1, 2)),
        "rf_tile": footprints(rf_extents, layer_type, stride),
        "array_tile": footprints(array_extents, layer_type, stride),
        "gb_tile": footprints(gb_extents, layer_type, stride),
        "dram_tile": footprints(dram_extents, layer_type, stride),
        "rf_loads": rf_loads,
        "rf_distinct": rf_distinct,
        "gb_loads": gb_loads,
        "gb_distinct": gb_distinct,
    }
