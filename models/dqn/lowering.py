"""A network graph (:mod:`models.dqn.graph`) lowered onto the DQN accelerator's layers: where each op runs.

Every op of the graph becomes a layer of :mod:`models.dqn.plan` (a convolution or a dense layer on the matrix
modules), vanishes into one, or runs on the host:

``Conv`` (group 1)
    a :class:`ConvLayer` with the op's zero padding per side, kernel and strides; the weight ``(out, in, kh, kw)``
    becomes the compiler's ``(in, kh, kw, out)``.
``Conv`` (depthwise or grouped)
    a :class:`ConvLayer` whose weight is block-diagonal: output channel ``n`` of group ``g`` has the op's weights
    on the input channels of ``g`` and zeros elsewhere.  The matrix modules multiply the zeros too (every output
    lane shares its scalar, the input element, with the other lanes of its module), so a depthwise layer costs
    ``in_channels`` times its MACs; :attr:`LoweredNetwork.notes` says so per layer.
``Pool`` (average, no padding)
    a depthwise convolution whose every weight is ``1 / (kh * kw)`` rounded to float32: the products are summed in
    the adder tree's order, so the mean differs from a divide-after-sum by float32 rounding.
``Pool`` (average over the whole map) or ``GlobalAveragePool``, then [``Flatten``] ``Dense``
    folded into the dense layer: ``dense(mean(x)) = sum_c,y,x x[c, y, x] * W[n, c] / (H * W)``, a dense layer over
    the ``[C, H, W]`` image with weights ``W[n, c] / (H * W)`` (float32).  Without a dense layer after it, the
    global mean is a depthwise convolution with an ``H x W`` kernel.
``Flatten``
    nothing: a dense layer reads a convolution's image in channel-major order, which is the graph's.
``Softmax`` (last)
    the host: the accelerator's outputs are the logits; :func:`softmax` turns them into probabilities.

Refused with one line naming the op (:class:`~models.shared.input_files.InputError`): max pooling, padded
average pooling, a graph that is not a chain (a residual ``Add``), and anything after a ``Softmax``.
"""

from dataclasses import dataclass, replace

import numpy as np

from nnaccel.models.dqn import graph as g
from nnaccel.models.dqn.network import ConvLayer, DenseLayer
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
                shape = (f"conv {layer.in_channels}x{layer.in_height}x{layer.in_width} -> {layer.out_channels}x"
                         f"{layer.out_height}x{layer.out_width}, kernel {layer.kernel_height}x{layer.kernel_width}, "
                         f"stride {layer.stride_y}x{layer.stride_x}")
                pads = (layer.pad_top, layer.pad_bottom, layer.pad_left, layer.pad_right)
                if any(pads):
                    shape += f", pad {'/'.join(map(str, pads))} (top/bottom/left/right)"
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


def _conv_weight(op, in_channels):
    """The compiler's ``(in, kh, kw, out)`` weight of a Conv op; block-diagonal when it is grouped."""
    out_channels, per_group, kh, kw = op.weight.shape
    if op.groups == 1:
        return np.ascontiguousarray(op.weight.transpose(1, 2, 3, 0), dtype=np.float32)
    full = np.zeros((in_channels, kh, kw, out_channels), np.float32)
    outputs_per_group = out_channels // op.groups
    for out_channel in range(out_channels):
        first = out_channel // outputs_per_group * per_group
        full[first:first + per_group, :, :, out_channel] = op.weight[out_channel]
    return full


def _depthwise_mean(channels, kernel):
    """Weights and zero bias of a depthwise convolution averaging each ``kernel`` window."""
    kh, kw = kernel
    weight = np.zeros((channels, kh, kw, channels), np.float32)
    weight[np.arange(channels), :, :, np.arange(channels)] = np.float32(1.0 / (kh * kw))
    return weight, np.zeros(channels, np.float32)


