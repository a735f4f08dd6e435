"""The DQN network description, weights files and the float64 reference."""

import json

import numpy as np
import pytest

from nnaccel.models.dqn.network import (ConvLayer, _conv_float64, check_states, dqn_layers, load_weights,
                                reference_q_values, save_weights, seeded_weights)
from nnaccel.models.shared.input_files import InputError


def test_layer_shapes_match_the_thesis():
    conv1, conv2, fc1, fc2 = dqn_layers(18)
    assert (conv1.out_size, conv2.out_size) == (20, 9)
    assert fc1.inputs == conv2.out_channels * conv2.out_size ** 2 == 2592
    assert [layer.macs for layer in (conv1, conv2, fc1, fc2)] == [1_638_400, 663_552, 663_552, 4_608]


@pytest.mark.parametrize("actions", [0, 33, 2.0])
def test_action_count_is_checked(actions):
    with pytest.raises(ValueError, match=f"actions must be an integer from 1 to 32, not {actions!r}"):
        dqn_layers(actions)


def test_convolution_matches_a_direct_loop():
    rng = np.random.default_rng(1)
    layer = ConvLayer("test", 3, 11, 5, 3, 2)
    image = rng.standard_normal((3, 11, 11))
    weight = rng.standard_normal(layer.weight_shape).astype(np.float32)
    bias = rng.standard_normal(5).astype(np.float32)
    expected = np.zeros((5, 5, 5))
    for o in range(5):
        for y in range(5):
            for x in range(5):
                window = image[:, 2 * y:2 * y + 3, 2 * x:2 * x + 3]
                expected[o, y, x] = max(0.0, np.sum(window * weight[..., o]) + bias[o])
    assert np.allclose(_conv_float64(image, weight, bias, layer), expected, rtol=1e-12, atol=1e-12)


def test_weights_round_trip(tmp_path):
    weights = seeded_weights(actions=6, seed=3)
    save_weights(tmp_path / "w.npz", weights)
    loaded = load_weights(tmp_path / "w.npz")
    assert all(np.array_equal(loaded[key], weights[key]) for key in weights)
    assert not list(tmp_path.glob("*.partial*"))


def test_seeded_weights_are_reproducible():
    first, second = seeded_weights(seed=5), seeded_weights(seed=5)
    assert all(np.array_equal(first[key], second[key]) for key in first)


def test_bad_weights_files_are_explained(tmp_path):
    weights = seeded_weights()
    del weights["fc1_b"]
    np.savez(tmp_path / "missing.npz", **weights)
    with pytest.raises(InputError, match=r"missing.npz: missing fc1_b \(expected a weights .npz"):
        load_weights(tmp_path / "missing.npz")
    weights = seeded_weights()
    weights["conv2_w"] = weights["conv2_w"][:8]
    np.savez(tmp_path / "shape.npz", **weights)
    with pytest.raises(InputError, match=r"shape.npz: conv2_w must have shape \(16, 4, 4, 32\), not \(8, 4, 4, 32\)"):
        load_weights(tmp_path / "shape.npz")
    (tmp_path / "corrupt.npz").write_bytes(b"not a zip file")
    with pytest.raises(InputError, match="corrupt.npz: not a NumPy .npy or .npz file"):
        load_weights(tmp_path / "corrupt.npz")


def test_states_are_checked():
    assert check_states(np.zeros((4, 84, 84), np.float32)).shape == (1, 4, 84, 84)
    with pytest.raises(ValueError, match=r"states must have shape \(N, 4, 84, 84\), not \(2, 3, 84, 84\)"):
        check_states(np.zeros((2, 3, 84, 84), np.float32))
    with pytest.raises(ValueError, match="states must be float32, not float64"):
        check_states(np.zeros((1, 4, 84, 84)))


def test_reference_q_values_have_one_entry_per_action():
    weights = seeded_weights(actions=4)
    q_values = reference_q_values(weights, np.full((4, 84, 84), 0.5, np.float32))
    assert q_values.shape == (4,) and q_values.dtype == np.float64


