"""ONNX models onto the DQN accelerator: layout conversion against ONNX Runtime, the thesis network's round trip,
a PyTorch export, and small models on the RTL (the error table: tests/cli/test_net.py)."""

import warnings

import numpy as np
import pytest

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import ConvLayer, DenseLayer, dqn_layers, reduced_layers, seeded_weights
from nnaccel.models.dqn.onnx_export import save_onnx
from nnaccel.models.dqn.onnx_import import compile_onnx, import_onnx, onnx_runtime_outputs
from nnaccel.models.dqn.plan import compile_network, network_weights
from nnaccel.testbench.dqn.host import run_on_accelerator
from tests.dqn.onnx_models import mlp, small_cnn


def golden_outputs(plan, network, inputs):
    return np.stack([golden_forward(plan, network.accelerator_input(sample)).q_values for sample in inputs])


def assert_close_to_onnx_runtime(plan, network, inputs):
    """The golden model's outputs equal ONNX Runtime's up to float32 rounding (a wrong weight layout would put them
    far apart); returns the golden outputs' bits."""
    golden = golden_outputs(plan, network, inputs)
    reference = onnx_runtime_outputs(network, inputs)
    scale = np.abs(reference).max()
    assert scale > 0.1
    np.testing.assert_allclose(golden.view(np.float32), reference, rtol=0, atol=2e-6 * scale)
    return golden


def random_inputs(network, count, seed=0):
    return np.random.default_rng(seed).standard_normal((count, *network.input_shape)).astype(np.float32)


def test_small_cnn_maps_with_padding_and_transposed_weights(tmp_path):
    network = import_onnx(small_cnn(tmp_path / "cnn.onnx"))
    assert network.layers == (ConvLayer("conv1", 2, 10, 4, 3, 1), ConvLayer("conv3", 4, 8, 4, 2, 2),
                              DenseLayer("gemm6", 64, 5, relu=False))
    assert network.padding == 1 and network.input_shape == (2, 8, 8)
    assert network.accelerator_input(np.ones((2, 8, 8), np.float32))[:, 0].sum() == 0
    plan = compile_onnx(network, REDUCED_CONFIG, split="always")
    assert_close_to_onnx_runtime(plan, network, random_inputs(network, 3))


def test_mlp_maps_matmul_add_and_reshape(tmp_path):
    network = import_onnx(mlp(tmp_path / "mlp.onnx"))
    assert [(type(layer), layer.relu) for layer in network.layers] == [(DenseLayer, True), (DenseLayer, True),
                                                                        (DenseLayer, False)]
    assert [layer.weight_shape for layer in network.layers] == [(12, 8), (8, 6), (6, 3)]
    plan = compile_onnx(network, REDUCED_CONFIG)
    assert_close_to_onnx_runtime(plan, network, random_inputs(network, 3))


def test_thesis_network_round_trips_to_the_same_plan(tmp_path):
    """The DQN written as ONNX reads back to the same layers and weights, so the same descriptors and weight image
    (the same bits and cycles on the RTL: the full-size run is test_thesis_network_as_onnx_on_the_rtl)."""
    weights = seeded_weights()
    save_onnx(tmp_path / "dqn.onnx", dqn_layers(18), weights)
    network = import_onnx(tmp_path / "dqn.onnx")
    assert network.layers == dqn_layers(18)
    for (weight, bias), (expected_weight, expected_bias) in zip(network.weights, network_weights(dqn_layers(18),
                                                                                                 weights)):
        assert weight.tobytes() == expected_weight.tobytes() and bias.tobytes() == expected_bias.tobytes()
    plan, expected = compile_onnx(network, DqnConfig()), compile_network(DqnConfig(), dqn_layers(18), weights)
    assert plan.descriptors == expected.descriptors
    assert np.array_equal(plan.weight_image, expected.weight_image)
    assert_close_to_onnx_runtime(plan, network, recorded_states(1))


def test_reduced_network_exported_and_imported_matches_onnx_runtime(tmp_path):
    """The exporter's layouts, checked by ONNX Runtime rather than by the importer alone."""
    rng = np.random.default_rng(3)
    layers = reduced_layers()
    pairs = [(rng.uniform(-0.5, 0.5, layer.weight_shape).astype(np.float32),
              rng.uniform(-0.1, 0.1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    save_onnx(tmp_path / "reduced.onnx", layers, pairs)
    network = import_onnx(tmp_path / "reduced.onnx")
    assert network.layers == layers
    assert_close_to_onnx_runtime(compile_onnx(network, REDUCED_CONFIG), network, random_inputs(network, 2))


def torch_model_file(path):
    """A PyTorch model exported with torch.onnx (the TorchScript exporter, which needs no onnxscript)."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, stride=2), torch.nn.ReLU(), torch.nn.Flatten(),
                                torch.nn.Linear(4 * 4 * 4, 6), torch.nn.ReLU(), torch.nn.Linear(6, 3)).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # the TorchScript exporter is deprecated in favour of the dynamo one
        torch.onnx.export(model, torch.zeros(1, 1, 9, 9), str(path), dynamo=False, input_names=["image"],
                          output_names=["scores"])
    return path


def test_pytorch_export(tmp_path):
    network = import_onnx(torch_model_file(tmp_path / "torch.onnx"))
    assert [type(layer) for layer in network.layers] == [ConvLayer, DenseLayer, DenseLayer]
    assert network.layers[0].stride == 2 and network.input_name == "image"
    assert_close_to_onnx_runtime(compile_onnx(network, REDUCED_CONFIG), network, random_inputs(network, 3))


@pytest.mark.parametrize("model", [small_cnn, mlp, torch_model_file])
def test_models_on_the_reduced_rtl_are_bit_exact(tmp_path, model):
    network = import_onnx(model(tmp_path / "model.onnx"))
    plan = compile_onnx(network, REDUCED_CONFIG, split="always")
    inputs = random_inputs(network, 2, seed=5)
    states = np.stack([network.accelerator_input(sample) for sample in inputs])
    run = run_on_accelerator(DqnAccelerator(config=REDUCED_CONFIG), plan, states)
    golden = golden_outputs(plan, network, inputs)
    assert run.q_values.tobytes() == golden.tobytes()
    assert (run.layer_counters[0][:, 1] == [layer.product_cycles for layer in plan.layers]).all()


@pytest.mark.extended
def test_thesis_network_as_onnx_on_the_rtl(tmp_path):
    """Full size (a 16 x 16 build and minutes of simulation): the DQN as ONNX through the RTL gives the golden
    model's bits, and the cycles of the thesis network compiled directly."""
    save_onnx(tmp_path / "dqn.onnx", dqn_layers(18), seeded_weights())
    network = import_onnx(tmp_path / "dqn.onnx")
    plan = compile_onnx(network, DqnConfig())
    states = recorded_states(2)
    run = run_on_accelerator(DqnAccelerator(config=DqnConfig()), plan, states)
    assert run.q_values.tobytes() == golden_outputs(plan, network, states).tobytes()
    assert run.total_cycles.tolist() == [11_945, 11_945]
