"""DCP's (M, N, 2) dataflow code and its relaxed form: the format in which every design-space family's dataflow
space (``dse.template.dataflow_space``, ``dse.rtl.dataflow_space``) speaks to DCP (``dse.dcp``), and the
pieces of "nearest legal dataflow" that do not depend on the family.

The patent (SPEC section 5) encodes a dataflow as an ``(M, N, 2)`` integer code: M memory levels, N layer
dimensions; per level the first entry is the parallel dimension with the number of PEs it gets, the other entries
the remaining dimensions in loop order (outermost first) with their tile sizes; each entry is (dimension index,
size).  ``dse.template.mapping.Mapping.to_code`` is this code for the template (M = 3 levels DRAM / GB / RF,
N = 7 dimensions N K C Y X R S); ``dse.rtl.code`` is the RTL family's.

The code lists entries in loop order, so its first channel is a permutation: a gradient cannot move it smoothly.
The *relaxed code* has the same (M, N, 2) shape and the same content, indexed by dimension instead of by slot:
``relaxed[m, n] = (slot of dimension n at level m, log2 of its size)``, slot 0 being the parallel entry.  Both
channels relax to real numbers: a level's loop order is the dimensions sorted by slot score, its parallel entry
the lowest score, and a size is ``2 ** log_size``.  ``relax`` converts a code; a family's ``nearest`` decodes a
relaxed one.
"""

from functools import cache

import numpy as np


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
