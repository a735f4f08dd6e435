"""ONNX models for the import tests: small chains built with ``onnx.helper`` (seeded float32 weights), and everyday
networks written in PyTorch and exported by its own exporter (:data:`EVERYDAY_MODELS`)."""

import warnings

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


# ---- everyday networks as people write them in PyTorch, exported by torch.onnx ------------------------------------

def torch_export(path, module, input_shape, *, seed, keep_batch_norm=False):
    """``module`` (built under ``torch.manual_seed(seed)``, in eval mode) exported by the TorchScript exporter (no
    onnxscript needed); batch norms get seeded running statistics.  ``keep_batch_norm`` turns the exporter's
    constant folding off, so a BatchNormalization after a Conv stays in the file (the importer folds it)."""
    import torch

    generator = torch.Generator().manual_seed(seed + 1)
    for layer in module.modules():
        if isinstance(layer, (torch.nn.BatchNorm1d, torch.nn.BatchNorm2d)):
            size = layer.num_features
            layer.running_mean.copy_(torch.randn(size, generator=generator) * 0.2)
            layer.running_var.copy_(torch.rand(size, generator=generator) + 0.5)
            layer.weight.data.copy_(torch.rand(size, generator=generator) + 0.5)
            layer.bias.data.copy_(torch.randn(size, generator=generator) * 0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the TorchScript exporter is deprecated in favour of the dynamo one
        torch.onnx.export(module.eval(), torch.zeros(1, *input_shape), str(path), dynamo=False,
                          input_names=["input"], output_names=["output"], do_constant_folding=not keep_batch_norm)
    return path


def _torch():
    import torch

    torch.manual_seed(0)
    return torch.nn


def padded_conv_chain(path):
    """(1, 2, 10, 10): three 3x3 convolutions, each with a zero border of 1 (the last stride 2), ReLUs, a dense
    layer."""
    nn = _torch()
    module = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(),
                           nn.Conv2d(6, 4, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(100, 5))
    return torch_export(path, module, (2, 10, 10), seed=1)


def lenet5(path):
    """(1, 1, 28, 28) -> 10, LeNet-5 as the textbooks write it: conv 5x5 (padded to keep 28 x 28), ReLU, 2x2 max
    pooling, conv 5x5, ReLU, max pooling, ``view`` to a vector, three dense layers."""
    nn = _torch()
    functional = nn.functional

    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(1, 6, 5, padding=2), nn.Conv2d(6, 16, 5)
            self.fc1, self.fc2, self.fc3 = nn.Linear(16 * 5 * 5, 120), nn.Linear(120, 84), nn.Linear(84, 10)

        def forward(self, x):
            x = functional.max_pool2d(functional.relu(self.conv1(x)), 2)
            x = functional.max_pool2d(functional.relu(self.conv2(x)), 2)
            x = x.view(x.size(0), -1)
            return self.fc3(functional.relu(self.fc2(functional.relu(self.fc1(x)))))

    return torch_export(path, LeNet5(), (1, 28, 28), seed=2)


def _conv_bn_relu_net():
    nn = _torch()
    return nn.Sequential(nn.Conv2d(3, 8, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, stride=2), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 6 * 6, 10), nn.BatchNorm1d(10))


def conv_bn_relu(path):
    """(1, 3, 15, 15): conv-BN-ReLU twice (the first output map 13 wide), a dense layer and a batch norm after it;
    exported as usual (the exporter folds the convolutions' batch norms; the dense one stays for the importer)."""
    return torch_export(path, _conv_bn_relu_net(), (3, 15, 15), seed=3)


def conv_bn_relu_unfolded(path):
    """:func:`conv_bn_relu` exported without constant folding: every BatchNormalization is the importer's to fold."""
    return torch_export(path, _conv_bn_relu_net(), (3, 15, 15), seed=3, keep_batch_norm=True)


def global_average_pooling(path):
    """(1, 3, 12, 12): two padded convolutions, global average pooling (AdaptiveAvgPool2d(1)), a dense layer."""
    nn = _torch()
    module = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1),
                           nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))
    return torch_export(path, module, (3, 12, 12), seed=4)


def residual_block(path):
    """(1, 4, 8, 8): a stem conv, then a ResNet basic block (two padded 3x3 convs, the block's input added, ReLU),
    a dense layer."""
    nn = _torch()

    class Residual(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU())
            self.body = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(8 * 8 * 8, 6))

        def forward(self, x):
            x = self.stem(x)
            return self.head(nn.functional.relu(self.body(x) + x))

    return torch_export(path, Residual(), (4, 8, 8), seed=5)


def depthwise_separable(path):
    """(1, 3, 16, 16): a stride-2 conv, a depthwise 3x3 (groups = 8) and a pointwise 1x1 conv (MobileNet's block),
    3x3 average pooling with padding (count_include_pad off), global average pooling, a dense layer."""
    nn = _torch()
    module = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                           nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(), nn.Conv2d(8, 16, 1), nn.ReLU(),
                           nn.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
                           nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))
    return torch_export(path, module, (3, 16, 16), seed=6)


def depthwise_separable_unpadded_pooling(path):
    """(1, 3, 16, 16): :func:`depthwise_separable` with the pooling the accelerator runs: a stride-2 conv, a
    depthwise 3x3 (groups = 8), a pointwise 1x1 conv, 2x2 average pooling without padding, global average pooling,
    a dense layer."""
    nn = _torch()
    module = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                           nn.Conv2d(8, 8, 3, padding=1, groups=8), nn.ReLU(), nn.Conv2d(8, 16, 1), nn.ReLU(),
                           nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 4))
    return torch_export(path, module, (3, 16, 16), seed=9)


def rectangular_kws(path):
    """(1, 1, 49, 10), DS-CNN's input: a 10x4 kernel, stride 2, padding (5, 1) -> 8 x 25 x 5, ReLU, a dense layer."""
    nn = _torch()
    module = nn.Sequential(nn.Conv2d(1, 8, (10, 4), stride=2, padding=(5, 1)), nn.ReLU(), nn.Flatten(),
                           nn.Linear(8 * 25 * 5, 12))
    return torch_export(path, module, (1, 49, 10), seed=7)


def one_conv_stride2(path):
    """(1, 2, 12, 12): one 3x3 stride-2 convolution (-> 4 x 5 x 5) and its ReLU; the output is the image."""
    nn = _torch()
    return torch_export(path, nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.ReLU()), (2, 12, 12), seed=8)


EVERYDAY_MODELS = {"padded_conv_chain": padded_conv_chain, "lenet5": lenet5, "conv_bn_relu": conv_bn_relu,
                   "conv_bn_relu_unfolded": conv_bn_relu_unfolded, "global_average_pooling": global_average_pooling,
                   "residual_block": residual_block, "depthwise_separable": depthwise_separable,
                   "depthwise_separable_unpadded_pooling": depthwise_separable_unpadded_pooling,
                   "rectangular_kws": rectangular_kws, "one_conv_stride2": one_conv_stride2}
