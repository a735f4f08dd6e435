"""A network as a graph of operations: what every front door (TFLite, ONNX) produces and the compiler lowers.

The graph is framework-neutral: float32 NumPy weights, tensors in NCHW order with the batch dimension dropped
(an image is ``(C, H, W)``, a vector ``(N,)``), operations in topological order, each reading named tensors and
writing one.  A tensor may be read by several operations (a residual branch keeps it alive), so a compiler
allocates activation memory by lifetime.

Operations (every one has ``name``, ``inputs``: tensor names, ``output``: a tensor name):

:class:`Conv`
    ``weight (Cout, Cin / groups, kh, kw)``, ``bias (Cout,)``, ``stride (sy, sx)``, zero padding ``pads (top,
    bottom, left, right)``, ``groups`` (depthwise: ``groups == Cin == Cout``), optional ReLU.
:class:`Dense`
    ``weight (out, in)``, ``bias (out,)``, optional ReLU; reads a vector.
:class:`Pool`
    ``kind`` ``"max"`` or ``"avg"``, ``kernel (kh, kw)``, ``stride (sy, sx)``, ``pads (t, b, l, r)``.  Max pooling
    ignores the padding (it never wins); average pooling divides by the number of *real* pixels in the window,
    never counting padding (TFLite's AVERAGE_POOL_2D, ONNX's ``count_include_pad = 0``).
:class:`GlobalAveragePool`
    ``(C, H, W) -> (C, 1, 1)``: the mean of each channel.
:class:`Add`
    two tensors of one shape, element-wise, optional ReLU.
:class:`Flatten`
    any tensor -> ``(size,)`` in NCHW order (index ``(c * H + y) * W + x``).
:class:`Softmax`
    over a vector.

:func:`reference` evaluates a graph in float32 NumPy: what a user's framework computes, up to the order of the
float additions (it is the yardstick the readers are tested with against LiteRT and ONNX Runtime, not the
accelerator's golden model, which fixes the order).
"""

from dataclasses import dataclass, field

import numpy as np

from nnaccel.models.shared.input_files import InputError

__all__ = ["GraphError", "ModelError", "TensorInfo", "Conv", "Dense", "Pool", "GlobalAveragePool", "Add", "Flatten", "Softmax",
           "Graph", "reference", "reference_tensors"]


class GraphError(ValueError):
    """An operation or graph that is not consistent (shapes, names, order): the message starts with the operation's
    name."""


class ModelError(InputError):
    """A model file the accelerator cannot run (or not a model at all): one line naming the file, the operation and
    the fault; ``nnaccel`` reports it with exit status 2."""


@dataclass(frozen=True)
class TensorInfo:
    """A tensor's name and shape without the batch dimension: ``(C, H, W)`` for an image, ``(N,)`` for a vector."""

    name: str
    shape: tuple

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(size) for size in self.shape))
        if len(self.shape) not in (1, 3) or min(self.shape) < 1:
            raise GraphError(f"tensor {self.name!r}: shape {self.shape} is neither (C, H, W) nor (N,) with positive "
                             f"sizes")


def _pairs(value, what, op):
    pair = tuple(int(item) for item in value)
    if len(pair) != 2 or min(pair) < 1:
        raise GraphError(f"{op}: {what} {value} must be two positive integers")
    return pair


def _borders(value, op):
    pads = tuple(int(item) for item in value)
    if len(pads) != 4 or min(pads) < 0:
        raise GraphError(f"{op}: pads {value} must be four non-negative integers (top, bottom, left, right)")
    return pads


def _windows(shape, kernel, stride, pads, op):
    """The output height and width of a sliding window over an image ``shape`` ``(C, H, W)``."""
    _, height, width = shape
    top, bottom, left, right = pads
    padded = (height + top + bottom, width + left + right)
    if kernel[0] > padded[0] or kernel[1] > padded[1]:
        raise GraphError(f"{op}: kernel {kernel[0]}x{kernel[1]} is larger than its padded input "
                         f"{padded[0]}x{padded[1]}")
    return (padded[0] - kernel[0]) // stride[0] + 1, (padded[1] - kernel[1]) // stride[1] + 1


def _image(shapes, op, index=0):
    if len(shapes[index]) != 3:
        raise GraphError(f"{op.name}: reads {op.inputs[index]!r} of shape {shapes[index]}; needs an image (C, H, W)")
    return shapes[index]


def _vector(shapes, op):
    if len(shapes[0]) != 1:
        raise GraphError(f"{op.name}: reads {op.inputs[0]!r} of shape {shapes[0]}; needs a vector (flatten it first)")
    return shapes[0]


