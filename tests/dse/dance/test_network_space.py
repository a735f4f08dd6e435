"""The network space: every candidate compiles onto the default 16 x 16 DQN accelerator; encodings."""

import numpy as np
import pytest

from nnaccel.dse.dance.network_space import NETWORK_SPACE, Network
from nnaccel.dse.shared.layer import from_network_layer
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.plan import compile_network


def _random_weights(layers, rng):
    return [(rng.standard_normal(layer.weight_shape).astype(np.float32),
             rng.standard_normal(layer.weight_shape[-1]).astype(np.float32)) for layer in layers]


def _compile_all(candidates, seed):
    config, rng = DqnConfig(), np.random.default_rng(seed)
    for indices in candidates:
        layers = NETWORK_SPACE.network(indices).dqn_layers()
        plan = compile_network(config, layers, _random_weights(layers, rng))
        assert plan.actions == 10


@pytest.mark.extended
@pytest.mark.parametrize("c1_index", range(NETWORK_SPACE.sizes[0]))
def test_every_candidate_compiles_on_the_default_configuration(c1_index):
    candidates = NETWORK_SPACE.all_points()
    _compile_all(candidates[candidates[:, 0] == c1_index], c1_index)


def test_a_sample_of_candidates_compiles_on_the_default_configuration():
    """The default run's share of the exhaustive test above (-m extended, about 4 CPU minutes): a seeded eighth
    of the candidates, plus every candidate made of extreme values only (the largest kernels on the smallest maps)."""
    candidates = NETWORK_SPACE.all_points()
    sample = np.random.default_rng(2026).permutation(len(candidates))[:len(candidates) // 8]
    extremes = np.all((candidates == 0) | (candidates == np.array(NETWORK_SPACE.sizes) - 1), axis=1)
    chosen = np.union1d(sample, np.flatnonzero(extremes))
    assert len(chosen) >= len(candidates) // 8
    _compile_all(candidates[chosen], 0)


def test_the_space_has_every_combination_once():
    candidates = NETWORK_SPACE.all_points()
    assert len(candidates) == len(NETWORK_SPACE) == 3840
    assert len({tuple(row) for row in candidates}) == len(candidates)


def test_encoding_is_one_hot_per_choice_and_decodes_back():
    rng = np.random.default_rng(0)
    indices = NETWORK_SPACE.sample(rng, 50)
    encoding = NETWORK_SPACE.encode(indices)
    assert encoding.shape == (50, NETWORK_SPACE.encoding_width) == (50, 24)
    assert np.all(encoding.sum(axis=1) == len(NETWORK_SPACE.sizes))
    assert np.array_equal(NETWORK_SPACE.decode(encoding), indices)


def test_a_candidate_and_its_layers():
    network = NETWORK_SPACE.network((1, 2, 0, 2, 1, 1, 0))
    assert network == Network(c1=32, k1=7, s1=2, c2=64, k2=3, s2=3, d1=0)
    assert (network.conv1_size, network.conv2_size, network.flat_features) == (11, 3, 576)
    names = [layer.name for layer in network.dqn_layers()]
    assert names == ["conv1", "conv2", "dense2"]            # no hidden dense layer: three layers
    template = [from_network_layer(layer) for layer in network.dqn_layers()]
    assert [layer.macs for layer in template] == [layer.macs for layer in network.dqn_layers()] == [
        32 * 11 * 11 * 7 * 7, 64 * 3 * 3 * 32 * 3 * 3, 576 * 10]
    assert NETWORK_SPACE.indices(network) == (1, 2, 0, 2, 1, 1, 0)


def test_layer_sizes_are_the_logs_of_the_layers_work_and_memory():
    """conv 32x7x7/2 (11 x 11 out), conv 64x3x3/3 (3 x 3 out), no hidden dense, dense 10; then with dense 128."""
    without_hidden, with_hidden = NETWORK_SPACE.layer_sizes([(1, 2, 0, 2, 1, 1, 0), (1, 2, 0, 2, 1, 1, 3)])
    conv1 = [32 * 11 * 11 * 7 * 7, 7 * 7 * 32, 32 * 11 * 11]
    conv2 = [64 * 3 * 3 * 32 * 3 * 3, 32 * 3 * 3 * 64, 64 * 3 * 3]
    dense2 = [576 * 10, 576 * 10, 10]
    sides_and_macs = [11, 3, conv1[0] + conv2[0] + dense2[0]]
    assert np.exp(without_hidden) == pytest.approx(conv1 + conv2 + [1, 1, 1] + dense2 + sides_and_macs)
    dense1, dense2 = [576 * 128, 576 * 128, 128], [128 * 10, 128 * 10, 10]
    assert np.exp(with_hidden) == pytest.approx(conv1 + conv2 + dense1 + dense2 +
                                                [11, 3, conv1[0] + conv2[0] + dense1[0] + dense2[0]])


def test_bad_indices_are_named():
    with pytest.raises(ValueError, match="choice k1 index must be in 0..2, not 3"):
        NETWORK_SPACE.network((0, 3, 0, 0, 0, 0, 0))
    with pytest.raises(ValueError, match="7 choice indices"):
        NETWORK_SPACE.network((0, 0))
