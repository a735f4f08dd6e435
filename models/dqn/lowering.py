"""A network graph (:mod:`models.dqn.graph`) lowered onto the DQN accelerator's layers: where each op runs.

Every op of the graph becomes a layer of :mod:`models.dqn.plan` (a convolution, a dense layer or an add on the
matrix modules), vanishes into one, or runs on the host.  The layers form the same graph: each reads the layer
that computes its input (``source``; an add names both addends), so residual branches keep a tensor alive across
layers and the compiler allocates activation memory by lifetimes:

``Conv`` (group 1)
    a :class:`ConvLayer` with the op's zero padding per side, kernel and strides; the weight ``(out, in, kh, kw)``
    becomes the compiler's ``(in, kh, kw, out)``.
``Conv`` (depthwise or grouped)
    a :class:`ConvLayer` with ``groups``: the compiler runs it in channel tiles of whole groups, each reading only
    its groups' input channels (a depthwise layer: ``lanes`` channels per pass, ``lanes * kh * kw`` products per
    output of which ``kh * kw`` have a non-zero weight: a module's lanes share one input element);
    :attr:`LoweredNetwork.notes` says so per layer.
``Pool`` (average, no padding)
    a depthwise convolution whose every weight is ``1 / (kh * kw)`` rounded to float32: the products are summed in
    the adder tree's order, so the mean differs from a divide-after-sum by float32 rounding.
``Pool`` (max)
    a max pool (:class:`ConvLayer` with ``maximum``): a depthwise pass per channel (one lane of each module busy)
    with weights 1.0 and bias ``-inf``, the matrix modules taking the largest product instead of the sum; it needs
    ``DqnConfig(max_pooling=True)`` (the compiler refuses it otherwise, naming the option).  The feeder pads with
    ``+0``, not ``-inf``: a padded max pool is taken only on a non-negative input (after a ReLU or another max pool
    of one).
``Pool`` (average over the whole map) or ``GlobalAveragePool``, read only by [``Flatten``] ``Dense``
    folded into the dense layer: ``dense(mean(x)) = sum_c,y,x x[c, y, x] * W[n, c] / (H * W)``, a dense layer over
    the ``[C, H, W]`` image with weights ``W[n, c] / (H * W)`` (float32).  Otherwise the global mean is a
    depthwise convolution with an ``H x W`` kernel.
``Add``
    an :class:`AddLayer` of the two addends' layers (ReLU fused), run as the add pass.
``Flatten``
    nothing: a dense layer reads a convolution's image in channel-major order, which is the graph's.
``Softmax`` (last)
    the host: the accelerator's outputs are the logits; :func:`softmax` turns them into probabilities.

Refused with one line naming the op (:class:`~models.shared.input_files.InputError`): padded max pooling of an
input that may be negative, padded average pooling, an op after a ``Softmax``, and a graph whose output is not its
last layer's.
"""

from dataclasses import dataclass, replace

import numpy as np

from nnaccel.models.dqn import graph as g
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer
from nnaccel.models.shared.input_files import InputError

__all__ = ["LoweredNetwork", "lower_graph", "softmax"]


@dataclass(frozen=True)
class LoweredNetwork:
    """A graph as the compiler's chain of layers.

    ``layers`` and ``weights`` (one float32 ``(weight, bias)`` pair per layer, the compiler's layout) are what
    :func:`models.dqn.plan.compile_network` takes; ``input_shape`` is the graph input without the batch;
    ``sources`` maps a layer's name to the graph ops it computes; ``host_ops`` are the ops left to the host (a
    final softmax); ``notes`` say where each op went and what it costs.
    """

    graph: object
    layers: tuple
    weights: tuple
    input_shape: tuple
    sources: dict
    host_ops: tuple
    notes: tuple

    @property
    def softmax_on_host(self):
        return any(isinstance(op, g.Softmax) for op in self.host_ops)

    def describe(self):
        """One line per layer: the graph ops it computes and its shape on the accelerator."""
        lines = []
        for layer in self.layers:
            ops = " + ".join(self.sources[layer.name])
            if isinstance(layer, ConvLayer):
                kind = "max pool" if layer.maximum else "conv"
                shape = (f"{kind} {layer.in_channels}x{layer.in_height}x{layer.in_width} -> {layer.out_channels}x"
                         f"{layer.out_height}x{layer.out_width}, kernel {layer.kernel_height}x{layer.kernel_width}, "
                         f"stride {layer.stride_y}x{layer.stride_x}")
                pads = (layer.pad_top, layer.pad_bottom, layer.pad_left, layer.pad_right)
                if any(pads):
                    shape += f", pad {'/'.join(map(str, pads))} (top/bottom/left/right)"
                if layer.groups > 1 and not layer.maximum:
                    shape += f", {layer.groups} groups"
            elif isinstance(layer, AddLayer):
                shape = f"add {layer.source or 'input'} + {layer.skip or 'input'}"
            else:
                shape = f"dense {layer.inputs} -> {layer.outputs}"
            lines.append(f"{layer.name:<14} {ops:<28} {shape}{', ReLU' if layer.relu else ''}")
        for op in self.host_ops:
            lines.append(f"{'(host)':<14} {op.name:<28} {type(op).__name__.lower()} of the last layer's outputs")
        return lines