def _window_summary(kernel, stride, pads):
    border = f", pads {'/'.join(map(str, pads))}" if any(pads) else ""
    return f"{kernel[0]}x{kernel[1]}, stride {stride[0]}x{stride[1]}{border}"


def _sliding(x, kernel, stride, pads, fill):
    """``(N, C, H, W)`` -> ``(N, C, Ho, Wo, kh, kw)``: every window, the border filled with ``fill``."""
    top, bottom, left, right = pads
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel, axis=(2, 3))
    return windows[:, :, ::stride[0], ::stride[1]]


@dataclass(frozen=True, eq=False)
class _Op:
    name: str
    inputs: tuple
    output: str

    arity = 1

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        if len(self.inputs) != self.arity:
            raise GraphError(f"{self.name}: {type(self).__name__} reads {self.arity} tensor(s), not "
                             f"{len(self.inputs)} ({', '.join(self.inputs)})")

    def summary(self):
        """The operation's parameters in a few words (the :meth:`Graph.describe` column)."""
        return ""


def _float32(array, shape, what, op):
    array = np.ascontiguousarray(array, np.float32)
    if array.shape != shape:
        raise GraphError(f"{op}: {what} has shape {array.shape}, expected {shape}")
    if not np.all(np.isfinite(array)):
        raise GraphError(f"{op}: {what} holds NaN or infinite values")
    array.flags.writeable = False
    return array


def _weight_and_bias(op, layout):
    """``op``'s weight (of ``layout``'s rank) and bias (zeros if None, one per output) as read-only float32."""
    weight = np.asarray(op.weight)
    if weight.ndim != layout.count(",") + 1:
        raise GraphError(f"{op.name}: weight of shape {weight.shape}: expected {layout}")
    object.__setattr__(op, "weight", _float32(weight, weight.shape, "weight", op.name))
    bias = np.zeros(weight.shape[0], np.float32) if op.bias is None else op.bias
    object.__setattr__(op, "bias", _float32(bias, (weight.shape[0],), "bias", op.name))


