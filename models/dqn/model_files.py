"""A user's model file, whatever its kind: read into the network graph and run in the runtime its users trust.

``.tflite`` files are read by :func:`models.dqn.tflite_import.read_tflite` (the ``tflite`` FlatBuffer parser, no
TensorFlow) and run by LiteRT; ``.onnx`` files by :func:`models.dqn.onnx_import.read_onnx` and ONNX Runtime.
:func:`reference_outputs` returns what the accelerator's last layer is compared with: the logits before a final
softmax that the host computes (LiteRT: the tensor the SOFTMAX op reads), or the model's output.
"""

from pathlib import Path

import numpy as np

from nnaccel.models.dqn.graph import ModelError

__all__ = ["MODEL_KINDS", "read_model", "reference_outputs", "reference_is_logits", "runtime_name"]

MODEL_KINDS = {".tflite": "LiteRT", ".onnx": "ONNX Runtime"}


def _kind(path):
    suffix = Path(path).suffix.lower()
    if suffix not in MODEL_KINDS:
        found = f"a {suffix} file" if suffix else "a file without a suffix"
        raise ModelError(f"{path}: expected a TFLite (.tflite) or ONNX (.onnx) model file, not {found}")
    return suffix


def runtime_name(path):
    """The runtime that :func:`reference_outputs` runs ``path`` in."""
    return MODEL_KINDS[_kind(path)]


def read_model(path):
    """The :class:`~models.dqn.graph.Graph` of the model file at ``path`` (by its suffix); raises ModelError."""
    if _kind(path) == ".tflite":
        from nnaccel.models.dqn.tflite_import import read_tflite
        return read_tflite(path)
    from nnaccel.models.dqn.onnx_import import read_onnx
    return read_onnx(path)


def reference_outputs(path, graph, inputs, *, logits):
    """``(N, outputs)`` float32 of the model file run by its own runtime on ``inputs`` (``(N, *input shape)``,
    NCHW): with ``logits`` the tensor a final softmax reads (LiteRT only: an ONNX model's softmax output is
    returned: softmax the accelerator's logits to meet it, see :func:`reference_is_logits`), else the model's output."""
    inputs = np.asarray(inputs, np.float32)
    if _kind(path) == ".tflite":
        from nnaccel.models.dqn.tflite_import import litert_outputs
        return litert_outputs(path, inputs, before_softmax=logits)
    from nnaccel.models.dqn.onnx_import import onnx_runtime_outputs
    return onnx_runtime_outputs(graph, inputs)


def reference_is_logits(path, softmax_on_host):
    """Whether :func:`reference_outputs` with ``logits=softmax_on_host`` returns logits (else probabilities)."""
    return not softmax_on_host or _kind(path) == ".tflite"