class _Lowering:
    def __init__(self, graph):
        self.graph = graph
        self.layers, self.weights, self.sources, self.notes, self.host_ops = [], [], {}, [], []

    def add(self, layer, weight, bias, ops, note=None):
        if layer.name in self.sources:
            layer = replace(layer, name=f"{layer.name}_{len(self.layers)}")
        self.layers.append(layer)
        self.weights.append((np.asarray(weight, np.float32), np.asarray(bias, np.float32)))
        self.sources[layer.name] = tuple(op.name for op in ops)
        if note:
            self.notes.append(f"{layer.name}: {note}")

    def conv(self, op, shape):
        channels, height, width = shape
        weight = _conv_weight(op, channels)
        layer = ConvLayer(_layer_name(op), channels, (height, width), op.weight.shape[0], op.weight.shape[2:],
                          tuple(op.stride), relu=op.relu, padding=tuple(op.pads))
        note = None
        if op.groups > 1:
            dense_products = channels * op.weight.shape[2] * op.weight.shape[3]
            note = (f"{'depthwise' if op.groups == channels else f'{op.groups}-group'} convolution as a block-diagonal "
                    f"one: {dense_products} products per output where the op has "
                    f"{dense_products // op.groups} (the others multiply zero weights)")
        self.add(layer, weight, op.bias, [op], note)

    def mean_pool(self, op, shape, kernel, stride):
        channels, height, width = shape
        weight, bias = _depthwise_mean(channels, kernel)
        layer = ConvLayer(_layer_name(op), channels, (height, width), channels, kernel, stride, relu=False)
        self.add(layer, weight, bias, [op], f"average pooling as a depthwise convolution with weights "
                                            f"1/{kernel[0] * kernel[1]} (float32)")

    def dense(self, op, inputs, folded=None):
        weight = op.weight.T
        ops = [op]
        note = None
        if folded is not None:
            pool, shape = folded
            channels, height, width = shape
            spread = np.repeat(weight, height * width, axis=0) / np.float32(height * width)
            weight, inputs, ops = spread.astype(np.float32), channels * height * width, [pool, op]
            note = (f"{pool.name} (global average pooling) folded into {op.name}: a dense layer over the "
                    f"{channels}x{height}x{width} map with weights W / {height * width}")
        self.add(DenseLayer(_layer_name(op), inputs, op.weight.shape[0], relu=op.relu), weight, op.bias, ops, note)


def _is_global(op, shape):
    if isinstance(op, g.GlobalAveragePool):
        return True
    return (isinstance(op, g.Pool) and op.kind == "avg" and not any(op.pads)
            and tuple(op.kernel) == tuple(shape[1:]))


def lower_graph(graph):
    """The :class:`LoweredNetwork` of ``graph`` (a :class:`models.dqn.graph.Graph`); raises InputError."""
    if len(graph.inputs) != 1 or len(graph.outputs) != 1:
        raise InputError(f"{graph.source}: the graph has {len(graph.inputs)} inputs and {len(graph.outputs)} "
                         f"outputs; the accelerator runs graphs with one of each")
    lowering = _Lowering(graph)
    current = graph.inputs[0].name
    ops = list(graph.ops)
    index = 0
    while index < len(ops):
        op = ops[index]
        if tuple(op.inputs) != (current,):
            what = ("a residual add (two inputs)" if isinstance(op, g.Add) else
                    f"it reads {', '.join(op.inputs)}, not the previous op's output {current!r}")
            raise _refuse(graph, op, f"the accelerator runs chains of ops; {what} needs the element-wise add pass, "
                                     f"not in hardware yet")
        shape = graph.tensors[current].shape
        if lowering.host_ops:
            raise _refuse(graph, op, "follows the Softmax, which runs on the host; only a final Softmax can")
        if isinstance(op, g.Conv):
            lowering.conv(op, shape)
        elif isinstance(op, g.Dense):
            lowering.dense(op, int(np.prod(shape)))
        elif _is_global(op, shape):
            following = ops[index + 1:index + 3]
            if following and isinstance(following[0], g.Flatten):
                following = following[1:]
            if following and isinstance(following[0], g.Dense):
                dense = following[0]
                lowering.dense(dense, None, folded=(op, shape))
                index = ops.index(dense)
                current = dense.output
                index += 1
                continue
            lowering.mean_pool(op, shape, tuple(shape[1:]), (1, 1))
        elif isinstance(op, g.Pool) and op.kind == "avg":
            if any(op.pads):
                raise _refuse(graph, op, f"padded average pooling (pads {tuple(op.pads)}) divides border windows "
                                         f"by fewer elements; not supported")
            lowering.mean_pool(op, shape, tuple(op.kernel), tuple(op.stride))
        elif isinstance(op, g.Pool):
            raise _refuse(graph, op, "max pooling is not in the accelerator's hardware yet")
        elif isinstance(op, g.Flatten):
            pass
        elif isinstance(op, g.Softmax):
            lowering.host_ops.append(op)
            lowering.notes.append(f"{op.name}: softmax on the host (the accelerator's outputs are the logits)")
        else:
            raise _refuse(graph, op, "not an op the accelerator runs")
        current = op.output
        index += 1
    if not lowering.layers:
        raise InputError(f"{graph.source}: the graph has no Conv or Dense op; nothing to run on the accelerator")
    return LoweredNetwork(graph=graph, layers=tuple(lowering.layers), weights=tuple(lowering.weights),
                          input_shape=tuple(graph.inputs[0].shape), sources=lowering.sources,
                          host_ops=tuple(lowering.host_ops), notes=tuple(lowering.notes))
