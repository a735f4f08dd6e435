"""models.dqn.tflite_import on MLPerf Tiny's four reference models (../shared/mlperf_tiny): the graphs read without
TensorFlow, the float32 reference against LiteRT running the same files, KWS on all 200 samples, the AD score; and
the files the reader refuses, each with one line."""

from collections import Counter

import numpy as np
import pytest

from nnaccel.models.dqn import mlperf_tiny
from nnaccel.models.dqn.graph import Conv, ModelError, reference, reference_tensors
from nnaccel.models.dqn.tflite_import import litert_outputs, read_tflite
from tests.dqn.tflite_models import conv_model, lstm_model

# Parameters and MACs as the MLPerf Tiny README gives them (77,706 / 22,604 / 210,850 / 265,864; 12.5 M / 2.66 M /
# 7.49 M / 0.26 M MACs), and the graph's operations.
MODELS = {
    "ic": (77_706, 12_501_632, {"Conv": 9, "Add": 3, "Pool": 1, "Flatten": 1, "Dense": 1, "Softmax": 1}),
    "kws": (22_604, 2_656_768, {"Conv": 9, "Pool": 1, "Flatten": 1, "Dense": 1, "Softmax": 1}),
    "vww": (210_850, 7_489_664, {"Conv": 27, "Pool": 1, "Flatten": 1, "Dense": 1, "Softmax": 1}),
    "ad": (265_864, 264_192, {"Dense": 10}),
}
# Largest |reference - LiteRT| allowed, relative to the largest |LiteRT output| (logits where a SOFTMAX ends the
# model): float32 with another order of additions (LiteRT's XNNPACK kernels); the autoencoder's ten layers of up to
# 640 terms grow its error to ~5e-5.  KWS: see test_kws_on_all_200_samples.
TOLERANCE = {"ic": 1e-5, "vww": 1e-5, "ad": 2e-4}


def inputs_of(task, count=3):
    if task == "ad":
        return mlperf_tiny.ad_windows()[:count]
    if task == "kws":
        return mlperf_tiny.kws_samples(count=count).inputs
    return mlperf_tiny.sample_images(task, count).inputs


def logits(graph, x):
    """The reference's tensor a final Softmax reads (the graph's output if none)."""
    last = graph.ops[-1]
    name = last.inputs[0] if type(last).__name__ == "Softmax" else last.output
    return reference_tensors(graph, x)[name]


@pytest.mark.parametrize("task", mlperf_tiny.TASKS)
def test_reference_models_are_read(task):
    graph = read_tflite(mlperf_tiny.model_path(task))
    parameters, macs, kinds = MODELS[task]
    assert graph.parameters == parameters and sum(graph.macs(op) for op in graph.ops) == macs
    assert Counter(type(op).__name__ for op in graph.ops) == kinds
    assert graph.inputs[0].shape == mlperf_tiny.MODELS[task].input_shape


def test_same_padding_puts_the_odd_pixel_bottom_right():
    kws = read_tflite(mlperf_tiny.model_path("kws"))
    vww = read_tflite(mlperf_tiny.model_path("vww"))
    assert (kws.ops[0].kernel, kws.ops[0].stride, kws.ops[0].pads) == ((10, 4), (2, 2), (4, 5, 1, 1))
    assert (vww.ops[0].stride, vww.ops[0].pads) == ((2, 2), (0, 1, 0, 1))
    depthwise = [op for op in vww.ops if isinstance(op, Conv) and op.depthwise]
    assert len(depthwise) == 13 and depthwise[0].weight.shape == (8, 1, 3, 3)


@pytest.mark.parametrize("task", ["ic", "vww", "ad"])
def test_reference_agrees_with_litert(task):
    path, x = mlperf_tiny.model_path(task), inputs_of(task)
    graph = read_tflite(path)
    expected = litert_outputs(path, x, before_softmax=True)
    difference = np.abs(logits(graph, x).reshape(len(x), -1) - expected).max()
    scale = np.abs(expected).max()
    assert difference <= TOLERANCE[task] * scale, f"{task}: max |reference - LiteRT| = {difference:.3g} " \
                                                  f"(largest |output| {scale:.3g})"
    final = np.abs(reference(graph, x).reshape(len(x), -1) - litert_outputs(path, x)).max()
    assert final <= TOLERANCE[task] * max(scale, 1.0), f"{task}: final outputs differ by {final:.3g}"


def test_kws_on_all_200_samples():
    """LiteRT runs the float32 DS-CNN's int8 ("hybrid") convolution weights on activations it quantises to int8 on
    the fly (XNNPACK: asymmetric, per input); the reference dequantises the weights and stays float.  So the logits
    differ by that quantisation (a few per cent of their range), not by float32 rounding: the classes must agree on
    every sample, and the accuracy must be LiteRT's 183 / 200."""
    path, samples = mlperf_tiny.model_path("kws"), mlperf_tiny.kws_samples()
    graph = read_tflite(path)
    ours, theirs = logits(graph, samples.inputs), litert_outputs(path, samples.inputs, before_softmax=True)
    difference, scale = np.abs(ours - theirs).max(), np.abs(theirs).max()
    assert len(samples.labels) == 200 and difference <= 0.05 * scale, \
        f"max |reference - LiteRT| logit = {difference:.3g} (largest |logit| {scale:.3g})"
    assert np.array_equal(ours.argmax(axis=1), theirs.argmax(axis=1))
    assert (ours.argmax(axis=1) == samples.labels).sum() == (theirs.argmax(axis=1) == samples.labels).sum() == 183


