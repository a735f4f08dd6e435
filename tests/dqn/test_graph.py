"""models.dqn.graph: every operation's float32 reference against a float64 loop written from its definition, the
graph's checks and its table."""

import numpy as np
import pytest

from nnaccel.models.dqn.graph import (Add, Conv, Dense, Flatten, GlobalAveragePool, Graph, Pool, Softmax, TensorInfo,
                                      reference, reference_tensors)

RNG = np.random.default_rng(7)


def random(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def one_op_graph(op, input_shape, output_shape, *extra_inputs):
    tensors = {"x": TensorInfo("x", input_shape), op.output: TensorInfo(op.output, output_shape)}
    tensors.update({name: TensorInfo(name, input_shape) for name in extra_inputs})
    return Graph(inputs=(tensors["x"], *(tensors[name] for name in extra_inputs)), outputs=(op.output,),
                 tensors=tensors, ops=(op,))


def padded(x, pads, fill):
    top, bottom, left, right = pads
    return np.pad(x.astype(np.float64), ((0, 0), (top, bottom), (left, right)), constant_values=fill)


def convolution_loop(x, weight, bias, stride, pads, groups):
    """A direct float64 loop over output channels and positions (cross-correlation, grouped)."""
    source = padded(x, pads, 0.0)
    out_channels, per_group, kernel_h, kernel_w = weight.shape
    height = (source.shape[1] - kernel_h) // stride[0] + 1
    width = (source.shape[2] - kernel_w) // stride[1] + 1
    out = np.zeros((out_channels, height, width))
    for channel in range(out_channels):
        first = channel // (out_channels // groups) * per_group
        for y in range(height):
            for x_ in range(width):
                window = source[first:first + per_group, y * stride[0]:y * stride[0] + kernel_h,
                                x_ * stride[1]:x_ * stride[1] + kernel_w]
                out[channel, y, x_] = (window * weight[channel]).sum() + bias[channel]
    return out


@pytest.mark.parametrize("channels, out_channels, kernel, stride, pads, groups", [
    (3, 5, (3, 3), (1, 1), (1, 1, 1, 1), 1),
    (1, 4, (10, 4), (2, 2), (4, 5, 1, 1), 1),          # DS-CNN's first layer: TFLite's uneven SAME padding
    (6, 6, (3, 3), (2, 1), (0, 1, 2, 0), 6),           # depthwise, rectangular stride, any border
    (4, 6, (1, 1), (1, 1), (0, 0, 0, 0), 2),           # grouped pointwise
])
def test_conv_equals_the_loop(channels, out_channels, kernel, stride, pads, groups):
    x = random(channels, 11, 9)
    op = Conv("conv", ("x",), "y", weight=random(out_channels, channels // groups, *kernel), bias=random(out_channels),
              stride=stride, pads=pads, groups=groups)
    expected = convolution_loop(x, op.weight, op.bias, stride, pads, groups)
    graph = one_op_graph(op, x.shape, expected.shape)
    np.testing.assert_allclose(reference(graph, x), expected, rtol=1e-5, atol=1e-5)
    relu = Conv("conv", ("x",), "y", weight=op.weight, bias=op.bias, stride=stride, pads=pads, groups=groups,
                relu=True)
    assert np.array_equal(reference(one_op_graph(relu, x.shape, expected.shape), x),
                          np.maximum(reference(graph, x), 0))
    assert op.depthwise == (groups == channels == out_channels)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pooling_never_counts_padding(kind):
    x = random(2, 7, 6)
    pads, kernel, stride = (1, 1, 0, 1), (3, 2), (2, 2)
    op = Pool("pool", ("x",), "y", kind=kind, kernel=kernel, stride=stride, pads=pads)
    source = padded(x, pads, np.nan)
    height, width = (source.shape[1] - 3) // 2 + 1, (source.shape[2] - 2) // 2 + 1
    expected = np.zeros((2, height, width))
    for channel, y, x_ in np.ndindex(expected.shape):
        window = source[channel, 2 * y:2 * y + 3, 2 * x_:2 * x_ + 2]
        expected[channel, y, x_] = np.nanmax(window) if kind == "max" else np.nanmean(window)   # real pixels only
    np.testing.assert_allclose(reference(one_op_graph(op, x.shape, expected.shape), x), expected, rtol=1e-6, atol=1e-6)


def test_dense_add_flatten_softmax_and_global_pool():
    x, skip = random(4, 3, 2), random(4, 3, 2)
    weight, bias = random(5, 4), random(5)
    tensors = {name: TensorInfo(name, shape) for name, shape in [
        ("x", (4, 3, 2)), ("skip", (4, 3, 2)), ("sum", (4, 3, 2)), ("pooled", (4, 1, 1)), ("flat", (4,)),
        ("dense", (5,)), ("probabilities", (5,)), ("image", (24,))]}
    ops = (Add("add", ("x", "skip"), "sum", relu=True), GlobalAveragePool("gap", ("sum",), "pooled"),
           Flatten("flatten", ("pooled",), "flat"), Dense("dense", ("flat",), "dense", weight=weight, bias=bias),
           Softmax("softmax", ("dense",), "probabilities"), Flatten("whole", ("x",), "image"))
    graph = Graph(inputs=(tensors["x"], tensors["skip"]), outputs=("probabilities", "image"), tensors=tensors,
                  ops=ops)
    values = reference_tensors(graph, {"x": x, "skip": skip})
    summed = np.maximum(x.astype(np.float64) + skip, 0)
    logits = weight.astype(np.float64) @ summed.mean(axis=(1, 2)) + bias
    np.testing.assert_allclose(values["dense"], logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values["probabilities"], np.exp(logits) / np.exp(logits).sum(), rtol=1e-5)
    assert np.array_equal(values["image"], x.reshape(-1))          # NCHW order: (c * H + y) * W + x
    batched = reference(graph, {"x": np.stack([x, skip]), "skip": np.stack([skip, x])})
    assert batched[0].shape == (2, 5) and np.array_equal(batched[1][1], skip.reshape(-1))


def test_describe_lists_operations_parameters_and_macs():
    op = Conv("stem", ("x",), "y", weight=random(8, 3, 3, 3), bias=random(8), pads=(1, 1, 1, 1), relu=True)
    lines = one_op_graph(op, (3, 5, 5), (8, 5, 5)).describe()
    assert lines[1].split()[:4] == ["stem", "Conv", "3x5x5", "->"] and "pads 1/1/1/1, ReLU" in lines[1]
    assert lines[-1] == "1 operations, 224 parameters, 5,400 MACs"


@pytest.mark.parametrize("build, message", [
    (lambda: Graph(inputs=(TensorInfo("x", (4,)),), outputs=("z",), source="m",
                   tensors={"x": TensorInfo("x", (4,)), "y": TensorInfo("y", (4,)), "z": TensorInfo("z", (4,))},
                   ops=(Softmax("late", ("y",), "z"), Softmax("early", ("x",), "y"))),
     "late: reads 'y' before any operation produces it"),
    (lambda: one_op_graph(Dense("fc", ("x",), "y", weight=random(3, 5)), (4,), (3,)),
     r"fc: weight \(3, 5\) reads 5 inputs, its input has 4"),
    (lambda: one_op_graph(Conv("conv", ("x",), "y", weight=random(2, 1, 3, 3)), (1, 5, 5), (2, 4, 4)),
     r"conv: computes 'y' of shape \(2, 3, 3\), the graph says \(2, 4, 4\)"),
    (lambda: Add("add", ("x",), "y"), r"add: Add reads 2 tensor\(s\), not 1 \(x\)"),
    (lambda: one_op_graph(Add("add", ("x", "x2"), "y"), (2, 3, 3), (2, 3, 4), "x2"),
     r"add: computes 'y' of shape \(2, 3, 3\), the graph says \(2, 3, 4\)"),
    (lambda: Conv("conv", ("x",), "y", weight=random(6, 1, 3, 3), groups=4), "conv: groups = 4 does not divide 6"),
    (lambda: Pool("pool", ("x",), "y", kind="median"), "pool: pooling kind 'median' is neither 'max' nor 'avg'"),
    (lambda: TensorInfo("t", (3, 4)), r"tensor 't': shape \(3, 4\) is neither"),
])
def test_checks_name_the_operation(build, message):
    with pytest.raises(ValueError, match=message):
        build()
