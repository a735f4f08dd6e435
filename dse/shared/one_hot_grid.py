"""A grid of choices, each a one-hot block: what DANCE's network space (``dse.dance.network_space``) and every
family's hardware space (``dse.shared.hardware_grid``) share.

A point is one index per choice; ``point_index`` flattens it (lexicographic order, the order of ``all_points``);
``encode`` concatenates one one-hot vector per choice (what DANCE's evaluator reads and its generator writes),
``decode`` takes the argmax of each block (of one-hot or soft encodings).
"""

import itertools
from math import prod

import numpy as np


class OneHotGrid:
    """A grid of ``sizes`` (one per choice; a subclass defines it)."""

    @property
    def offsets(self):
        return tuple(int(o) for o in np.cumsum((0,) + self.sizes[:-1]))

    @property
    def encoding_width(self):
        return sum(self.sizes)

    def __len__(self):
        return prod(self.sizes)

    def all_points(self):
        """Every point as an (points, choices) integer array, lexicographic order."""
        return np.array(list(itertools.product(*(range(size) for size in self.sizes))), dtype=np.int64)

    def point_index(self, points):
        """The points' (N, choices) positions in ``all_points`` order."""
        return np.ravel_multi_index(np.asarray(points).T, self.sizes)

    def encode(self, points):
        """One-hot encodings (N, encoding_width) float32 of points (N, choices)."""
        points = np.atleast_2d(np.asarray(points))
        encoding = np.zeros((len(points), self.encoding_width), dtype=np.float32)
        rows = np.arange(len(points))
        for column, offset in enumerate(self.offsets):
            encoding[rows, offset + points[:, column]] = 1.0
        return encoding

    def decode(self, encoding):
        """Points of one-hot (or soft) encodings: the argmax of each choice's block."""
        encoding = np.atleast_2d(np.asarray(encoding))
        return np.stack([encoding[:, offset:offset + size].argmax(axis=1)
                         for offset, size in zip(self.offsets, self.sizes)], axis=1)
