"""models.dqn.lowering: network graphs (TFLite, ONNX) lowered onto the compiler's graph of layers.

The four MLPerf Tiny reference models (../shared/mlperf_tiny) compile on the 16 x 16 binary32 accelerator with the
smallest RAMs that hold them (passes, predicted cycles and MAC use pinned: the figures of docs/dqn_accelerator.md),
and their golden models agree with the graph's float32 reference up to the order of the float32 additions;
PyTorch-exported everyday networks lower, or are refused with one line naming the op."""

import numpy as np
import pytest

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn import mlperf_tiny
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.graph import reference
from nnaccel.models.dqn.lowering import lower_graph
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer
from nnaccel.models.dqn.onnx_import import read_onnx
from nnaccel.models.dqn.plan import unpack_image
from nnaccel.models.dqn.sizing import fitting_config
from nnaccel.models.dqn.tflite_import import read_tflite
from nnaccel.models.shared.input_files import InputError
from tests.dqn.onnx_models import EVERYDAY_MODELS, GraphBuilder
from tests.dqn.test_tflite import inputs_of, logits

# Per model: passes, predicted cycles, (row elements, activation words, weight words, descriptors) of the fitting
# configuration, the copy passes the compiler inserts, and the activation words both RAMs need (allocation by
# lifetimes) against the words of a compiler that never reuses a word (allocation="keep").
FIGURES = {
    "ic": (20, 53_982, (84, 2048, 4096, 20), ["conv_2d_5_copy", "conv_2d_9_copy"], (1024, 1025), (3168, 4105)),
    "kws": (23, 86_101, (84, 2048, 8192, 23), [], (1601, 1600), (6455, 8000)),
    "vww": (62, 107_843, (96, 1024, 16384, 62), [], (769, 768), (8356, 10368)),
    "ad": (13, 1_942, (84, 1024, 4096, 13), [], (112, 33), (112, 49)),
}


MAC_USE = {"ic": 0.905, "kws": 0.121, "vww": 0.271, "ad": 0.531}

# The flat map with a 6-word window and two channel slots (--flat-window 6 --flat-slots 2): flat passes, predicted
# cycles and MAC use (the stride-2 depthwise layers flat too, the writer with its second staging register); with
# four slots of 3-word windows (--flat-window 3 --flat-slots 4), MobileNet's configuration: its maps of 6 x 6 and
# 12 x 12 on 64-lane slots (KWS on it 11,628, 16 cycles more than on two slots).
FLAT_FIGURES = {(2, 6, "kws"): (4, 11_612, 0.894), (2, 6, "vww"): (13, 37_848, 0.773),
                (4, 3, "vww"): (13, 35_714, 0.819)}


def compiled(task, allocation="lifetimes"):
    graph = read_tflite(mlperf_tiny.model_path(task))
    lowered = lower_graph(graph)
    config, plan = fitting_config(DqnConfig(), lowered.layers, lowered.weights, allocation=allocation)
    return graph, lowered, config, plan


@pytest.mark.parametrize("task", mlperf_tiny.TASKS)
def test_mlperf_tiny_models_compile(task):
    passes, cycles, sizes, copies, words, kept_words = FIGURES[task]
    graph, lowered, config, plan = compiled(task)
    assert (len(plan.layers), plan.estimated_cycles) == (passes, cycles)
    assert (config.row_elements, config.activation_depth, config.weight_depth, config.max_layers) == sizes
    assert [layer.name for layer in plan.network if layer.name not in lowered.sources] == copies
    assert plan.activation_words == words
    assert compiled(task, allocation="keep")[3].activation_words == kept_words
    # MAC use: the model's own MACs over cycles x 256 MACs.
    graph_macs = sum(graph.macs(op) for op in graph.ops)
    assert round(graph_macs / (cycles * config.modules * config.lanes), 3) == MAC_USE[task]


@pytest.mark.parametrize("slots, window, task", list(FLAT_FIGURES))
def test_depthwise_models_on_the_flat_map(slots, window, task):
    flat_passes, cycles, mac_use = FLAT_FIGURES[slots, window, task]
    graph = read_tflite(mlperf_tiny.model_path(task))
    lowered = lower_graph(graph)
    config, plan = fitting_config(DqnConfig(flat_slots=slots, flat_window_words=window), lowered.layers,
                                  lowered.weights)
    assert sum(layer.descriptor["flat"] for layer in plan.layers) == flat_passes
    assert plan.estimated_cycles == cycles
    graph_macs = sum(graph.macs(op) for op in graph.ops)
    assert round(graph_macs / (cycles * config.macs), 3) == mac_use


def test_resnet8_is_a_graph_with_shortcut_convolutions():
    """ResNet-8: each of its three residual adds names both addends; the 1 x 1 stride-2 shortcuts read the block
    input, not the previous layer; global average pooling is folded into the dense layer."""
    _, lowered, _, plan = compiled("ic")
    adds = [layer for layer in lowered.layers if isinstance(layer, AddLayer)]
    assert len(adds) == 3 and all(layer.relu for layer in adds)
    shortcuts = [layer for layer in lowered.layers if isinstance(layer, ConvLayer) and layer.kernel_height == 1]
    assert [(layer.stride_y, layer.source) for layer in shortcuts] == [(2, adds[0].name), (2, adds[1].name)]
    assert isinstance(lowered.layers[-1], DenseLayer) and lowered.softmax_on_host
    assert len(plan.overwritten) > 0 and plan.output.ram in (0, 1)


