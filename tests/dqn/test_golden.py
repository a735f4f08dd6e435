"""The DQN golden model: bit for bit the matrix modules' sums, close to the float64 reference, the argmax order."""

import dataclasses

import numpy as np
import pytest

from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.shared.float_format import BINARY32
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward, golden_pass, hardware_argmax, order_key
from nnaccel.models.dqn.network import (AddLayer, ConvLayer, DenseLayer, _conv_float64, dqn_layers, reduced_layers,
                                       reference_q_values, seeded_weights)
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.plan import compile_network, unpack_image
from nnaccel.models.dqn.matrix_module import matrix_accumulate

SEED = 4041
ONE = np.float32(1.0).view(np.uint32)


def wide_range_pairs(layers, rng):
    """Weights and biases spread over many binades, so that any change of summation order changes bits."""
    def draw(shape):
        return (rng.standard_normal(shape) * np.exp2(rng.integers(-12, 12, shape))).astype(np.float32)
    return [(draw(layer.weight_shape), draw(layer.weight_shape[-1])) for layer in layers]


def split_max_pool():
    """A max pool (1 x 3, padded right) in two channel tiles of one channel on a 4 x 3 configuration with the max
    mode (and a flat map of two slots, unused), the second tile's last position a K-split in 3 partial sums:
    ``(config, layers, mapping, pairs)``.  The second tile's sum reads its partial sums, which start at their tensor's
    first word whatever the tile (the compiler once read them from the tile's input channel on, one word late)."""
    config = DqnConfig(modules=4, lanes=3, multiplier_latency=3, adder_latency=1, row_elements=20,
                       activation_depth=128, weight_depth=256, max_layers=8, max_pooling=True, flat_slots=2,
                       flat_window_words=6)
    layers = (ConvLayer("pool", 2, 2, 2, (1, 3), 1, relu=False, padding=(0, 0, 0, 1), groups=2, maximum=True),)
    mapping = DqnMapping((LayerMapping((Segment(0, 2, 1, tile=0), Segment(0, 1, 1, tile=1),
                                        Segment(1, 1, 1, split=3, tile=1))),))
    pairs = [(np.ones(layers[0].weight_shape, np.float32), np.full(2, -np.inf, np.float32))]
    return config, layers, mapping, pairs


def tiny_network(adder_latency):
    return dataclasses.replace(REDUCED_CONFIG, adder_latency=adder_latency), reduced_layers()


def padded_layers():
    """Rectangular images, kernels and strides, padded unevenly (a K-split position of p2 reads the padding)."""
    return (ConvLayer("p1", 2, (10, 9), 4, (3, 2), (2, 1), padding=(1, 2, 1, 0)),
            ConvLayer("p2", 4, (6, 9), 4, 3, 2, padding=(0, 1, 0, 1)), DenseLayer("d", 4 * 3 * 4, 3, relu=False))


