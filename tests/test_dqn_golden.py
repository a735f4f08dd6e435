"""The DQN golden model: bit for bit the matrix modules' sums, close to the float64 reference, the argmax order."""

import numpy as np
import pytest

from hw.dqn_config import DqnConfig
from hw.float_format import BINARY32
from models.atari import recorded_states
from models.dqn_golden import golden_forward, golden_layer, hardware_argmax, order_key
from models.dqn_network import ConvLayer, DenseLayer, dqn_layers, reference_q_values, seeded_weights
from models.dqn_plan import compile_network, unpack_image
from models.matrix_module import matrix_accumulate

SEED = 4041
ONE = np.float32(1.0).view(np.uint32)


def wide_range_pairs(layers, rng):
    """Weights and biases spread over many binades, so that any change of summation order changes bits."""
    def draw(shape):
        return (rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, shape))).astype(np.float32)
    return [(draw(layer.weight_shape), draw(layer.weight_shape[-1])) for layer in layers]


def tiny_network(adder_latency):
    config = DqnConfig(modules=2, lanes=4, row_elements=12, activation_depth=128, weight_depth=256, max_layers=4,
                       adder_latency=adder_latency)
    layers = (ConvLayer("c1", 2, 10, 4, 3, 2), ConvLayer("c2", 4, 4, 6, 2, 1),
              DenseLayer("d1", 6 * 3 * 3, 7), DenseLayer("d2", 7, 5, relu=False))
    return config, layers


@pytest.mark.parametrize("adder_latency", [0, 2, 3])
def test_every_layer_matches_matrix_accumulate_per_output(adder_latency):
    rng = np.random.default_rng([SEED, adder_latency])
    config, layers = tiny_network(adder_latency)
    plan = compile_network(config, layers, wide_range_pairs(layers, rng))
    state = (rng.standard_normal((2, 10, 10)) * np.exp2(rng.integers(-8, 8, (2, 10, 10)))).astype(np.float32)
    run = golden_forward(plan, state)
    words = plan.input_words(state)
    lanes = config.lanes
    for layer, output_words in zip(plan.layers, run.activations):
        image = unpack_image(layer.input, words)
        d = layer.descriptor
        results = golden_layer(config, layer, image)
        for position in range(d["positions"]):
            oy, ox = divmod(position, d["out_width"])
            rows = slice(oy * d["stride"], oy * d["stride"] + d["kernel_height"])
            columns = slice(ox * d["stride"], ox * d["stride"] + d["kernel_width"])
            scalars = np.append(image[:, rows, columns].reshape(-1), ONE)
            for block in range(layer.column_blocks):
                channels = slice(block * lanes, (block + 1) * lanes)
                vectors = np.concatenate([layer.weights[:, channels], layer.bias[None, channels]])
                expected = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=adder_latency,
                                             relu=bool(d["relu"]))
                assert np.array_equal(results[position, channels], expected), (layer.name, position, block)
        words = output_words
    assert np.array_equal(run.q_values, plan.output_values(run.activations[-1]))
    assert run.action == hardware_argmax(BINARY32, run.q_values)


def test_packed_outputs_leave_the_padding_at_plus_zero():
    rng = np.random.default_rng(SEED)
    config, layers = tiny_network(2)
    plan = compile_network(config, layers, wide_range_pairs(layers, rng))
    run = golden_forward(plan, rng.random((2, 10, 10), dtype=np.float32))
    d1_words = run.activations[2]
    assert d1_words.shape == (2, 12)
    assert not d1_words[1, 3:].any() and not d1_words[:, 4:].any()


def test_the_thesis_network_is_close_to_the_float64_reference():
    weights = seeded_weights()
    plan = compile_network(DqnConfig(), dqn_layers(18), weights)
    for state in recorded_states(2):
        run = golden_forward(plan, state)
        q_values = run.q_values.view(np.float32).astype(np.float64)
        reference = reference_q_values(weights, state)
        # float32 rounding of ~2600-product sums: a few ulps of the largest Q-value.
        assert np.max(np.abs(q_values - reference)) < 1e-5 * np.max(np.abs(reference))
        assert run.action == int(np.argmax(reference))
        assert run.action_value == run.q_values[run.action]


def test_non_finite_states_give_canonical_nans():
    """NaN or infinity in a state: products and sums give the canonical NaN (sign clear, so ReLU keeps it), and the
    argmax ranks +NaN above every number: all Q-values NaN -> action 0."""
    plan = compile_network(DqnConfig(), dqn_layers(6), seeded_weights(actions=6))
    state = recorded_states(1)[0].copy()
    state[0, 40, 40] = np.inf
    run = golden_forward(plan, state)
    assert np.all(run.q_values == BINARY32.canonical_nan) and run.action == 0


def test_argmax_follows_the_hardware_order():
    def bits(*values):
        return np.array(values, dtype=np.float32).view(np.uint32)
    assert hardware_argmax(BINARY32, bits(-0.0, 0.0)) == 1
    assert hardware_argmax(BINARY32, bits(0.0, -0.0)) == 0
    assert hardware_argmax(BINARY32, bits(-3.0, -2.0, -2.0, -5.0)) == 1
    assert hardware_argmax(BINARY32, bits(1.0, np.inf, 2.0)) == 1
    nans = np.array([0xFFC00000, 0xFF800000, 0x7F800000, 0x7FC00000], np.uint32)   # -NaN -inf +inf +NaN
    assert list(np.argsort(order_key(BINARY32, nans))) == [0, 1, 2, 3]
    assert hardware_argmax(BINARY32, nans) == 3
