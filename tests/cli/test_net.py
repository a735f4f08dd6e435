"""``nnaccel run net``: the error table (what the accelerator cannot run: one line, exit 2, nothing built), the
inputs file, and the job end to end with the simulation replaced by the golden model (the real RTL:
tests/dqn/test_onnx.py)."""

import json

import numpy as np
import pytest

from nnaccel.testbench.dqn import host as dqn_host
from nnaccel.cli.main import main
from nnaccel.hw.shared.float_format import BFLOAT16
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.shared.float_arith import to_binary32
from tests.cli.test_dqn import fake_run
from tests.dqn.onnx_models import GraphBuilder, small_cnn

SMALL = ("--modules", "2", "--lanes", "4")     # small_cnn's 4 x 4 output fits groups of 2 positions, not of 16


def conv_graph(input_shape=(1, 2, 8, 8), **attributes):
    graph = GraphBuilder(input_shape)
    graph.conv(4, input_shape[1], attributes.pop("kernel", 3), name="conv", **attributes)
    return graph


def pooling():
    graph = conv_graph()
    graph.node("MaxPool", name="pool", kernel_shape=[2, 2])
    return graph


def padded_second_conv():
    graph = conv_graph()
    graph.conv(4, 4, 3, name="conv2", pads=[1, 1, 1, 1])
    return graph


def unsupported_op():
    graph = conv_graph()
    graph.node("Sigmoid", name="squash")
    return graph


def add_without_matmul():
    graph = GraphBuilder((1, 12))
    graph.gemm(12, 4, name="gemm")
    graph.node("Add", [graph.bias("extra", 4)], name="offset")
    return graph


def relu_on_input():
    graph = GraphBuilder((1, 12))
    graph.node("Relu", name="relu")
    return graph


def reshape_to_image():
    graph = GraphBuilder((1, 12))
    graph.gemm(12, 16, name="gemm")
    graph.node("Reshape", [graph.constant("shape", np.array([1, 1, 4, 4], np.int64))], name="unflatten")
    return graph


def residual():
    graph = conv_graph(pads=[1, 1, 1, 1])
    graph.node("Add", inputs=[graph.current, "input"], name="skip")
    return graph


def gemm(outputs, **attributes):
    graph = GraphBuilder((1, 12))
    graph.gemm(12, outputs, name="gemm", **attributes)
    return graph


def group_conv():
    graph = GraphBuilder((1, 4, 8, 8))
    graph.node("Conv", [graph.constant("w", graph.uniform((4, 2, 3, 3), 18))], name="conv", kernel_shape=[3, 3],
               group=2)
    return graph


