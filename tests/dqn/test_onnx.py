"""ONNX models onto the DQN accelerator through the network graph: ``read_onnx`` -> ``lower_graph`` ->
``fitting_config`` -> the simulated RTL, bit-exact with the golden model, every counter as the compiler predicted,
and within float32 reordering of ONNX Runtime; the thesis network's round trip; the graph of everyday
PyTorch-exported networks against ONNX Runtime, batch norm folding, and read_onnx's one-line errors (the job's error
table: tests/cli/test_net.py)."""

from dataclasses import replace

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.graph import ModelError, reference
from nnaccel.models.dqn.lowering import lower_graph
from nnaccel.models.dqn.network import dqn_layers, reduced_layers, seeded_weights
from nnaccel.models.dqn.onnx_export import save_onnx
from nnaccel.models.dqn.onnx_import import onnx_runtime_outputs, read_onnx
from nnaccel.models.dqn.plan import COUNTERS, compile_network
from nnaccel.models.dqn.sizing import fitting_config
from nnaccel.models.shared.input_files import InputError
from nnaccel.testbench.dqn.host import run_on_accelerator
from tests.dqn.onnx_models import EVERYDAY_MODELS, GraphBuilder, mlp, small_cnn

# The RTL tests' configuration: the reduced 2 x 4 accelerator with RAMs and rows that hold every model below, so
# that one Verilator build serves them all (fitting_config never shrinks the base; each model's plan is checked to
# need no more).
RTL_BASE = replace(REDUCED_CONFIG, row_elements=16, activation_depth=256, weight_depth=2048, max_layers=16)

# ONNX Runtime sums in its own order; the golden model in the adder tree's.  Measured: at most 5e-7 of the largest
# |output| on these models; the bound leaves room for other seeds, and a layout error would be of the output's size.
REORDERING = 2e-6


def lowered_plan(path, base=RTL_BASE):
    """``(graph, lowered network, plan)`` of the ONNX model at ``path`` on the smallest configuration like ``base``."""
    graph = read_onnx(path)
    lowered = lower_graph(graph)
    _, plan = fitting_config(base, lowered.layers, lowered.weights)
    return graph, lowered, plan


def random_inputs(shape, count, seed=0):
    return np.random.default_rng(seed).standard_normal((count, *shape)).astype(np.float32)


def golden_outputs(plan, inputs):
    return np.stack([golden_forward(plan, sample).q_values for sample in inputs])


def assert_within_reordering(graph, outputs, inputs):
    """The accelerator's binary32 outputs equal ONNX Runtime's up to the order of the float additions."""
    runtime = onnx_runtime_outputs(graph, inputs)
    difference, scale = np.abs(outputs.view(np.float32) - runtime).max(), np.abs(runtime).max()
    assert scale > 0.05 and difference <= REORDERING * scale, \
        f"{graph.source}: max |accelerator - ONNX Runtime| = {difference:.3g} (largest |output| {scale:.3g})"


def test_small_cnn_lowers_with_padding_and_transposed_weights(tmp_path):
    graph, lowered, plan = lowered_plan(small_cnn(tmp_path / "cnn.onnx"))
    shapes = [(layer.in_channels, layer.in_height, layer.in_width, layer.out_channels, layer.kernel_height,
               layer.stride_y, layer.pad_top, layer.pad_bottom, layer.pad_left, layer.pad_right, layer.relu)
              for layer in lowered.layers[:2]]
    assert shapes == [(2, 8, 8, 4, 3, 1, 1, 1, 1, 1, True), (4, 8, 8, 4, 2, 2, 0, 0, 0, 0, True)]
    assert (lowered.layers[2].inputs, lowered.layers[2].outputs, lowered.layers[2].relu) == (64, 5, False)
    # ONNX's (out, in, kh, kw) weight is the compiler's (in, kh, kw, out).
    assert lowered.weights[0][0].tobytes() == graph.ops[0].weight.transpose(1, 2, 3, 0).tobytes()
    inputs = random_inputs(lowered.input_shape, 3)
    assert_within_reordering(graph, golden_outputs(plan, inputs), inputs)


def test_mlp_lowers_matmul_add_and_reshape(tmp_path):
    graph, lowered, plan = lowered_plan(mlp(tmp_path / "mlp.onnx"))
    assert [(layer.inputs, layer.outputs, layer.relu) for layer in lowered.layers] == \
        [(12, 8, True), (8, 6, True), (6, 3, False)]
    inputs = random_inputs(lowered.input_shape, 3)
    assert_within_reordering(graph, golden_outputs(plan, inputs), inputs)


