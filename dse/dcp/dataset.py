"""DCP's data set: sampled legal dataflows of many layers on several hardware points, labelled by
the cost model as a Dask sweep (``dse.shared.sweep``), with held-out dataflows, held-out layers
and a held-out hardware point.

A sweep case is one chunk: ``{"space", "layer", "hardware", "seed", "count"}``; its task
(``label_chunk``) samples ``count`` legal codes with ``seed`` and evaluates them; the result
(codes, latency, energy) goes into the ``ResultStore``, so a rerun samples only what is missing.

Splits (``DataSet.split``), by group of (layer, hardware):
- ``train`` / ``held_out_dataflows``: training layers on training hardware, the distinct codes
  of each group shuffled and split (a code is in one part only);
- ``held_out_layers``: the held-out layers on the training hardware;
- ``held_out_hardware``: every layer on the held-out hardware point.
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.dse.dcp.encoding import layer_features
from nnaccel.dse.dcp.space import METRICS, space_named
from nnaccel.dse.dcp.workloads import (HELD_OUT_HARDWARE, HELD_OUT_LAYERS, RTL_HELD_OUT_HARDWARE,
                               RTL_HELD_OUT_LAYERS, RTL_TRAIN_HARDWARE, RTL_TRAIN_LAYERS,
                               TRAIN_HARDWARE, TRAIN_LAYERS)
from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.dse.shared.layer import Layer
from nnaccel.dse.shared.store import ResultStore
from nnaccel.dse.shared.sweep import run_sweep

CHUNK = 500


def label_chunk(case):
    """Sweep task: sample and evaluate one chunk of codes (JSON in, JSON out)."""
    space = space_named(case["space"])
    layer = Layer.from_dict(case["layer"])
    hardware = space.hardware_from_dict(case["hardware"])
    codes = space.sample_codes(layer, hardware, case["count"], seed=case["seed"])
    costs = space.evaluate(layer, hardware, codes)
    return {"codes": codes.tolist(), **{metric: costs[metric].tolist() for metric in METRICS}}


def chunk_cases(space, layers, hardware_points, per_group, *, seed=0, chunk=CHUNK):
    """The sweep cases of ``per_group`` samples of every (layer, hardware) pair."""
    cases = []
    for hardware in hardware_points:
        for layer in layers:
            for start in range(0, per_group, chunk):
                cases.append({"space": space.name, "layer": layer.to_dict(),
                              "hardware": space.hardware_to_dict(hardware),
                              "seed": seed * 1_000_003 + start,
                              "count": min(chunk, per_group - start)})
    return cases


@dataclass(frozen=True)
class Plan:
    """What to sample: ``per_group`` dataflows per (training layer, training hardware) and
    ``held_out_per_group`` per held-out group."""

    per_group: int = 2000
    held_out_per_group: int = 500
    train_layers: tuple = TRAIN_LAYERS
    held_out_layers: tuple = HELD_OUT_LAYERS
    train_hardware: tuple = TRAIN_HARDWARE
    held_out_hardware: tuple = HELD_OUT_HARDWARE
    seed: int = 0

    @classmethod
    def for_space(cls, name, **fields):
        """The plan of a design space's own layers and hardware points (``dse.dcp.workloads``)."""
        if name == "rtl":
            fields = {"train_layers": RTL_TRAIN_LAYERS, "held_out_layers": RTL_HELD_OUT_LAYERS,
                      "train_hardware": RTL_TRAIN_HARDWARE,
                      "held_out_hardware": RTL_HELD_OUT_HARDWARE, **fields}
        return cls(**fields)

    def cases(self, space):
        return (chunk_cases(space, self.train_layers, self.train_hardware, self.per_group,
                            seed=self.seed)
                + chunk_cases(space, self.held_out_layers, self.train_hardware,
                              self.held_out_per_group, seed=self.seed)
                + chunk_cases(space, (*self.train_layers, *self.held_out_layers),
                              self.held_out_hardware, self.held_out_per_group, seed=self.seed))