def test_kws_int8_weights_are_dequantised_exactly():
    """The first convolution alone, with LiteRT's own input quantisation (asymmetric int8 per input) applied to the
    reference's input: then the two agree to float32 rounding, so the weights' scale and layout are right."""
    path, x = mlperf_tiny.model_path("kws"), mlperf_tiny.kws_samples(count=2).inputs
    first = read_tflite(path).ops[0]
    low, high = np.minimum(x.min(axis=(1, 2, 3)), 0), np.maximum(x.max(axis=(1, 2, 3)), 0)
    scale = ((high - low) / 255)[:, None, None, None]
    zero = np.round(-128 - low[:, None, None, None] / scale)
    quantised = ((np.clip(np.round(x / scale) + zero, -128, 127) - zero) * scale).astype(np.float32)
    expected = _litert_tensor(path, x, first.output)
    difference = np.abs(first.evaluate(quantised) - expected).max()
    assert difference <= 1e-6 * np.abs(expected).max(), f"max difference {difference:.3g}"


def _litert_tensor(path, x, name):
    """LiteRT's tensor ``name`` for each input, NCHW."""
    import warnings

    from ai_edge_litert.interpreter import Interpreter

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Warning: Enabling `experimental_preserve_all_tensors`")
        interpreter = Interpreter(model_path=str(path), num_threads=1, experimental_preserve_all_tensors=True)
    interpreter.allocate_tensors()
    index = next(detail["index"] for detail in interpreter.get_tensor_details() if detail["name"] == name)
    results = []
    for sample in x:
        interpreter.set_tensor(interpreter.get_input_details()[0]["index"], sample.transpose(1, 2, 0)[None])
        interpreter.invoke()
        results.append(interpreter.get_tensor(index)[0].transpose(2, 0, 1))
    return np.stack(results)


def test_anomaly_score_of_the_shared_window():
    path, windows = mlperf_tiny.model_path("ad"), mlperf_tiny.ad_windows()
    scores = mlperf_tiny.anomaly_scores(windows, reference(read_tflite(path), windows))
    litert_scores = mlperf_tiny.anomaly_scores(windows, litert_outputs(path, windows))
    assert windows.shape == (40, 640) and np.all(scores > 0)
    np.testing.assert_allclose(scores, litert_scores, rtol=1e-4)      # the outputs differ by float32 order
    assert scores.mean() == pytest.approx(9.7088, abs=1e-4), f"mean anomaly score {scores.mean():.6f}"


def test_a_small_model_with_an_image_output(tmp_path):
    path = conv_model(tmp_path / "conv.tflite", activation=1)
    graph = read_tflite(path)
    x = np.random.default_rng(1).standard_normal((2, 1, 6, 6)).astype(np.float32)
    assert graph.ops[0].relu and graph.tensors[graph.outputs[0]].shape == (2, 4, 4)
    np.testing.assert_allclose(reference(graph, x).reshape(2, -1), litert_outputs(path, x), rtol=0, atol=1e-5)


def _truncated(tmp_path):
    data = mlperf_tiny.model_path("kws").read_bytes()
    (tmp_path / "model.tflite").write_bytes(data[:len(data) // 2])
    return tmp_path / "model.tflite", f"truncated or corrupt TFLite FlatBuffer of {len(data) // 2} bytes ("


def _random_bytes(tmp_path):
    (tmp_path / "model.tflite").write_bytes(np.random.default_rng(0).bytes(4096))
    return tmp_path / "model.tflite", "not a TFLite FlatBuffer (no 'TFL3' identifier) (expected a TFLite model file"


BAD_FILES = {
    "truncated": _truncated,
    "random bytes": _random_bytes,
    "missing": lambda tmp_path: (tmp_path / "none.tflite", "no such file (expected a TFLite model file (.tflite))"),
    "an LSTM": lambda tmp_path: (lstm_model(tmp_path / "model.tflite"),
                                 "op 0 (UNIDIRECTIONAL_SEQUENCE_LSTM): not supported by the accelerator (supported: "
                                 "CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, "
                                 "ADD, RESHAPE, SOFTMAX)"),
    "the int8 KWS model": lambda tmp_path: (
        mlperf_tiny.mlperf_tiny_dir() / "models" / mlperf_tiny.KWS_INT8_MODEL,
        "quantised (int8) models are not supported: the accelerator's datapath is float; convert the float32 model "
        "(tensor 'input_1' is INT8)"),
    "RELU6": lambda tmp_path: (conv_model(tmp_path / "model.tflite", activation=3),
                               "op 0 (CONV_2D): fused activation RELU6 is not supported (NONE or RELU)"),
    "batch 2": lambda tmp_path: (conv_model(tmp_path / "model.tflite", batch=2),
                                 "input tensor 'image' has batch 2 (shape [2, 6, 6, 1]); the accelerator runs batch 1 "
                                 "(one input at a time)"),
    "dynamic shape": lambda tmp_path: (conv_model(tmp_path / "model.tflite", signature=(1, -1, 6, 1)),
                                       "input tensor 'image' has a dynamic shape [1, -1, 6, 1]; the accelerator runs "
                                       "fixed shapes"),
}


@pytest.mark.parametrize("case", BAD_FILES, ids=list(BAD_FILES))
def test_bad_files_are_one_line(tmp_path, case):
    path, fault = BAD_FILES[case](tmp_path)
    with pytest.raises(ModelError) as error:
        read_tflite(path)
    message = str(error.value)
    assert message.startswith(f"{path}: {fault}") and "\n" not in message, message


def test_a_dynamic_batch_counts_as_one(tmp_path):
    graph = read_tflite(conv_model(tmp_path / "model.tflite", signature=(-1, 6, 6, 1)))
    assert graph.inputs[0].shape == (1, 6, 6)