ERRORS = {
    "pooling": (pooling, "node 'pool' (MaxPool): pooling is not supported: the accelerator has no pooling unit (a "
                         "strided Conv can take its place)"),
    "groups": (group_conv, "node 'conv' (Conv): group = 2: grouped and depthwise convolutions are not supported "
                           "(group must be 1)"),
    "dilation": (lambda: conv_graph(dilations=[2, 2]),
                 "node 'conv' (Conv): dilations = [2, 2]: dilated convolutions are not supported (dilations must be "
                 "1)"),
    "padding on a later Conv": (padded_second_conv,
                                "node 'conv2' (Conv): pads = [1, 1, 1, 1]: zero padding is supported on the first "
                                "Conv only, with the same border on every side (the host writes the padded input)"),
    "uneven padding": (lambda: conv_graph(pads=[1, 0, 1, 0]),
                       "node 'conv' (Conv): pads = [1, 0, 1, 0]: zero padding is supported on the first Conv only, "
                       "with the same border on every side (the host writes the padded input)"),
    "automatic padding": (lambda: conv_graph(auto_pad="SAME_UPPER"),
                          "node 'conv' (Conv): auto_pad = SAME_UPPER: automatic padding is not supported (give "
                          "explicit pads on the first Conv, or none)"),
    "rectangular kernel": (lambda: conv_graph(kernel=(3, 2)),
                           "node 'conv' (Conv): kernel_shape = [3, 2]: the accelerator's kernels are square"),
    "unequal strides": (lambda: conv_graph(strides=[2, 1]),
                        "node 'conv' (Conv): strides = [2, 1]: the accelerator's strides are equal in both "
                        "directions"),
    "rectangular image": (lambda: conv_graph((1, 2, 8, 6)),
                          "node 'conv' (Conv): input image 2x8x6: the accelerator's convolutions take square "
                          "images"),
    "unsupported op": (unsupported_op, "node 'squash' (Sigmoid): op Sigmoid is not supported (supported: Conv, "
                                       "Gemm, MatMul, Add, Relu, Flatten, Reshape, Identity)"),
    "Add without MatMul": (add_without_matmul,
                           "node 'offset' (Add): Add is supported only as the bias right after a MatMul"),
    "Relu on the input": (relu_on_input, "node 'relu' (Relu): a Relu on the network input: the accelerator applies "
                                         "ReLU only to a layer's output"),
    "Gemm alpha": (lambda: gemm(4, alpha=2.0), "node 'gemm' (Gemm): alpha = 2.0: only alpha = beta = 1 is supported"),
    "Reshape to an image": (reshape_to_image,
                            "node 'unflatten' (Reshape): shape = [1, 1, 4, 4]: only flattening to (1, 16) is "
                            "supported"),
    "branching graph": (residual, "node 'skip' (Add): reads conv_out, input; nnaccel maps a chain of nodes, each "
                                  "reading the previous node's output (conv_out)"),
    "too many passes": (lambda: gemm(2100),
                        "does not fit 16 modules x 16 lanes: the network needs 9 passes (gemm: "
                        "9); the descriptor table holds 8"),
    "rows wider than a word": (lambda: conv_graph((1, 1, 100, 100), strides=[4, 4], kernel=4),
                               "node 'conv' (Conv): does not fit 16 modules x 16 lanes: input rows of 100 elements "
                               "are wider than a word (row_elements = 84)"),
    "activation RAM": (lambda: conv_graph((1, 16, 80, 80), strides=[4, 4], kernel=8),
                       "node 'conv' (Conv): does not fit 16 modules x 16 lanes: input: activation RAM 0 is too "
                       "small: the tensor needs words 0..1279, the RAM has 1024 words"),
}


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*arguments, **keywords):
        raise AssertionError("nothing may be built or simulated for a model the accelerator cannot run")

    monkeypatch.setattr(dqn_host, "run_on_accelerator", refuse)


@pytest.mark.parametrize("case", ERRORS, ids=list(ERRORS))
def test_error_table(case, tmp_path, capsys, no_simulation):
    build, message = ERRORS[case]
    path = build().save(tmp_path / "model.onnx")
    assert main(["run", "net", str(path)]) == 2
    assert capsys.readouterr().err == f"nnaccel: error: {path}: {message}\n"


@pytest.mark.parametrize("content, message", [
    (None, "no such file (expected an ONNX model file (.onnx))"),
    (b"not a model", "not an ONNX model: "),
])
def test_files_that_are_not_models(tmp_path, capsys, no_simulation, content, message):
    path = tmp_path / "model.onnx"
    if content is not None:
        path.write_bytes(content)
    assert main(["run", "net", str(path)]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"nnaccel: error: {path}: {message}") and error.count("\n") == 1


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


