"""``nnaccel run net MODEL.tflite | MODEL.onnx``: the error table (what the accelerator still cannot run, and files
that are no model: one line naming the file, the op and the fault, exit 2, nothing built), the inputs files (the
benchmark's own samples among them), and the job end to end with a stand-in simulator that gives the golden model's
outputs and the compiler's predicted counters (the real RTL: tests/dqn/test_onnx.py)."""

import json

import numpy as np
import pytest

from nnaccel.cli.main import main
from nnaccel.hw.shared.float_format import BFLOAT16
from nnaccel.models.dqn import mlperf_tiny
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.shared.float_arith import to_binary32
from nnaccel.testbench.dqn import host as dqn_host
from tests.cli import stand_in_simulator
from tests.dqn.onnx_models import GraphBuilder, lenet5, small_cnn
from tests.dqn.tflite_models import conv_model, lstm_model

SMALL = ("--modules", "2", "--lanes", "4")


def conv_graph(input_shape=(1, 2, 8, 8), **attributes):
    graph = GraphBuilder(input_shape)
    graph.conv(4, input_shape[1], attributes.pop("kernel", 3), name="conv", **attributes)
    return graph


def padded_max_pooling(path):
    graph = conv_graph()
    graph.node("MaxPool", name="pool", kernel_shape=[2, 2], pads=[1, 1, 1, 1])
    return graph.save(path)


def padded_average_pooling(path):
    graph = conv_graph()
    graph.node("AveragePool", name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    return graph.save(path)


def sigmoid(path):
    graph = conv_graph()
    graph.node("Sigmoid", name="squash")
    return graph.save(path)


def past_the_rams(path):
    """A 1x1 convolution on a 300 x 240 x 240 image: 72,000 words of input, more than the largest activation RAM."""
    graph = GraphBuilder((1, 300, 240, 240))
    graph.conv(8, 300, 1, name="conv")
    return graph.save(path)


def too_many_passes(path):
    graph = GraphBuilder((1, 12))
    graph.gemm(12, 100_000, name="gemm")
    return graph.save(path)


def max_pool_past_the_table(path):
    """A max pool of 70 channels: a pass a channel, more than the largest descriptor table (64) holds."""
    graph = GraphBuilder((1, 1, 4, 4))
    graph.conv(70, 1, 1, name="conv")
    graph.node("MaxPool", name="pool", kernel_shape=[2, 2], strides=[2, 2])
    return graph.save(path)


def truncated_tflite(path):
    whole = conv_model(path.with_name("whole.tflite")).read_bytes()
    path.write_bytes(whole[:len(whole) // 2])
    return path


def random_bytes(path):
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 2000, np.uint8).tobytes())
    return path


def other_suffix(path):
    path = path.with_suffix(".pb")
    path.write_bytes(b"")
    return path


def int8_kws(path):
    return mlperf_tiny.mlperf_tiny_dir() / "models" / mlperf_tiny.KWS_INT8_MODEL


ERRORS = {
    "padded max pooling": (padded_max_pooling, "model.onnx",
                           "op 'pool' (Pool): padded max pooling (pads (1, 1, 1, 1)) of an input that may be "
                           "negative: the accelerator pads with +0, not -inf"),
    "padded average pooling": (padded_average_pooling, "model.onnx",
                               "op 'pool' (Pool): padded average pooling (pads (1, 1, 1, 1)) divides border windows "
                               "by fewer elements; not supported"),
    "Sigmoid": (sigmoid, "model.onnx",
                "node 'squash' (Sigmoid): op Sigmoid is not supported (supported: Conv, Gemm, MatMul, Add, Relu, "
                "BatchNormalization, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Softmax, Dropout, "
                "Identity, Constant)"),
    "LSTM": (lstm_model, "model.tflite",
             "op 0 (UNIDIRECTIONAL_SEQUENCE_LSTM): not supported by the accelerator (supported: CONV_2D, "
             "DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, ADD, RESHAPE, SOFTMAX)"),
    "quantised int8": (int8_kws, None,
                       "quantised (int8) models are not supported: the accelerator's datapath is float; convert the "
                       "float32 model (tensor 'input_1' is INT8)"),
    "truncated": (truncated_tflite, "model.tflite", "truncated or corrupt TFLite FlatBuffer of "),
    "random bytes": (random_bytes, "model.tflite",
                     "not a TFLite FlatBuffer (no 'TFL3' identifier) (expected a TFLite model file (.tflite))"),
    "another suffix": (other_suffix, "model.onnx",
                       "expected a TFLite (.tflite) or ONNX (.onnx) model file, not a .pb file"),
    "past the RAMs": (past_the_rams, "model.onnx",
                      "does not fit 16 modules x 16 lanes: the network input: activation RAM 0 is too small: the tensor needs "
                      "words 0..71999 beside the tensors live with it, the RAM has 65536 words"),
    "too many passes": (too_many_passes, "model.onnx",
                        "does not fit 16 modules x 16 lanes: the network needs 391 passes (gemm: 391); the descriptor "
                        "table holds 64"),
    "max pool past the table": (max_pool_past_the_table, "model.onnx",
                                "does not fit 16 modules x 16 lanes: the network needs 71 passes (conv, pool: 70); the "
                                "descriptor table holds 64; pool is a max pool of 70 channels, one pass a channel"),
}


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*arguments, **keywords):
        raise AssertionError("nothing may be built or simulated for a model the accelerator cannot run")

    monkeypatch.setattr(dqn_host, "run_on_accelerator", refuse)


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_error_table(case, tmp_path, capsys, no_simulation):
    build, name, message = ERRORS[case]
    path = build(tmp_path / name if name else None)
    assert main(["run", "net", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"nnaccel: error: {path}: {message}") and captured.err.count("\n") == 1
    assert captured.out == ""


def test_a_missing_model_file(tmp_path, capsys, no_simulation):
    path = tmp_path / "model.tflite"
    assert main(["run", "net", str(path)]) == 2
    assert capsys.readouterr().err == f"nnaccel: error: {path}: no such file (expected a TFLite model file (.tflite))\n"


# ---- inputs files -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("array, fault", [
    (np.zeros((2, 2, 8, 7), np.float32), "inputs must have shape (N, 2, 8, 8), not (2, 2, 8, 7)"),
    (np.zeros((2, 2, 8, 8)), "inputs must be float32, not float64"),
    (np.full((1, 2, 8, 8), np.nan, np.float32), "inputs hold NaN or infinite values"),
])
def test_bad_inputs_files(tmp_path, capsys, no_simulation, array, fault):
    np.save(tmp_path / "inputs.npy", array)
    model = small_cnn(tmp_path / "cnn.onnx")
    assert main(["run", "net", str(model), "--inputs", str(tmp_path / "inputs.npy"), *SMALL]) == 2
    assert capsys.readouterr().err == f"nnaccel: error: {tmp_path / 'inputs.npy'}: {fault}\n"