def test_the_trained_weights_ship_and_tell_the_recorded_states_apart():
    """The shipped Breakout network (``nnaccel train dqn``) loads as the thesis network and, unlike the seeded weights
    (one action for every state), chooses more than one action over the recorded states, as the accelerator's
    golden model computes them; its provenance says which validated network it is."""
    from nnaccel.hw.dqn.config import DqnConfig
    from nnaccel.models.dqn.atari import recorded_states
    from nnaccel.models.dqn.golden import golden_forward
    from nnaccel.models.dqn.network import TRAINED_WEIGHTS
    from nnaccel.models.dqn.plan import compile_network

    weights = load_weights(TRAINED_WEIGHTS)
    plan = compile_network(DqnConfig(), dqn_layers(18), weights)
    actions = {golden_forward(plan, state).action for state in recorded_states()}
    assert len(actions) > 1 and actions <= {0, 1, 3, 4}         # Breakout's minimal set: NOOP FIRE RIGHT LEFT
    provenance = json.loads(TRAINED_WEIGHTS.with_suffix(".json").read_text())
    assert provenance["game"] == "breakout" and provenance["selected"]["phase"] in ("pretrain", "dagger", "finetune")


def test_rectangular_padded_layer_shapes_and_macs():
    """TFLite's SAME on the keyword-spotting input: 49x10, a 10x4 kernel at stride 2 -> 25x5 (rows padded 4 top,
    5 bottom; columns 1 and 1); MACs count real input elements only."""
    layer = ConvLayer("kws", 1, (49, 10), 8, (10, 4), 2, padding=(4, 5, 1, 1))
    assert (layer.in_height, layer.in_width, layer.kernel_height, layer.kernel_width) == (49, 10, 10, 4)
    assert (layer.stride_y, layer.stride_x, layer.out_height, layer.out_width) == (2, 2, 25, 5)
    assert (layer.pad_top, layer.pad_bottom, layer.pad_left, layer.pad_right) == (4, 5, 1, 1)
    assert layer.weight_shape == (1, 10, 4, 8)
    real = np.pad(np.ones((49, 10)), ((4, 5), (1, 1)))
    expected = sum(real[2 * y:2 * y + 10, 2 * x:2 * x + 4].sum() for y in range(25) for x in range(5)) * 8
    assert layer.macs == expected
    assert ConvLayer("same", 3, 32, 4, 3, (2, 2), padding=(0, 1, 0, 1)).out_size == 16
    assert ConvLayer("square", 3, [7, 7], 4, [3, 3], 1).kernel == (3, 3)
    with pytest.raises(ValueError, match="not square"):
        _ = layer.out_size
    with pytest.raises(ValueError, match="padding must be"):
        ConvLayer("bad", 1, 8, 1, 3, 1, padding=(1, 2, 3)).check_geometry()
    with pytest.raises(ValueError, match="big: a 7x7 kernel does not fit the padded input 6x6"):
        ConvLayer("big", 1, 4, 1, 7, 1, padding=1).check_geometry()


def test_padded_convolution_matches_a_direct_loop():
    rng = np.random.default_rng(2)
    layer = ConvLayer("test", 2, (7, 5), 3, (3, 2), (2, 1), padding=(1, 2, 0, 1))
    image = rng.standard_normal((2, 7, 5))
    weight = rng.standard_normal(layer.weight_shape).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    padded = np.pad(image, ((0, 0), (1, 2), (0, 1)))
    expected = np.zeros((3, layer.out_height, layer.out_width))
    for o in range(3):
        for y in range(layer.out_height):
            for x in range(layer.out_width):
                window = padded[:, 2 * y:2 * y + 3, x:x + 2]
                expected[o, y, x] = max(0.0, np.sum(window * weight[..., o]) + bias[o])
    assert np.allclose(_conv_float64(image, weight, bias, layer), expected, rtol=1e-12, atol=1e-12)
