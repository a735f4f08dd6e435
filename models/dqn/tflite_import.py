"""TFLite models into the network graph (:mod:`models.dqn.graph`), and LiteRT running the same file.

:func:`read_tflite` parses a ``.tflite`` FlatBuffer with the ``tflite`` package (the schema's generated Python
classes: no TensorFlow install) into a :class:`Graph`; :func:`litert_outputs` runs the file in LiteRT
(``ai-edge-litert``, the TFLite interpreter users trust), the reference the readers are tested against.

What maps onto what (TFLite tensors are NHWC, the graph's NCHW; the batch of 1 is dropped):

``CONV_2D``
    :class:`Conv`, weight ``(Cout, kh, kw, Cin)`` -> ``(Cout, Cin, kh, kw)``.
``DEPTHWISE_CONV_2D``
    :class:`Conv` with ``groups = Cin``, weight ``(1, kh, kw, Cin * multiplier)`` -> ``(Cout, 1, kh, kw)``.
``FULLY_CONNECTED``
    :class:`Dense`, weight ``(out, in)`` as stored.  TFLite flattens an image in NHWC order, the graph in NCHW:
    a dense layer reading a flattened ``H x W x C`` image with ``H`` or ``W`` > 1 has its weight columns permuted
    from index ``(y * W + x) * C + c`` to ``(c * H + y) * W + x``, so it computes the same sums.
``AVERAGE_POOL_2D``, ``MAX_POOL_2D``
    :class:`Pool` (average pooling divides by the real pixels of a window: TFLite never counts padding).
``MEAN`` over H and W
    :class:`GlobalAveragePool` (plus a :class:`Flatten` when ``keep_dims`` is false).
``ADD``
    :class:`Add` of two tensors of one shape.
``RESHAPE``
    :class:`Flatten` of an image to ``(1, C * H * W)``; a reshape of a vector to itself vanishes.
``SOFTMAX``
    :class:`Softmax` (``beta = 1``).

Padding ``SAME`` gives ``max((out - 1) * stride + kernel - in, 0)`` pixels per axis, the odd one at the bottom /
right (TensorFlow's rule), ``VALID`` none.  Fused activations ``NONE`` and ``RELU`` are honoured; any other
(``RELU6``, ``TANH``, ...) is refused.  Weights may be float32 or "hybrid" int8 (dynamic-range quantised weights
of a float model, as in MLPerf Tiny's float32 DS-CNN): those are dequantised at import, ``scale * (q - zero
point)`` per channel, in float32.

Refused, each as one line (:class:`ModelError`) naming the file, the operation (its index and TFLite name) and the
fault: a file that is not a TFLite FlatBuffer or is truncated, no subgraph, an op the accelerator lacks (an LSTM,
a custom op, ...), a quantised model (int8 / uint8 activations), a batch other than 1, a dynamic shape.
"""

import os
import struct
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from nnaccel.models.dqn.graph import (Add, Conv, Dense, Flatten, GlobalAveragePool, Graph, GraphError, ModelError,
                                      Pool, Softmax, TensorInfo)
from nnaccel.models.shared.input_files import require_file

__all__ = ["read_tflite", "litert_outputs", "SUPPORTED_OPS"]

SUPPORTED_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D", "MEAN", "ADD",
                 "RESHAPE", "SOFTMAX")
_EXPECTED = "expected a TFLite model file (.tflite)"
_QUANTISED = ("quantised (int8) models are not supported: the accelerator's datapath is float; convert the float32 "
              "model")
_FLOAT_TYPES = {0: np.float32}          # TensorType.FLOAT32
_INTEGER_TYPES = {2: np.int32, 4: np.int64, 9: np.int8}     # INT32, INT64, INT8 (constants: shapes, axes, weights)
_ACTIVATION_TYPES = (3, 9, 7)          # UINT8, INT8, INT16: the activations of a quantised model


def _names(enumeration):
    return {value: name for name, value in vars(enumeration).items() if not name.startswith("_")}


