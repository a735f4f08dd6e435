"""ONNX models onto the DQN accelerator: layout conversion against ONNX Runtime, the thesis network's round trip,
a PyTorch export, and small models on the RTL (the error table: tests/cli/test_net.py); read_onnx's network graph
of everyday PyTorch-exported networks against ONNX Runtime, batch norm folding, and its one-line errors."""

import warnings

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.graph import ModelError, reference
from nnaccel.models.dqn.network import ConvLayer, DenseLayer, dqn_layers, reduced_layers, seeded_weights
from nnaccel.models.dqn.onnx_export import save_onnx
from nnaccel.models.dqn.onnx_import import compile_onnx, import_onnx, onnx_runtime_outputs, read_onnx
from nnaccel.models.dqn.plan import compile_network, network_weights
from nnaccel.testbench.dqn.host import run_on_accelerator
from tests.dqn.onnx_models import EVERYDAY_MODELS, GraphBuilder, mlp, small_cnn


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
    assert run.total_cycles.tolist() == [plan.estimated_cycles] * 2 == [11_830] * 2


# ---- read_onnx: the network graph ---------------------------------------------------------------------------------

EVERYDAY_OPS = {
    "padded_conv_chain": ["Conv", "Conv", "Conv", "Flatten", "Dense"],
    "lenet5": ["Conv", "Pool", "Conv", "Pool", "Flatten", "Dense", "Dense", "Dense"],
    "conv_bn_relu": ["Conv", "Conv", "Flatten", "Dense"],
    "conv_bn_relu_unfolded": ["Conv", "Conv", "Flatten", "Dense"],
    "global_average_pooling": ["Conv", "Conv", "GlobalAveragePool", "Flatten", "Dense"],
    "residual_block": ["Conv", "Conv", "Conv", "Add", "Flatten", "Dense"],
    "depthwise_separable": ["Conv", "Conv", "Conv", "Pool", "GlobalAveragePool", "Flatten", "Dense"],
    "rectangular_kws": ["Conv", "Flatten", "Dense"],
    "one_conv_stride2": ["Conv"],
}


def assert_reference_close_to_onnx_runtime(graph, inputs):
    """The graph's float32 reference equals ONNX Runtime's outputs up to the order of the float additions."""
    ours = reference(graph, inputs).reshape(len(inputs), -1)
    theirs = onnx_runtime_outputs(graph, inputs)
    difference, scale = np.abs(ours - theirs).max(), np.abs(theirs).max()
    assert scale > 0.05 and difference <= 2e-6 * scale, \
        f"{graph.source}: max |reference - ONNX Runtime| = {difference:.3g} (largest |output| {scale:.3g})"


@pytest.mark.parametrize("name", EVERYDAY_MODELS, ids=list(EVERYDAY_MODELS))
def test_everyday_pytorch_models_read_into_the_graph(tmp_path, name):
    pytest.importorskip("torch")
    graph = read_onnx(EVERYDAY_MODELS[name](tmp_path / f"{name}.onnx"))
    assert [type(op).__name__ for op in graph.ops] == EVERYDAY_OPS[name]
    inputs = np.random.default_rng(4).standard_normal((3, *graph.inputs[0].shape)).astype(np.float32)
    assert_reference_close_to_onnx_runtime(graph, inputs)


def test_everyday_models_keep_their_shapes(tmp_path):
    pytest.importorskip("torch")
    kws = read_onnx(EVERYDAY_MODELS["rectangular_kws"](tmp_path / "kws.onnx"))
    assert (kws.ops[0].kernel, kws.ops[0].stride, kws.ops[0].pads) == ((10, 4), (2, 2), (5, 5, 1, 1))
    assert kws.tensors[kws.ops[0].output].shape == (8, 25, 5)
    separable = read_onnx(EVERYDAY_MODELS["depthwise_separable"](tmp_path / "ds.onnx"))
    assert separable.ops[1].depthwise and separable.ops[2].kernel == (1, 1)
    assert (separable.ops[3].kind, separable.ops[3].pads) == ("avg", (1, 1, 1, 1))
    residual = read_onnx(EVERYDAY_MODELS["residual_block"](tmp_path / "residual.onnx"))
    add = residual.ops[3]
    assert add.relu and add.inputs[1] == residual.ops[0].output        # the stem's output lives across the block
    one_conv = read_onnx(EVERYDAY_MODELS["one_conv_stride2"](tmp_path / "one.onnx"))
    assert one_conv.tensors[one_conv.outputs[0]].shape == (4, 5, 5) and one_conv.ops[0].relu


