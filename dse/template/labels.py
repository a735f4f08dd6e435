"""The template's labelling sweep for DANCE (``dse.dance.labels`` runs it): every distinct layer on every point of
``TemplateHardwareSpace``, one Dask task per chunk of :data:`TASK_LAYERS` layers.

A case is JSON (a Dask task and the key of the result store): the number format and the chunk's layers
(``Layer.to_dict``); its task (:func:`label_layers`) returns latency (ms) and energy (mJ) as base64 float64
arrays of shape (layers, points).
"""

import base64

import numpy as np

from nnaccel.dse.shared.layer import Layer
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

TASK_LAYERS = 24


def _encode(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f8").tobytes()).decode("ascii")


def _decode(text):
    return np.frombuffer(base64.b64decode(text), dtype="<f8")


def label_cases(space, layers):
    """The sweep's cases: ``layers`` (``Layer`` objects) in chunks of :data:`TASK_LAYERS`."""
    return [{"space": "template", "number_format": space.number_format,
             "layers": [layer.to_dict() for layer in layers[start:start + TASK_LAYERS]]}
            for start in range(0, len(layers), TASK_LAYERS)]


def label_layers(case):
    """Sweep task: latency (ms) and energy (mJ) of ``case["layers"]`` on every template point."""
    space = TemplateHardwareSpace(number_format=case["number_format"])
    table = space.unit_table([Layer.from_dict(layer) for layer in case["layers"]])
    return {name: _encode(values) for name, values in table.items()}


def label_columns(space, results):
    """``{"latency_ms", "energy_mj"}`` (layers, points) of the cases' results, in case order."""
    points = len(space)
    return {name: np.concatenate([_decode(result[name]).reshape(-1, points) for result in results])
            for name in ("latency_ms", "energy_mj")}
