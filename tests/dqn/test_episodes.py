"""Scored episodes: seeded exploration, whole games, openings chosen elsewhere, the golden model as the policy."""

import numpy as np
import pytest

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.atari import AtariGame, frames_to_states
from nnaccel.models.dqn.episodes import Exploration, GoldenPolicy, evaluate, play_episode
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import dqn_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network


def test_exploration_draws_are_seeded_and_respect_epsilon():
    first, second = Exploration(3, 0.5, [0, 1, 3, 4]), Exploration(3, 0.5, [0, 1, 3, 4])
    sequence = [first.next() for _ in range(200)]
    assert sequence == [second.next() for _ in range(200)]
    assert 60 < sequence.count(None) < 140 and set(sequence) - {None} == {0, 1, 3, 4}
    never = Exploration(3, 0.0, [0, 1])
    assert all(never.next() is None for _ in range(50))
    with pytest.raises(ValueError, match="epsilon must be in \\[0, 1\\], not 1.5"):
        Exploration(0, 1.5, [0])


@pytest.fixture(scope="module")
def ale():
    return pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed")


def test_game_reports_its_minimal_actions_lives_and_the_end(ale):
    game = AtariGame("breakout", seed=0)
    assert game.minimal_actions == [0, 1, 3, 4] and game.lives() == 5
    assert game.screen().shape == (210, 160, 3) and game.ram().shape == (128,)
    rng, steps = np.random.default_rng(0), 0
    while not game.episode_over:
        game.step(game.minimal_actions[rng.integers(4)])
        steps += 1
    assert 50 < steps < 2_000 and game.lives() == 5         # the step that ended the game reset it


def test_an_opening_chosen_elsewhere_continues_to_the_same_episode(ale):
    """A random game played in one go equals the same game whose first 40 steps were replayed as an opening (as
    ``nnaccel play`` does with the accelerator's steps), the exploration carrying on from its 41st draw."""
    frames = []
    whole = play_episode(AtariGame("breakout", seed=5), None, Exploration(5, 1.0, [0, 1, 3, 4]), seed=5,
                         on_step=lambda game, action, explored: frames.append(game.state()))
    assert whole.over and whole.steps == len(frames) > 40 and all(whole.explored)
    exploration = Exploration(5, 1.0, [0, 1, 3, 4])
    opening = [(exploration.next(), True) for _ in range(40)]
    assert [action for action, _ in opening] == whole.actions[:40]
    again = play_episode(AtariGame("breakout", seed=5), None, exploration, seed=5, opening=opening,
                         opening_frames=frames[:40])
    assert (again.score, again.actions, again.over) == (whole.score, whole.actions, True)
    frames[7] = frames[7] ^ 1
    with pytest.raises(RuntimeError, match="breakout seed 5: step 7's frames differ"):
        play_episode(AtariGame("breakout", seed=5), None, Exploration(5, 1.0, [0]), seed=5, opening=opening,
                     opening_frames=frames[:40])


def test_golden_policy_plays_the_golden_models_action(ale):
    plan = compile_network(DqnConfig(), dqn_layers(18), seeded_weights())
    policy, frames = GoldenPolicy(plan), []
    episode = play_episode(AtariGame("breakout", seed=1), policy, Exploration(1, 0.0, [0, 1, 3, 4]), seed=1,
                           max_steps=3, on_step=lambda game, action, explored: frames.append(game.state()))
    assert episode.steps == 3 and not episode.over and not any(episode.explored) and len(policy.q_values) == 3
    for frame, action, q_values in zip(frames, episode.actions, policy.q_values):
        golden = golden_forward(plan, frames_to_states(frame))
        assert action == golden.action and np.array_equal(q_values, golden.q_values)


def test_evaluate_scores_one_episode_per_seed(ale):
    result = evaluate(None, [0, 1], epsilon=1.0, max_steps=60)
    assert result["seeds"] == [0, 1] and result["steps"] == [60, 60] and result["epsilon"] == 1.0
    assert result["mean"] == np.mean(result["scores"])
