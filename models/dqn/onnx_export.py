"""A network of the DQN accelerator's compiler written as a standard ONNX model, for other tools.

:func:`network_to_onnx` turns layers (:class:`ConvLayer` / :class:`DenseLayer`) and their float32 weights in the
compiler's layout into an ONNX graph: ``Conv`` (weight ``(in, kh, kw, out)`` -> ONNX's ``(out, in, kh, kw)``),
a ``Flatten`` before the first dense layer after a convolution, ``Gemm`` (``B`` ``(in, out)``), and ``Relu`` where
a layer has one.  The input is ``input`` ``(1, C, H, W)`` (or ``(1, F)`` for a first dense layer), the output
``output`` ``(1, outputs)`` (or ``(1, C, H, W)`` for a last convolution).  Opset 17, IR version 8, which ONNX
Runtime 1.14 and later read.  :func:`models.dqn.onnx_import.read_onnx` and :func:`models.dqn.lowering.lower_graph`
read such a model back to the same layers (named after its nodes) and weights.
"""

from pathlib import Path

import numpy as np

from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.dqn.plan import network_weights

__all__ = ["network_to_onnx", "save_onnx", "OPSET", "IR_VERSION"]

OPSET, IR_VERSION = 17, 8


def network_to_onnx(layers, weights, *, name="nnaccel"):
    """The ``onnx.ModelProto`` of ``layers`` with ``weights`` (one ``(weight, bias)`` pair per layer, or the thesis
    network's dict, as :func:`models.dqn.plan.compile_network` takes them)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    layers = tuple(layers)
    pairs = network_weights(layers, weights)
    nodes, initializers = [], []
    current, image = "input", isinstance(layers[0], ConvLayer)
    first = layers[0]
    input_shape = [1, first.in_channels, first.in_size, first.in_size] if image else [1, first.inputs]
    for index, (layer, (weight, bias)) in enumerate(zip(layers, pairs)):
        weight, bias = np.asarray(weight, np.float32), np.asarray(bias, np.float32)
        if tuple(weight.shape) != layer.weight_shape:
            raise ValueError(f"{layer.name}: weight must have shape {layer.weight_shape}, not {weight.shape}")
        last = index == len(layers) - 1
        output = "output" if last and not layer.relu else f"{layer.name}_out"
        initializers += [numpy_helper.from_array(np.ascontiguousarray(
                             weight.transpose(3, 0, 1, 2) if isinstance(layer, ConvLayer) else weight),
                             f"{layer.name}.weight"),
                         numpy_helper.from_array(bias, f"{layer.name}.bias")]
        if isinstance(layer, ConvLayer):
            nodes.append(helper.make_node("Conv", [current, f"{layer.name}.weight", f"{layer.name}.bias"], [output],
                                          name=layer.name, kernel_shape=[layer.kernel] * 2,
                                          strides=[layer.stride] * 2))
        else:
            if image:
                nodes.append(helper.make_node("Flatten", [current], [f"{layer.name}_in"], name=f"{layer.name}_flatten",
                                              axis=1))
                current, image = f"{layer.name}_in", False
            nodes.append(helper.make_node("Gemm", [current, f"{layer.name}.weight", f"{layer.name}.bias"], [output],
                                          name=layer.name))
        current = output
        if layer.relu:
            current = "output" if last else f"{layer.name}_relu"
            nodes.append(helper.make_node("Relu", [output], [current], name=f"{layer.name}_relu"))
    last = layers[-1]
    output_shape = [1, last.out_channels, last.out_size, last.out_size] if isinstance(last, ConvLayer) \
        else [1, last.outputs]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_shape)],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, output_shape)],
                              initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="nnaccel")
    model.ir_version = IR_VERSION
    onnx.checker.check_model(model)
    return model


def save_onnx(path, layers, weights, *, name="nnaccel"):
    """Write :func:`network_to_onnx` to ``path`` (via a temporary file, so no half-written model keeps the name)."""
    import onnx

    path = Path(path)
    temporary = path.with_name(path.name + ".partial")
    onnx.save(network_to_onnx(layers, weights, name=name), temporary)
    temporary.replace(path)