def kws_sample():
    return mlperf_tiny.mlperf_tiny_dir() / "samples" / "kws01" / "tst_000000_Stop_7.bin"


def ad_file():
    return next((mlperf_tiny.mlperf_tiny_dir() / "samples" / "ad01").glob("*.bin"))


@pytest.mark.parametrize("task, sample, count", [("kws", kws_sample, 1), ("ad", ad_file, 40)])
def test_a_benchmark_sample_file_is_the_models_input(tmp_path, monkeypatch, capsys, task, sample, count):
    """A KWS ``.bin`` (490 int8 MFCCs, dequantised) for the KWS model, the AD windows for the AD model: the inputs
    the accelerator is given are the benchmark loaders' own."""
    runs = stand_in_simulator.install(monkeypatch)
    model = mlperf_tiny.model_path(task)
    assert main(["run", "net", str(model), "--inputs", str(sample())]) == 0
    (_, states), = runs
    expected = mlperf_tiny.kws_samples(count=1).inputs if task == "kws" else mlperf_tiny.ad_windows()
    assert states.shape[0] == count and states.tobytes() == expected.tobytes()
    printed = capsys.readouterr().out
    assert f"(from {sample()}): bit-exact against the golden model ({count * (12 if task == 'kws' else 640):,} outputs)" \
        in printed
    assert "counters: every pass and TOTAL_CYCLES as the compiler predicted" in printed


