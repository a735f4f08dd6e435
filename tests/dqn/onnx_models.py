"""Small ONNX models built with ``onnx.helper`` for the import tests: seeded float32 weights, one chain of nodes."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET, IR_VERSION = 17, 8


class GraphBuilder:
    """Nodes appended in order, each reading the previous node's output (unless told otherwise)."""

    def __init__(self, input_shape, seed=0):
        self.rng = np.random.default_rng(seed)
        self.input_shape = list(input_shape)
        self.nodes, self.initializers, self.current, self.count = [], [], "input", 0

    def constant(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def uniform(self, shape, fan_in):
        limit = np.sqrt(6.0 / fan_in)
        return self.rng.uniform(-limit, limit, shape).astype(np.float32)

    def bias(self, name, outputs):
        return self.constant(name, self.rng.uniform(-0.1, 0.1, outputs).astype(np.float32))

    def node(self, op, extra_inputs=(), *, inputs=None, name=None, **attributes):
        self.count += 1
        name = name or f"{op.lower()}{self.count}"
        output = f"{name}_out"
        inputs = inputs if inputs is not None else [self.current]
        self.nodes.append(helper.make_node(op, inputs + list(extra_inputs), [output], name=name, **attributes))
        self.current = output
        return output

    def conv(self, out_channels, in_channels, kernel, *, bias=True, name=None, **attributes):
        name = name or f"conv{self.count + 1}"
        kernel = kernel if isinstance(kernel, tuple) else (kernel, kernel)
        shape = (out_channels, in_channels, *kernel)
        extra = [self.constant(f"{name}.w", self.uniform(shape, in_channels * kernel[0] * kernel[1]))]
        if bias:
            extra.append(self.bias(f"{name}.b", out_channels))
        return self.node("Conv", extra, name=name, kernel_shape=list(kernel), **attributes)

    def gemm(self, inputs, outputs, *, trans_b=0, name=None, **attributes):
        name = name or f"gemm{self.count + 1}"
        weight = self.uniform((outputs, inputs) if trans_b else (inputs, outputs), inputs)
        return self.node("Gemm", [self.constant(f"{name}.w", weight), self.bias(f"{name}.b", outputs)], name=name,
                         transB=trans_b, **attributes)

    def matmul_add(self, inputs, outputs, *, name=None):
        name = name or f"matmul{self.count + 1}"
        self.node("MatMul", [self.constant(f"{name}.w", self.uniform((inputs, outputs), inputs))], name=name)
        return self.node("Add", [self.bias(f"{name}.b", outputs)], name=f"{name}_bias")

    def model(self, output_shape=(1, "outputs")):
        graph = helper.make_graph(
            self.nodes, "test", [helper.make_tensor_value_info("input", TensorProto.FLOAT, self.input_shape)],
            [helper.make_tensor_value_info(self.current, TensorProto.FLOAT, output_shape)],
            initializer=self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        return model

    def save(self, path, output_shape=(1, "outputs")):
        onnx.save(self.model(output_shape), path)
        return path


def small_cnn(path):
    """(1, 2, 8, 8) -> Conv 3x3 stride 1 with a zero border of 1 -> ReLU -> Conv 2x2 stride 2 -> ReLU -> Flatten ->
    Gemm (transB) 64 -> 5: fits :data:`hw.dqn.config.REDUCED_CONFIG`."""
    graph = GraphBuilder((1, 2, 8, 8), seed=1)
    graph.conv(4, 2, 3, pads=[1, 1, 1, 1])
    graph.node("Relu")
    graph.conv(4, 4, 2, strides=[2, 2])
    graph.node("Relu")
    graph.node("Flatten", axis=1)
    graph.gemm(64, 5, trans_b=1)
    return graph.save(path, [1, 5])


def mlp(path):
    """(1, 12) -> MatMul + Add 12 -> 8 -> ReLU -> Reshape (1, -1) -> Gemm 8 -> 6 -> ReLU -> Gemm 6 -> 3."""
    graph = GraphBuilder((1, 12), seed=2)
    graph.matmul_add(12, 8)
    hidden = graph.node("Relu")
    shape = graph.node("Constant", inputs=[], name="shape",
                       value=numpy_helper.from_array(np.array([1, -1], np.int64)))
    graph.node("Reshape", [shape], inputs=[hidden], name="reshape")
    graph.gemm(8, 6)
    graph.node("Relu")
    graph.gemm(6, 3)
    return graph.save(path, [1, 3])