@dataclass
class DataSet:
    """Arrays of labelled samples; ``layers`` / ``hardware`` are what the indices point into."""

    layers: list
    hardware: list
    layer_index: np.ndarray     # (n,)
    hardware_index: np.ndarray  # (n,)
    codes: np.ndarray           # (n, M, N, 2) int
    latency: np.ndarray         # (n,) cycles
    energy: np.ndarray          # (n,) pJ

    def __len__(self):
        return len(self.codes)

    def subset(self, index):
        return DataSet(self.layers, self.hardware, self.layer_index[index],
                       self.hardware_index[index], self.codes[index], self.latency[index],
                       self.energy[index])

    def targets(self):
        """(n, 2) float32 natural logs of latency and energy."""
        return np.log(np.stack([self.latency, self.energy], axis=1)).astype(np.float32)

    def inputs(self, space):
        """The predictor's three inputs: layer features, hardware features, relaxed codes."""
        layer_rows = layer_features(self.layers)[self.layer_index]
        hardware_rows = np.stack([space.hardware_features(h) for h in self.hardware])
        return (layer_rows, hardware_rows[self.hardware_index],
                relax(self.codes).astype(np.float32))

    def split(self, plan, *, held_out_share=0.1, seed=0):
        """The four parts of the module docstring, as a dict of ``DataSet``."""
        rng = np.random.default_rng(seed)
        train_layers = {self.layers.index(l) for l in plan.train_layers if l in self.layers}
        train_hardware = {self.hardware.index(h) for h in plan.train_hardware
                          if h in self.hardware}
        parts = {"train": [], "held_out_dataflows": [], "held_out_layers": [],
                 "held_out_hardware": []}
        groups = np.stack([self.layer_index, self.hardware_index], axis=1)
        for layer, hardware in np.unique(groups, axis=0):
            members = np.flatnonzero((self.layer_index == layer)
                                     & (self.hardware_index == hardware))
            if hardware not in train_hardware:
                parts["held_out_hardware"].append(members)
            elif layer not in train_layers:
                parts["held_out_layers"].append(members)
            else:
                _, first = np.unique(self.codes[members].reshape(len(members), -1), axis=0,
                                     return_index=True)
                distinct = members[rng.permutation(np.sort(first))]
                cut = int(round(len(distinct) * held_out_share))
                parts["held_out_dataflows"].append(distinct[:cut])
                parts["train"].append(distinct[cut:])
        return {name: self.subset(np.concatenate(index) if index else np.array([], dtype=int))
                for name, index in parts.items()}


def collect(space, plan, store_path, *, scheduler=None, workers=None, progress=True):
    """Run the labelling sweep (only what the store lacks) and return the ``DataSet``."""
    cases = plan.cases(space)
    with ResultStore(store_path) as store:
        report = run_sweep(label_chunk, cases, store=store, scheduler=scheduler,
                           workers=workers, progress=progress, description="dcp labels")
        if report.failures:
            raise RuntimeError(f"{len(report.failures)} labelling tasks failed, e.g. "
                               f"{next(iter(report.failures.values()))}")
        results = [(case, store.get(case)) for case in cases]
    return assemble(space, results)


def assemble(space, results):
    """A ``DataSet`` from (case, result) pairs of ``label_chunk``."""
    layers, hardware, rows = [], [], {key: [] for key in ("layer", "hardware", "codes",
                                                          *METRICS)}
    for case, result in results:
        layer = Layer.from_dict(case["layer"])
        point = space.hardware_from_dict(case["hardware"])
        for known, item in ((layers, layer), (hardware, point)):
            if item not in known:
                known.append(item)
        count = len(result["codes"])
        rows["layer"].append(np.full(count, layers.index(layer)))
        rows["hardware"].append(np.full(count, hardware.index(point)))
        rows["codes"].append(np.asarray(result["codes"], dtype=np.int64))
        for metric in METRICS:
            rows[metric].append(np.asarray(result[metric], dtype=np.float64))
    return DataSet(layers, hardware, *(np.concatenate(rows[key]) for key in rows))