def test_chain_models_read_into_the_graph(tmp_path):
    cnn = read_onnx(small_cnn(tmp_path / "cnn.onnx"))
    assert [(type(op).__name__, op.relu) for op in cnn.ops if hasattr(op, "relu")] == \
        [("Conv", True), ("Conv", True), ("Dense", False)]
    assert cnn.ops[0].pads == (1, 1, 1, 1) and cnn.ops[0].weight.shape == (4, 2, 3, 3)
    assert_reference_close_to_onnx_runtime(cnn, random_inputs(import_onnx(cnn.source), 3))
    perceptron = read_onnx(mlp(tmp_path / "mlp.onnx"))
    assert [op.weight.shape for op in perceptron.ops] == [(8, 12), (6, 8), (3, 6)]
    assert_reference_close_to_onnx_runtime(perceptron, np.random.default_rng(2).standard_normal((3, 12))
                                           .astype(np.float32))


def test_batch_norm_is_folded_in_float64(tmp_path):
    """Conv -> BatchNormalization -> Relu: w' = w * gamma / sqrt(var + eps), b' = (b - mean) * gamma /
    sqrt(var + eps) + beta, in float64, rounded once to float32."""
    graph = GraphBuilder((1, 2, 6, 6), seed=4)
    graph.conv(3, 2, 3, name="conv")
    statistics = [graph.constant(name, graph.rng.uniform(low, high, 3).astype(np.float32))
                  for name, low, high in (("gamma", 0.5, 1.5), ("beta", -0.2, 0.2), ("mean", -0.3, 0.3),
                                          ("var", 0.2, 2.0))]
    graph.node("BatchNormalization", statistics, name="bn", epsilon=1e-3)
    graph.node("Relu", name="relu")
    path = graph.save(tmp_path / "bn.onnx", [1, 3, 4, 4])
    model = read_onnx(path)
    (conv,) = model.ops
    values = {tensor.name: numpy_helper.to_array(tensor).astype(np.float64)
              for tensor in onnx.load(path).graph.initializer}
    factor = values["gamma"] / np.sqrt(values["var"] + np.float64(np.float32(1e-3)))
    assert conv.relu and conv.output == "relu_out"
    assert conv.weight.tobytes() == (values["conv.w"] * factor[:, None, None, None]).astype(np.float32).tobytes()
    assert conv.bias.tobytes() == ((values["conv.b"] - values["mean"]) * factor + values["beta"]) \
        .astype(np.float32).tobytes()
    assert_reference_close_to_onnx_runtime(model, np.random.default_rng(0).standard_normal((2, 2, 6, 6))
                                           .astype(np.float32))


def _graph_with(build):
    graph = GraphBuilder((1, 2, 8, 8))
    build(graph)
    return graph


READ_ERRORS = {
    "unsupported op": (lambda graph: graph.node("Sigmoid", name="squash"),
                       "node 'squash' (Sigmoid): op Sigmoid is not supported (supported: Conv, Gemm, MatMul, Add, "
                       "Relu, BatchNormalization, MaxPool, AveragePool, GlobalAveragePool, Flatten, Reshape, Softmax, "
                       "Dropout, Identity, Constant)"),
    "Relu on the input": (lambda graph: graph.node("Relu", name="relu"),
                          "node 'relu' (Relu): a Relu is supported only right after a Conv, Gemm, MatMul or Add that "
                          "nothing else reads"),
    "Add of a constant after pooling": (
        lambda graph: (graph.node("MaxPool", name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                       graph.node("Add", [graph.bias("offset", 2)], name="shift")),
        "node 'shift' (Add): an Add of a constant is supported only as the bias of the Conv, Gemm or MatMul right "
        "before it (one value per output channel)"),
    "dilation": (lambda graph: graph.conv(4, 2, 3, name="conv", dilations=[2, 2]),
                 "node 'conv' (Conv): dilations = [2, 2]: dilated convolutions are not supported (dilations must be "
                 "1)"),
    "groups that do not divide": (lambda graph: graph.conv(3, 1, 3, name="conv", group=2),
                                  "node 'conv' (Conv): groups = 2 does not divide 3 output channels"),
    "count_include_pad": (lambda graph: graph.node("AveragePool", name="pool", kernel_shape=[3, 3],
                                                   pads=[1, 1, 1, 1], count_include_pad=1),
                          "node 'pool' (AveragePool): count_include_pad = 1 is not supported (the average divides "
                          "by the real pixels of each window, as TFLite's)"),
    "ceil_mode": (lambda graph: graph.node("MaxPool", name="pool", kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
                  "node 'pool' (MaxPool): ceil_mode = 1 is not supported (the output size rounds down)"),
    "kernel past the image": (lambda graph: graph.conv(4, 2, 9, name="conv"),
                              "node 'conv' (Conv): kernel 9x9 is larger than its padded input 8x8"),
}


@pytest.mark.parametrize("case", READ_ERRORS, ids=list(READ_ERRORS))
def test_read_errors_are_one_line_naming_the_node(tmp_path, case):
    build, fault = READ_ERRORS[case]
    path = _graph_with(build).save(tmp_path / "model.onnx")
    with pytest.raises(ModelError) as error:
        read_onnx(path)
    assert str(error.value) == f"{path}: {fault}"