def test_resnet8_golden_model_on_three_images():
    """ResNet-8's golden model (binary32 on 16 x 16) against the graph's float32 reference on three photos: equal up
    to the order of the float32 additions (relative to the largest logit)."""
    graph, _, _, plan = compiled("ic")
    images = mlperf_tiny.sample_images("ic", 3).inputs
    expected = logits(graph, images)
    for image, reference_logits in zip(images, expected):
        ours = golden_forward(plan, image).q_values.view(np.float32)
        assert np.abs(ours - reference_logits).max() <= 1e-5 * np.abs(reference_logits).max()


@pytest.mark.parametrize("task", ["kws", "vww", "ad"])
def test_golden_models_agree_with_the_reference(task):
    graph, _, _, plan = compiled(task)
    x = inputs_of(task, 1)
    ours = golden_forward(plan, x[0].reshape(-1) if plan.input.packed else x[0]).q_values.view(np.float32)
    expected = logits(graph, x)[0]
    assert np.abs(ours - expected).max() <= 1e-5 * np.abs(expected).max()


def test_depthwise_passes_reach_their_bound():
    """A depthwise pass of k = lanes channels does lanes * 9 products per group of which 9 have a non-zero
    weight (a module's lanes share one input element): its MAC use is at most 1 / lanes.  On KWS's 25 x 5 maps a
    group must lie in two output rows (at most 4 positions), so 12 of 16 modules idle as well."""
    _, _, config, plan = compiled("kws")
    depthwise = [layer for layer in plan.layers if layer.network_layer.startswith("depthwise")]
    assert len({layer.network_layer for layer in depthwise}) == 4
    for layer in depthwise:
        use = layer.ideal_macs / (layer.estimated_cycles * config.modules * config.lanes)
        assert use <= 1 / config.lanes
        assert layer.positions_per_group == 4


LOWERED = {"padded_conv_chain", "conv_bn_relu", "conv_bn_relu_unfolded", "global_average_pooling",
           "residual_block", "rectangular_kws", "one_conv_stride2", "lenet5"}


@pytest.mark.parametrize("name", sorted(LOWERED))
def test_everyday_pytorch_models_lower_and_compile(tmp_path, name):
    pytest.importorskip("torch")
    graph = read_onnx(EVERYDAY_MODELS[name](tmp_path / f"{name}.onnx"))
    lowered = lower_graph(graph)
    _, plan = fitting_config(DqnConfig(), lowered.layers, lowered.weights)
    x = np.random.default_rng(5).standard_normal((2, *graph.inputs[0].shape)).astype(np.float32)
    expected = reference(graph, x).reshape(len(x), -1)
    for state, row in zip(x, expected):
        ours = plan.output_values(golden_forward(plan, state).rams[plan.output.ram, plan.output.base:]).view(np.float32)
        assert np.abs(ours - row).max() <= 2e-6 * np.abs(row).max()
    if name == "residual_block":
        add = next(layer for layer in lowered.layers if isinstance(layer, AddLayer))
        assert add.skip == lowered.layers[0].name and add.relu


@pytest.mark.parametrize("name, fault", [
    ("depthwise_separable", "\\(Pool\\): padded average pooling \\(pads \\(1, 1, 1, 1\\)\\)"),
])
def test_refusals_name_the_op(tmp_path, name, fault):
    pytest.importorskip("torch")
    graph = read_onnx(EVERYDAY_MODELS[name](tmp_path / f"{name}.onnx"))
    with pytest.raises(InputError, match=fault) as error:
        lower_graph(graph)
    assert "\n" not in str(error.value) and str(graph.source) in str(error.value)


def _padded_max_pool(path, relu):
    graph = GraphBuilder((1, 2, 7, 7), seed=3)
    graph.conv(3, 2, 3, name="conv")
    if relu:
        graph.node("Relu", name="relu")
    graph.node("MaxPool", name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    return read_onnx(graph.save(path, output_shape=(1, 3, 4, 4)))


def test_padded_max_pooling_only_of_a_non_negative_input(tmp_path):
    """The feeder pads with +0: a padded max pool after a ReLU is exact (the golden model's pool output is the
    maximum of its conv output's windows padded with -inf, as ONNX pads, and the graph's float32 reference within
    reordering of the conv's sums); without the ReLU it is refused in one line naming the op."""
    graph = _padded_max_pool(tmp_path / "relu.onnx", relu=True)
    lowered = lower_graph(graph)
    pool = lowered.layers[-1]
    assert isinstance(pool, ConvLayer) and pool.maximum and pool.border == (1, 1, 1, 1)
    _, plan = fitting_config(DqnConfig(modules=4, lanes=4), lowered.layers, lowered.weights)
    assert plan.config.max_pooling
    x = np.random.default_rng(7).standard_normal((2, 2, 7, 7)).astype(np.float32)
    for state, row in zip(x, reference(graph, x).reshape(len(x), -1)):
        run = golden_forward(plan, state)
        conv = unpack_image(plan.layers[0].output, run.activations[0]).view(np.float32)
        windows = np.pad(conv, ((0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        pooled = np.lib.stride_tricks.sliding_window_view(windows, (3, 3), axis=(1, 2))[:, ::2, ::2].max(axis=(3, 4))
        assert run.q_values.view(np.float32).tolist() == pooled.ravel().tolist()
        assert np.abs(pooled.ravel() - row).max() <= 2e-6 * np.abs(row).max()
    with pytest.raises(InputError, match=r"op 'pool' \(Pool\): padded max pooling \(pads \(1, 1, 1, 1\)\) of an "
                                         r"input that may be negative: the accelerator pads with \+0, not -inf$"):
        lower_graph(_padded_max_pool(tmp_path / "plain.onnx", relu=False))