def _read_file(path):
    require_file(path, expected=_EXPECTED, error=ModelError)
    try:
        return path.read_bytes()
    except OSError as error:
        raise ModelError(f"{path}: cannot be read: {error.strerror} ({_EXPECTED})") from None


class _Reader:
    """Walks the subgraph's operators, building the graph's tensors and operations."""

    def __init__(self, path, data):
        import tflite

        self.tflite, self.path, self.data = tflite, path, data
        self.operator_names = _names(tflite.BuiltinOperator)
        self.type_names = _names(tflite.TensorType)
        if len(data) < 8 or not tflite.Model.ModelBufferHasIdentifier(data, 0):
            raise ModelError(f"{path}: not a TFLite FlatBuffer (no 'TFL3' identifier) ({_EXPECTED})")
        self.model = tflite.Model.GetRootAs(data, 0)
        if self.model.SubgraphsLength() == 0:
            raise ModelError(f"{path}: the model has no subgraph ({_EXPECTED})")
        self.subgraph = self.model.Subgraphs(0)
        self.tensors, self.ops = {}, []
        self.flattened = {}         # graph tensor name -> (H, W, C) of the NHWC image it flattens
        self.aliases = {}           # TFLite tensor index -> graph tensor name (for reshapes that vanish)
        self.names = []             # TFLite tensor index -> its name, made unique
        for index in range(self.subgraph.TensorsLength()):
            name = self.tensor(index).Name().decode("utf-8", "replace") or f"tensor{index}"
            self.names.append(name if name not in self.names else f"{name}#{index}")

    # ---- tensors ---------------------------------------------------------------------------------------------

    def tensor(self, index):
        return self.subgraph.Tensors(index)

    def tensor_name(self, index):
        return self.aliases.get(index) or self.names[index]

    def raw_shape(self, index):
        tensor = self.tensor(index)
        return tuple(int(size) for size in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ()

    def shape(self, index, where=""):
        """The graph shape (NCHW, no batch) of a TFLite activation tensor."""
        shape = self.raw_shape(index)
        tensor = self.tensor(index)
        signature = tuple(int(size) for size in tensor.ShapeSignatureAsNumpy()) if tensor.ShapeSignatureLength() \
            else shape
        name = tensor.Name().decode("utf-8", "replace")
        if any(size < 0 for size in signature[1:]):
            raise ModelError(f"{self.path}: {where}tensor {name!r} has a dynamic shape {list(signature)}; the "
                             f"accelerator runs fixed shapes")
        if len(shape) not in (2, 4) or shape[0] != 1:
            if shape and shape[0] != 1:
                raise ModelError(f"{self.path}: {where}tensor {name!r} has batch {shape[0]} (shape {list(shape)}); "
                                 f"the accelerator runs batch 1 (one input at a time)")
            raise ModelError(f"{self.path}: {where}tensor {name!r} has shape {list(shape)}; the graph holds images "
                             f"(1, H, W, C) and vectors (1, N)")
        return (shape[3], shape[1], shape[2]) if len(shape) == 4 else (shape[1],)

    def constant(self, index, what, where):
        """A constant tensor as a NumPy array (int8 weights dequantised to float32)."""
        if index < 0:
            return None
        tensor = self.tensor(index)
        buffer = self.model.Buffers(tensor.Buffer())
        name = tensor.Name().decode("utf-8", "replace")
        if buffer is None or buffer.DataLength() == 0:
            raise ModelError(f"{self.path}: {where}{what} {name!r} is computed by the graph; the accelerator needs "
                             f"it as a constant")
        kind = tensor.Type()
        dtype = _FLOAT_TYPES.get(kind) or _INTEGER_TYPES.get(kind)
        if dtype is None:
            raise ModelError(f"{self.path}: {where}{what} {name!r} is {self.type_names.get(kind, kind)}; expected "
                             f"float32 (or int8 weights)")
        values = np.frombuffer(buffer.DataAsNumpy().tobytes(), np.dtype(dtype).newbyteorder("<"))
        values = values.reshape(self.raw_shape(index))
        if kind == 9 and what in ("weight", "bias"):
            values = self.dequantise(tensor, values, what, where)
        if values.dtype == np.float32 and not np.all(np.isfinite(values)):
            raise ModelError(f"{self.path}: {where}{what} {name!r} holds NaN or infinite values")
        return values

    def dequantise(self, tensor, values, what, where):
        """``scale * (q - zero_point)`` along the quantised dimension, in float32."""
        quantisation = tensor.Quantization()
        if quantisation is None or quantisation.ScaleLength() == 0:
            raise ModelError(f"{self.path}: {where}int8 {what} without a scale")
        scales = quantisation.ScaleAsNumpy().astype(np.float32)
        zero_points = quantisation.ZeroPointAsNumpy().astype(np.int32) if quantisation.ZeroPointLength() \
            else np.zeros(1, np.int32)
        shape = [1] * values.ndim
        if len(scales) > 1:
            shape[quantisation.QuantizedDimension()] = len(scales)
        zero_points = zero_points.reshape(shape) if len(zero_points) > 1 else zero_points[0]
        return (values.astype(np.int32) - zero_points).astype(np.float32) * scales.reshape(shape)

    # ---- checks --------------------------------------------------------------------------------------------

    def check_float_model(self):
        inputs = [self.subgraph.Inputs(i) for i in range(self.subgraph.InputsLength())]
        outputs = [self.subgraph.Outputs(i) for i in range(self.subgraph.OutputsLength())]
        for index in inputs + outputs:
            if self.tensor(index).Type() in _ACTIVATION_TYPES:
                raise ModelError(f"{self.path}: {_QUANTISED} (tensor {self.tensor(index).Name().decode()!r} is "
                                 f"{self.type_names[self.tensor(index).Type()]})")
            if self.tensor(index).Type() != 0:
                raise ModelError(f"{self.path}: tensor {self.tensor(index).Name().decode()!r} is "
                                 f"{self.type_names.get(self.tensor(index).Type())}; the accelerator runs float32")
        return inputs, outputs

    def op_name(self, operator):
        code = self.model.OperatorCodes(operator.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == self.tflite.BuiltinOperator.CUSTOM:
            return f"CUSTOM {code.CustomCode().decode('utf-8', 'replace')!r}"
        return self.operator_names.get(builtin, f"builtin {builtin}")

    def options(self, operator, cls, where):
        table = operator.BuiltinOptions()
        if table is None:
            raise ModelError(f"{self.path}: {where}has no options")
        options = cls()
        options.Init(table.Bytes, table.Pos)
        return options

    def activation(self, code, where):
        if code not in (0, 1):
            names = _names(self.tflite.ActivationFunctionType)
            raise ModelError(f"{self.path}: {where}fused activation {names.get(code, code)} is not supported (NONE "
                             f"or RELU)")
        return code == 1

    def window_pads(self, padding, shape, kernel, stride, where):
        """(top, bottom, left, right) for TFLite's SAME or VALID."""
        if padding == self.tflite.Padding.VALID:
            return (0, 0, 0, 0)
        if padding != self.tflite.Padding.SAME:
            raise ModelError(f"{self.path}: {where}padding {padding} is neither SAME nor VALID")
        pads = []
        for size, window, step in zip(shape[1:], kernel, stride):
            out = -(-size // step)
            total = max((out - 1) * step + window - size, 0)
            pads += [total // 2, total - total // 2]
        return tuple(pads)

    # ---- operations ------------------------------------------------------------------------------------------

    def add_tensor(self, index, where):
        name = self.tensor_name(index)
        self.tensors[name] = TensorInfo(name, self.shape(index, where))
        return name

    def read_operator(self, number, operator):
        kind = self.op_name(operator)
        where = f"op {number} ({kind}): "
        inputs = [operator.Inputs(i) for i in range(operator.InputsLength())]
        outputs = [operator.Outputs(i) for i in range(operator.OutputsLength())]
        if kind not in SUPPORTED_OPS:
            raise ModelError(f"{self.path}: {where}not supported by the accelerator (supported: "
                             f"{', '.join(SUPPORTED_OPS)})")
        if len(outputs) != 1:
            raise ModelError(f"{self.path}: {where}has {len(outputs)} outputs; expected 1")
        for index in inputs[:1] + outputs:
            if self.tensor(index).Type() in _ACTIVATION_TYPES:
                raise ModelError(f"{self.path}: {where}{_QUANTISED}")
        source = self.tensor_name(inputs[0])
        name = f"{kind.lower()}_{number}"
        try:
            getattr(self, kind.lower())(name, where, operator, inputs, source, outputs[0])
        except GraphError as error:
            raise ModelError(f"{self.path}: {where}{str(error).removeprefix(f'{name}: ')}") from None

    def emit(self, op, output_index, where):
        self.add_tensor(output_index, where)
        self.ops.append(op)

    def conv_2d(self, name, where, operator, inputs, source, output):
        options = self.options(operator, self.tflite.Conv2DOptions, where)
        self.check_dilation(options, where)
        weight = self.constant(inputs[1], "weight", where)              # (Cout, kh, kw, Cin)
        self.convolution(name, where, options, source, output, weight.transpose(0, 3, 1, 2), 1,
                         self.constant(inputs[2] if len(inputs) > 2 else -1, "bias", where))

    def depthwise_conv_2d(self, name, where, operator, inputs, source, output):
        options = self.options(operator, self.tflite.DepthwiseConv2DOptions, where)
        self.check_dilation(options, where)
        weight = self.constant(inputs[1], "weight", where)              # (1, kh, kw, Cin * multiplier)
        channels = self.tensors[source].shape[0]
        self.convolution(name, where, options, source, output, weight.transpose(3, 0, 1, 2), channels,
                         self.constant(inputs[2] if len(inputs) > 2 else -1, "bias", where))

    def check_dilation(self, options, where):
        dilation = (options.DilationHFactor(), options.DilationWFactor())
        if dilation != (1, 1):
            raise ModelError(f"{self.path}: {where}dilation {dilation[0]}x{dilation[1]}: dilated convolutions are "
                             f"not supported (dilation must be 1)")

    def convolution(self, name, where, options, source, output, weight, groups, bias):
        stride = (options.StrideH(), options.StrideW())
        pads = self.window_pads(options.Padding(), self.tensors[source].shape, weight.shape[2:], stride, where)
        relu = self.activation(options.FusedActivationFunction(), where)
        self.emit(Conv(name, (source,), self.tensor_name(output), weight=weight, bias=bias, stride=stride, pads=pads,
                       groups=groups, relu=relu), output, where)

    def fully_connected(self, name, where, operator, inputs, source, output):
        options = self.options(operator, self.tflite.FullyConnectedOptions, where)
        weight = self.constant(inputs[1], "weight", where)
        if len(self.tensors[source].shape) == 3:                    # TFLite flattens its input itself
            flat = f"{name}/flatten"
            self.tensors[flat] = TensorInfo(flat, (int(np.prod(self.tensors[source].shape)),))
            self.ops.append(Flatten(flat, (source,), flat))
            channels, height, width = self.tensors[source].shape
            self.flattened[flat] = (height, width, channels)
            source = flat
        image = self.flattened.get(source)
        if image and weight.ndim == 2 and weight.shape[1] == int(np.prod(image)) and max(image[:2]) > 1:
            weight = weight.reshape(weight.shape[0], *image).transpose(0, 3, 1, 2).reshape(weight.shape[0], -1)
        relu = self.activation(options.FusedActivationFunction(), where)
        self.emit(Dense(name, (source,), self.tensor_name(output), weight=weight,
                        bias=self.constant(inputs[2] if len(inputs) > 2 else -1, "bias", where), relu=relu),
                  output, where)

    def pool(self, kind, name, where, operator, source, output):
        options = self.options(operator, self.tflite.Pool2DOptions, where)
        if self.activation(options.FusedActivationFunction(), where):
            raise ModelError(f"{self.path}: {where}a fused RELU on pooling is not supported")
        kernel, stride = (options.FilterHeight(), options.FilterWidth()), (options.StrideH(), options.StrideW())
        pads = self.window_pads(options.Padding(), self.tensors[source].shape, kernel, stride, where)
        self.emit(Pool(name, (source,), self.tensor_name(output), kind=kind, kernel=kernel, stride=stride, pads=pads),
                  output, where)

    def average_pool_2d(self, name, where, operator, inputs, source, output):
        self.pool("avg", name, where, operator, source, output)

    def max_pool_2d(self, name, where, operator, inputs, source, output):
        self.pool("max", name, where, operator, source, output)

    def mean(self, name, where, operator, inputs, source, output):
        axes = sorted(int(axis) % 4 for axis in self.constant(inputs[1], "axes", where).reshape(-1))
        if len(self.tensors[source].shape) != 3 or axes != [1, 2]:
            raise ModelError(f"{self.path}: {where}a mean over axes {axes} of shape "
                             f"{list(self.raw_shape(inputs[0]))}: only the mean over H and W of an image (global "
                             f"average pooling) is supported")
        keep = self.options(operator, self.tflite.ReducerOptions, where).KeepDims()
        pooled = self.tensor_name(output) if keep else f"{name}/pooled"
        channels = self.tensors[source].shape[0]
        self.tensors[pooled] = TensorInfo(pooled, (channels, 1, 1))
        self.ops.append(GlobalAveragePool(name, (source,), pooled))
        if not keep:
            self.emit(Flatten(f"{name}/flatten", (pooled,), self.tensor_name(output)), output, where)

    def add(self, name, where, operator, inputs, source, output):
        options = self.options(operator, self.tflite.AddOptions, where)
        if len(inputs) != 2 or any(self.model.Buffers(self.tensor(index).Buffer()).DataLength() for index in inputs):
            raise ModelError(f"{self.path}: {where}only the sum of two computed tensors (a residual add) is "
                             f"supported, not of a constant")
        other = self.tensor_name(inputs[1])
        if any(self.flattened.get(tensor) for tensor in (source, other)):
            self.refuse_flattened(where)
        self.emit(Add(name, (source, other), self.tensor_name(output),
                      relu=self.activation(options.FusedActivationFunction(), where)), output, where)

    def reshape(self, name, where, operator, inputs, source, output):
        shape = self.shape(output, where)
        if len(self.tensors[source].shape) == 1:
            if shape != self.tensors[source].shape:
                raise ModelError(f"{self.path}: {where}reshapes a vector to {list(self.raw_shape(output))}")
            self.aliases[output] = source
            return
        if len(shape) != 1:
            raise ModelError(f"{self.path}: {where}reshape to {list(self.raw_shape(output))}: only flattening an "
                             f"image to (1, N) is supported")
        flat = self.tensor_name(output)
        channels, height, width = self.tensors[source].shape
        self.flattened[flat] = (height, width, channels)
        self.emit(Flatten(name, (source,), flat), output, where)

    def softmax(self, name, where, operator, inputs, source, output):
        beta = self.options(operator, self.tflite.SoftmaxOptions, where).Beta()
        if beta != 1.0:
            raise ModelError(f"{self.path}: {where}beta = {beta}: only beta = 1 is supported")
        if self.flattened.get(source):
            self.refuse_flattened(where)
        self.emit(Softmax(name, (source,), self.tensor_name(output)), output, where)

    def refuse_flattened(self, where):
        raise ModelError(f"{self.path}: {where}reads a flattened image, whose element order differs between "
                         f"TFLite (NHWC) and the graph (NCHW); only FULLY_CONNECTED may read it")

    def graph(self):
        inputs, outputs = self.check_float_model()
        infos = []
        for index in inputs:
            name = self.add_tensor(index, "input ")
            infos.append(self.tensors[name])
        for number in range(self.subgraph.OperatorsLength()):
            self.read_operator(number, self.subgraph.Operators(number))
        names = [self.tensor_name(index) for index in outputs]
        for name in names:
            if self.flattened.get(name):
                self.refuse_flattened(f"output {name!r}: ")
        try:
            return Graph(inputs=tuple(infos), outputs=tuple(names), tensors=self.tensors, ops=tuple(self.ops),
                         source=str(self.path))
        except GraphError as error:
            raise ModelError(f"{self.path}: {error}") from None


def read_tflite(path):
    """The :class:`Graph` of the TFLite model at ``path``; raises :class:`ModelError` (one line: the file, the
    operation and the fault) for a file that is not a usable model or an operation the accelerator lacks."""
    path = Path(path)
    data = _read_file(path)
    try:
        return _Reader(path, data).graph()
    except ModelError:
        raise
    except (struct.error, IndexError, UnicodeDecodeError, TypeError, ValueError) as error:     # a read past the end
        raise ModelError(f"{path}: truncated or corrupt TFLite FlatBuffer of {len(data)} bytes "
                         f"({' '.join(str(error).split())}) ({_EXPECTED})") from None


@contextmanager
def _quiet_stderr():
    """File descriptor 2 sent to /dev/null: LiteRT's C++ runtime prints its INFO lines there, not through Python."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def litert_outputs(path, inputs, *, before_softmax=False):
    """LiteRT running the model at ``path`` on ``inputs`` (``(N, *input shape)`` in NCHW, float32, one at a time on
    one thread with its default kernels and XNNPACK delegate, as a user's LiteRT would): ``(N, size)`` of the
    graph's first output (an image output flattened in NCHW order, as the graph's), and with ``before_softmax``
    the tensor a final SOFTMAX reads instead (the logits; the interpreter then keeps every intermediate tensor,
    and its warning that this is for debugging is silenced).

    The interpreter's "Created TensorFlow Lite XNNPACK delegate" line, printed by C++ on file descriptor 2, is
    kept off the user's terminal by pointing descriptor 2 at /dev/null while the interpreter is built and run.
    """
    from ai_edge_litert.interpreter import Interpreter

    inputs = np.asarray(inputs, np.float32)
    with _quiet_stderr(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Warning: Enabling `experimental_preserve_all_tensors`")
        interpreter = Interpreter(model_path=str(path), num_threads=1,
                                  experimental_preserve_all_tensors=before_softmax)
        interpreter.allocate_tensors()
        detail = interpreter.get_input_details()[0]
        target = interpreter.get_output_details()[0]["index"]
        if before_softmax:
            target = _softmax_input(Path(path), target)
        results = []
        for sample in inputs:
            nhwc = sample.transpose(1, 2, 0) if sample.ndim == 3 else sample
            interpreter.set_tensor(detail["index"], nhwc[None].astype(np.float32))
            interpreter.invoke()
            result = interpreter.get_tensor(target)[0]
            results.append((result.transpose(2, 0, 1) if result.ndim == 3 else result).reshape(-1).copy())
    return np.stack(results)


def _softmax_input(path, output_index):
    """The tensor the SOFTMAX writing tensor ``output_index`` reads (``output_index`` itself if none does): the
    file's tensor indices are the interpreter's."""
    import tflite

    model = tflite.Model.GetRootAs(path.read_bytes(), 0)
    subgraph = model.Subgraphs(0)
    for number in range(subgraph.OperatorsLength()):
        operator = subgraph.Operators(number)
        code = model.OperatorCodes(operator.OpcodeIndex())
        if max(code.BuiltinCode(), code.DeprecatedBuiltinCode()) == tflite.BuiltinOperator.SOFTMAX \
                and operator.Outputs(0) == output_index:
            return operator.Inputs(0)
    return output_index
