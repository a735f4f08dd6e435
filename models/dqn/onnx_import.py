"""ONNX models onto the DQN accelerator: a standard ONNX graph -> the compiler's layers and weights.

:func:`import_onnx` reads a model (the ``onnx`` package) and maps its graph onto :mod:`models.dqn.plan`'s
layers; :func:`compile_onnx` compiles it for a :class:`hw.dqn.config.DqnConfig`; :func:`onnx_runtime_outputs`
runs the model itself in ONNX Runtime (float32), the reference the report quotes its difference from.

Accepted graphs: one float32 input ``(1, C, H, W)`` or ``(1, F)`` (a symbolic batch dimension counts as 1) and
one chain of nodes, each reading the previous node's output, to one graph output:

``Conv``
    a :class:`ConvLayer`: square kernel, equal strides, dilations 1, group 1; the weight ``(out, in, kh, kw)``
    becomes the compiler's ``(in, kh, kw, out)``.  Zero padding (the same border on every side) is supported on
    the first ``Conv`` only: the host writes the input image with its zero border (the hardware reads it as any
    image), so the padding costs input words and nothing else.  A later ``Conv``'s padding would need the result
    writer to leave borders in its output image, which it cannot.
``Gemm``
    a :class:`DenseLayer`: ``alpha = beta = 1``, ``transA = 0``; ``B`` is ``(in, out)``, or ``(out, in)`` with
    ``transB = 1``; ``C`` (bias) ``(out,)`` or ``(1, out)``.
``MatMul`` [``Add``]
    a :class:`DenseLayer` with ``B`` ``(in, out)`` and the ``Add``'s constant ``(out,)`` as bias (zero without it).
``Relu``
    the ReLU of the layer before it.
``Flatten`` (axis 1), ``Reshape`` (to ``(1, F)``), ``Identity``
    no data movement: a dense layer after a convolution reads its image in ONNX's channel-major order
    (index ``(c*H + y)*W + x``), which is the compiler's.

Everything else, and every attribute the hardware cannot honour, raises :class:`InputError` with one line naming
the file, the node, its op and the attribute at fault.  The weights and constants must be float32 initializers
or ``Constant`` nodes.
"""

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from nnaccel.models.dqn.network import ConvLayer, DenseLayer
from nnaccel.models.dqn.plan import compile_network
from nnaccel.models.shared.input_files import InputError

__all__ = ["OnnxNetwork", "import_onnx", "compile_onnx", "onnx_runtime_outputs", "SUPPORTED_OPS"]

SUPPORTED_OPS = ("Conv", "Gemm", "MatMul", "Add", "Relu", "Flatten", "Reshape", "Identity")
POOLING_OPS = ("MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool")
_EXPECTED = "expected an ONNX model file (.onnx)"


@dataclass(frozen=True)
class OnnxNetwork:
    """An ONNX model mapped onto the compiler's layers.

    ``input_shape`` is the model's input without the batch dimension, ``(C, H, W)`` or ``(F,)``; ``padding`` the
    zero border the first ``Conv`` adds around it (the accelerator's input is the padded image, see
    :meth:`accelerator_input`); ``nodes`` maps each layer's name to its ONNX node's ``(name, op)``.
    """

    path: str
    layers: tuple
    weights: tuple          # one (weight, bias) float32 pair per layer, in the compiler's layout
    input_name: str
    input_shape: tuple
    output_name: str
    padding: int
    nodes: dict

    def accelerator_input(self, sample):
        """One model input (``input_shape``, float32) as the accelerator's first layer reads it."""
        sample = np.asarray(sample, np.float32).reshape(self.input_shape)
        if not self.padding:
            return sample
        border = self.padding
        return np.pad(sample, ((0, 0), (border, border), (border, border)))

    def describe(self):
        """One line per layer: its ONNX node and its shape on the accelerator."""
        lines = []
        for layer in self.layers:
            node, op = self.nodes[layer.name]
            if isinstance(layer, ConvLayer):
                shape = (f"conv {layer.in_channels}x{layer.in_size}x{layer.in_size} -> {layer.out_channels}x"
                         f"{layer.out_size}x{layer.out_size}, kernel {layer.kernel}, stride {layer.stride}")
            else:
                shape = f"dense {layer.inputs} -> {layer.outputs}"
            lines.append(f"{layer.name:<12} {op:<7} {shape}{', ReLU' if layer.relu else ''}")
        return lines


def _node_error(path, node, fault):
    return InputError(f"{path}: node {node.name or '(unnamed)'!r} ({node.op_type}): {fault}")


