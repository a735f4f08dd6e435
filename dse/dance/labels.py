"""Ground truth for DANCE's evaluator on any hardware space (``dse.dance.hardware_space.HardwareSpace``), labelled
through a Dask sweep.

The cost of a network on a hardware point adds up over its cost units (the space's ``cost_units``: the template's
layers, the RTL family's layer contexts), so the sweep labels every distinct unit of the network space
(``distinct_units``) on every point: the space's own cases and task (``label_cases``, ``label_task``), run by
``dse.shared.sweep.run_sweep`` into a ``ResultStore`` (``$NNACCEL_CACHE_DIR/dse/dance-<space>-labels.sqlite``; a
rerun labels only what is missing).  From that table, ``LabelTable`` gives any (network, point) cost case and, by
exhaustive search over the points, any network's best hardware under a cost function.

Held-out data are held-out *networks*: ``split_networks`` divides the space's candidates into a training and a
validation set; cost cases and generator cases of the validation networks are never trained on.
"""

import functools
import json
import time
from pathlib import Path

import numpy as np

from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.shared.hardware_grid import NETWORK_UNITS, missing_unit_row
from nnaccel.dse.shared.store import ResultStore
from nnaccel.dse.shared.sweep import run_sweep
from nnaccel.models.shared.cache import cache_root

VALIDATION_FRACTION = 0.2
BEST_SEARCH_VALUES = 2_000_000      # unit-column values one step of the exhaustive search holds


def default_store_path(space_name):
    return cache_root() / "dse" / f"dance-{space_name}-labels.sqlite"


def distinct_units(hardware_space, network_space=NETWORK_SPACE):
    """Every distinct cost unit of every candidate, in a fixed order; and (N, NETWORK_UNITS) indices of each
    candidate's units into that list (-1 where a candidate has fewer)."""
    units, index_of = [], {}
    networks = network_space.all_points()
    ids = np.full((len(networks), NETWORK_UNITS), -1, dtype=np.int64)
    for row, indices in enumerate(networks):
        for column, unit in enumerate(hardware_space.cost_units(network_space.network(indices).dqn_layers())):
            if unit not in index_of:
                index_of[unit] = len(units)
                units.append(unit)
            ids[row, column] = index_of[unit]
    return units, ids


def label(hardware_space, *, network_space=NETWORK_SPACE, store_path=None, scheduler=None, workers=None,
          progress=True):
    """Run (or complete) the labelling sweep of ``hardware_space``; returns (LabelTable, SweepReport, seconds).
    The space keeps the labelled unit costs (its ``network_costs`` then needs no cost model)."""
    units, ids = distinct_units(hardware_space, network_space)
    cases = hardware_space.label_cases(units)
    start = time.perf_counter()
    with ResultStore(store_path or default_store_path(hardware_space.name)) as store:
        report = run_sweep(hardware_space.label_task, cases, store=store, scheduler=scheduler, workers=workers,
                           progress=progress, description=f"label ({hardware_space.name} cost unit, point) cases")
        if report.failures:
            raise RuntimeError(f"{len(report.failures)} labelling tasks failed, e.g. "
                               f"{next(iter(report.failures.values()))}")
        results = [store.get(case) for case in cases]
    seconds = time.perf_counter() - start
    columns = hardware_space.label_columns(units, cases, results)
    hardware_space.adopt_unit_costs(units, columns)
    return LabelTable(hardware_space, network_space, ids, columns), report, seconds


def adopt_stored_labels(hardware_space, *, network_space=NETWORK_SPACE, store_path=None):
    """Give ``hardware_space`` the unit costs of its labelling sweep if the store holds all of them (as ``label``
    does, without running a task or writing a file); returns whether it did. Its ``network_costs`` and
    ``network_fits`` then read the labels instead of running the cost model (on the RTL family about 1.5 s for each
    network with new contexts)."""
    path = Path(store_path or default_store_path(hardware_space.name))
    if not path.exists():
        return False
    units, _ = distinct_units(hardware_space, network_space)
    # The sweep's cases follow from the units and what the cases of one unit say of the space (its grid, its
    # number format): that pair names them without serialising every case.
    key = (str(path.resolve()), path.stat().st_mtime_ns, json.dumps(hardware_space.label_cases(units[:1])),
           tuple(units))
    if key not in _STORED_COLUMNS:
        cases = hardware_space.label_cases(units)
        with ResultStore(path) as store:
            results = [store.get(case) for case in cases]
        if any(result is None for result in results):
            return False
        _STORED_COLUMNS.clear()
        _STORED_COLUMNS[key] = hardware_space.label_columns(units, cases, results)
    hardware_space.adopt_unit_costs(units, _STORED_COLUMNS[key])
    return True


# The unit columns ``adopt_stored_labels`` decoded last in this process, by store file, its modification time and
# the sweep's cases: a Dask worker running several co-search tasks decodes them once (the RTL family's take 15-20 s).
_STORED_COLUMNS = {}


