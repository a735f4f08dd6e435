"""The RTL family's labelling sweep for DANCE (``dse.dance.labels`` runs it): every distinct layer context on every
point of ``RtlHardwareSpace``, with what each needs of the weight RAM, the activation RAMs and the descriptor table.

One task per (modules, lanes, row_elements, split) (:data:`TASK_KEYS`): the points sharing them share their layers'
shapes and mappings.  A case is JSON (a Dask task and the key of the result store): the grid, the task's values
and every context (``context_to_dict``); its task (:func:`label_contexts`) returns ``COLUMNS`` on the task's points
as compressed arrays.
"""

import base64
import io

import numpy as np

from nnaccel.dse.rtl.hardware_space import (COLUMNS, STRUCTURE, RtlHardwareSpace, context_from_dict, context_table,
                                            context_to_dict)

TASK_KEYS = ("modules", "lanes", "row_elements", "split")


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


def label_cases(space, contexts):
    """The sweep's cases: one per task of ``space``'s grid, each with every context."""
    values = dict(space.parameters)
    tasks = sorted({tuple(dict(zip(STRUCTURE, key))[name] for name in TASK_KEYS) for key in space.structure_members()},
                   key=lambda task: tuple(values[name].index(value) for name, value in zip(TASK_KEYS, task)))
    encoded = [context_to_dict(context) for context in contexts]
    grid = [[name, list(values)] for name, values in space.parameters]
    return [{"space": "rtl", "parameters": grid, "task": list(task), "contexts": encoded} for task in tasks]


def label_contexts(case):
    """Sweep task: ``COLUMNS`` of ``case["contexts"]`` on the points of one task's structures, as compressed arrays
    (contexts, task points)."""
    space = RtlHardwareSpace(parameters=case["parameters"])
    contexts = [context_from_dict(items) for items in case["contexts"]]
    structures, members = _task_members(space, tuple(case["task"]))
    table = context_table(space, contexts, structures)
    return {"points": _pack_arrays({"points": members, **{name: table[name][:, members] for name in COLUMNS}})}


def label_columns(space, contexts, results):
    """``COLUMNS`` (contexts, points) of the tasks' results."""
    results = [_unpack_arrays(result["points"]) for result in results]
    columns = {}
    for name in COLUMNS:
        column = np.zeros((len(contexts), len(space)), dtype=results[0][name].dtype)
        for result in results:
            column[:, result["points"]] = result[name]
        columns[name] = column
    return columns
