"""How the DQN accelerator runs each layer of a network: the mapping, an explicit input of the compiler.

The hardware (docs/dqn_accelerator.md) fixes what one pass does with its descriptor: the sequencer walks the
pass's output positions ``first .. first + count - 1`` (row-major) in groups of ``P = modules / C``; in a group,
matrix module ``m`` computes channel block ``m % C`` (``lanes`` output channels) of the group's position
``m // C``, accumulating the window in the order ``c, kh, kw`` then the bias.  What the hardware leaves open,
and a mapping decides, per network layer:

* the *segments*: the layer's output positions cut into contiguous ranges, one pass each, so that each range
  may use its own column blocks;
* per segment the column blocks ``C`` (a power of two, ``C * lanes >= out_channels``, ``C <= modules``): the
  positions per group ``P = modules / C``; more blocks than needed leave modules idle (a residual add always
  runs with ``C = modules``: one row word per group);
* per single-position segment a *K-split* ``S``: the position's kernel cut into ``S`` chunks (its columns in chunks
  of ``Kw / S``, or, where ``S`` does not divide ``Kw``, its two row halves times ``S / 2`` column chunks:
  ``models.dqn.plan.split_chunk``), computed as ``S`` partial sums on ``S`` position slots of one group (a pass of
  its own), then summed with the bias by a reduction pass;
* the order of the segments' passes (any order: the passes write disjoint outputs; a split segment's partial
  sums come right before their reduction);
* for a layer with more output channels than ``modules * lanes``, the *channel tiles*: segment ``tile`` ``t``
  computes output channels ``t * modules * lanes ..`` (at most ``modules * lanes`` of them); every tile's
  positions are covered by its own segments.

:class:`DqnMapping` holds one :class:`LayerMapping` per network layer.  ``models.dqn.plan.default_mapping``
gives the compiler's own choice (the thesis' mapping plus the K-splits that pay) and
``models.dqn.plan.check_mapping`` says which constraint of the hardware a mapping breaks.
"""

from dataclasses import dataclass

from nnaccel.hw.shared.parameters import check_int

__all__ = ["Segment", "LayerMapping", "DqnMapping"]


def _items(items, kind, what):
    """``items`` as a non-empty tuple of ``kind``; a ValueError saying ``what`` is needed otherwise."""
    items = tuple(items)
    if not items or not all(isinstance(item, kind) for item in items):
        raise ValueError(f"{what}, not {items!r}")
    return items


@dataclass(frozen=True)
class Segment:
    """Output positions ``first .. first + count - 1`` of a layer, run with ``column_blocks`` channel blocks;
    ``split > 1`` (a single position only) computes the position as ``split`` partial sums of kernel chunks
    (``models.dqn.plan.split_chunk``) and their reduction; ``tile``: the channel tile (output channels ``tile * modules * lanes ..``)."""

    first: int
    count: int
    column_blocks: int
    split: int = 1
    tile: int = 0

    def __post_init__(self):
        check_int("segment first", self.first, 0)
        check_int("segment count", self.count, 1)
        check_int("segment column_blocks", self.column_blocks, 1)
        check_int("segment split", self.split, 1)
        check_int("segment tile", self.tile, 0)

    @property
    def last(self):
        return self.first + self.count - 1

    @property
    def passes(self):
        """Hardware passes the segment takes: one, or the partial sums and their reduction."""
        return 1 if self.split == 1 else 2

    def describe(self):
        positions = f"{self.first}" if self.count == 1 else f"{self.first}..{self.last}"
        return (f"{positions} C{self.column_blocks}" + (f" S{self.split}" if self.split > 1 else "")
                + (f" T{self.tile}" if self.tile else ""))

    def to_list(self):
        """``[first, count, column_blocks, split]``, and ``tile`` after them when it is not 0."""
        return [self.first, self.count, self.column_blocks, self.split] + ([self.tile] if self.tile else [])


@dataclass(frozen=True)
class LayerMapping:
    """The segments of one network layer, in the order their passes run."""

    segments: tuple

    def __post_init__(self):
        object.__setattr__(self, "segments", _items(self.segments, Segment, "a layer mapping needs one or more Segments"))

    @classmethod
    def whole(cls, positions, column_blocks, split=1):
        """One segment over all ``positions`` of the layer."""
        return cls((Segment(0, positions, column_blocks, split),))

    def tile_segments(self, tile):
        """The segments of channel tile ``tile``, in position order."""
        return tuple(segment for segment in self.in_position_order() if segment.tile == tile)

    @property
    def passes(self):
        return sum(segment.passes for segment in self.segments)

    def in_position_order(self):
        return tuple(sorted(self.segments, key=lambda segment: segment.first))

    def describe(self):
        return " + ".join(segment.describe() for segment in self.segments)


@dataclass(frozen=True)
class DqnMapping:
    """One :class:`LayerMapping` per network layer, in network order."""

    layers: tuple

    def __post_init__(self):
        object.__setattr__(self, "layers", _items(self.layers, LayerMapping,
                                                  "a DQN mapping needs one LayerMapping per network layer"))

    @property
    def passes(self):
        return sum(layer.passes for layer in self.layers)

    def describe(self):
        return " | ".join(layer.describe() for layer in self.layers)

    def to_json(self):
        """JSON data: per layer a list of segments ``[first, count, column_blocks, split(, tile)]``."""
        return [[segment.to_list() for segment in layer.segments] for layer in self.layers]

    @classmethod
    def from_json(cls, data):
        try:
            return cls(tuple(LayerMapping(tuple(Segment(*map(int, segment)) for segment in layer)) for layer in data))
        except TypeError:
            raise ValueError(f"a DQN mapping is a list of layers, each a list of [first, count, column_blocks, "
                             f"split(, tile)] segments, not {data!r}") from None