class LabelTable:
    """(network, point) costs from per-unit columns (``{column: (units, points)}``): networks are rows of
    ``network_space.all_points()``; ``inf`` where a network does not fit a point."""

    def __init__(self, hardware_space, network_space, unit_ids, columns):
        self.hardware_space = hardware_space
        self.network_space = network_space
        self.unit_ids = unit_ids
        # One row at the end for a missing unit (-1 in unit_ids).
        self.columns = {name: np.vstack([column, missing_unit_row(name, column[:1])])
                        for name, column in columns.items()}
        self.area = hardware_space.area()
        self.best_chunk = max(1, BEST_SEARCH_VALUES // (len(self.area) * NETWORK_UNITS * len(columns)))

    @property
    def cost_cases(self):
        """How many (network, point) cases the table labels."""
        return len(self.unit_ids) * len(self.area)

    def fitting_cases(self):
        """How many (network, point) cases have a cost (the network fits the point)."""
        return int(self.fits.sum())

    @functools.cached_property
    def fits(self):
        """(networks, points) bool: where each network (rows of ``unit_ids``) fits a point (has a cost there).
        Built once per table (2 s on the RTL family's labels), as the training reads it three times."""
        networks = np.arange(len(self.unit_ids))
        return np.concatenate([np.isfinite(self.all_points(networks[start:start + self.best_chunk])[..., 0])
                               for start in range(0, len(networks), self.best_chunk)])

    def costs(self, networks, points):
        """(N, 3) latency ms, energy mJ, area of networks (flat indices) on points (flat indices)."""
        ids = self.unit_ids[np.asarray(networks)]
        points = np.asarray(points)
        rows = {name: column[ids, points[:, None]][..., None] for name, column in self.columns.items()}
        return self.hardware_space.combine(rows, points[:, None])[:, 0]

    def features(self, networks, points):
        """(N, inputs) what the cost network with forwarding reads of networks on points (flat indices): the
        network one-hots, then the hardware one-hots."""
        return np.concatenate([self.network_space.encode(self.network_space.all_points()[networks]),
                               self.hardware_space.encode(self.hardware_space.all_points()[points])], axis=1)

    def all_points(self, networks):
        """(N, points, 3) costs of networks (flat indices) on every point."""
        ids = self.unit_ids[np.asarray(networks)]
        return self.hardware_space.combine({name: column[ids] for name, column in self.columns.items()},
                                           slice(None))

    def _cost_function_values(self, networks, cost_function):
        """(start, values): ``cost_function`` of networks[start:start + chunk] on every point, chunk by chunk."""
        for start in range(0, len(networks), self.best_chunk):
            costs = self.all_points(networks[start:start + self.best_chunk])
            yield start, cost_function(costs[..., 0], costs[..., 1], costs[..., 2])

    def best(self, networks, cost_function):
        """Exhaustive search: per network (flat index) the best point (flat index) and its costs."""
        networks = np.asarray(networks)
        best = np.empty(len(networks), dtype=np.int64)
        for start, values in self._cost_function_values(networks, cost_function):
            best[start:start + len(values)] = np.argmin(values, axis=1)
        return best, self.costs(networks, best)

    def best_few(self, networks, cost_function, count):
        """Per network (flat index) its ``count`` best points (flat indices, best first): the exhaustive search's
        near-optima, where a generator's answer lands."""
        networks = np.asarray(networks)
        few = np.empty((len(networks), count), dtype=np.int64)
        for start, values in self._cost_function_values(networks, cost_function):
            nearest = np.argpartition(values, count - 1, axis=1)[:, :count]
            order = np.argsort(np.take_along_axis(values, nearest, axis=1), axis=1, kind="stable")
            few[start:start + len(values)] = np.take_along_axis(nearest, order, axis=1)
        return few

    def near_optimal_weights(self, networks, cost_function, temperature):
        """(N, points) per network (flat index) a distribution over the points that favours the near-optimal ones:
        ``exp(-excess / temperature)`` normalised, ``excess`` a point's cost over the optimum's, relative (0 where
        the network does not fit)."""
        networks = np.asarray(networks)
        weights = np.empty((len(networks), len(self.area)))
        for start, values in self._cost_function_values(networks, cost_function):
            excess = values / values.min(axis=1, keepdims=True) - 1
            chunk = np.exp(-excess / temperature)
            weights[start:start + len(values)] = chunk / chunk.sum(axis=1, keepdims=True)
        return weights

    def reference(self, rng, samples=100_000):
        """Median latency, energy and area over random (network, point) cases the network fits: the
        linear cost functions' scales."""
        costs = self.costs(rng.integers(len(self.unit_ids), size=samples),
                           rng.integers(len(self.area), size=samples))
        return tuple(float(v) for v in np.median(costs[np.isfinite(costs).all(axis=1)], axis=0))


def split_networks(count, seed=0, validation_fraction=VALIDATION_FRACTION):
    """Training and validation network indices (a seeded permutation of 0..count-1)."""
    order = np.random.default_rng(seed).permutation(count)
    held_out = int(round(validation_fraction * count))
    return np.sort(order[held_out:]), np.sort(order[:held_out])
