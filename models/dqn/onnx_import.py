"""ONNX models into the network graph (:mod:`models.dqn.graph`), and ONNX Runtime on the same file.

:func:`read_onnx` reads a model (the ``onnx`` package) into a :class:`Graph`, the form every front door produces
(:mod:`models.dqn.tflite_import` is the other); :func:`onnx_runtime_outputs` runs the model itself in ONNX Runtime
(float32), the reference users trust.  Accepted: one float32 input ``(1, C, H, W)`` or ``(1, F)`` (a symbolic
batch counts as 1), weights and constants as float32 initializers or ``Constant`` nodes, and these nodes:

``Conv``
    :class:`Conv`: any kernel, strides, ``group`` (depthwise: group = channels), zero padding ``pads`` (ONNX's
    ``[top, left, bottom, right]`` becomes the graph's ``(top, bottom, left, right)``) or ``auto_pad`` SAME_UPPER /
    SAME_LOWER / VALID; dilations 1.
``Gemm`` (``alpha = beta = 1``, ``transA = 0``), ``MatMul`` [+ ``Add`` of a constant]
    :class:`Dense`, weight ``(out, in)``.
``Add``
    of two computed tensors: :class:`Add` (a residual connection); of a constant right after a Conv / Gemm /
    MatMul that nothing else reads: added to its bias.
``Relu``
    the ReLU of the Conv, Gemm, MatMul or Add right before it (when nothing else reads that tensor).
``BatchNormalization`` (inference)
    folded into the Conv (or Gemm / MatMul) right before it: with ``f = gamma / sqrt(var + epsilon)`` per output
    channel, ``w' = w * f`` and ``b' = (b - mean) * f + beta``, computed in float64 from the float32 values and
    rounded once to float32.
``MaxPool``, ``AveragePool`` (``ceil_mode = 0``; average pooling with ``count_include_pad = 0`` where it pads),
``GlobalAveragePool``, ``Flatten`` (axis 1) / ``Reshape`` (to ``(1, N)``), ``Softmax`` (over a vector)
    :class:`Pool`, :class:`GlobalAveragePool`, :class:`Flatten` (ONNX flattens NCHW, as the graph does),
    :class:`Softmax`.
``Dropout``, ``Identity``
    vanish (inference).

Anything else raises :class:`ModelError` with one line naming the file, the node, its op and the fault.

``nnaccel run net`` lowers the graph onto the accelerator's layers (:mod:`models.dqn.lowering`), as it does a
TFLite model's.
"""

from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from nnaccel.models.dqn.graph import (Add, Conv, Dense, Flatten, GlobalAveragePool, Graph, GraphError, ModelError,
                                      Pool, Softmax, TensorInfo)
from nnaccel.models.shared.input_files import InputError, require_file

__all__ = ["read_onnx", "GRAPH_OPS", "onnx_runtime_outputs"]

GRAPH_OPS = ("Conv", "Gemm", "MatMul", "Add", "Relu", "BatchNormalization", "MaxPool", "AveragePool",
             "GlobalAveragePool", "Flatten", "Reshape", "Softmax", "Dropout", "Identity", "Constant")
_EXPECTED = "expected an ONNX model file (.onnx)"


def _node_error(path, node, fault):
    return ModelError(f"{path}: node {node.name or '(unnamed)'!r} ({node.op_type}): {fault}")


def _load(path):
    """The checked ``onnx.ModelProto`` at ``path``."""
    import onnx
    from google.protobuf.message import DecodeError

    require_file(path, expected=_EXPECTED, error=ModelError)
    try:
        model = onnx.load(path)
    except (DecodeError, ValueError, OSError, RuntimeError) as error:
        raise InputError(f"{path}: not an ONNX model: {' '.join(str(error).split()) or type(error).__name__} "
                         f"({_EXPECTED})") from None
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as error:
        first = next((line for line in str(error).splitlines() if line.strip()), "")
        raise InputError(f"{path}: not a valid ONNX model: {first.strip()} ({_EXPECTED})") from None
    return model


def _attributes(node):
    from onnx import helper

    values = {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}
    return {name: value.decode() if isinstance(value, bytes) else value for name, value in values.items()}


