"""RTL-family mappings in DCP's code: the loop nest of each segment of a layer as a (3, 7, 2) array.

The template's mappings (:mod:`dse.template.mapping`) are DCP's (M levels, 7 dimensions, 2) code: per level the
parallel dimension with its size first, then the other six dimensions in loop order (outermost first) with
their sizes.  A segment of an RTL layer mapping (:class:`models.dqn.mapping.Segment`) is the nest the
sequencer runs, over ``DIMS = (N, K, C, Y, X, R, S)``, in three levels (outermost first, :data:`RTL_LEVELS`):

* ``groups`` (the sequencer's group loop, operands from the RAMs): parallel ``X`` x ``P`` (the group's output
  positions over the matrix modules' position slots, ``P = modules / C``), then the loops ``N 1, K 1, C 1,
  Y n, R 1, S 1``: ``Y`` counts the segment's ``n`` output positions, walked row-major over the output grid
  (flattened) in ``ceil(n / P)`` groups.  A K-split segment (one position cut into ``split`` kernel chunks:
  :func:`models.dqn.plan.split_chunk`, column chunks or the kernel's row halves times column chunks)
  has parallel ``S`` x ``split`` instead (the chunks over the position slots) and loops ``N 1, K 1, C 1, Y 1, X 1,
  R 1``; its reduction pass is implied;
* ``modules``: parallel ``K`` x ``C`` (the column blocks over the matrix modules), loops all 1;
* ``lanes`` (inside a matrix module, one product per cycle): parallel ``K`` x ``lanes``, then the loops
  ``N 1, Y 1, X 1, C Cin, R Kh, S Kw`` (a K-split: its chunk's rows and columns): the sequencer's step order ``c,
  kh, kw`` innermost.

Sizes are tile sizes of the hardware, not exact factors: ``C x lanes`` may exceed the output channels and
``P`` the positions (idle lanes and modules).  ``Cin, Kh, Kw`` are the compiler's view of the layer
(:class:`models.dqn.plan.LayerShape`: a dense layer reads its input tensor with a kernel covering it).  A layer
mapping is its segments' codes in position order, shape ``(segments, 3, 7, 2)``; the order the passes run in
is not part of the code (it changes neither the cycles nor the results).
"""

import numpy as np

from nnaccel.dse.shared.layer import DIM_INDEX, DIMS
from nnaccel.models.dqn.mapping import LayerMapping, Segment
from nnaccel.models.dqn.plan import split_chunk

__all__ = ["RTL_LEVELS", "segment_code", "layer_mapping_from_code"]

RTL_LEVELS = ("groups", "modules", "lanes")
_LANE_ORDER = ("N", "Y", "X", "C", "R", "S")


def _level(parallel, sizes, order):
    return [(DIM_INDEX[parallel[0]], parallel[1])] + [(DIM_INDEX[dim], sizes.get(dim, 1)) for dim in order]


def segment_code(config, shape, segment):
    """The (3, 7, 2) code of ``segment`` of layer ``shape`` on ``config``."""
    if segment.split == 1:
        groups = _level(("X", config.modules // segment.column_blocks), {"Y": segment.count},
                        [dim for dim in DIMS if dim != "X"])
    else:
        groups = _level(("S", segment.split), {}, [dim for dim in DIMS if dim != "S"])
    modules = _level(("K", segment.column_blocks), {}, [dim for dim in DIMS if dim != "K"])
    chunk_height, chunk_width = split_chunk(shape, segment.split)
    lanes = _level(("K", config.lanes), {"C": shape.in_shape[0], "R": chunk_height, "S": chunk_width}, _LANE_ORDER)
    return np.array([groups, modules, lanes], dtype=np.int64)


def _decode_segment(config, shape, code, first):
    levels = [{DIMS[int(dim)]: int(size) for dim, size in level[1:]} for level in code]
    parallel = [(DIMS[int(level[0][0])], int(level[0][1])) for level in code]
    if parallel[1][0] != "K" or parallel[2] != ("K", config.lanes):
        raise ValueError(f"{shape.name}: an RTL code runs channel blocks (K) over the modules and K x {config.lanes} "
                         f"over the lanes, not {parallel[1]} and {parallel[2]}")
    blocks = parallel[1][1]
    dim, size = parallel[0]
    if dim == "X":
        if size * blocks != config.modules:
            raise ValueError(f"{shape.name}: {size} positions per group x {blocks} column blocks do not make the "
                             f"{config.modules} matrix modules")
        segment = Segment(first, levels[0]["Y"], blocks)
    elif dim == "S":
        segment = Segment(first, 1, blocks, size)
    else:
        raise ValueError(f"{shape.name}: an RTL code's group level runs positions (X) or kernel-column chunks (S) "
                         f"over the modules, not {dim}")
    expected = segment_code(config, shape, segment)
    if not np.array_equal(expected, code):
        raise ValueError(f"{shape.name}: the code of segment {segment.describe()} must be "
                         f"{expected.tolist()}, not {np.asarray(code).tolist()}")
    return segment


def layer_mapping_from_code(config, shape, code):
    """The :class:`LayerMapping` (segments in position order) of a ``(segments, 3, 7, 2)`` code."""
    code = np.asarray(code)
    if code.ndim != 4 or code.shape[1:] != (len(RTL_LEVELS), len(DIMS), 2) or not len(code):
        raise ValueError(f"an RTL layer code has shape (segments, {len(RTL_LEVELS)}, {len(DIMS)}, 2), not {code.shape}")
    segments, first = [], 0
    for segment_array in code:
        segments.append(_decode_segment(config, shape, segment_array, first))
        first += segments[-1].count
    return LayerMapping(tuple(segments))