@pytest.mark.parametrize("adder_latency, padded", [(0, False), (2, False), (3, False), (2, True)])
def test_every_pass_matches_matrix_accumulate_per_output(adder_latency, padded):
    """Each output of each pass, recomputed one matrix module at a time from its scalars and weight slot (the
    padding's scalars +0) and the bias row as its seed."""
    rng = np.random.default_rng([SEED, adder_latency])
    config, layers = tiny_network(adder_latency)
    layers = padded_layers() if padded else layers
    plan = compile_network(config, layers, wide_range_pairs(layers, rng), split="always")
    shape = (layers[0].in_channels, layers[0].in_height, layers[0].in_width)
    state = (rng.standard_normal(shape) * np.exp2(rng.integers(-8, 8, shape))).astype(np.float32)
    run = golden_forward(plan, state)
    rams = run.rams
    lanes = config.lanes
    assert any(layer.reduce for layer in plan.layers)
    last_outputs = {}
    for layer in plan.layers:
        d = layer.descriptor
        results = golden_pass(config, layer, rams)
        image = np.pad(unpack_image(layer.input, rams[layer.input.ram, layer.input.base:]),
                       ((0, 0), (d["pad_top"], 20), (d["pad_left"], 20)))
        for index, position in enumerate(range(d["first_position"], d["positions"])):
            oy, ox = divmod(position, d["out_width"])
            if layer.reduce:
                words = rams[d["in_ram"], d["in_base"]:d["in_base"] + d["products"]]
                scalars = np.full(d["products"], ONE)
            else:
                rows = slice(oy * d["stride_y"], oy * d["stride_y"] + d["kernel_height"])
                columns = slice(ox * d["stride_x"], ox * d["stride_x"] + d["kernel_width"])
                scalars = image[:, rows, columns].reshape(-1)
            for block in range(layer.column_blocks):
                module = (index % layer.positions_per_group) * layer.column_blocks + block
                lanes_of_module = slice(module * lanes, (module + 1) * lanes)
                # The weight rows of the products, then the bias row: the accumulation's seed.
                vectors, bias = layer.weight_words[:-1, lanes_of_module], layer.weight_words[-1, lanes_of_module]
                if layer.reduce:
                    vectors = words[:, lanes_of_module]
                expected = matrix_accumulate(BINARY32, scalars, vectors, adder_latency=adder_latency,
                                             relu=bool(d["relu"]), seed=bias)
                channels = slice(block * lanes, (block + 1) * lanes)
                assert np.array_equal(results[index, channels], expected), (layer.name, position, block)
                if layer is plan.layers[-1]:
                    last_outputs.update(zip(range(block * lanes, (block + 1) * lanes), expected))
    # The Q-values are the last pass's outputs as recomputed above; the action is NumPy's argmax of them (the
    # random data has no ties and no zeros, where the hardware's order would decide).
    q_values = np.array([last_outputs[action] for action in range(plan.actions)], np.uint32)
    assert np.array_equal(run.q_values, q_values)
    floats = q_values.view(np.float32)
    assert len(set(floats.tolist())) == plan.actions and np.all(floats != 0)
    assert run.action == int(np.argmax(floats)) and run.action_value == q_values[np.argmax(floats)]


def test_splitting_changes_only_the_summation_order():
    """Split, the Q-values agree with the unsplit plan's to float32 rounding (the partial sums change the
    summation order, so the bits may differ), and the layer that is not split gives the same bits."""
    rng = np.random.default_rng(SEED)
    config, layers = tiny_network(2)
    pairs = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
              rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    state = rng.random((2, 10, 10), dtype=np.float32)
    baseline = golden_forward(compile_network(config, layers, pairs, split="never"), state)
    split = compile_network(config, layers, pairs, split="always")
    assert any(layer.reduce for layer in split.layers)
    run = golden_forward(split, state)
    assert np.array_equal(run.activations[0], baseline.activations[0])          # c1 is never split
    assert np.allclose(run.q_values.view(np.float32), baseline.q_values.view(np.float32), rtol=1e-5, atol=1e-6)


def test_packed_outputs_leave_the_padding_at_plus_zero():
    rng = np.random.default_rng(SEED)
    config, layers = tiny_network(2)
    plan = compile_network(config, layers, wide_range_pairs(layers, rng), split="never")
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
        assert np.uint32(run.action_value).view(np.float32) == np.max(run.q_values.view(np.float32))


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


@pytest.mark.parametrize("split", ["never", "always"])
def test_padded_rectangular_network_is_close_to_float64(split):
    """The padded network's outputs within float32 rounding of a float64 convolution over the zero-padded input."""
    rng = np.random.default_rng(SEED)
    layers = padded_layers()
    pairs = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
              rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    plan = compile_network(REDUCED_CONFIG, layers, pairs, split=split)
    state = rng.standard_normal((2, 10, 9)).astype(np.float32)
    activation = state.astype(np.float64)
    for layer, (weight, bias) in zip(layers[:2], pairs):
        activation = _conv_float64(activation, weight, bias, layer)
    expected = activation.reshape(-1) @ pairs[2][0].astype(np.float64) + pairs[2][1]
    observed = golden_forward(plan, state).q_values.view(np.float32)
    np.testing.assert_allclose(observed, expected, rtol=1e-5, atol=1e-5)


def test_a_split_max_pool_in_a_later_channel_tile_is_the_max_pool():
    """A max pool is exact: split or not, its outputs are the largest of their windows (a non-negative input: the
    padding reads +0), here the second tile's K-split position too."""
    config, layers, mapping, pairs = split_max_pool()
    plan = compile_network(config, layers, pairs, mapping=mapping)
    assert [layer.name for layer in plan.layers] == ["pool [0:1]", "pool [1:2]", "pool [1:2] tail", "pool [1:2] sum"]
    rng = np.random.default_rng(SEED)
    for _ in range(4):
        state = np.abs(rng.standard_normal((2, 2, 2))).astype(np.float32)
        run = golden_forward(plan, state)
        pooled = unpack_image(plan.layers[-1].output, run.activations[-1]).view(np.float32)
        padded = np.pad(state, ((0, 0), (0, 0), (0, 1)))
        np.testing.assert_array_equal(pooled, padded.max(axis=2, keepdims=True))      # (2, 2, 1): 1 x 3 windows