def _graph_input(path, graph):
    """The graph's constants (initializers) and its one float32 input's name and shape without the batch."""
    from onnx import TensorProto, numpy_helper

    constants = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
    inputs = [value for value in graph.input if value.name not in constants]
    if len(inputs) != 1:
        raise InputError(f"{path}: the model has {len(inputs)} inputs ({', '.join(v.name for v in inputs)}); "
                         f"nnaccel runs models with one input")
    tensor_type = inputs[0].type.tensor_type
    if tensor_type.elem_type != TensorProto.FLOAT:
        raise InputError(f"{path}: input {inputs[0].name!r} is {TensorProto.DataType.Name(tensor_type.elem_type)}"
                         f"; nnaccel runs float32 models")
    dims = [dim.dim_value if dim.HasField("dim_value") else None for dim in tensor_type.shape.dim]
    if len(dims) not in (2, 4) or dims[0] not in (1, None) or None in dims[1:]:
        shown = ["?" if dim is None else dim for dim in dims]
        raise InputError(f"{path}: input {inputs[0].name!r} has shape {shown}; nnaccel runs inputs of shape "
                         f"(1, C, H, W) or (1, F)")
    return constants, inputs[0].name, tuple(dims[1:])


def _constant(path, constants, node, index, what):
    """The constant ``node`` reads as its input ``index`` (None if absent); float32 and finite unless a shape."""
    name = node.input[index] if len(node.input) > index else ""
    if not name:
        return None
    if name not in constants:
        raise _node_error(path, node, f"{what} {name!r} is computed by the graph; nnaccel needs it as an "
                                      f"initializer or a Constant")
    value = constants[name]
    if value.dtype != np.float32 and what not in ("shape", "axes"):
        raise _node_error(path, node, f"{what} {name!r} is {value.dtype}; nnaccel runs float32 models")
    if value.dtype == np.float32 and not np.all(np.isfinite(value)):
        raise _node_error(path, node, f"{what} {name!r} holds NaN or infinite values")
    return value


def _constant_node(path, node, constants):
    """A ``Constant`` node's value into ``constants``."""
    from onnx import numpy_helper

    attribute = next((a for a in node.attribute if a.name == "value"), None)
    if attribute is None:
        raise _node_error(path, node, "only Constant nodes with a tensor 'value' are supported")
    constants[node.output[0]] = numpy_helper.to_array(attribute.t)


def _gemm_weight(path, constants, node):
    """A ``Gemm``'s weight as ``(in, out)`` and its bias constant (None without one), after checking its
    attributes."""
    attributes = _attributes(node)
    for name in ("alpha", "beta"):
        if attributes.get(name, 1.0) != 1.0:
            raise _node_error(path, node, f"{name} = {attributes[name]}: only alpha = beta = 1 is supported")
    if attributes.get("transA", 0):
        raise _node_error(path, node, "transA = 1: the input cannot be transposed")
    weight = _constant(path, constants, node, 1, "weight")
    if weight is None or weight.ndim != 2:
        raise _node_error(path, node, "needs a 2-d weight initializer B")
    return weight.T if attributes.get("transB", 0) else weight, _constant(path, constants, node, 2, "bias")