@pytest.mark.parametrize("corrupt", [False, True])
def test_the_job_end_to_end_with_a_stand_in_simulator(tmp_path, monkeypatch, capsys, corrupt):
    """Through main, the simulation replaced by the golden model's results: exit status, table, JSON."""
    seen = {}

    def stand_in(accelerator, plan, states, *, play, simulator, waves):
        accelerator._MustUse__used = True       # never elaborated here: tell Amaranth (as sim.verilog's cache does)
        seen["plan"], seen["states"] = plan, states
        return fake_run(plan, states, corrupt=corrupt)

    monkeypatch.setattr(dqn_host, "run_on_accelerator", stand_in)
    model = small_cnn(tmp_path / "cnn.onnx")
    inputs = np.random.default_rng(1).standard_normal((3, 2, 8, 8)).astype(np.float32)
    np.save(tmp_path / "inputs.npy", inputs)
    status = main(["run", "net", str(model), "--inputs", str(tmp_path / "inputs.npy"), "--json",
                   str(tmp_path / "report.json"), *SMALL])
    assert status == (1 if corrupt else 0)
    printed = capsys.readouterr().out
    assert ("MISMATCH" if corrupt else "3 inputs (from") in printed and "accelerator (binary32) vs ONNX Runtime" in printed
    assert "zero padding 1 is written by the host" in printed and "conv1 " in printed
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["schema"] == "nnaccel.net/1" and report["bit_exact"] is not corrupt and report["padding"] == 1
    assert [row["name"] for row in report["layers"]] == ["conv1", "conv3", "gemm6"]
    # The accelerator was given the padded images; the outputs are the golden model's of them.
    assert seen["states"].shape == (3, 2, 10, 10) and np.array_equal(seen["states"][:, :, 1:-1, 1:-1], inputs)
    golden = golden_forward(seen["plan"], seen["states"][0])
    assert report["per_input"][0]["golden_q_bits"] == [f"0x{int(bits):08X}" for bits in golden.q_values]
    assert 0 < report["onnxruntime_max_rel"] < 1e-5 if not corrupt else report["onnxruntime_max_abs"] > 0
    runtime = np.array(report["per_input"][0]["onnxruntime_values"], np.float32)
    assert np.allclose(runtime, golden.q_values.view(np.float32), rtol=1e-5, atol=1e-6)


def test_a_narrower_number_format(tmp_path, monkeypatch, capsys):
    """``--format bfloat16``: the plan is compiled for bfloat16 units, the outputs are reported as bfloat16 bits
    and their exact float32 values, and ONNX Runtime's float32 outputs differ by bfloat16's rounding."""
    plans = []
    monkeypatch.setattr(dqn_host, "run_on_accelerator",
                        lambda accelerator, plan, states, **keywords: plans.append(plan) or
                        setattr(accelerator, "_MustUse__used", True) or fake_run(plan, states))
    model = small_cnn(tmp_path / "cnn.onnx")
    assert main(["run", "net", str(model), "--random", "2", "--format", "bfloat16", "--json",
                 str(tmp_path / "report.json"), *SMALL]) == 0
    assert "2 x 4 bfloat16 MACs" in capsys.readouterr().out and plans[0].config.fmt is BFLOAT16
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["config"]["format"] == "bfloat16" and report["bit_exact"]
    first = report["per_input"][0]
    bits = np.array([int(word, 16) for word in first["q_bits"]], np.uint32)
    assert all(len(word) == 6 for word in first["q_bits"]) and np.all(bits < 1 << 16)
    assert first["q_values"] == to_binary32(BFLOAT16, bits).tolist()
    assert 1e-4 < report["onnxruntime_max_rel"] < 0.1


def test_random_inputs_are_seeded(tmp_path, monkeypatch):
    runs = []
    monkeypatch.setattr(dqn_host, "run_on_accelerator",
                        lambda accelerator, plan, states, **keywords: runs.append(states) or
                        setattr(accelerator, "_MustUse__used", True) or fake_run(plan, states))
    model = str(small_cnn(tmp_path / "cnn.onnx"))
    for seed in ("0", "0", "1"):
        assert main(["run", "net", model, "--random", "2", "--seed", seed, *SMALL]) == 0
    assert np.array_equal(runs[0], runs[1]) and not np.array_equal(runs[0], runs[2]) and runs[0].shape[0] == 2
