"""The argmax across a channel-tiled last layer (``DqnConfig(argmax_tiles=True)``): the reduced network with an
11-output last layer, which the reduced configuration's 8 MACs run in two channel tiles (``d2 [0:8]``, ``d2
[8:11]``); both feed the argmax, the second's indices offset by its first channel, the running maximum carried from
the first tile to the second (ties keep the first's).  Bit for bit against the golden model, every counter as
predicted."""

from dataclasses import replace

import numpy as np
import pytest

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import DenseLayer, reduced_layers
from nnaccel.models.dqn.plan import compile_network
from nnaccel.testbench.dqn.host import run_on_accelerator
from tests.dqn.test_accelerator import predicted_counters, reduced_states

SEED = 2935
CONFIG = replace(REDUCED_CONFIG, argmax_tiles=True)
ACTIONS = 11
TILE = CONFIG.modules * CONFIG.lanes


def _layers():
    return (*reduced_layers()[:3], DenseLayer("d2", 7, ACTIONS, relu=False))


def _weights(rng, layers):
    return [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
             rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]


def _tied_weights(rng, layers, channels):
    """Weights whose last layer gives ``channels`` (one per tile) the same, largest Q-value for every input."""
    weights = _weights(rng, layers)
    kernel, bias = weights[-1]
    kernel[:, list(channels)] = 0.0
    bias[list(channels)] = 1e6
    return weights


def _check(plan, states, run):
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        assert np.array_equal(run.q_values[index], golden.q_values)
        assert (run.actions[index], run.action_values[index]) == (golden.action, golden.action_value)
        assert [[int(c) for c in counters] for counters in run.layer_counters[index]] == predicted_counters(plan)
    assert np.all(run.total_cycles == plan.estimated_cycles)


@pytest.fixture(scope="module")
def states():
    return reduced_states(np.random.default_rng(SEED))[:3]


def test_every_tile_of_the_last_layer_feeds_the_argmax():
    plan = compile_network(CONFIG, _layers(), _weights(np.random.default_rng(SEED), _layers()), split="never")
    assert [layer.name for layer in plan.argmax_passes] == ["d2 [0:8]", "d2 [8:11]"]
    assert [layer.descriptor["first_channel"] for layer in plan.argmax_passes] == [0, TILE]
    assert [layer.descriptor["last"] for layer in plan.layers] == [0] * (len(plan.layers) - 2) + [1, 1]
    assert plan.actions == ACTIONS
    # Without argmax_tiles only the last tile feeds it, its own indices (the descriptor has no first_channel).
    untiled = compile_network(REDUCED_CONFIG, _layers(), _weights(np.random.default_rng(SEED), _layers()),
                              split="never")
    assert [layer.name for layer in untiled.argmax_passes] == ["d2 [8:11]"]
    assert "first_channel" not in untiled.layers[-1].descriptor


def test_the_action_is_the_whole_layers_argmax(states):
    rng = np.random.default_rng(SEED)
    plan = compile_network(CONFIG, _layers(), _weights(rng, _layers()), split="never")
    golden_actions = [golden_forward(plan, state).action for state in states]
    # The inputs choose actions in both tiles: the offset and the carried maximum are both exercised.
    assert min(golden_actions) < TILE <= max(golden_actions)
    for state, action in zip(states, golden_actions):
        q_values = golden_forward(plan, state).q_values
        assert action == int(np.argmax(q_values.view(np.float32)))
    _check(plan, states, run_on_accelerator(DqnAccelerator(config=CONFIG), plan, states))


@pytest.mark.parametrize("channels, action", [((2, 9), 2), ((9, 10), 9)])
def test_ties_keep_the_lowest_channel(states, channels, action):
    """Equal largest Q-values in two tiles (2 and 9) keep the first tile's; inside one tile (9, 10) the lower."""
    rng = np.random.default_rng(SEED + 1)
    plan = compile_network(CONFIG, _layers(), _tied_weights(rng, _layers(), channels), split="never")
    assert all(golden_forward(plan, state).action == action for state in states)
    _check(plan, states, run_on_accelerator(DqnAccelerator(config=CONFIG), plan, states))
