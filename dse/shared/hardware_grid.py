"""A hardware design space as a grid of one-hot parameters whose networks' costs add up over per-layer *cost units*:
what every family's DANCE hardware space (``dse.template.hardware_space``, ``dse.rtl.hardware_space``) shares.

A space is a grid of hardware parameters, each a one-hot choice (``dse.shared.one_hot_grid``: DANCE's evaluator
reads and its hardware-generation network writes one one-hot block per parameter).

A network (``models.dqn.network`` layers, at most :data:`NETWORK_UNITS`) costs the sum of its *cost units*: what a
family's cost of one layer depends on (the template: the layer; the RTL family: the layer with the layers back to the
convolution before it).
A family gives

* ``cost_units(layers)``: a network's units (hashable, names dropped);
* ``unit_table(units)``: ``{column: (units, points) array}``, the columns the family needs per unit and point;
* ``combine(rows, points)``: costs ``(..., 3)`` (latency ms, energy mJ, area) from a network's unit rows ``{column:
  (..., NETWORK_UNITS, P)}`` (a missing unit: zeros, ``feasible`` true) on ``points`` (indices or a slice
  broadcasting against ``P``), ``inf`` where the network does not fit;
* ``area()`` of every point, in ``area_unit``.

:meth:`HardwareGrid.network_costs` is the ground truth built from those; :meth:`HardwareGrid.best_hardware` the
"hardware generation tool" of the patent: the exhaustive search of the grid for the point that minimises a cost
function.  Unit rows computed once (or adopted from a labelling sweep, :meth:`adopt_unit_costs`) are kept.
"""

import numpy as np

from nnaccel.dse.shared.one_hot_grid import OneHotGrid

#: units of a network at most (DANCE's network space: conv, conv, dense, dense)
NETWORK_UNITS = 4


def checked_parameters(parameters, expected):
    """``parameters`` ((name, values) pairs) as tuples, checked to give values of ``expected``'s names in its order
    (ValueError otherwise): a family's grid with fewer values per parameter."""
    names = tuple(name for name, _ in parameters)
    if names != tuple(name for name, _ in expected) or not all(values for _, values in parameters):
        raise ValueError(f"parameters must give values of {', '.join(name for name, _ in expected)} in this "
                         f"order, not {parameters!r}")
    return tuple((name, tuple(values)) for name, values in parameters)


class HardwareGrid(OneHotGrid):
    """A grid of one-hot hardware parameters with per-unit cost columns (see the module docstring); a family
    sets ``name``, ``area_unit``, ``compute_parameters`` and implements ``parameters``, ``cost_units``,
    ``unit_table``, ``combine`` and ``area``."""

    name = "abstract"
    area_unit = "mm2"
    #: the parameters whose values multiply to the number of multipliers (EDD's "resources")
    compute_parameters = ()
    #: whether a network's latency and energy are sums of what each cost unit adds (``unit_latency_energy``)
    costs_add_up_over_units = False

    def __init__(self):
        self._unit_costs = {}

    @property
    def names(self):
        return tuple(name for name, _ in self.parameters)

    @property
    def sizes(self):
        return tuple(len(values) for _, values in self.parameters)

    def point_values(self, point):
        """{name: value} of one point (one index per parameter)."""
        return {name: values[int(index)] for (name, values), index in zip(self.parameters, point)}

    def describe(self, point):
        return ", ".join(f"{name} {value}" for name, value in self.point_values(point).items())

    # ---- costs ------------------------------------------------------------------------------

    def stacked_costs(self, latency, energy, points, feasible):
        """Costs (..., 3): ``latency``, ``energy`` and the area of ``points``, broadcast together; ``inf`` where not
        ``feasible``."""
        costs = np.stack(np.broadcast_arrays(latency, energy, self.area()[points]), axis=-1).astype(np.float64)
        costs[~feasible] = np.inf
        return costs


    def adopt_unit_costs(self, units, columns):
        """Keep rows of ``unit_table`` (``columns``: {column: (units, points)}, e.g. from a labelling sweep)."""
        for row, unit in enumerate(units):
            self._unit_costs[unit] = {name: column[row] for name, column in columns.items()}

    def network_costs(self, networks):
        """(len(networks), len(self), 3) float64: latency ms, energy mJ, area per point; ``inf`` where a network does
        not fit.  ``networks``: objects with ``dqn_layers()``."""
        keys = [self.cost_units(network.dqn_layers()) for network in networks]
        missing = list(dict.fromkeys(unit for units in keys for unit in units if unit not in self._unit_costs))
        if missing:
            self.adopt_unit_costs(missing, self.unit_table(missing))
        known = self._unit_costs[keys[0][0]]
        rows = {name: np.stack([np.stack([self._unit_costs[unit][name] for unit in units]
                                         + [missing_unit_row(name, known[name])] * (NETWORK_UNITS - len(units)))
                                for units in keys]) for name in known}
        return self.combine(rows, slice(None))

    def network_fits(self, networks):
        """(len(networks), len(self)) bool: where each network fits a point (its costs are finite)."""
        return np.isfinite(self.network_costs(networks)).all(axis=-1)

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


def missing_unit_row(column, like):
    """The row of a network's missing unit (a three-layer network's fourth): feasible, costing and needing
    nothing."""
    return np.full(np.shape(like), column == "feasible", dtype=np.asarray(like).dtype)
