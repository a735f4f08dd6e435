"""What DANCE needs from a hardware design space, as a small interface: the template
(``dse.dance.template_hardware``) and the RTL family of the DQN accelerator (``dse.dance.rtl_hardware``)
implement it.

A space is a grid of hardware parameters, each a one-hot choice (the evaluator reads and the
hardware-generation network writes one one-hot block per parameter). A point is one index per
parameter; ``point_index`` flattens it (lexicographic order, the order of ``all_points``).

``network_costs(networks)`` is the ground truth: latency (ms), energy (mJ) and area (mm^2) of each
network on every point of the space, an array (networks, points, 3); a point the network cannot
run on costs ``inf``. The area is in the space's ``area_unit`` (the template's mm^2, the RTL family's
thousands of FPGA ALM-equivalents); ``area()`` gives it for every point. ``best_hardware`` is the "hardware generation tool" of the patent: the
exhaustive search of the space for the point that minimises a cost function.
"""

import itertools
from abc import ABC, abstractmethod
from math import prod

import numpy as np

METRICS = ("latency_ms", "energy_mj", "area_mm2")


class HardwareSpace(ABC):
    """A grid of one-hot hardware parameters with a cost model (see the module docstring)."""

    name = "abstract"
    area_unit = "mm2"
    #: the parameters whose values multiply to the number of multipliers (EDD's "resources")
    compute_parameters = ()

    @property
    @abstractmethod
    def parameters(self):
        """((name, values), ...): every hardware parameter and its choices."""

    @abstractmethod
    def area(self):
        """(len(self),) float64: the area of every point, in ``area_unit``."""

    @abstractmethod
    def network_costs(self, networks):
        """(len(networks), len(self), 3) float64: latency ms, energy mJ, area mm^2 per point."""

    # ---- the grid ---------------------------------------------------------------------------

    @property
    def names(self):
        return tuple(name for name, _ in self.parameters)

    @property
    def sizes(self):
        return tuple(len(values) for _, values in self.parameters)

    @property
    def offsets(self):
        return tuple(int(o) for o in np.cumsum((0,) + self.sizes[:-1]))

    @property
    def encoding_width(self):
        return sum(self.sizes)

    def __len__(self):
        return prod(self.sizes)

    def all_points(self):
        """Every point as an (points, parameters) integer array, lexicographic order."""
        return np.array(list(itertools.product(*(range(size) for size in self.sizes))), dtype=np.int64)

    def point_index(self, points):
        return np.ravel_multi_index(np.asarray(points).T, self.sizes)

    def point_values(self, point):
        """{name: value} of one point (one index per parameter)."""
        return {name: values[int(index)] for (name, values), index in zip(self.parameters, point)}

    def describe(self, point):
        return ", ".join(f"{name} {value}" for name, value in self.point_values(point).items())

    def encode(self, points):
        """One-hot encodings (N, encoding_width) float32 of points (N, parameters)."""
        points = np.atleast_2d(np.asarray(points))
        encoding = np.zeros((len(points), self.encoding_width), dtype=np.float32)
        rows = np.arange(len(points))
        for column, offset in enumerate(self.offsets):
            encoding[rows, offset + points[:, column]] = 1.0
        return encoding

    def decode(self, encoding):
        encoding = np.atleast_2d(np.asarray(encoding))
        return np.stack([encoding[:, offset:offset + size].argmax(axis=1)
                         for offset, size in zip(self.offsets, self.sizes)], axis=1)

    # ---- the hardware generation tool -------------------------------------------------------

    def best_hardware(self, networks, cost_function, *, fixed=None):
        """For each network, the point minimising ``cost_function`` (exhaustive search), among the
        points whose parameters match ``fixed`` ({name: value index}) if given.

        Returns (points (N, parameters), costs (N, 3) at those points)."""
        costs = self.network_costs(networks)
        scores = cost_function(costs[..., 0], costs[..., 1], costs[..., 2])
        allowed = np.ones(len(self), dtype=bool)
        for name, index in (fixed or {}).items():
            allowed &= self.all_points()[:, self.names.index(name)] == index
        best = np.argmin(np.where(np.isfinite(scores) & allowed, scores, np.inf), axis=1)
        rows = np.arange(len(networks))
        return self.all_points()[best], costs[rows, best]
