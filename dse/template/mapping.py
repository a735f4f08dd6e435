"""A loop-nest mapping of one layer onto the template, in DCP's encoding.

DCP (SPEC section 5; its published code is (3, 7, 2)) encodes a dataflow as, per memory level, a
list of (dimension, size) pairs: the first entry is the parallel dimension with the number of PEs
it gets, the rest are the other six dimensions in loop order (outermost first) with their tile
sizes. Here the levels are DRAM, GB, RF (outermost first) over ``DIMS = (N, K, C, Y, X, R, S)``,
so a mapping is 3 levels x 7 entries x (dimension, size).

Meaning (see ``dse.template.loopnest``): a level's loops iterate over the tiles the next level
down holds; every level's parallel entry unrolls its dimension over the PE array below the GB
(the template has one array), so the PEs used are the product of the parallel sizes. For every
dimension, the product of its sizes over all levels (parallel and temporal) is the layer's loop
bound: tiles are exact factors, no padding.

``Mapping.validate(layer, hardware)`` checks a mapping against a layer and a hardware point and
raises ``MappingError`` naming the constraint it breaks.
"""

from dataclasses import dataclass
from math import prod

import numpy as np

from nnaccel.dse.shared.layer import DIM_INDEX, DIMS
from nnaccel.dse.template.loopnest import LEVELS, TENSORS, analyse


class MappingError(ValueError):
    """A mapping that the layer or the hardware cannot run; the message names the constraint."""


@dataclass(frozen=True)
class Mapping:
    """``levels``: one tuple of 7 (dimension name, size) pairs per level, DRAM first."""

    levels: tuple

    def __post_init__(self):
        levels = tuple(tuple((str(dim), size) for dim, size in level) for level in self.levels)
        object.__setattr__(self, "levels", levels)
        if len(levels) != len(LEVELS):
            raise MappingError(f"a mapping has {len(LEVELS)} levels ({', '.join(LEVELS)}), "
                               f"not {len(levels)}")
        for name, level in zip(LEVELS, levels):
            dims = [dim for dim, _ in level]
            if sorted(dims) != sorted(DIMS):
                raise MappingError(f"level {name} must list each of {', '.join(DIMS)} exactly "
                                   f"once, not {', '.join(dims)}")
            for dim, size in level:
                if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
                    raise MappingError(f"level {name} size of {dim} must be a positive integer, "
                                       f"not {size!r}")
        object.__setattr__(self, "levels",
                           tuple(tuple((dim, int(size)) for dim, size in level) for level in levels))

    # ---- encoding -------------------------------------------------------------------------

    def to_code(self):
        """The (3, 7, 2) integer code: (dimension index into ``DIMS``, size)."""
        return np.array([[(DIM_INDEX[dim], size) for dim, size in level] for level in self.levels],
                        dtype=np.int64)

    @classmethod
    def from_code(cls, code):
        code = np.asarray(code)
        if code.shape != (len(LEVELS), len(DIMS), 2):
            raise MappingError(f"a mapping code has shape {(len(LEVELS), len(DIMS), 2)}, "
                               f"not {code.shape}")
        if np.any(code[..., 0] < 0) or np.any(code[..., 0] >= len(DIMS)):
            raise MappingError(f"mapping code dimension indices must be in 0..{len(DIMS) - 1}")
        return cls(tuple(tuple((DIMS[int(d)], int(s)) for d, s in level) for level in code))

    # ---- views ----------------------------------------------------------------------------

    def parallel(self, level):
        return self.levels[level][0]

    def loops(self, level):
        return self.levels[level][1:]

    @property
    def pes_used(self):
        return prod(size for size in (level[0][1] for level in self.levels))

    def dim_product(self, dim):
        """Product of every size given to ``dim`` (parallel and temporal, all levels)."""
        return prod(size for level in self.levels for d, size in level if d == dim)

    def describe(self):
        """In words: per level, the parallel dimension and the loops (size-1 loops omitted)."""
        parts = []
        for name, level in zip(LEVELS, self.levels):
            (pdim, psize), loops = level[0], level[1:]
            loop_text = " ".join(f"{d}{s}" for d, s in loops if s > 1) or "-"
            parts.append(f"{name}: {pdim}x{psize} PEs | {loop_text}")
        return "; ".join(parts)

    def to_dict(self):
        return {"levels": [[[dim, size] for dim, size in level] for level in self.levels]}

    @classmethod
    def from_dict(cls, data):
        return cls(tuple(tuple((dim, size) for dim, size in level) for level in data["levels"]))

    # ---- legality -------------------------------------------------------------------------

    def violations(self, layer, hardware):
        """Every constraint the mapping breaks on ``layer`` and ``hardware``, as messages."""
        found = []
        for dim, bound in zip(DIMS, layer.loop_bounds()):
            if self.dim_product(dim) != bound:
                sizes = " x ".join(str(size) for level in self.levels for d, size in level
                                   if d == dim)
                found.append(f"tile sizes of {dim} multiply to {self.dim_product(dim)} "
                             f"({sizes}), the layer's bound is {bound}")
        if self.pes_used > hardware.pes:
            found.append(f"uses {self.pes_used} PEs, the array has {hardware.pes} "
                         f"({hardware.pe_y}x{hardware.pe_x})")
        allowed = hardware.dataflow.parallel_dims
        for name, (dim, size) in zip(LEVELS, (level[0] for level in self.levels)):
            if size > 1 and dim not in allowed:
                found.append(f"level {name} unrolls {dim} over the PEs; dataflow "
                             f"{hardware.dataflow.value} unrolls only {', '.join(allowed)}")
        rf_loops = [(d, s) for d, s in self.loops(len(LEVELS) - 1) if s > 1]
        innermost = hardware.dataflow.rf_innermost_dims
        if rf_loops and rf_loops[-1][0] not in innermost:
            found.append(f"innermost RF loop is {rf_loops[-1][0]}; dataflow "
                         f"{hardware.dataflow.value} keeps it to {', '.join(innermost)}")
        if found:
            return found
        nest = analyse(self.to_code()[None], np.array([int(layer.type)]),
                       np.array([layer.stride]))
        rf_words = nest["rf_tile"][0]
        if rf_words.sum() > hardware.rf_words:
            found.append(f"RF tile needs {_words(rf_words)} words per PE, the register file "
                         f"holds {hardware.rf_words}")
        gb_words = nest["gb_tile"][0]
        if gb_words.sum() > hardware.gb_words:
            found.append(f"GB tile needs {_words(gb_words)} words, the global buffer holds "
                         f"{hardware.gb_words} ({hardware.gb_kib} KiB of {hardware.word_bits}-bit "
                         f"words)")
        return found

    def validate(self, layer, hardware):
        found = self.violations(layer, hardware)
        if found:
            raise MappingError(f"mapping breaks: {'; '.join(found)}")


def _words(per_tensor):
    parts = " + ".join(f"{t} {int(w)}" for t, w in zip(TENSORS, per_tensor))
    return f"{int(per_tensor.sum())} ({parts})"