def _load(path):
    """The checked ``onnx.ModelProto`` at ``path``."""
    import onnx
    from google.protobuf.message import DecodeError

    if not path.exists():
        raise InputError(f"{path}: no such file ({_EXPECTED})")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, not a file ({_EXPECTED})")
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


class _Mapper:
    """Walks the graph's chain of nodes, building the layers."""

    def __init__(self, path, graph):
        from onnx import TensorProto, numpy_helper

        self.path = path
        self.constants = {tensor.name: numpy_helper.to_array(tensor) for tensor in graph.initializer}
        inputs = [value for value in graph.input if value.name not in self.constants]
        if len(inputs) != 1:
            raise InputError(f"{path}: the model has {len(inputs)} inputs ({', '.join(v.name for v in inputs)}); "
                             f"nnaccel runs models with one input")
        if len(graph.output) != 1:
            raise InputError(f"{path}: the model has {len(graph.output)} outputs; nnaccel runs models with one")
        tensor_type = inputs[0].type.tensor_type
        if tensor_type.elem_type != TensorProto.FLOAT:
            raise InputError(f"{path}: input {inputs[0].name!r} is {TensorProto.DataType.Name(tensor_type.elem_type)}"
                             f"; nnaccel runs float32 models")
        dims = [dim.dim_value if dim.HasField("dim_value") else None for dim in tensor_type.shape.dim]
        if len(dims) not in (2, 4) or dims[0] not in (1, None) or None in dims[1:]:
            shown = ["?" if dim is None else dim for dim in dims]
            raise InputError(f"{path}: input {inputs[0].name!r} has shape {shown}; nnaccel runs inputs of shape "
                             f"(1, C, H, W) or (1, F)")
        self.input_name, self.output_name = inputs[0].name, graph.output[0].name
        self.input_shape = tuple(dims[1:])
        self.shape = self.input_shape        # the current tensor's shape without the batch dimension
        self.current = self.input_name       # the chain's current tensor
        self.layers, self.weights, self.nodes = [], [], {}
        self.padding = 0
        self.open_bias = False               # the last layer is a MatMul whose bias an Add may still give
        self.after_layer = False             # the current tensor is the last layer's output (ReLU may follow)

    # ---- helpers -----------------------------------------------------------------------------------------

    def constant(self, node, index, what):
        name = node.input[index] if len(node.input) > index else ""
        if not name:
            return None
        if name not in self.constants:
            raise _node_error(self.path, node, f"{what} {name!r} is computed by the graph; nnaccel needs it as an "
                                               f"initializer or a Constant")
        value = self.constants[name]
        if value.dtype != np.float32 and what != "shape":
            raise _node_error(self.path, node, f"{what} {name!r} is {value.dtype}; nnaccel runs float32 models")
        if value.dtype == np.float32 and not np.all(np.isfinite(value)):
            raise _node_error(self.path, node, f"{what} {name!r} holds NaN or infinite values")
        return value

    def add_layer(self, node, layer, weight, bias):
        self.layers.append(layer)
        self.weights.append((np.ascontiguousarray(weight, np.float32), np.ascontiguousarray(bias, np.float32)))
        self.nodes[layer.name] = (node.name or layer.name, node.op_type)
        self.after_layer = True

    def layer_name(self, node):
        name = node.name or f"{node.op_type}_{len(self.layers)}"
        while name in self.nodes:
            name += "_"
        return name

    def flat(self, node):
        if len(self.shape) != 1:
            raise _node_error(self.path, node, f"its input is an image {'x'.join(map(str, self.shape))}; flatten it "
                                               f"first (Flatten or Reshape to (1, F))")
        return self.shape[0]

    def bias(self, node, value, outputs):
        if value is None:
            return np.zeros(outputs, np.float32)
        if value.size != outputs or value.ndim > 2 or (value.ndim == 2 and value.shape[0] != 1):
            raise _node_error(self.path, node, f"bias of shape {list(value.shape)}: expected ({outputs},) or "
                                               f"(1, {outputs})")
        return value.reshape(outputs)

    # ---- ops ---------------------------------------------------------------------------------------------

    def conv(self, node):
        attributes = _attributes(node)
        weight = self.constant(node, 1, "weight")
        if weight is None or weight.ndim != 4:
            raise _node_error(self.path, node, "needs a 4-d weight initializer (out, in, kh, kw)")
        if attributes.get("group", 1) != 1:
            raise _node_error(self.path, node, f"group = {attributes['group']}: grouped and depthwise convolutions "
                                               f"are not supported (group must be 1)")
        if any(value != 1 for value in attributes.get("dilations", [1, 1])):
            raise _node_error(self.path, node, f"dilations = {list(attributes['dilations'])}: dilated convolutions "
                                               f"are not supported (dilations must be 1)")
        if attributes.get("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
            raise _node_error(self.path, node, f"auto_pad = {attributes['auto_pad']}: automatic padding is not "
                                               f"supported (give explicit pads on the first Conv, or none)")
        if len(self.shape) != 3:
            raise _node_error(self.path, node, "its input is a flat vector; a Conv needs an image (C, H, W)")
        channels, height, width = self.shape
        out_channels, in_channels, kernel_height, kernel_width = weight.shape
        if kernel_height != kernel_width:
            raise _node_error(self.path, node, f"kernel_shape = [{kernel_height}, {kernel_width}]: the accelerator's "
                                               f"kernels are square")
        strides = list(attributes.get("strides", [1, 1]))
        if strides[0] != strides[1]:
            raise _node_error(self.path, node, f"strides = {strides}: the accelerator's strides are equal in both "
                                               f"directions")
        if in_channels != channels:
            raise _node_error(self.path, node, f"weight of shape {list(weight.shape)} for an input of {channels} "
                                               f"channels")
        pads = list(attributes.get("pads", [0, 0, 0, 0]))
        if any(pads) and (self.layers or len(set(pads)) != 1):
            raise _node_error(self.path, node, f"pads = {pads}: zero padding is supported on the first Conv only, "
                                               f"with the same border on every side (the host writes the padded "
                                               f"input)")
        if height != width:
            raise _node_error(self.path, node, f"input image {channels}x{height}x{width}: the accelerator's "
                                               f"convolutions take square images")
        if not self.layers:
            self.padding = pads[0]
        layer = ConvLayer(self.layer_name(node), channels, height + 2 * pads[0], out_channels, kernel_height,
                          strides[0], relu=False)
        if layer.kernel > layer.in_size:
            raise _node_error(self.path, node, f"kernel {layer.kernel} is larger than its input "
                                               f"{layer.in_size}x{layer.in_size}")
        bias = self.bias(node, self.constant(node, 2, "bias"), out_channels)
        self.add_layer(node, layer, weight.transpose(1, 2, 3, 0), bias)
        self.shape = (out_channels, layer.out_size, layer.out_size)

    def gemm(self, node):
        attributes = _attributes(node)
        for name in ("alpha", "beta"):
            if attributes.get(name, 1.0) != 1.0:
                raise _node_error(self.path, node, f"{name} = {attributes[name]}: only alpha = beta = 1 is supported")
        if attributes.get("transA", 0):
            raise _node_error(self.path, node, "transA = 1: the input cannot be transposed")
        weight = self.constant(node, 1, "weight")
        if weight is None or weight.ndim != 2:
            raise _node_error(self.path, node, "needs a 2-d weight initializer B")
        weight = weight.T if attributes.get("transB", 0) else weight
        self.dense(node, weight, self.constant(node, 2, "bias"))

    def matmul(self, node):
        weight = self.constant(node, 1, "weight")
        if weight is None or weight.ndim != 2:
            raise _node_error(self.path, node, "needs a 2-d weight initializer as its second input")
        self.dense(node, weight, None)
        self.open_bias = True

    def dense(self, node, weight, bias):
        inputs = self.flat(node)
        if weight.shape[0] != inputs:
            raise _node_error(self.path, node, f"weight of shape {list(weight.shape)} (as (in, out)) for {inputs} "
                                               f"inputs")
        outputs = weight.shape[1]
        layer = DenseLayer(self.layer_name(node), inputs, outputs, relu=False)
        self.add_layer(node, layer, weight, self.bias(node, bias, outputs))
        self.shape = (outputs,)

    def add(self, node):
        if not self.open_bias:
            raise _node_error(self.path, node, "Add is supported only as the bias right after a MatMul")
        constant = [index for index, name in enumerate(node.input) if name in self.constants]
        if len(constant) != 1:
            raise _node_error(self.path, node, "Add is supported only as the bias right after a MatMul")
        bias = self.constant(node, constant[0], "bias")
        weight, _ = self.weights[-1]
        self.weights[-1] = (weight, self.bias(node, bias, weight.shape[1]))

    def relu(self, node):
        if not self.after_layer or self.layers[-1].relu:
            where = "the network input" if not self.layers else "a ReLU's output"
            raise _node_error(self.path, node, f"a Relu on {where}: the accelerator applies ReLU only to a layer's "
                                               f"output")
        self.layers[-1] = replace(self.layers[-1], relu=True)

    def flatten(self, node):
        axis = _attributes(node).get("axis", 1)
        if axis != 1:
            raise _node_error(self.path, node, f"axis = {axis}: only Flatten with axis 1 is supported")
        self.shape = (int(np.prod(self.shape)),)

    def reshape(self, node):
        target = self.constant(node, 1, "shape")
        size = int(np.prod(self.shape))
        values = [] if target is None else [int(value) for value in target.reshape(-1)]
        if len(values) != 2 or values[0] not in (1, -1, 0) or values[1] not in (size, -1) or values == [-1, -1]:
            raise _node_error(self.path, node, f"shape = {values}: only flattening to (1, {size}) is supported")
        self.shape = (size,)

    def map(self, node):
        from onnx import numpy_helper

        if node.op_type == "Constant":
            attribute = next((a for a in node.attribute if a.name == "value"), None)
            if attribute is None:
                raise _node_error(self.path, node, "only Constant nodes with a tensor 'value' are supported")
            self.constants[node.output[0]] = numpy_helper.to_array(attribute.t)
            return
        if node.op_type in POOLING_OPS:
            raise _node_error(self.path, node, "pooling is not supported: the accelerator has no pooling unit (a "
                                               "strided Conv can take its place)")
        handlers = {"Conv": self.conv, "Gemm": self.gemm, "MatMul": self.matmul, "Add": self.add,
                    "Relu": self.relu, "Flatten": self.flatten, "Reshape": self.reshape, "Identity": None}
        if node.op_type not in handlers:
            raise _node_error(self.path, node, f"op {node.op_type} is not supported (supported: "
                                               f"{', '.join(SUPPORTED_OPS)})")
        data = [name for name in node.input if name and name not in self.constants]
        if data != [self.current] or len(node.output) != 1:
            raise _node_error(self.path, node, f"reads {', '.join(data) or 'only constants'}; nnaccel maps a chain "
                                               f"of nodes, each reading the previous node's output "
                                               f"({self.current})")
        if node.op_type not in ("Add", "Identity"):
            self.open_bias = False
        if node.op_type in ("Conv", "Gemm", "MatMul"):
            self.after_layer = False
        if handlers[node.op_type] is not None:
            handlers[node.op_type](node)
        self.current = node.output[0]


def import_onnx(path):
    """The :class:`OnnxNetwork` of the ONNX model at ``path``; raises :class:`InputError` (one line: the file, the
    node, its op and the fault) for anything the accelerator cannot run."""
    path = Path(path)
    graph = _load(path).graph
    mapper = _Mapper(path, graph)
    for node in graph.node:
        mapper.map(node)
    if not mapper.layers:
        raise InputError(f"{path}: the model has no Conv, Gemm or MatMul node; nothing to run on the accelerator")
    if mapper.current != mapper.output_name:
        raise InputError(f"{path}: the graph output {mapper.output_name!r} is not the end of the chain of nodes "
                         f"({mapper.current})")
    return OnnxNetwork(path=str(path), layers=tuple(mapper.layers), weights=tuple(mapper.weights),
                       input_name=mapper.input_name, input_shape=mapper.input_shape, output_name=mapper.output_name,
                       padding=mapper.padding, nodes=mapper.nodes)


def compile_onnx(network, config, *, split="auto"):
    """``network`` compiled for ``config`` (:func:`models.dqn.plan.compile_network`); a layer that does not fit the
    hardware (its RAMs, its modules, its descriptor fields) raises :class:`InputError` naming its ONNX node."""
    try:
        return compile_network(config, network.layers, network.weights, split=split)
    except ValueError as error:
        message = str(error)
        where = f"{config.modules} modules x {config.lanes} lanes"
        for layer in sorted(network.layers, key=lambda layer: -len(layer.name)):
            if message.startswith(f"{layer.name}"):
                node, op = network.nodes[layer.name]
                fault = message[len(layer.name):].lstrip(" :")
                raise InputError(f"{network.path}: node {node!r} ({op}): does not fit {where}: {fault}") from None
        raise InputError(f"{network.path}: does not fit {where}: {message}") from None


def onnx_runtime_outputs(network, inputs):
    """The model's own float32 outputs for ``inputs`` (``(N, *input_shape)``), one input at a time in ONNX Runtime
    (CPU, one thread): ``(N, outputs)``."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    options.log_severity_level = 3
    try:
        session = onnxruntime.InferenceSession(network.path, options, providers=["CPUExecutionProvider"])
        return np.stack([session.run([network.output_name], {network.input_name: sample[None]})[0].reshape(-1)
                         for sample in np.asarray(inputs, np.float32)])
    except (onnxruntime.capi.onnxruntime_pybind11_state.Fail,
            onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument) as error:
        raise InputError(f"{network.path}: ONNX Runtime cannot run the model: {' '.join(str(error).split())}") \
            from None