def negative_split_max_pool(channels):
    """A max pool without padding (1 x 3 over 1 x 7, ``channels`` channels) on :func:`split_max_pool`'s
    configuration, K-split: one channel where the compiler splits it (``split="always"``: the last position's window
    in three partials), two in tiles of one, the second tile's last position split in three.  ``(plan,
    numpy_max_pool)``: the compiled plan and numpy's max pool of a ``(channels, 1, 7)`` input."""
    config = split_max_pool()[0]
    layer = ConvLayer("pool", channels, (1, 7), channels, (1, 3), 1, relu=False, groups=channels, maximum=True)
    pairs = [(np.ones(layer.weight_shape, np.float32), np.full(channels, -np.inf, np.float32))]
    if channels == 1:
        plan = compile_network(config, (layer,), pairs, split="always")
    else:
        mapping = DqnMapping((LayerMapping((Segment(0, 5, 1, tile=0), Segment(0, 4, 1, tile=1),
                                            Segment(4, 1, 1, split=3, tile=1))),))
        plan = compile_network(config, (layer,), pairs, mapping=mapping)
    return plan, lambda state: np.lib.stride_tricks.sliding_window_view(state, 3, axis=2).max(axis=3)


def negative_states(rng, channels, count):
    """``count`` inputs of :func:`negative_split_max_pool` whose every element is -0.5 or less."""
    return [-np.abs(rng.standard_normal((channels, 1, 7))).astype(np.float32) - np.float32(0.5)
            for _ in range(count)]


@pytest.mark.parametrize("channels", [1, 2])
def test_a_split_max_pool_of_negative_windows_is_numpys_max_pool(channels):
    """A max pool without padding takes any input: K-split or not, a window of negative elements gives its largest
    element, not 0 (the partial maxima start from -inf, as the unsplit pass does)."""
    plan, max_pool = negative_split_max_pool(channels)
    assert [layer.name for layer in plan.layers][-2:] == [f"pool{' [1:2]' if channels > 1 else ''} {name}"
                                                         for name in ("tail", "sum")]
    for state in negative_states(np.random.default_rng(SEED), channels, 4):
        pooled = unpack_image(plan.layers[-1].output, golden_forward(plan, state).activations[-1]).view(np.float32)
        np.testing.assert_array_equal(pooled, max_pool(state))


def test_a_residual_add_is_the_float32_sum_of_its_addends():
    """The add pass's output is the element-wise float32 sum of the second convolution's output and the block's
    input (ReLU after), read back from where the plan put them."""
    rng = np.random.default_rng(SEED)
    layers = (ConvLayer("c1", 4, 6, 4, 3, 1, padding=1), ConvLayer("c2", 4, 6, 4, 3, 1, padding=1, relu=False),
              AddLayer("add", skip=""))
    pairs = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
              rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers[:2]] + [(None, None)]
    plan = compile_network(REDUCED_CONFIG, layers, pairs)
    state = rng.standard_normal((4, 6, 6)).astype(np.float32)
    run = golden_forward(plan, state)
    conv2 = unpack_image(plan.layers[1].output, run.activations[1]).view(np.float32)
    added = unpack_image(plan.layers[2].output, run.activations[2]).view(np.float32)
    np.testing.assert_array_equal(added, np.maximum(conv2 + state, np.float32(0)))
    # One convolution before the add: its addends lie in different RAMs, so a copy pass moves the input over.
    copied = compile_network(REDUCED_CONFIG, layers[:1] + layers[2:], pairs[:1] + pairs[2:])
    assert [layer.name for layer in copied.layers] == ["c1", "input_copy", "add"]
    run = golden_forward(copied, state)
    conv1 = unpack_image(copied.layers[0].output, run.activations[0]).view(np.float32)
    added = unpack_image(copied.layers[2].output, run.activations[2]).view(np.float32)
    np.testing.assert_array_equal(added, np.maximum(conv1 + state, np.float32(0)))
    with pytest.raises(ValueError, match="add: the addend 'c9' is no earlier layer"):
        compile_network(REDUCED_CONFIG, layers[:2] + (AddLayer("add", "c9"),), pairs)