class _GraphReader:
    """Reads every node into the network graph: operations as they come, Relu / BatchNormalization / bias Add
    folded into the operation before them, Dropout and Identity gone."""

    def __init__(self, path, graph):
        self.path = path
        self.constants, input_name, input_shape = _graph_input(path, graph)
        self.input = TensorInfo(input_name, input_shape)
        self.tensors = {input_name: self.input}
        self.ops, self.producer, self.aliases, self.names = [], {}, {}, set()
        self.output_names = [value.name for value in graph.output]
        self.readers = Counter(name for node in graph.node for name in node.input if name)
        self.readers.update(self.output_names)

    # ---- helpers -----------------------------------------------------------------------------------------

    def constant(self, node, index, what):
        return _constant(self.path, self.constants, node, index, what)

    def data(self, node):
        """The names of the computed tensors ``node`` reads (aliases resolved)."""
        names = [self.aliases.get(name, name) for name in node.input if name and name not in self.constants]
        unknown = [name for name in names if name not in self.tensors]
        if unknown:
            raise _node_error(self.path, node, f"reads {unknown[0]!r}, which no earlier node produces")
        return names

    def shape(self, name):
        return self.tensors[name].shape

    def op_name(self, node):
        name = node.name or f"{node.op_type}_{len(self.ops)}"
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def emit(self, node, operation, inputs, **fields):
        """Appends an ``operation`` for ``node`` (a graph ValueError becomes the node's one-line error)."""
        name = self.op_name(node)
        try:
            op = operation(name, tuple(inputs), node.output[0], **fields)
            info = TensorInfo(op.output, op.output_shape([self.shape(source) for source in op.inputs]))
        except GraphError as error:
            message = str(error)
            raise _node_error(self.path, node, message.removeprefix(f"{name}: ")) from None
        self.producer[op.output] = len(self.ops)
        self.ops.append(op)
        self.tensors[op.output] = info

    def fusable(self, node, kinds):
        """The index of the operation producing ``node``'s data input when it is of ``kinds`` and ``node`` is its
        only reader (so it can absorb ``node``), else None."""
        source = self.data(node)[0]
        index = self.producer.get(source)
        if index is None or not isinstance(self.ops[index], kinds) or self.readers[source] != 1:
            return None
        return index

    def absorb(self, node, index, **changes):
        """Operation ``index`` with ``changes`` and its output renamed to ``node``'s (the same shape)."""
        op = self.ops[index]
        shape = self.tensors.pop(op.output).shape
        del self.producer[op.output]
        try:
            self.ops[index] = replace(op, output=node.output[0], **changes)
        except GraphError as error:
            raise _node_error(self.path, node, str(error)) from None
        self.producer[node.output[0]] = index
        self.tensors[node.output[0]] = TensorInfo(node.output[0], shape)

    def vanish(self, node):
        """``node`` passes its input through: its output names the same tensor."""
        source = self.data(node)[0]
        index = self.producer.get(source)
        if index is not None and self.readers[source] == 1:
            self.absorb(node, index)
        else:
            self.aliases[node.output[0]] = source

    # ---- ops ---------------------------------------------------------------------------------------------

    def conv(self, node):
        attributes = _attributes(node)
        weight = self.constant(node, 1, "weight")
        if weight is None or weight.ndim != 4:
            raise _node_error(self.path, node, "needs a 4-d weight initializer (out, in / group, kh, kw)")
        if any(value != 1 for value in attributes.get("dilations", [1, 1])):
            raise _node_error(self.path, node, f"dilations = {list(attributes['dilations'])}: dilated convolutions "
                                               f"are not supported (dilations must be 1)")
        source = self.data(node)[0]
        if len(self.shape(source)) != 3:
            raise _node_error(self.path, node, "its input is a flat vector; a Conv needs an image (C, H, W)")
        stride = tuple(attributes.get("strides", [1, 1]))
        pads = self.pads(node, attributes, self.shape(source), weight.shape[2:], stride)
        self.emit(node, Conv, [source], weight=weight, bias=self.constant(node, 2, "bias"), stride=stride, pads=pads,
                  groups=attributes.get("group", 1))

    def pads(self, node, attributes, shape, kernel, stride):
        """ONNX's ``pads`` (begin H, begin W, end H, end W) or ``auto_pad`` as (top, bottom, left, right)."""
        auto = attributes.get("auto_pad", "NOTSET")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            pads = []
            for size, window, step in zip(shape[1:], kernel, stride):
                total = max((-(-size // step) - 1) * step + window - size, 0)
                small, large = total // 2, total - total // 2
                pads += [small, large] if auto == "SAME_UPPER" else [large, small]
            return tuple(pads)
        if auto not in ("NOTSET", "VALID"):
            raise _node_error(self.path, node, f"auto_pad = {auto} is not supported")
        begin_h, begin_w, end_h, end_w = attributes.get("pads", [0, 0, 0, 0]) if auto == "NOTSET" else [0] * 4
        return (begin_h, end_h, begin_w, end_w)

    def gemm(self, node):
        weight, bias = _gemm_weight(self.path, self.constants, node)
        if bias is not None and (bias.size != weight.shape[1] or bias.ndim > 2):
            raise _node_error(self.path, node, f"bias of shape {list(bias.shape)}: expected ({weight.shape[1]},) or "
                                               f"(1, {weight.shape[1]})")
        self.dense(node, weight.T, None if bias is None else bias.reshape(-1))

    def matmul(self, node):
        weight = self.constant(node, 1, "weight")
        if weight is None or weight.ndim != 2:
            raise _node_error(self.path, node, "needs a 2-d weight initializer as its second input")
        self.dense(node, weight.T, None)

    def dense(self, node, weight, bias):
        source = self.data(node)[0]
        self.emit(node, Dense, [source], weight=weight, bias=bias)

    def add(self, node):
        data = self.data(node)
        if len(data) == 2:
            self.emit(node, Add, data)
            return
        index = self.fusable(node, (Conv, Dense))
        op = None if index is None else self.ops[index]
        value = self.constant(node, next(position for position, name in enumerate(node.input)
                                         if name in self.constants), "bias")
        # Broadcast from the last axis: per output channel is (C,) for a vector, (C, 1, 1) for an image.
        per_channel = op is not None and value.size == op.weight.shape[0] and \
            (value.shape[-1:] == (value.size,) if isinstance(op, Dense) else value.shape[-2:] == (1, 1))
        if not per_channel or op.relu:
            raise _node_error(self.path, node, "an Add of a constant is supported only as the bias of the Conv, "
                                               "Gemm or MatMul right before it (one value per output channel)")
        self.absorb(node, index, bias=op.bias + value.reshape(-1).astype(np.float32))

    def relu(self, node):
        index = self.fusable(node, (Conv, Dense, Add))
        if index is None or self.ops[index].relu:
            raise _node_error(self.path, node, "a Relu is supported only right after a Conv, Gemm, MatMul or Add "
                                               "that nothing else reads")
        self.absorb(node, index, relu=True)

    def batch_normalization(self, node):
        """Folded into the Conv (or Gemm / MatMul) before it, in float64 then rounded to float32:
        ``w' = w * gamma / sqrt(var + eps)``, ``b' = (b - mean) * gamma / sqrt(var + eps) + beta``."""
        attributes = _attributes(node)
        if attributes.get("training_mode", 0) or len(node.output) > 1:
            raise _node_error(self.path, node, "training mode: export the model in inference mode (model.eval())")
        index = self.fusable(node, (Conv, Dense))
        if index is None or self.ops[index].relu:
            raise _node_error(self.path, node, "BatchNormalization is supported only right after a Conv, Gemm or "
                                               "MatMul that nothing else reads (it is folded into its weights)")
        op = self.ops[index]
        gamma, beta, mean, variance = (self.constant(node, position, what).astype(np.float64).reshape(-1)
                                       for position, what in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")))
        if not gamma.size == beta.size == mean.size == variance.size == op.weight.shape[0]:
            raise _node_error(self.path, node, f"parameters of {gamma.size} channels after {op.weight.shape[0]} "
                                               f"output channels")
        factor = gamma / np.sqrt(variance + attributes.get("epsilon", 1e-5))
        weight = op.weight.astype(np.float64) * factor.reshape(-1, *[1] * (op.weight.ndim - 1))
        bias = (op.bias.astype(np.float64) - mean) * factor + beta
        self.absorb(node, index, weight=weight.astype(np.float32), bias=bias.astype(np.float32))

    def pool(self, node):
        attributes = _attributes(node)
        kind = "max" if node.op_type == "MaxPool" else "avg"
        if attributes.get("ceil_mode", 0):
            raise _node_error(self.path, node, "ceil_mode = 1 is not supported (the output size rounds down)")
        if any(value != 1 for value in attributes.get("dilations", [1, 1])):
            raise _node_error(self.path, node, "dilated pooling is not supported")
        if len([name for name in node.output if name]) > 1:
            raise _node_error(self.path, node, "the indices output of MaxPool is not supported")
        kernel = tuple(attributes["kernel_shape"])
        stride = tuple(attributes.get("strides", [1, 1]))
        source = self.data(node)[0]
        if len(self.shape(source)) != 3:
            raise _node_error(self.path, node, "its input is a flat vector; pooling needs an image (C, H, W)")
        pads = self.pads(node, attributes, self.shape(source), kernel, stride)
        if kind == "avg" and any(pads) and attributes.get("count_include_pad", 0):
            raise _node_error(self.path, node, "count_include_pad = 1 is not supported (the average divides by the "
                                               "real pixels of each window, as TFLite's)")
        self.emit(node, Pool, [source], kind=kind, kernel=kernel, stride=stride, pads=pads)

    def global_average_pool(self, node):
        source = self.data(node)[0]
        self.emit(node, GlobalAveragePool, [source])

    def flatten(self, node):
        axis = _attributes(node).get("axis", 1)
        if axis != 1:
            raise _node_error(self.path, node, f"axis = {axis}: only Flatten with axis 1 is supported")
        self.to_vector(node)

    def reshape(self, node):
        target = self.constant(node, 1, "shape")
        size = int(np.prod(self.shape(self.data(node)[0])))
        values = [] if target is None else [int(value) for value in target.reshape(-1)]
        if len(values) != 2 or values[0] not in (1, -1, 0) or values[1] not in (size, -1) or values == [-1, -1]:
            raise _node_error(self.path, node, f"shape = {values}: only flattening to (1, {size}) is supported")
        self.to_vector(node)

    def to_vector(self, node):
        source = self.data(node)[0]
        if len(self.shape(source)) == 1:
            self.vanish(node)
        else:
            self.emit(node, Flatten, [source])

    def softmax(self, node):
        axis = _attributes(node).get("axis", -1)
        source = self.data(node)[0]
        if len(self.shape(source)) != 1 or axis not in (1, -1):
            raise _node_error(self.path, node, f"axis = {axis} of a tensor of shape {self.shape(source)}: only the "
                                               f"softmax over a vector is supported")
        self.emit(node, Softmax, [source])

    def dropout(self, node):
        if len([name for name in node.output if name]) > 1:
            raise _node_error(self.path, node, "the mask output of Dropout is not supported")
        self.vanish(node)

    def read(self, node):
        if node.op_type == "Constant":
            _constant_node(self.path, node, self.constants)
            return
        if node.op_type == "Identity" and node.input[0] in self.constants:     # PyTorch's copies of weights
            self.constants[node.output[0]] = self.constants[node.input[0]]
            return
        handlers = {"Conv": self.conv, "Gemm": self.gemm, "MatMul": self.matmul, "Add": self.add, "Relu": self.relu,
                    "BatchNormalization": self.batch_normalization, "MaxPool": self.pool, "AveragePool": self.pool,
                    "GlobalAveragePool": self.global_average_pool, "Flatten": self.flatten,
                    "Reshape": self.reshape, "Softmax": self.softmax, "Dropout": self.dropout,
                    "Identity": self.vanish}
        if node.op_type not in handlers:
            raise _node_error(self.path, node, f"op {node.op_type} is not supported (supported: "
                                               f"{', '.join(GRAPH_OPS)})")
        if not self.data(node):
            raise _node_error(self.path, node, "reads only constants; nnaccel runs operations on computed tensors")
        handlers[node.op_type](node)

    def graph(self):
        outputs = tuple(self.aliases.get(name, name) for name in self.output_names)
        if not self.ops:
            raise ModelError(f"{self.path}: the model has no operation to run")
        try:
            return Graph(inputs=(self.input,), outputs=outputs, tensors=self.tensors, ops=tuple(self.ops),
                         source=str(self.path))
        except GraphError as error:
            raise ModelError(f"{self.path}: {error}") from None


def read_onnx(path):
    """The :class:`Graph` of the ONNX model at ``path``; raises :class:`ModelError` (one line: the file, the node,
    its op and the fault) for a file that is not a model or a node the graph cannot hold."""
    path = Path(path)
    graph = _load(path).graph
    reader = _GraphReader(path, graph)
    for node in graph.node:
        reader.read(node)
    return reader.graph()


def onnx_runtime_outputs(model, inputs):
    """The model's own float32 outputs for ``inputs`` (``(N, *input_shape)``), one input at a time in ONNX Runtime
    (CPU, one thread): ``(N, outputs)`` of its first output.  ``model`` is a :class:`Graph` from :func:`read_onnx`."""
    import onnxruntime

    path = model.source
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        input_name, output_name = session.get_inputs()[0].name, session.get_outputs()[0].name
        return np.stack([session.run([output_name], {input_name: sample[None]})[0].reshape(-1)
                         for sample in np.asarray(inputs, np.float32)])
    except (onnxruntime.capi.onnxruntime_pybind11_state.Fail,
            onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument) as error:
        raise ModelError(f"{path}: ONNX Runtime cannot run the model: {' '.join(str(error).split())}") from None
