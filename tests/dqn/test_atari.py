"""Atari states: preprocessing, the emulator wrapper, and the recorded states that ship."""

import numpy as np
import pytest

from nnaccel.models.dqn.atari import (AtariGame, _recorded_archive, frames_to_states, preprocess_frame, record_states,
                          recorded_states)


def test_preprocess_resizes_the_maximum_of_two_frames():
    first = np.zeros((210, 160), dtype=np.uint8)
    second = np.full((210, 160), 200, dtype=np.uint8)
    second[:, :80] = 0
    frame = preprocess_frame(np.stack([first, second]))
    assert frame.shape == (84, 84) and frame.dtype == np.uint8
    assert np.all(frame[:, :40] == 0) and np.all(frame[:, 44:] == 200)


def test_preprocess_rejects_a_single_frame():
    with pytest.raises(ValueError, match=r"last two grayscale frames as \(2, H, W\), got shape \(210, 160\)"):
        preprocess_frame(np.zeros((210, 160)))


def test_recorded_states_are_real_distinct_frames():
    states = recorded_states()
    assert states.shape == (8, 4, 84, 84) and states.dtype == np.float32
    assert 0.0 <= states.min() and states.max() <= 1.0
    assert len({state.tobytes() for state in states}) == 8


def test_recorded_states_count_is_checked():
    with pytest.raises(ValueError, match="8 recorded states ship with nnaccel; asked for 9"):
        recorded_states(9)


def test_recorded_states_reproduce_from_the_emulator():
    pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed to re-record states")
    archive = _recorded_archive()
    frames = record_states(str(archive["game"]), count=len(archive["frames"]),
                           steps_between=int(archive["steps_between"]), seed=int(archive["seed"]))
    assert np.array_equal(frames, archive["frames"])
    assert np.array_equal(frames_to_states(frames), recorded_states())


def test_game_rejects_bad_action_and_game():
    pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed")
    game = AtariGame("breakout")
    assert len(game.actions) == 18
    with pytest.raises(ValueError, match="action index must be in 0..17, not 18"):
        game.step(18)
    with pytest.raises(ValueError, match="unknown Atari game 'no_such_game'"):
        AtariGame("no_such_game")
