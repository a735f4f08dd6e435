# amaranth: UnusedElaboratable=no
"""CapsNetRoutingEngine: parameters, lint, and simulations compared bit for bit with models.capsnet.golden.route_fixed
on random prediction vectors (extremes included, gaps and backpressure on the streams) and on the shipped
networks' predictions for sample digits; the beat cycles against the engine's timing."""

import numpy as np
import pytest

from nnaccel.hw.capsnet.routing_engine import CapsNetRoutingEngine, routing_finish_cycles, routing_length_bits, routing_sum_bits
from nnaccel.models.capsnet.golden import COUPLING_SHIFT, load_capsnet, route_fixed, step1, step2
from nnaccel.models.capsnet.network import CLASSES, DIGIT_DIM
from nnaccel.models.shared.mnist import sample_digits
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog


@pytest.mark.parametrize("kwargs, message", [
    ({"classes": 0}, "classes must be an integer from 1 to 64, not 0"),
    ({"dims": 16.0}, "dims must be an integer from 1 to 64, not 16.0"),
    ({"max_capsules": 0}, "max_capsules must be an integer from 1 to 1048576, not 0"),
    ({"multipliers": "lut"}, "multipliers must be one of \\('dsp', 'logic'\\), not 'lut'"),
])
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        CapsNetRoutingEngine(**kwargs)


def test_widths():
    assert routing_sum_bits(1152) == 19 and routing_sum_bits(1) == 9      # -147,456 and -128 fit
    assert routing_length_bits(16) == 19 and routing_length_bits(1) == 15   # 2**18 and 2**14 fit
    engine = CapsNetRoutingEngine()
    assert (engine.classes, engine.dims, engine.sum_bits, engine.length_bits) == (10, 16, 19, 19)
    assert engine.finish_cycles == routing_finish_cycles(10, 16) == 170
    assert engine.module_name == "capsnet_routing_engine_j10_d16_c1152_dsp"


@pytest.mark.parametrize("multipliers", ["dsp", "logic"])
def test_lint_clean(multipliers):
    engine = CapsNetRoutingEngine(classes=3, dims=4, max_capsules=20, multipliers=multipliers)
    assert lint_verilog(engine, engine.module_name) == []


def run_engine(images, shift, *, valid_seed=None, ready_seed=None, multipliers="logic"):
    """Simulate the CapsNet-size engine on ``images`` (a list of (capsules, 10, 16) int8 arrays)."""
    engine = CapsNetRoutingEngine(multipliers=multipliers)
    vectors = np.concatenate([image.reshape(-1, DIGIT_DIM) for image in images]).view(np.uint8)
    total = len(vectors) + len(images) * engine.finish_cycles
    result = simulate(engine, name=engine.module_name, test_module="nnaccel.testbench.capsnet.routing_engine_tb",
                      stimulus={"vectors": vectors},
                      config={"shift": shift, "image_vectors": [image.shape[0] * CLASSES for image in images],
                              "valid_seed": valid_seed, "ready_seed": ready_seed, "classes": CLASSES,
                              "label_bits": 4, "length_bits": engine.length_bits, "max_cycles": 4 * total + 100})
    return result.outputs


def check_against_golden(outputs, images, squash_shift):
    for index, image in enumerate(images):
        golden = route_fixed(image, squash_shift=squash_shift)
        beats = slice(index * CLASSES, (index + 1) * CLASSES)
        np.testing.assert_array_equal(outputs["sums"][beats], golden.sums)
        np.testing.assert_array_equal(outputs["caps"][beats].view(np.int8), golden.digit_caps)
        np.testing.assert_array_equal(outputs["squared_length"][beats], golden.squared_lengths)
        assert outputs["label"][beats][-1] == golden.label
        np.testing.assert_array_equal(outputs["last"][beats], np.arange(CLASSES) == CLASSES - 1)


def test_random_predictions_with_gaps_and_backpressure():
    rng = np.random.default_rng(16)
    images = [rng.integers(-128, 128, size=(capsules, CLASSES, DIGIT_DIM), dtype=np.int8) for capsules in (3, 1, 40)]
    images[1][:] = 127                         # one capsule: sums 127, saturation with small shifts
    extremes = np.full((30, CLASSES, DIGIT_DIM), -128, np.int8)
    extremes[:, 3] = 127                       # class 3 the longest only after saturation is undone by the shift
    images.append(extremes)
    squash_shift = 1                           # shift 5: some values saturate, some round
    outputs = run_engine(images, squash_shift + COUPLING_SHIFT, valid_seed=5, ready_seed=6)
    check_against_golden(outputs, images, squash_shift)
    lengths = outputs["squared_length"].reshape(-1, CLASSES)
    assert (lengths == lengths.max(axis=1, keepdims=True)).sum(axis=1).max() > 1      # a tie went to the lower j


def test_shipped_networks_on_sample_digits():
    """Predictions of the reduced network for three digits and of the full network (1,152 capsules) for one,
    each with its own squash shift; every vector streamed without gap, every beat taken at once: class j's beat
    comes (j + 1) * 17 cycles after the last vector."""
    images, labels = sample_digits()
    outputs_by_variant = {}
    for variant, count in (("reduced", 3), ("full", 1)):
        net = load_capsnet(variant)
        predictions = [step2(step1(image, net), net) for image in images[:count]]
        outputs = run_engine(predictions, net.squash_shift + COUPLING_SHIFT)
        check_against_golden(outputs, predictions, net.squash_shift)
        outputs_by_variant[variant] = outputs
        ends = np.cumsum([p.shape[0] * CLASSES for p in predictions]) - 1
        for image, end in enumerate(ends):
            beats = outputs["beat_cycles"][image * CLASSES:(image + 1) * CLASSES]
            np.testing.assert_array_equal(beats - outputs["accept_cycles"][end], (np.arange(CLASSES) + 1) * 17)
    assert outputs_by_variant["full"]["label"][-1] == labels[0]