@pytest.mark.parametrize("task, sample, fault", [
    ("kws", ad_file, "102400 bytes; a KWS sample is 490 int8 values (49 frames x 10 MFCCs)"),
    ("ad", kws_sample, "122 float32 values; expected finite 640-value windows"),
])
def test_a_benchmark_sample_of_the_wrong_size(capsys, no_simulation, task, sample, fault):
    path = sample()
    assert main(["run", "net", str(mlperf_tiny.model_path(task)), "--inputs", str(path)]) == 2
    assert capsys.readouterr().err == f"nnaccel: error: {path}: {fault}\n"


def test_a_benchmark_sample_for_another_model(tmp_path, capsys, no_simulation):
    model = small_cnn(tmp_path / "cnn.onnx")
    assert main(["run", "net", str(model), "--inputs", str(kws_sample()), *SMALL]) == 2
    assert capsys.readouterr().err == (f"nnaccel: error: {kws_sample()}: a benchmark sample file holds KWS (1 x 49 x "
                                       f"10) or AD (640) inputs; the model's input is 2 x 8 x 8\n")


# ---- the job end to end -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("fault", [None, "wrong_output", "wrong_counter"])
def test_the_job_end_to_end_with_a_stand_in_simulator(tmp_path, monkeypatch, capsys, fault):
    """Through main: exit 0 when the outputs are the golden model's and the counters the prediction; exit 1 and the
    report names the output or the counter that is not."""
    runs = stand_in_simulator.install(monkeypatch, **({fault: True} if fault else {}))
    model = small_cnn(tmp_path / "cnn.onnx")
    inputs = np.random.default_rng(1).standard_normal((3, 2, 8, 8)).astype(np.float32)
    np.save(tmp_path / "inputs.npy", inputs)
    status = main(["run", "net", str(model), "--inputs", str(tmp_path / "inputs.npy"), "--json",
                   str(tmp_path / "report.json"), *SMALL])
    assert status == (1 if fault else 0)
    printed = capsys.readouterr().out
    (plan, states), = runs
    assert states.tobytes() == inputs.tobytes()        # the feeder pads: the accelerator is given the images
    last = plan.layers[-1]
    golden = golden_forward(plan, states[1])
    lines = {
        None: ["3 inputs (from", "bit-exact against the golden model (15 outputs)",
               "counters: every pass and TOTAL_CYCLES as the compiler predicted"],
        "wrong_output": ["MISMATCH against the golden model",
                         f"state 1: Q[0] = {golden.q_values[0] ^ 1:08X}, golden {golden.q_values[0]:08X}"],
        "wrong_counter": ["bit-exact against the golden model", "counters: MISMATCH",
                          f"input 0: {last.name} drain_cycles {last.predicted['drain_cycles'] + 1}, predicted "
                          f"{last.predicted['drain_cycles']}"],
    }[fault]
    for line in lines:
        assert line in printed
    assert "accelerator (binary32) vs ONNX Runtime (float32), logits" in printed
    assert "pad 1/1/1/1 (top/bottom/left/right)" in printed
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["schema"] == "nnaccel.net/2" and report["runtime"] == "ONNX Runtime"
    assert report["bit_exact"] is (fault != "wrong_output")
    assert report["counters_as_predicted"] is (fault != "wrong_counter")
    assert report["total_cycles"] == report["predicted_cycles"] == plan.estimated_cycles
    assert report["config"] == {"modules": 2, "lanes": 4, "format": "binary32", "row_elements": 84,
                                "activation_depth": 1024, "weight_depth": 4096, "max_layers": 8,
                                "max_pooling": False}
    assert [row["name"] for row in report["layers"]] == [layer.name for layer in plan.layers]
    assert len(report["ops"]) == 3 and report["inputs"] == 3 and report["inputs_source"].startswith("from ")
    first = report["per_input"][0]
    assert first["golden_q_bits"] == [f"0x{int(bits):08X}" for bits in golden_forward(plan, states[0]).q_values]
    assert len(first["reference_values"]) == 5 and report["reference_compared"] == "logits"
    assert 0 < report["reference_max_rel"] < 2e-6 or fault == "wrong_output"


