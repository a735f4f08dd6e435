"""ONNX models through ``nnaccel run net`` at full size (16 x 16 MACs): bits, cycles and ONNX Runtime's difference.

    python benchmarks/dqn/bench_onnx.py [--out DIR] [--only NAME ...] [--inputs N]

Writes four models to DIR (default ``onnx_models``) and runs each through ``nnaccel run net`` (one simulation
each; the 16 x 16 build is cached and shared with ``nnaccel run dqn``):

``dqn``    the thesis network with the seeded weights of ``nnaccel run dqn`` (``models.dqn.onnx_export``) on the
           recorded Breakout states it runs: the same bits and cycles as ``nnaccel run dqn --states N``;
``cnn``    built with ``onnx.helper``: 3 x 32 x 32 -> Conv 5x5 stride 1 with a zero border of 2 -> ReLU -> Conv 3x3
           stride 3 -> ReLU -> Flatten -> Gemm 3200 -> 64 (transB) -> ReLU -> Gemm 64 -> 10;
``mlp``    built with ``onnx.helper``: 64 -> MatMul + Add 128 -> ReLU -> MatMul + Add 64 -> ReLU -> Gemm 10;
``torch``  exported by ``torch.onnx`` (skipped without PyTorch): 1 x 28 x 28 -> Conv2d 8, 5x5, stride 2 -> ReLU ->
           Flatten -> Linear 64 -> ReLU -> Linear 10.

Prints per model: layers, passes, TOTAL_CYCLES, the bit-exact verdict against the golden model and the largest
difference from ONNX Runtime (absolute and relative to the largest output); each run's JSON is kept in DIR.
"""

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nnaccel.cli.main import main as nnaccel
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.network import dqn_layers, seeded_weights
from nnaccel.models.dqn.onnx_export import IR_VERSION, OPSET, save_onnx

MODELS = ("dqn", "cnn", "mlp", "torch")


def _uniform(rng, shape, fan_in):
    limit = np.sqrt(6.0 / fan_in)
    return rng.uniform(-limit, limit, shape).astype(np.float32)


def _save(path, nodes, arrays, input_shape, output_shape):
    graph = helper.make_graph(nodes, path.stem, [helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)],
                              [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, output_shape)],
                              initializer=[numpy_helper.from_array(array, name) for name, array in arrays.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = IR_VERSION
    onnx.save(model, path)


def write_cnn(path, rng):
    arrays = {"c1.w": _uniform(rng, (16, 3, 5, 5), 75), "c1.b": _uniform(rng, 16, 75),
              "c2.w": _uniform(rng, (32, 16, 3, 3), 144), "c2.b": _uniform(rng, 32, 144),
              "f1.w": _uniform(rng, (64, 3200), 3200), "f1.b": _uniform(rng, 64, 3200),
              "f2.w": _uniform(rng, (64, 10), 64), "f2.b": _uniform(rng, 10, 64)}
    nodes = [helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], name="conv5x5", pads=[2] * 4),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "c2.w", "c2.b"], ["c2"], name="conv3x3s3", strides=[3, 3]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Flatten", ["r2"], ["flat"], name="flatten"),
             helper.make_node("Gemm", ["flat", "f1.w", "f1.b"], ["f1"], name="fc1", transB=1),
             helper.make_node("Relu", ["f1"], ["r3"], name="relu3"),
             helper.make_node("Gemm", ["r3", "f2.w", "f2.b"], ["y"], name="fc2")]
    _save(path, nodes, arrays, [1, 3, 32, 32], [1, 10])


def write_mlp(path, rng):
    arrays = {"m1.w": _uniform(rng, (64, 128), 64), "m1.b": _uniform(rng, 128, 64),
              "m2.w": _uniform(rng, (128, 64), 128), "m2.b": _uniform(rng, 64, 128),
              "g.w": _uniform(rng, (64, 10), 64), "g.b": _uniform(rng, 10, 64)}
    nodes = [helper.make_node("MatMul", ["x", "m1.w"], ["m1"], name="dense1"),
             helper.make_node("Add", ["m1", "m1.b"], ["a1"], name="dense1_bias"),
             helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
             helper.make_node("MatMul", ["r1", "m2.w"], ["m2"], name="dense2"),
             helper.make_node("Add", ["m2", "m2.b"], ["a2"], name="dense2_bias"),
             helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
             helper.make_node("Gemm", ["r2", "g.w", "g.b"], ["y"], name="dense3")]
    _save(path, nodes, arrays, [1, 64], [1, 10])


def write_torch(path):
    import torch

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 5, stride=2), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(8 * 12 * 12, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the TorchScript exporter is deprecated; it needs no onnxscript
        torch.onnx.export(model, torch.zeros(1, 1, 28, 28), str(path), dynamo=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("onnx_models"))
    parser.add_argument("--only", action="append", choices=MODELS)
    parser.add_argument("--inputs", type=int, default=2, help="inputs per model (recorded states for dqn)")
    arguments = parser.parse_args()
    arguments.out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    results = {}
    for name in arguments.only or MODELS:
        model, extra = arguments.out / f"{name}.onnx", ["--random", str(arguments.inputs)]
        if name == "dqn":
            save_onnx(model, dqn_layers(18), seeded_weights(seed=0), name="dqn")
            np.save(arguments.out / "dqn_states.npy", recorded_states(arguments.inputs))
            extra = ["--inputs", str(arguments.out / "dqn_states.npy")]
        elif name == "cnn":
            write_cnn(model, rng)
        elif name == "mlp":
            write_mlp(model, rng)
        else:
            try:
                write_torch(model)
            except ModuleNotFoundError:
                print("torch: skipped (PyTorch is not installed)")
                continue
        report = arguments.out / f"{name}.json"
        status = nnaccel(["run", "net", str(model), *extra, "--json", str(report)])
        results[name] = (status, json.loads(report.read_text()) if report.exists() else None)
    print(f"\n{'model':<7}{'layers':>7}{'passes':>7}{'cycles':>8}{'verdict':>11}{'ORT max |d|':>13}{'relative':>10}")
    for name, (status, report) in results.items():
        if report is None:
            print(f"{name:<7} failed (exit status {status})")
            continue
        passes = sum(len(layer["passes"]) for layer in report["layers"])
        print(f"{name:<7}{len(report['layers']):>7}{passes:>7}{report['total_cycles']:>8}"
              f"{'bit-exact' if report['bit_exact'] else 'MISMATCH':>11}{report['reference_max_abs']:>13.3g}"
              f"{report['reference_max_rel']:>10.3g}")


if __name__ == "__main__":
    main()