def softmax(logits):
    """Softmax over the last axis (float64, as the host computes it)."""
    logits = np.asarray(logits, np.float64)
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _refuse(graph, op, fault):
    return InputError(f"{graph.source}: op {op.name!r} ({type(op).__name__}): {fault}")


def _layer_name(op):
    return op.name.replace(" ", "_")[:40] or type(op).__name__


def _conv_weight(op):
    """The compiler's ``(in / groups, kh, kw, out)`` weight of a Conv op."""
    return np.ascontiguousarray(op.weight.transpose(1, 2, 3, 0), dtype=np.float32)


def _depthwise_mean(channels, kernel):
    """Weights ``(1, kh, kw, channels)`` and zero bias of a depthwise convolution averaging each ``kernel`` window."""
    kh, kw = kernel
    return np.full((1, kh, kw, channels), np.float32(1.0 / (kh * kw))), np.zeros(channels, np.float32)


class _Lowering:
    def __init__(self, graph):
        self.graph = graph
        self.layers, self.weights, self.sources, self.notes, self.host_ops = [], [], {}, [], []
        self.producer = {graph.inputs[0].name: ""}      # graph tensor -> the layer that holds it ("" the input)
        self.non_negative = set()                       # layers whose outputs are >= 0 (ReLU, max pool of those)

    def add(self, layer, weight, bias, ops, note=None):
        if layer.name in self.sources:
            layer = replace(layer, name=f"{layer.name}_{len(self.layers)}")
        self.layers.append(layer)
        self.weights.append((None if weight is None else np.asarray(weight, np.float32),
                             None if bias is None else np.asarray(bias, np.float32)))
        self.sources[layer.name] = tuple(op.name for op in ops)
        if layer.relu:
            self.non_negative.add(layer.name)
        self.producer[ops[-1].output] = layer.name
        if note:
            self.notes.append(f"{layer.name}: {note}")

    def conv(self, op, shape):
        channels, height, width = shape
        out_channels = op.weight.shape[0]
        layer = ConvLayer(_layer_name(op), channels, (height, width), out_channels, op.weight.shape[2:],
                          tuple(op.stride), relu=op.relu, padding=tuple(op.pads), groups=op.groups,
                          source=self.producer[op.inputs[0]])
        note = None
        if op.groups > 1:
            kind = "depthwise" if op.groups == channels == out_channels else f"{op.groups}-group"
            note = (f"{kind} convolution in channel tiles of whole groups, each pass reading only its groups' "
                    f"input channels")
        self.add(layer, _conv_weight(op), op.bias, [op], note)

    def mean_pool(self, op, shape, kernel, stride):
        channels, height, width = shape
        weight, bias = _depthwise_mean(channels, kernel)
        layer = ConvLayer(_layer_name(op), channels, (height, width), channels, kernel, stride, relu=False,
                          groups=channels, source=self.producer[op.inputs[0]])
        self.add(layer, weight, bias, [op], f"average pooling as a depthwise convolution with weights "
                                            f"1/{kernel[0] * kernel[1]} (float32)")

    def max_pool(self, op, shape):
        channels, height, width = shape
        source = self.producer[op.inputs[0]]
        if any(op.pads) and source not in self.non_negative:
            raise _refuse(self.graph, op, f"padded max pooling (pads {tuple(op.pads)}) of an input that may be "
                                          f"negative: the accelerator pads with +0, not -inf")
        layer = ConvLayer(_layer_name(op), channels, (height, width), channels, tuple(op.kernel), tuple(op.stride),
                          relu=False, padding=tuple(op.pads), groups=channels, source=source, maximum=True)
        weight = np.ones((1, *op.kernel, channels), np.float32)
        self.add(layer, weight, np.full(channels, -np.inf, np.float32), [op],
                 "max pooling in the matrix modules' max mode, one channel per pass (weights 1.0, seed -inf)")
        if source in self.non_negative:
            self.non_negative.add(self.layers[-1].name)

    def dense(self, op, inputs, folded=None):
        weight = op.weight.T
        ops, source = [op], self.producer[op.inputs[0]]
        note = None
        if folded is not None:
            pool, shape = folded
            channels, height, width = shape
            spread = np.repeat(weight, height * width, axis=0) / np.float32(height * width)
            weight, inputs, ops, source = spread.astype(np.float32), channels * height * width, [pool, op], \
                self.producer[pool.inputs[0]]
            note = (f"{pool.name} (global average pooling) folded into {op.name}: a dense layer over the "
                    f"{channels}x{height}x{width} map with weights W / {height * width}")
        self.add(DenseLayer(_layer_name(op), inputs, op.weight.shape[0], relu=op.relu, source=source), weight, op.bias,
                 ops, note)

    def residual_add(self, op):
        first, second = (self.producer[name] for name in op.inputs)
        self.add(AddLayer(_layer_name(op), skip=second, relu=op.relu, source=first), None, None, [op])