@dataclass(frozen=True, eq=False)
class Conv(_Op):
    """A 2-d convolution (cross-correlation, as every framework computes it), optionally grouped, with bias."""

    weight: np.ndarray = None
    bias: np.ndarray = None
    stride: tuple = (1, 1)
    pads: tuple = (0, 0, 0, 0)
    groups: int = 1
    relu: bool = False

    def __post_init__(self):
        super().__post_init__()
        _weight_and_bias(self, "(Cout, Cin / groups, kh, kw)")
        if self.groups < 1 or self.weight.shape[0] % self.groups:
            raise GraphError(f"{self.name}: groups = {self.groups} does not divide {self.weight.shape[0]} output "
                             f"channels")
        object.__setattr__(self, "stride", _pairs(self.stride, "stride", self.name))
        object.__setattr__(self, "pads", _borders(self.pads, self.name))

    @property
    def kernel(self):
        return self.weight.shape[2:]

    @property
    def depthwise(self):
        return self.groups > 1 and self.weight.shape[1] == 1 and self.groups == self.weight.shape[0]

    def output_shape(self, shapes):
        channels = _image(shapes, self)[0]
        if channels != self.weight.shape[1] * self.groups:
            raise GraphError(f"{self.name}: weight {self.weight.shape} with {self.groups} group(s) reads "
                             f"{self.weight.shape[1] * self.groups} channels, its input has {channels}")
        return (self.weight.shape[0], *_windows(shapes[0], self.kernel, self.stride, self.pads, self.name))

    def evaluate(self, x):
        batch, channels = x.shape[:2]
        windows = _sliding(x, self.kernel, self.stride, self.pads, 0.0)     # (N, C, Ho, Wo, kh, kw)
        height, width = windows.shape[2:4]
        per_group = channels // self.groups
        patches = windows.reshape(batch, self.groups, per_group, height * width, *self.kernel)
        patches = patches.transpose(0, 1, 3, 2, 4, 5).reshape(batch, self.groups, height * width, -1)
        weight = self.weight.reshape(self.groups, self.weight.shape[0] // self.groups, -1)
        out = np.matmul(patches, weight.transpose(0, 2, 1))                  # (N, G, Ho * Wo, Cout / G)
        out = out.transpose(0, 1, 3, 2).reshape(batch, -1, height, width) + self.bias[:, None, None]
        return np.maximum(out, np.float32(0)) if self.relu else out

    def summary(self):
        kind = "depthwise" if self.depthwise else f"groups {self.groups}" if self.groups > 1 else ""
        return ", ".join(filter(None, [_window_summary(self.kernel, self.stride, self.pads), kind,
                                       "ReLU" if self.relu else ""]))


@dataclass(frozen=True, eq=False)
class Dense(_Op):
    """A fully connected layer ``y = W x + b``, optionally ReLU'd."""

    weight: np.ndarray = None
    bias: np.ndarray = None
    relu: bool = False

    def __post_init__(self):
        super().__post_init__()
        _weight_and_bias(self, "(out, in)")

    def output_shape(self, shapes):
        if _vector(shapes, self) != (self.weight.shape[1],):
            raise GraphError(f"{self.name}: weight {self.weight.shape} reads {self.weight.shape[1]} inputs, its "
                             f"input has {shapes[0][0]}")
        return (self.weight.shape[0],)

    def evaluate(self, x):
        out = x @ self.weight.T + self.bias
        return np.maximum(out, np.float32(0)) if self.relu else out

    def summary(self):
        return "ReLU" if self.relu else ""


@dataclass(frozen=True, eq=False)
class Pool(_Op):
    """Max or average pooling over windows; average pooling never counts padding."""

    kind: str = "max"
    kernel: tuple = (2, 2)
    stride: tuple = (2, 2)
    pads: tuple = (0, 0, 0, 0)

    def __post_init__(self):
        super().__post_init__()
        if self.kind not in ("max", "avg"):
            raise GraphError(f"{self.name}: pooling kind {self.kind!r} is neither 'max' nor 'avg'")
        object.__setattr__(self, "kernel", _pairs(self.kernel, "kernel", self.name))
        object.__setattr__(self, "stride", _pairs(self.stride, "stride", self.name))
        object.__setattr__(self, "pads", _borders(self.pads, self.name))
        if self.pads[0] >= self.kernel[0] or self.pads[1] >= self.kernel[0] or self.pads[2] >= self.kernel[1] \
                or self.pads[3] >= self.kernel[1]:
            raise GraphError(f"{self.name}: pads {self.pads} as wide as the kernel {self.kernel}: a window of padding "
                             f"only")

    def output_shape(self, shapes):
        channels = _image(shapes, self)[0]
        return (channels, *_windows(shapes[0], self.kernel, self.stride, self.pads, self.name))

    def evaluate(self, x):
        if self.kind == "max":
            return _sliding(x, self.kernel, self.stride, self.pads, -np.inf).max(axis=(4, 5))
        sums = _sliding(x, self.kernel, self.stride, self.pads, 0.0).sum(axis=(4, 5), dtype=np.float32)
        ones = np.ones((1, 1, *x.shape[2:]), np.float32)
        counts = _sliding(ones, self.kernel, self.stride, self.pads, 0.0).sum(axis=(4, 5))
        return sums / counts

    def summary(self):
        return f"{self.kind}, {_window_summary(self.kernel, self.stride, self.pads)}"


@dataclass(frozen=True, eq=False)
class GlobalAveragePool(_Op):
    """The mean of each channel: ``(C, H, W) -> (C, 1, 1)``."""

    def output_shape(self, shapes):
        return (_image(shapes, self)[0], 1, 1)

    def evaluate(self, x):
        return x.mean(axis=(2, 3), dtype=np.float32, keepdims=True)


@dataclass(frozen=True, eq=False)
class Add(_Op):
    """Two tensors of one shape added element by element (a residual connection), optionally ReLU'd."""

    relu: bool = False
    arity = 2

    def output_shape(self, shapes):
        if shapes[0] != shapes[1]:
            raise GraphError(f"{self.name}: adds {self.inputs[0]!r} of shape {shapes[0]} and {self.inputs[1]!r} of "
                             f"shape {shapes[1]}; the shapes must be equal")
        return shapes[0]

    def evaluate(self, x, y):
        out = x + y
        return np.maximum(out, np.float32(0)) if self.relu else out

    def summary(self):
        return "ReLU" if self.relu else ""


@dataclass(frozen=True, eq=False)
class Flatten(_Op):
    """Any tensor as a vector in NCHW order."""

    def output_shape(self, shapes):
        return (int(np.prod(shapes[0])),)

    def evaluate(self, x):
        return x.reshape(len(x), -1)


@dataclass(frozen=True, eq=False)
class Softmax(_Op):
    """``exp(x - max x) / sum exp(x - max x)`` over a vector."""

    def output_shape(self, shapes):
        return _vector(shapes, self)

    def evaluate(self, x):
        exponentials = np.exp(x - x.max(axis=1, keepdims=True))
        return exponentials / exponentials.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Graph:
    """A network: its input tensors, output tensor names, every tensor's shape, the operations in topological order
    and where it came from (``source``: the model file).  Construction checks it: every operation reads tensors
    already produced (or graph inputs), writes a new one, and its output shape follows from its inputs' shapes;
    a fault raises :class:`GraphError` (a ``ValueError``) naming the operation."""

    inputs: tuple
    outputs: tuple
    tensors: dict
    ops: tuple
    source: str = ""
    parameters: int = field(init=False, default=0)

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "ops", tuple(self.ops))
        if not self.inputs or not self.outputs:
            raise GraphError("a graph needs at least one input and one output")
        known = {info.name for info in self.inputs}
        for info in self.inputs:
            if self.tensors.get(info.name) != info:
                raise GraphError(f"input {info.name!r}: not in the graph's tensors as {info}")
        names = set()
        for op in self.ops:
            if op.name in names:
                raise GraphError(f"{op.name}: two operations have this name")
            names.add(op.name)
            missing = [name for name in op.inputs if name not in known]
            if missing:
                raise GraphError(f"{op.name}: reads {', '.join(map(repr, missing))} before any operation produces it")
            if op.output in known:
                raise GraphError(f"{op.name}: writes {op.output!r}, which is already produced")
            if op.output not in self.tensors:
                raise GraphError(f"{op.name}: writes {op.output!r}, which is not in the graph's tensors")
            shape = op.output_shape([self.tensors[name].shape for name in op.inputs])
            if shape != self.tensors[op.output].shape:
                raise GraphError(f"{op.name}: computes {op.output!r} of shape {shape}, the graph says "
                                 f"{self.tensors[op.output].shape}")
            known.add(op.output)
        unknown = [name for name in self.outputs if name not in known]
        if unknown:
            raise GraphError(f"output {unknown[0]!r} is produced by no operation")
        object.__setattr__(self, "parameters", sum(op.weight.size + op.bias.size for op in self.ops
                                                   if isinstance(op, (Conv, Dense))))

    def macs(self, op):
        """Multiply-accumulates of a Conv or Dense operation (0 for any other)."""
        if isinstance(op, Conv):
            return int(np.prod(self.tensors[op.output].shape)) * int(np.prod(op.weight.shape[1:]))
        return op.weight.size if isinstance(op, Dense) else 0

    def describe(self):
        """One line per operation: name, kind, input shapes -> output shape, parameters; a header and a total."""
        def shape(name):
            return "x".join(map(str, self.tensors[name].shape))

        rows = [("operation", "kind", "shape", "details", "MACs")]
        for op in self.ops:
            shapes = f"{' + '.join(shape(name) for name in op.inputs)} -> {shape(op.output)}"
            macs = f"{self.macs(op):,}" if self.macs(op) else ""
            rows.append((op.name, type(op).__name__, shapes, op.summary(), macs))
        widths = [max(len(row[column]) for row in rows) for column in range(4)]
        lines = ["  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths)) + f"  {row[4]:>10}"
                 for row in rows]
        total = sum(self.macs(op) for op in self.ops)
        lines.append(f"{len(self.ops)} operations, {self.parameters:,} parameters, {total:,} MACs")
        return [line.rstrip() for line in lines]