def test_lenet5_picks_the_max_mode(tmp_path, monkeypatch, capsys):
    """LeNet-5's max pools: the job compiles for a configuration with ``max_pooling`` and says where they run."""
    pytest.importorskip("torch")
    runs = stand_in_simulator.install(monkeypatch)
    assert main(["run", "net", str(lenet5(tmp_path / "lenet5.onnx")), "--random", "1", "--json",
                 str(tmp_path / "report.json"), "--modules", "4", "--lanes", "4"]) == 0
    printed = capsys.readouterr().out
    (plan, _), = runs
    assert plan.config.max_pooling and ", max mode (max pooling)" in printed
    assert "max pool 6x28x28 -> 6x14x14, kernel 2x2, stride 2x2" in printed
    assert "bit-exact against the golden model (10 outputs)" in printed
    assert json.loads((tmp_path / "report.json").read_text())["config"]["max_pooling"] is True


def test_a_tflite_model_with_softmax_on_the_host(monkeypatch, capsys):
    """The KWS model: its SOFTMAX runs on the host; the accelerator's logits are compared with LiteRT's logits."""
    stand_in_simulator.install(monkeypatch)
    assert main(["run", "net", str(mlperf_tiny.model_path("kws")), "--random", "1"]) == 0
    printed = capsys.readouterr().out
    assert "(host)" in printed and "softmax on the host" in printed
    assert "accelerator (binary32) vs LiteRT (float32), logits" in printed
    assert printed.count("depthwise convolution in channel tiles of whole groups") == 1      # one note for the four layers


def test_a_narrower_number_format(tmp_path, monkeypatch, capsys):
    """``--format bfloat16``: the plan is compiled for bfloat16 units, the outputs are reported as bfloat16 bits
    and their exact float32 values, and ONNX Runtime's float32 outputs differ by bfloat16's rounding."""
    runs = stand_in_simulator.install(monkeypatch)
    model = small_cnn(tmp_path / "cnn.onnx")
    assert main(["run", "net", str(model), "--random", "2", "--format", "bfloat16", "--json",
                 str(tmp_path / "report.json"), *SMALL]) == 0
    assert "2 x 4 bfloat16 MACs" in capsys.readouterr().out and runs[0][0].config.fmt is BFLOAT16
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["config"]["format"] == "bfloat16" and report["bit_exact"]
    first = report["per_input"][0]
    bits = np.array([int(word, 16) for word in first["q_bits"]], np.uint32)
    assert all(len(word) == 6 for word in first["q_bits"]) and np.all(bits < 1 << 16)
    assert first["q_values"] == to_binary32(BFLOAT16, bits).tolist()
    assert 1e-4 < report["reference_max_rel"] < 0.1


def test_random_inputs_are_seeded(tmp_path, monkeypatch):
    runs = stand_in_simulator.install(monkeypatch)
    model = str(small_cnn(tmp_path / "cnn.onnx"))
    for seed in ("0", "0", "1"):
        assert main(["run", "net", model, "--random", "2", "--seed", seed, *SMALL]) == 0
    states = [run[1] for run in runs]
    assert np.array_equal(states[0], states[1]) and not np.array_equal(states[0], states[2])
    assert states[0].shape == (2, 2, 8, 8)


def test_depthwise_layers_without_the_flat_map_get_a_note():
    """A network with depthwise layers the flat map runs, compiled without it: one note naming them and the options;
    with the flat map, or without such layers, none."""
    from dataclasses import replace

    from nnaccel.cli.dqn.accelerator_run import flat_map_note
    from nnaccel.hw.dqn.config import DqnConfig
    from nnaccel.models.dqn.network import ConvLayer

    depthwise = [ConvLayer(f"dw{index}", 4, 12, 4, 3, 1, padding=1, groups=4) for index in range(5)]
    (note,) = flat_map_note(DqnConfig(), depthwise)
    assert note.startswith("dw0, dw1, dw2 and 2 more: depthwise, run block-diagonal here; --flat-window 6 "
                           "--flat-slots 2 runs them on the flat map")
    assert flat_map_note(replace(DqnConfig(), flat_slots=2, flat_window_words=6), depthwise) == []
    assert flat_map_note(DqnConfig(), [ConvLayer("conv", 4, 12, 8, 3, 1, padding=1)]) == []