def test_thesis_network_round_trips_to_the_same_plan(tmp_path):
    """The DQN written as ONNX reads back to the same descriptors and weight image (the same bits and cycles on the
    RTL: the full-size run is test_thesis_network_as_onnx_on_the_rtl)."""
    weights = seeded_weights()
    save_onnx(tmp_path / "dqn.onnx", dqn_layers(18), weights)
    graph = read_onnx(tmp_path / "dqn.onnx")
    lowered = lower_graph(graph)
    assert [layer.name for layer in lowered.layers] == [layer.name for layer in dqn_layers(18)]
    plan, expected = (compile_network(DqnConfig(), lowered.layers, lowered.weights),
                      compile_network(DqnConfig(), dqn_layers(18), weights))
    assert plan.descriptors == expected.descriptors and plan.estimated_cycles == expected.estimated_cycles
    assert np.array_equal(plan.weight_image, expected.weight_image)
    states = recorded_states(1)
    assert_within_reordering(graph, golden_outputs(plan, states), states)


def test_reduced_network_exported_and_read_matches_onnx_runtime(tmp_path):
    """The exporter's layouts, checked by ONNX Runtime rather than by the reader alone."""
    rng = np.random.default_rng(3)
    layers = reduced_layers()
    pairs = [(rng.uniform(-0.5, 0.5, layer.weight_shape).astype(np.float32),
              rng.uniform(-0.1, 0.1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    save_onnx(tmp_path / "reduced.onnx", layers, pairs)
    graph, lowered, plan = lowered_plan(tmp_path / "reduced.onnx", REDUCED_CONFIG)
    assert plan.config == REDUCED_CONFIG
    inputs = random_inputs(lowered.input_shape, 2)
    assert_within_reordering(graph, golden_outputs(plan, inputs), inputs)


# ---- on the RTL ------------------------------------------------------------------------------------------------

RTL_MODELS = {"small_cnn": small_cnn, "mlp": mlp,
              **{name: EVERYDAY_MODELS[name] for name in (
                  "padded_conv_chain", "conv_bn_relu", "conv_bn_relu_unfolded", "global_average_pooling",
                  "depthwise_separable_unpadded_pooling", "rectangular_kws", "one_conv_stride2", "residual_block")}}
TORCH_MODELS = set(RTL_MODELS) - {"small_cnn", "mlp"}


def assert_counters_as_predicted(plan, run):
    predicted = [[layer.predicted[name] for name in COUNTERS] for layer in plan.layers]
    for counters, total in zip(run.layer_counters, run.total_cycles):
        assert counters.tolist() == predicted and int(total) == plan.estimated_cycles


@pytest.mark.parametrize("name", RTL_MODELS, ids=list(RTL_MODELS))
def test_models_on_the_rtl_are_bit_exact_with_every_counter_as_predicted(tmp_path, name):
    """Padding on every conv, conv-BN-ReLU, global average pooling, a depthwise-separable block, a 49 x 10 input
    with a 10 x 4 kernel, the 2 x 12 x 12 one-conv model, a residual block (PyTorch exports), and two hand-written
    chains: the
    simulated RTL gives the golden model's bits, each pass's counters and TOTAL_CYCLES as the compiler predicted,
    and ONNX Runtime's outputs within float32 reordering."""
    if name in TORCH_MODELS:
        pytest.importorskip("torch")
    graph, lowered, plan = lowered_plan(RTL_MODELS[name](tmp_path / f"{name}.onnx"))
    assert plan.config == RTL_BASE
    inputs = random_inputs(lowered.input_shape, 2, seed=5)
    run = run_on_accelerator(DqnAccelerator(config=plan.config), plan, inputs)
    golden = golden_outputs(plan, inputs)
    assert run.q_values.tobytes() == golden.tobytes()
    assert_counters_as_predicted(plan, run)
    assert_within_reordering(graph, run.q_values, inputs)


# LeNet-5 (28-element rows, 39 passes) on 4 x 4 modules and lanes with the max mode: its max pools run in hardware.
LENET_BASE = replace(RTL_BASE, modules=4, lanes=4, row_elements=28, weight_depth=8192, max_layers=64,
                     max_pooling=True)


def test_lenet5_max_pooling_on_the_rtl(tmp_path):
    """LeNet-5 as PyTorch exports it (two 2 x 2 max pools): on the RTL with the matrix modules' max mode, the golden
    model's bits, every pass's counters as predicted, ONNX Runtime's outputs within float32 reordering."""
    pytest.importorskip("torch")
    graph, lowered, plan = lowered_plan(EVERYDAY_MODELS["lenet5"](tmp_path / "lenet5.onnx"), LENET_BASE)
    assert plan.config == LENET_BASE
    pools = [layer for layer in plan.layers if layer.descriptor["maximum"]]
    assert len(pools) == 6 + 16 and all(layer.out_channels == 1 for layer in pools)
    inputs = random_inputs(lowered.input_shape, 2, seed=5)
    run = run_on_accelerator(DqnAccelerator(config=plan.config), plan, inputs)
    assert run.q_values.tobytes() == golden_outputs(plan, inputs).tobytes()
    assert_counters_as_predicted(plan, run)
    assert_within_reordering(graph, run.q_values, inputs)


def test_max_pooling_needs_the_max_mode(tmp_path):
    """Without ``max_pooling`` the compiler refuses a max pool in one line naming the layer and the option."""
    pytest.importorskip("torch")
    lowered = lower_graph(read_onnx(EVERYDAY_MODELS["lenet5"](tmp_path / "lenet5.onnx")))
    with pytest.raises(ValueError, match=r"^/MaxPool: max pooling needs the matrix modules' max mode, which this "
                                         r"configuration lacks \(DqnConfig\(max_pooling=True\)\)$"):
        compile_network(replace(LENET_BASE, max_pooling=False), lowered.layers, lowered.weights)


LOWERING_REFUSES = {
    "depthwise_separable": "op '/6/AveragePool' (Pool): padded average pooling (pads (1, 1, 1, 1)) divides border "
                           "windows by fewer elements; not supported",
}


@pytest.mark.parametrize("name", LOWERING_REFUSES, ids=list(LOWERING_REFUSES))
def test_what_lowering_still_refuses(tmp_path, name):
    """Padded average pooling: one line naming the op (it moves to the RTL tests when the lowering takes it)."""
    pytest.importorskip("torch")
    graph = read_onnx(EVERYDAY_MODELS[name](tmp_path / f"{name}.onnx"))
    with pytest.raises(InputError) as error:
        lower_graph(graph)
    assert str(error.value) == f"{graph.source}: {LOWERING_REFUSES[name]}"


@pytest.mark.extended
def test_thesis_network_as_onnx_on_the_rtl(tmp_path):
    """Full size (a 16 x 16 build and minutes of simulation): the DQN as ONNX through the RTL gives the golden
    model's bits, and the cycles of the thesis network compiled directly."""
    save_onnx(tmp_path / "dqn.onnx", dqn_layers(18), seeded_weights())
    graph = read_onnx(tmp_path / "dqn.onnx")
    lowered = lower_graph(graph)
    plan = compile_network(DqnConfig(), lowered.layers, lowered.weights)
    states = recorded_states(2)
    run = run_on_accelerator(DqnAccelerator(config=DqnConfig()), plan, states)
    assert run.q_values.tobytes() == golden_outputs(plan, states).tobytes()
    assert_counters_as_predicted(plan, run)
    assert run.total_cycles.tolist() == [compile_network(DqnConfig(), dqn_layers(18), seeded_weights())
                                         .estimated_cycles] * 2


# ---- read_onnx: the network graph ---------------------------------------------------------------------------------

EVERYDAY_OPS = {
    "padded_conv_chain": ["Conv", "Conv", "Conv", "Flatten", "Dense"],
    "lenet5": ["Conv", "Pool", "Conv", "Pool", "Flatten", "Dense", "Dense", "Dense"],
    "conv_bn_relu": ["Conv", "Conv", "Flatten", "Dense"],
    "conv_bn_relu_unfolded": ["Conv", "Conv", "Flatten", "Dense"],
    "global_average_pooling": ["Conv", "Conv", "GlobalAveragePool", "Flatten", "Dense"],
    "residual_block": ["Conv", "Conv", "Conv", "Add", "Flatten", "Dense"],
    "depthwise_separable": ["Conv", "Conv", "Conv", "Pool", "GlobalAveragePool", "Flatten", "Dense"],
    "depthwise_separable_unpadded_pooling": ["Conv", "Conv", "Conv", "Pool", "GlobalAveragePool", "Flatten", "Dense"],
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
    assert_reference_close_to_onnx_runtime(cnn, random_inputs(cnn.inputs[0].shape, 3))
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