def reference_tensors(graph, x):
    """Every tensor of ``graph`` evaluated in float32 for the input ``x``: ``{name: array}``.

    ``x`` is one input of the graph's input shape or a batch ``(N, *shape)`` (the arrays then have the batch
    dimension too); a graph with several inputs takes a ``{name: array}`` dict.
    """
    given = x if isinstance(x, dict) else {graph.inputs[0].name: x}
    if len(given) != len(graph.inputs) or set(given) != {info.name for info in graph.inputs}:
        raise GraphError(f"the graph's inputs are {', '.join(info.name for info in graph.inputs)}")
    first = graph.inputs[0]
    batched = np.ndim(given[first.name]) == len(first.shape) + 1
    values = {}
    for info in graph.inputs:
        array = np.asarray(given[info.name], np.float32)
        array = array if batched else array[None]
        if array.shape[1:] != info.shape:
            raise GraphError(f"input {info.name!r}: shape {array.shape[1:]}, expected {info.shape}")
        values[info.name] = array
    for op in graph.ops:
        values[op.output] = np.asarray(op.evaluate(*(values[name] for name in op.inputs)), np.float32)
    return values if batched else {name: value[0] for name, value in values.items()}


def reference(graph, x):
    """The graph's output for ``x`` (see :func:`reference_tensors`) in float32; a tuple when it has several."""
    values = reference_tensors(graph, x)
    outputs = tuple(values[name] for name in graph.outputs)
    return outputs[0] if len(outputs) == 1 else outputs
