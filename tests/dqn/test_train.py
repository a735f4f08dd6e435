"""The Breakout training's parts: RAM addresses, action equivalences, scripted player, replay buffer, export.

The training itself runs for hours (``nnaccel train dqn``); these check its parts in seconds.
"""

import json
from dataclasses import asdict

import numpy as np
import pytest

from nnaccel.cli.main import main
from nnaccel.models.dqn.atari import AtariGame, recorded_states
from nnaccel.models.dqn.episodes import evaluate
from nnaccel.models.dqn.network import TRAINED_WEIGHTS, check_weights, load_weights, reference_q_values
from nnaccel.train.dqn import breakout, trainer
from nnaccel.train.dqn import network as torch_network
from nnaccel.train.dqn.replay_buffer import ReplayBuffer
from nnaccel.train.dqn.scripted_player import ScriptedPlayer

ale_py = pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed")
from ale_py import roms  # noqa: E402

RED = (200, 72, 72)         # Breakout's ball and paddle colour (and the top brick row's, above y 95)


def _emulator():
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
    ale = ale_py.ALEInterface()
    ale.setFloat("repeat_action_probability", 0.0)
    ale.loadROM(roms.get_rom_path("breakout"))
    return ale


def _random_play(ale, frames, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(frames):
        ale.act(ale_py.Action(breakout.MINIMAL_ACTIONS[rng.integers(len(breakout.MINIMAL_ACTIONS))]))
        if ale.game_over():
            ale.reset_game()
        yield


def test_ram_addresses_give_the_ball_and_paddle_on_screen():
    ale, balls, paddles = _emulator(), 0, 0
    for _ in _random_play(ale, 600):
        ram, red = ale.getRAM(), np.all(ale.getScreenRGB() == RED, axis=-1)
        rows, columns = np.nonzero(red[95:189])
        if not 186 <= ram[breakout.RAM_BALL_Y] + breakout.BALL_Y_OFFSET <= 194:     # the ball is not in the paddle's rows
            left = ram[breakout.RAM_PADDLE_X] - 47
            assert red[190, left:left + 16].all() and not red[190, left - 1], (left, np.flatnonzero(red[190]))
            paddles += 1
        if ram[breakout.RAM_BALL_Y] != 0 and len(rows):
            assert columns.min() == ram[breakout.RAM_BALL_X] - breakout.BALL_X_OFFSET
            assert rows.min() + 95 == ram[breakout.RAM_BALL_Y] + breakout.BALL_Y_OFFSET
            balls += 1
    assert balls > 100 and paddles > 500


def test_full_action_set_does_what_its_minimal_column_does():
    ale, compared = _emulator(), 0
    for frame in _random_play(ale, 400, seed=1):
        if compared >= 12 or ale.getRAM()[breakout.RAM_BALL_Y] == 0:
            continue                  # with no ball in play, RIGHTFIRE also serves: it moves like RIGHT only in play
        start, after = ale.cloneState(), []
        for action in range(len(breakout.FULL_TO_MINIMAL)):
            ale.restoreState(start)
            for _ in range(4):
                ale.act(ale_py.Action(action))
            for _ in range(12):       # the paddle's controller settles after the move
                ale.act(ale_py.Action.NOOP)
            after.append(ale.getRAM().copy())
        ale.restoreState(start)
        for action, minimal in enumerate(breakout.FULL_TO_MINIMAL):
            assert np.array_equal(after[action], after[breakout.MINIMAL_ACTIONS[minimal]]), action
        compared += 1
    assert compared == 12


def test_scripted_player_scores_far_above_random():
    player = evaluate(ScriptedPlayer(), [0], epsilon=0.0, max_steps=500)    # 500 of a game's ~1,500 steps
    random = evaluate(None, range(2), epsilon=1.0, max_steps=500)                  # whole games (~150 steps)
    assert player["mean"] >= 10 * max(random["mean"], 1)


def test_replay_buffer_stacks_states_as_the_game_does():
    game, buffer, rng = AtariGame("breakout"), ReplayBuffer(40), np.random.default_rng(2)
    states, rewards, terminals, games = [], [], [], 0
    while games < 1:                  # a whole game, so the buffer wraps and holds a game boundary
        states.append(game.state())
        lives = game.lives()
        reward = game.step(breakout.MINIMAL_ACTIONS[rng.integers(4)])
        games += game.episode_over
        terminals.append(game.episode_over or game.lives() < lives)
        rewards.append(np.sign(reward))
        buffer.add(states[-1][-1], 0, 0, reward, terminal=terminals[-1], last=game.episode_over)
    for _ in range(30):               # into the next game
        states.append(game.state())
        game.step(1)
        buffer.add(states[-1][-1], 1, 1, 0.0, terminal=False, last=False)
        rewards.append(0.0)
        terminals.append(False)
    indices = np.arange(buffer.count - 36, buffer.count)
    assert np.array_equal(buffer.states(indices), np.stack([states[i] for i in indices]))
    returns = buffer._returns(indices[:-3], 3, 0.5)
    for row, index in enumerate(indices[:-3]):
        total, discount = 0.0, 1.0
        for offset in range(3):
            total += discount * rewards[index + offset]
            discount *= 0.5
            if terminals[index + offset]:
                discount = 0.0
                break
        assert returns["return"][row] == pytest.approx(total) and returns["discount"][row] == discount


def test_exported_weights_are_the_network_in_the_project_layout():
    torch = pytest.importorskip("torch", reason="PyTorch (the [train] extra) is needed")
    torch.manual_seed(0)
    network = torch_network.build_network(torch, len(breakout.MINIMAL_ACTIONS))
    weights = torch_network.export_weights(network)
    assert check_weights(weights) == 18
    states = recorded_states(2)
    with torch.no_grad():
        minimal = network(torch.from_numpy(states)).double().numpy()
        imported = torch_network.network_from_weights(torch, weights)(torch.from_numpy(states)).double().numpy()
    reference = np.stack([reference_q_values(weights, state) for state in states])
    assert np.allclose(reference, minimal[:, list(breakout.FULL_TO_MINIMAL)], rtol=0, atol=1e-5)
    assert np.allclose(imported, reference, rtol=0, atol=1e-5)
    assert set(np.argmax(reference, axis=1)) <= set(breakout.MINIMAL_ACTIONS)


def test_export_takes_the_best_validated_network_from_a_checkpoint(tmp_path):
    """``--export``: the checkpoint's best network (not its latest) in the project's layout, and where it came from."""
    torch = pytest.importorskip("torch", reason="PyTorch (the [train] extra) is needed")
    torch.manual_seed(1)
    best, latest = (torch_network.build_network(torch, len(breakout.MINIMAL_ACTIONS)) for _ in range(2))
    settings = trainer.Settings(**trainer.SMOKE)
    (tmp_path / "checkpoint").mkdir()
    torch.save({"settings": asdict(settings), "network": latest.state_dict(), "steps": 4000, "updates": 500,
                "games": 12, "wall_seconds": 1800.0, "curve": [{"steps": 3000, "validation_mean": 2.5}],
                "baselines": {"random": {"mean": 0.5}}, "changes": [],
                "best": {"mean": 2.5, "steps": 3000, "updates": 300, "phase": "pretrain", "state": best.state_dict()}},
               tmp_path / "checkpoint" / "state.pt")
    assert main(["train", "dqn", "--out", str(tmp_path), "--export", str(tmp_path / "w.npz")]) == 0
    weights = load_weights(tmp_path / "w.npz")
    expected = torch_network.export_weights(best)
    assert all(np.array_equal(weights[key], expected[key]) for key in expected)
    assert not np.array_equal(weights["fc1_w"], torch_network.export_weights(latest)["fc1_w"])
    provenance = json.loads((tmp_path / "w.json").read_text())
    assert provenance["selected"] == {"mean": 2.5, "steps": 3000, "updates": 300, "phase": "pretrain"}
    assert provenance["run_at_export"] == {"agent_steps": 4000, "updates": 500, "games": 12, "wall_hours": 0.5}
    assert provenance["finished"] is False and provenance["test"] is None and provenance["baselines"] == {"random": 0.5}


def test_importing_the_training_changes_nothing_in_the_process():
    """No import-time side effects: the thread counts are set by ``nnaccel train`` when it runs, not on import."""
    import subprocess
    import sys

    script = ("import os; before = dict(os.environ); "
              "import nnaccel.cli.train, nnaccel.train.dqn.trainer, nnaccel.train.capsnet.trainer; "
              "assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items()); "
              "assert 'torch' not in __import__('sys').modules")
    subprocess.run([sys.executable, "-c", script], check=True)


def test_export_of_a_run_without_a_checkpoint_is_one_line_and_exit_2(tmp_path, capsys):
    pytest.importorskip("torch", reason="PyTorch (the [train] extra) is needed")
    assert main(["train", "dqn", "--out", str(tmp_path), "--export", str(tmp_path / "w.npz")]) == 2
    assert capsys.readouterr().err == (f"nnaccel: error: {tmp_path}: no checkpoint to export (expected "
                                       f"{tmp_path / 'checkpoint' / 'state.pt'})\n")
    assert not (tmp_path / "w.npz").exists()


def test_recipes_and_their_smoke_budgets():
    imitation = trainer.recipe_settings("imitation")
    assert imitation.loss == "cross_entropy" and imitation.finetune_steps == 0 and imitation.dagger_steps > 0
    smoke = trainer.recipe_settings("imitation", smoke=True, seed=3)
    assert (smoke.demo_steps, smoke.dagger_steps, smoke.finetune_steps, smoke.seed) == (3_000, 3_000, 0, 3)
    assert smoke.loss == "cross_entropy" and smoke.learning_rate == imitation.learning_rate
    assert trainer.recipe_settings("dqfd", smoke=True) == trainer.Settings(**trainer.SMOKE)
    assert trainer.recipe_settings("dqfd", learning_rate=1e-4).learning_rate == 1e-4


def test_cross_entropy_updates_learn_the_labels(tmp_path):
    """The imitation recipe's update: plain classification of the labels (here where a bright square is)."""
    torch = pytest.importorskip("torch", reason="PyTorch (the [train] extra) is needed")
    settings = trainer.recipe_settings("imitation", smoke=True, replay_capacity=400, batch=16)
    run = trainer.Trainer(torch, settings, tmp_path)
    rng = np.random.default_rng(4)
    for _ in range(400):
        label = int(rng.integers(len(breakout.MINIMAL_ACTIONS)))
        frame = np.zeros((84, 84), np.uint8)
        frame[10 + 16 * label:22 + 16 * label, 30:42] = 200
        run.replay.add(frame, label, label, 0.0, terminal=True, last=True)     # one-step games: states are the frame
    for _ in range(60):
        run.update(margin_weight=1.0)
    assert set(run.metrics) == {"cross_entropy", "agreement"}
    assert run.metrics["cross_entropy"][0] > 1.0 and np.mean(run.metrics["cross_entropy"][-10:]) < 0.05
    assert np.mean(run.metrics["agreement"][-10:]) > 0.95


def test_a_run_can_start_from_exported_weights(tmp_path):
    """``--init-weights``: the shipped weights (an export: 18 outputs copying 4) load into the 4-output network."""
    torch = pytest.importorskip("torch", reason="PyTorch (the [train] extra) is needed")
    settings = trainer.recipe_settings("imitation", smoke=True, initial_weights=str(TRAINED_WEIGHTS))
    exported = torch_network.export_weights(trainer.Trainer(torch, settings, tmp_path).network)
    shipped = load_weights(TRAINED_WEIGHTS)
    assert all(np.array_equal(exported[key], shipped[key]) for key in shipped)


def test_a_resume_may_change_the_phase_budgets_and_nothing_else(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch (the [train] extra) is needed")
    first = trainer.Trainer(torch, trainer.recipe_settings("imitation", smoke=True), tmp_path)
    first.steps = 1_000
    first.checkpoint()
    resumed = trainer.Trainer(torch, trainer.recipe_settings("imitation", smoke=True, demo_steps=800), tmp_path)
    assert resumed.restore() and resumed.phase() == "pretrain"
    assert resumed.changes == [{"steps": 1_000, "updates": 0, "demo_steps": [3_000, 800]}]
    other = trainer.Trainer(torch, trainer.recipe_settings("imitation", smoke=True, batch=8), tmp_path)
    with pytest.raises(trainer.InputError, match="the checkpoint was made with other settings \\(batch\\)"):
        other.restore()
