"""Ground truth for DANCE's evaluator on the template space, labelled through Dask sweeps.

The cost of a network on a hardware point is the sum of its layers' costs (latency and energy add
up, area is the point's), so the sweep labels (layer, point) cases: every distinct layer of the
network space (``distinct_layers``) on all 4,335 points, one Dask task per chunk of layers
(``label_layers``, run by ``dse.shared.sweep.run_sweep``; results in a ``ResultStore``, so a rerun
labels only what is missing). From that table, ``LabelTable`` gives any (network, point) cost case
and, by exhaustive search over the points, any network's best hardware under a cost function.

Held-out data are held-out *networks*: ``split_networks`` divides the space's candidates into a
training and a validation set; cost cases and generator cases of the validation networks are never
trained on.
"""

import base64
import time

import numpy as np

from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.template_hardware import TemplateHardwareSpace, layer_key
from nnaccel.dse.shared.layer import Layer
from nnaccel.dse.shared.store import ResultStore
from nnaccel.dse.shared.sweep import run_sweep
from nnaccel.models.shared.cache import cache_root

TASK_LAYERS = 24
VALIDATION_FRACTION = 0.2


def default_store_path(space_name="template"):
    return cache_root() / "dse" / f"dance-{space_name}-labels.sqlite"


def distinct_layers(network_space=NETWORK_SPACE):
    """Every distinct layer (by shape) of every candidate, in a fixed order; and (N, 4) indices of each
    candidate's layers into that list (-1 where a candidate has only three layers)."""
    layers, index_of = [], {}
    networks = network_space.all_indices()
    ids = np.full((len(networks), 4), -1, dtype=np.int64)
    for row, indices in enumerate(networks):
        for column, layer in enumerate(network_space.network(indices).template_layers()):
            key = layer_key(layer)
            if key not in index_of:
                index_of[key] = len(layers)
                layers.append(Layer.from_dict({**layer.to_dict(), "name": ""}))
            ids[row, column] = index_of[key]
    return layers, ids


def _encode(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f8").tobytes()).decode("ascii")


def _decode(text):
    return np.frombuffer(base64.b64decode(text), dtype="<f8")


def label_layers(case):
    """Sweep task: latency (ms) and energy (mJ) of ``case["layers"]`` on every template point,
    base64 float64 arrays of shape (layers, points)."""
    space = TemplateHardwareSpace(number_format=case["number_format"])
    layers = [Layer.from_dict(layer) for layer in case["layers"]]
    latency, energy = space.layer_table(layers)
    return {"latency_ms": _encode(latency), "energy_mj": _encode(energy)}


def label_template(*, store_path=None, scheduler=None, workers=None, progress=True,
                   network_space=NETWORK_SPACE, number_format="fp32"):
    """Run (or complete) the labelling sweep; returns (LabelTable, SweepReport, seconds)."""
    layers, ids = distinct_layers(network_space)
    cases = [{"space": "template", "number_format": number_format,
              "layers": [layer.to_dict() for layer in layers[start:start + TASK_LAYERS]]}
             for start in range(0, len(layers), TASK_LAYERS)]
    start = time.perf_counter()
    with ResultStore(store_path or default_store_path()) as store:
        report = run_sweep(label_layers, cases, store=store, scheduler=scheduler, workers=workers,
                           progress=progress, description="label (layer, hardware) cases")
        if report.failures:
            raise RuntimeError(f"{len(report.failures)} labelling tasks failed, e.g. "
                               f"{next(iter(report.failures.values()))}")
        results = [store.get(case) for case in cases]
    seconds = time.perf_counter() - start
    space = TemplateHardwareSpace(number_format=number_format)
    points = len(space)
    latency = np.concatenate([_decode(result["latency_ms"]).reshape(-1, points) for result in results])
    energy = np.concatenate([_decode(result["energy_mj"]).reshape(-1, points) for result in results])
    space.set_layer_costs(layers, latency, energy)
    return LabelTable(space, network_space, ids, latency, energy), report, seconds


class LabelTable:
    """(network, point) costs from per-layer costs: networks are rows of ``network_space.all_indices()``."""

    best_chunk = 256     # networks per step of the exhaustive search (their costs on every point at once)

    def __init__(self, hardware_space, network_space, layer_ids, latency, energy):
        self.hardware_space = hardware_space
        self.network_space = network_space
        self.layer_ids = layer_ids
        # One zero row at the end: a missing fourth layer costs nothing.
        self.latency = np.vstack([latency, np.zeros((1, latency.shape[1]))])
        self.energy = np.vstack([energy, np.zeros((1, energy.shape[1]))])
        self.area = hardware_space.area()

    @property
    def cost_cases(self):
        """How many (network, point) cases the table labels."""
        return len(self.layer_ids) * len(self.area)

    def fitting_cases(self):
        """How many (network, point) cases have a cost (the network fits the point)."""
        networks = np.arange(len(self.layer_ids))
        return int(sum(np.isfinite(self.all_points(networks[start:start + self.best_chunk])[..., 0]).sum()
                       for start in range(0, len(networks), self.best_chunk)))

    def costs(self, networks, points):
        """(N, 3) latency ms, energy mJ, area mm^2 of networks (flat indices) on points (flat indices)."""
        ids = self.layer_ids[np.asarray(networks)]
        points = np.asarray(points)
        return np.stack([self.latency[ids, points[:, None]].sum(axis=1),
                         self.energy[ids, points[:, None]].sum(axis=1), self.area[points]], axis=1)

    def all_points(self, networks):
        """(N, points, 3) costs of networks (flat indices) on every point."""
        ids = self.layer_ids[np.asarray(networks)]
        latency = self.latency[ids].sum(axis=1)
        energy = self.energy[ids].sum(axis=1)
        return np.stack([latency, energy, np.broadcast_to(self.area, latency.shape)], axis=2)

    def best(self, networks, cost_function):
        """Exhaustive search: per network (flat index) the best point (flat index) and its costs."""
        networks = np.asarray(networks)
        chunk = self.best_chunk
        best = np.empty(len(networks), dtype=np.int64)
        for start in range(0, len(networks), chunk):
            costs = self.all_points(networks[start:start + chunk])
            best[start:start + chunk] = np.argmin(cost_function(costs[..., 0], costs[..., 1], costs[..., 2]),
                                                  axis=1)
        return best, self.costs(networks, best)

    def reference(self, rng, samples=100_000):
        """Median latency, energy and area over random (network, point) cases the network fits: the
        linear cost functions' scales."""
        costs = self.costs(rng.integers(len(self.layer_ids), size=samples),
                           rng.integers(len(self.area), size=samples))
        return tuple(float(v) for v in np.median(costs[np.isfinite(costs).all(axis=1)], axis=0))


def split_networks(count, seed=0, validation_fraction=VALIDATION_FRACTION):
    """Training and validation network indices (a seeded permutation of 0..count-1)."""
    order = np.random.default_rng(seed).permutation(count)
    held_out = int(round(validation_fraction * count))
    return np.sort(order[held_out:]), np.sort(order[:held_out])
