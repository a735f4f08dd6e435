"""Ground truth for DANCE's evaluator on the RTL family (``dse.dance.rtl_hardware``), labelled through a Dask sweep.

As on the template (``dse.dance.labels``) a network's latency and energy are sums over its layers, so the sweep
labels *layer contexts* (:func:`dse.dance.rtl_hardware.layer_contexts`): every distinct context of the network space
on every point, plus what each needs of the weight RAM, the activation RAMs and the descriptor table.  One task per
(modules, lanes, row_elements, split): the points sharing them share their layers' shapes and mappings.  Results go
to ``$NNACCEL_CACHE_DIR/dse/dance-rtl-labels.sqlite`` (a rerun labels only what is missing).

:class:`RtlLabelTable` answers (network, point) cost cases from that table, ``inf`` where the network does not fit
(:func:`dse.dance.rtl_hardware.combine`, the compiler's resource checks).
"""

import base64
import io
import time

import numpy as np

from nnaccel.dse.dance.labels import LabelTable, default_store_path
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.rtl_hardware import (COLUMNS, PARAMETERS, STRUCTURE, RtlHardwareSpace, combine, context_from_dict,
                                    context_table, context_to_dict, layer_contexts)
from nnaccel.dse.shared.store import ResultStore
from nnaccel.dse.shared.sweep import run_sweep

TASK_KEYS = ("modules", "lanes", "row_elements", "split")


def distinct_contexts(network_space=NETWORK_SPACE):
    """Every distinct layer context of the network space, in a fixed order, and (N, 4) indices of each candidate's
    contexts into that list (-1 where a candidate has three layers)."""
    contexts, index_of = [], {}
    networks = network_space.all_indices()
    ids = np.full((len(networks), 4), -1, dtype=np.int64)
    for row, indices in enumerate(networks):
        for column, context in enumerate(layer_contexts(network_space.network(indices))):
            if context not in index_of:
                index_of[context] = len(contexts)
                contexts.append(context)
            ids[row, column] = index_of[context]
    return contexts, ids


def _pack_arrays(arrays):
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _unpack_arrays(text):
    with np.load(io.BytesIO(base64.b64decode(text))) as data:
        return {name: data[name] for name in data.files}


def _task_members(space, task):
    """The structures and point indices of one task (``TASK_KEYS`` values)."""
    fixed = dict(zip(TASK_KEYS, task))
    chosen = {key: members for key, members in space.structure_members().items()
              if all(dict(zip(STRUCTURE, key))[name] == value for name, value in fixed.items())}
    return set(chosen), np.array(sorted(index for members in chosen.values() for index in members))


def label_contexts(case):
    """Sweep task: ``COLUMNS`` of ``case["contexts"]`` on the points of one task's structures, as compressed arrays
    (contexts, task points)."""
    space = RtlHardwareSpace(parameters=case["parameters"])
    contexts = [context_from_dict(items) for items in case["contexts"]]
    structures, members = _task_members(space, tuple(case["task"]))
    table = context_table(space, contexts, structures)
    return {"points": _pack_arrays({"points": members, **{name: table[name][:, members] for name in COLUMNS}})}


def label_rtl(*, store_path=None, scheduler=None, workers=None, progress=True, network_space=NETWORK_SPACE,
              parameters=PARAMETERS):
    """Run (or complete) the labelling sweep of the RTL family's grid (``parameters``: a smaller one for tests);
    returns (RtlLabelTable, SweepReport, seconds)."""
    space = RtlHardwareSpace(parameters=parameters)
    contexts, ids = distinct_contexts(network_space)
    values = dict(space.parameters)
    tasks = sorted({tuple(dict(zip(STRUCTURE, key))[name] for name in TASK_KEYS) for key in space.structure_members()},
                   key=lambda task: tuple(values[name].index(value) for name, value in zip(TASK_KEYS, task)))
    encoded = [context_to_dict(context) for context in contexts]
    grid = [[name, list(values)] for name, values in space.parameters]
    cases = [{"space": "rtl", "parameters": grid, "task": list(task), "contexts": encoded} for task in tasks]
    start = time.perf_counter()
    with ResultStore(store_path or default_store_path("rtl")) as store:
        report = run_sweep(label_contexts, cases, store=store, scheduler=scheduler, workers=workers,
                           progress=progress, description="label (layer context, RTL configuration) cases")
        if report.failures:
            raise RuntimeError(f"{len(report.failures)} labelling tasks failed, e.g. "
                               f"{next(iter(report.failures.values()))}")
        results = [_unpack_arrays(store.get(case)["points"]) for case in cases]
    seconds = time.perf_counter() - start
    columns = {}
    for name in COLUMNS:
        column = np.zeros((len(contexts), len(space)), dtype=results[0][name].dtype)
        for result in results:
            column[:, result["points"]] = result[name]
        columns[name] = column
    space.set_context_costs(contexts, columns)
    return RtlLabelTable(space, network_space, ids, columns), report, seconds


class RtlLabelTable(LabelTable):
    """(network, point) costs of the RTL family from per-context columns (``COLUMNS``, (contexts, points)):
    networks are rows of ``network_space.all_indices()``; ``inf`` where a network does not fit a point."""

    best_chunk = 32

    def __init__(self, hardware_space, network_space, layer_ids, columns):
        self.hardware_space = hardware_space
        self.network_space = network_space
        self.layer_ids = layer_ids
        # One row at the end for a missing fourth layer: feasible, costing and needing nothing.
        self.columns = {name: np.vstack([column, np.full((1, column.shape[1]), name == "feasible",
                                                         dtype=column.dtype)]) for name, column in columns.items()}
        self.area = hardware_space.area()
        self.depths = hardware_space.depths()

    def costs(self, networks, points):
        ids = self.layer_ids[np.asarray(networks)]
        points = np.asarray(points)
        rows = {name: column[ids, points[:, None]][..., None] for name, column in self.columns.items()}
        return combine(rows, *(values[points][:, None] for values in (*self.depths, self.area)))[:, 0]

    def all_points(self, networks):
        ids = self.layer_ids[np.asarray(networks)]
        return combine({name: column[ids] for name, column in self.columns.items()}, *self.depths, self.area)

