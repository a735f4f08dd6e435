"""Tiny TFLite FlatBuffers written with the ``tflite`` package's generated builders (no TensorFlow): models the
reader must refuse (an LSTM, a RELU6, a batch of 2, a dynamic shape) and a small valid one."""

import importlib

import flatbuffers
import numpy as np

FLOAT32, INT32 = 0, 2


def _module(name):
    return importlib.import_module(f"tflite.{name}")


def _vector(builder, start, values, kind="Int32"):
    start(builder, len(values))
    for value in reversed(values):
        getattr(builder, f"Prepend{kind}")(value)
    return builder.EndVector()


def _conv_options(builder, activation):
    options = _module("Conv2DOptions")
    options.Start(builder)
    options.AddPadding(builder, 1)              # VALID
    options.AddStrideH(builder, 1)
    options.AddStrideW(builder, 1)
    options.AddDilationHFactor(builder, 1)
    options.AddDilationWFactor(builder, 1)
    options.AddFusedActivationFunction(builder, activation)
    return options.End(builder)


def tflite_model(path, *, tensors, operator, options=None):
    """A one-operator model: ``tensors`` are ``(name, shape, data or None, shape_signature or None)`` (float32
    unless the data is int32), tensor 0 the input, the last the output; ``operator`` is ``(builtin code, inputs,
    outputs)``; ``options`` ``(BuiltinOptions type, a function of the builder returning the table)``."""
    builder = flatbuffers.Builder(1024)
    buffers, tensor_offsets = [], []
    buffer_module, tensor_module = _module("Buffer"), _module("Tensor")
    for index, (name, shape, data, signature) in enumerate(tensors):
        raw = b"" if data is None else np.ascontiguousarray(data).tobytes()
        data_offset = builder.CreateByteVector(raw) if raw else None
        buffer_module.Start(builder)
        if data_offset is not None:
            buffer_module.AddData(builder, data_offset)
        buffers.append(buffer_module.End(builder))
        name_offset = builder.CreateString(name)
        shape_offset = _vector(builder, tensor_module.StartShapeVector, list(shape))
        signature_offset = _vector(builder, tensor_module.StartShapeSignatureVector, list(signature)) \
            if signature is not None else None
        tensor_module.Start(builder)
        tensor_module.AddShape(builder, shape_offset)
        if signature_offset is not None:
            tensor_module.AddShapeSignature(builder, signature_offset)
        tensor_module.AddType(builder, INT32 if data is not None and data.dtype == np.int32 else FLOAT32)
        tensor_module.AddBuffer(builder, index)
        tensor_module.AddName(builder, name_offset)
        tensor_offsets.append(tensor_module.End(builder))
    code, inputs, outputs = operator
    options_offset = options[1](builder) if options else None
    operator_module = _module("Operator")
    inputs_offset = _vector(builder, operator_module.StartInputsVector, inputs)
    outputs_offset = _vector(builder, operator_module.StartOutputsVector, outputs)
    operator_module.Start(builder)
    operator_module.AddOpcodeIndex(builder, 0)
    operator_module.AddInputs(builder, inputs_offset)
    operator_module.AddOutputs(builder, outputs_offset)
    if options:
        operator_module.AddBuiltinOptionsType(builder, options[0])
        operator_module.AddBuiltinOptions(builder, options_offset)
    operator_offset = operator_module.End(builder)
    code_module = _module("OperatorCode")
    code_module.Start(builder)
    code_module.AddDeprecatedBuiltinCode(builder, min(code, 127))
    code_module.AddBuiltinCode(builder, code)
    code_module.AddVersion(builder, 1)
    code_offset = code_module.End(builder)

    subgraph_module, model_module = _module("SubGraph"), _module("Model")
    tensors_offset = _vector(builder, subgraph_module.StartTensorsVector, tensor_offsets, "UOffsetTRelative")
    graph_inputs = _vector(builder, subgraph_module.StartInputsVector, [0])
    graph_outputs = _vector(builder, subgraph_module.StartOutputsVector, [len(tensors) - 1])
    operators_offset = _vector(builder, subgraph_module.StartOperatorsVector, [operator_offset], "UOffsetTRelative")
    subgraph_module.Start(builder)
    subgraph_module.AddTensors(builder, tensors_offset)
    subgraph_module.AddInputs(builder, graph_inputs)
    subgraph_module.AddOutputs(builder, graph_outputs)
    subgraph_module.AddOperators(builder, operators_offset)
    subgraph = subgraph_module.End(builder)
    codes = _vector(builder, model_module.StartOperatorCodesVector, [code_offset], "UOffsetTRelative")
    subgraphs = _vector(builder, model_module.StartSubgraphsVector, [subgraph], "UOffsetTRelative")
    buffers_offset = _vector(builder, model_module.StartBuffersVector, buffers, "UOffsetTRelative")
    model_module.Start(builder)
    model_module.AddVersion(builder, 3)
    model_module.AddOperatorCodes(builder, codes)
    model_module.AddSubgraphs(builder, subgraphs)
    model_module.AddBuffers(builder, buffers_offset)
    builder.Finish(model_module.End(builder), file_identifier=b"TFL3")
    path.write_bytes(builder.Output())
    return path


def _conv_tensors(batch=1, signature=None):
    weight = np.random.default_rng(0).standard_normal((2, 3, 3, 1)).astype(np.float32)
    return [("image", (batch, 6, 6, 1), None, signature), ("weight", (2, 3, 3, 1), weight, None),
            ("bias", (2,), np.zeros(2, np.float32), None), ("output", (batch, 4, 4, 2), None, None)]


def conv_model(path, *, activation=0, batch=1, signature=None):
    """CONV_2D 3x3 VALID on a 6 x 6 image: ``activation`` its fused activation (0 NONE, 1 RELU, 3 RELU6)."""
    import tflite

    return tflite_model(path, tensors=_conv_tensors(batch, signature),
                        operator=(tflite.BuiltinOperator.CONV_2D, [0, 1, 2], [3]),
                        options=(tflite.BuiltinOptions.Conv2DOptions,
                                 lambda builder: _conv_options(builder, activation)))


def lstm_model(path):
    """A UNIDIRECTIONAL_SEQUENCE_LSTM reading a (1, 8) input (its weights and states left out: the reader refuses
    the op before it looks at them)."""
    import tflite

    return tflite_model(path, tensors=[("sequence", (1, 8), None, None), ("hidden", (1, 8), None, None)],
                        operator=(tflite.BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, [0], [1]))