def _is_global(op, shape):
    if isinstance(op, g.GlobalAveragePool):
        return True
    return (isinstance(op, g.Pool) and op.kind == "avg" and not any(op.pads)
            and tuple(op.kernel) == tuple(shape[1:]))


def _folding_dense(op, consumers):
    """The Dense op that alone reads global pooling ``op``'s output (through a Flatten or not), or None."""
    readers = consumers.get(op.output, [])
    if len(readers) == 1 and isinstance(readers[0], g.Flatten):
        readers = consumers.get(readers[0].output, [])
    return readers[0] if len(readers) == 1 and isinstance(readers[0], g.Dense) else None


def lower_graph(graph):
    """The :class:`LoweredNetwork` of ``graph`` (a :class:`models.dqn.graph.Graph`); raises InputError."""
    if len(graph.inputs) != 1 or len(graph.outputs) != 1:
        raise InputError(f"{graph.source}: the graph has {len(graph.inputs)} inputs and {len(graph.outputs)} "
                         f"outputs; the accelerator runs graphs with one of each")
    lowering = _Lowering(graph)
    consumers = {}
    for op in graph.ops:
        for name in op.inputs:
            consumers.setdefault(name, []).append(op)
    folded = {}                                   # Dense op -> the global pooling folded into it
    for op in graph.ops:
        if lowering.host_ops:
            raise _refuse(graph, op, "follows the Softmax, which runs on the host; only a final Softmax can")
        shape = graph.tensors[op.inputs[0]].shape
        if isinstance(op, g.Conv):
            lowering.conv(op, shape)
        elif isinstance(op, g.Dense):
            if op in folded:
                lowering.dense(op, None, folded=folded[op])
            else:
                lowering.dense(op, int(np.prod(shape)))
        elif isinstance(op, g.Add):
            lowering.residual_add(op)
        elif _is_global(op, shape) and _folding_dense(op, consumers) is not None:
            folded[_folding_dense(op, consumers)] = (op, shape)
            lowering.producer[op.output] = None          # read only by the dense layer it is folded into
        elif _is_global(op, shape):
            lowering.mean_pool(op, shape, tuple(shape[1:]), (1, 1))
        elif isinstance(op, g.Pool) and op.kind == "avg":
            if any(op.pads):
                raise _refuse(graph, op, f"padded average pooling (pads {tuple(op.pads)}) divides border windows "
                                         f"by fewer elements; not supported")
            lowering.mean_pool(op, shape, tuple(op.kernel), tuple(op.stride))
        elif isinstance(op, g.Pool):
            lowering.max_pool(op, shape)
        elif isinstance(op, g.Flatten):
            lowering.producer[op.output] = lowering.producer[op.inputs[0]]
        elif isinstance(op, g.Softmax):
            lowering.host_ops.append(op)
            lowering.notes.append(f"{op.name}: softmax on the host (the accelerator's outputs are the logits)")
        else:
            raise _refuse(graph, op, "not an op the accelerator runs")
    if not lowering.layers:
        raise InputError(f"{graph.source}: the graph has no Conv or Dense op; nothing to run on the accelerator")
    output = graph.outputs[0] if not lowering.host_ops else lowering.host_ops[-1].inputs[0]
    if lowering.producer.get(output) != lowering.layers[-1].name:
        raise InputError(f"{graph.source}: the graph's output {output!r} is not computed by its last layer "
                         f"{lowering.layers[-1].name!r}; the accelerator returns the last layer's outputs")
    return LoweredNetwork(graph=graph, layers=tuple(lowering.layers), weights=tuple(lowering.weights),
                          input_shape=tuple(graph.inputs[0].shape), sources=lowering.sources,
                          host_ops=tuple(lowering.host_ops), notes=tuple(lowering.notes))
