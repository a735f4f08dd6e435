"""The ``nnaccel run dqn`` / ``nnaccel play`` job without a simulator: inputs, checking and the report."""

import argparse
import json
from dataclasses import replace

import numpy as np
import pytest

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import TRAINED_WEIGHTS, dqn_layers, load_weights, save_weights, seeded_weights
from nnaccel.models.dqn.plan import COUNTERS, compile_network
from nnaccel.cli.dqn import atari as dqn_job
from nnaccel.cli.dqn import board
from nnaccel.cli.main import main
from nnaccel.testbench.dqn.host import AcceleratorRun


def parse(*argv):
    parser = argparse.ArgumentParser()
    dqn_job.add_arguments(parser)
    return parser.parse_args(argv)


def test_arguments():
    arguments = parse()
    assert (arguments.states, arguments.states_file, arguments.simulator, arguments.modules, arguments.lanes,
            arguments.split) == (5, None, "verilator", 16, 16, "auto")
    assert dqn_job._compile(parse("--split", "never"), seeded_weights()).layers[-1].name == "FC_2"
    with pytest.raises(SystemExit):
        parse("--split", "sometimes")
    with pytest.raises(SystemExit):
        parse("--states", "2", "--states-file", "x.npy")
    with pytest.raises(SystemExit):
        parse("--states", "0")
    play_parser = argparse.ArgumentParser()
    dqn_job.add_play_arguments(play_parser)
    play = play_parser.parse_args([])
    assert (play.episodes, play.rtl_steps, play.epsilon, play.max_steps, play.seed, play.gif, play.weights,
            play.seeded_weights) == (1, 20, 0.05, 27_000, 0, None, None, False)


def test_states_files(tmp_path):
    """Good files load (bad ones: tests/cli/test_bad_input.py)."""
    states = recorded_states(2)
    np.save(tmp_path / "good.npy", states)
    np.savez(tmp_path / "good.npz", frames=states)
    assert np.array_equal(dqn_job.load_states_file(tmp_path / "good.npy"), states)
    assert np.array_equal(dqn_job.load_states_file(tmp_path / "good.npz"), states)


def test_weights_files(tmp_path):
    weights, note = dqn_job._weights(parse())
    assert note.startswith("trained for Breakout (models/dqn/data/dqn_breakout.npz): imitation of a scripted "
                           "player that reads the ball and paddle from the emulator's RAM")
    assert "docs/dqn_training.md" in note
    assert np.array_equal(weights["fc1_w"], load_weights(TRAINED_WEIGHTS)["fc1_w"])
    weights, note = dqn_job._weights(parse("--seeded-weights"))
    assert note.startswith("seeded He-uniform") and weights["fc2_w"].shape == (256, 18)
    save_weights(tmp_path / "w.npz", weights)
    loaded, note = dqn_job._weights(parse("--weights", str(tmp_path / "w.npz")))
    assert note == f"from {tmp_path / 'w.npz'}" and all(np.array_equal(loaded[k], weights[k]) for k in weights)


def fake_run(plan, states, *, corrupt=False, slow=False):
    """What the testbench would return for a bit-exact accelerator whose counters are the compiler's prediction
    (``corrupt``: a Q-value bit flipped; ``slow``: the last pass one cycle late)."""
    goldens = [golden_forward(plan, state) for state in states]
    q_values = np.stack([golden.q_values for golden in goldens])
    if corrupt:
        q_values[1, 3] ^= 1
    counters = np.array([[[layer.predicted[name] for name in COUNTERS] for layer in plan.layers]] * len(states))
    total = plan.estimated_cycles
    if slow:
        counters[:, -1, 0] += 1
        total += 1
    return AcceleratorRun(q_values=q_values, output_words=None, actions=np.array([g.action for g in goldens]),
                          action_values=np.array([g.action_value for g in goldens], np.uint32),
                          total_cycles=np.full(len(states), total), layer_counters=counters,
                          load_cycles=np.full(len(states), 336), run_wall_seconds=np.full(len(states), 0.5),
                          run_cpu_seconds=np.full(len(states), 0.4),
                          layer_words=[], frames=None, build_seconds=1.0, run_seconds=2.0)


@pytest.fixture(scope="module")
def thesis():
    weights = seeded_weights()
    return weights, compile_network(DqnConfig(), dqn_layers(18), weights), recorded_states(2)


def test_report_of_a_bit_exact_run(thesis, tmp_path, capsys):
    weights, plan, states = thesis
    arguments = parse("--json", str(tmp_path / "report.json"))
    status = dqn_job._report(arguments, plan, weights, "seeded", states, "recorded", fake_run(plan, states), 0.0,
                             job="dqn")
    assert status == 0
    printed = capsys.readouterr().out
    assert "2 states (recorded): bit-exact against the golden model (36 Q-values" in printed
    assert "CONV_1            6401    6400       0      0  0.0640    51.2   100.0%  |     0.064    50.0" in printed
    assert "INPUT              336" in printed
    # CONV_2 and FC_2 are split: their passes' counters add up, and each pass is listed under its layer.
    assert "  @0 partials       33      32       0      0" in printed
    assert "  @0 sum            25       8       1     14" in printed
    assert "counters: every pass and TOTAL_CYCLES as the compiler predicted (11,698 cycles predicted)" in printed
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["bit_exact"] is True and report["simulator"] == "verilator"
    assert report["total_cycles"] == 11_698 and report["ideal_cycles"] == 11_632
    assert report["counters_as_predicted"] is True
    assert [layer["cycles"] for layer in report["layers"]] == [6401, 2561 + 33 + 25, 2601, 41 + 36]
    assert [part["name"] for part in report["layers"][3]["passes"]] == ["FC_2 partials", "FC_2 sum"]
    assert sum(layer["macs"] for layer in report["layers"]) == sum(layer.macs for layer in dqn_layers(18))
    assert report["float64_max_rel"] < 1e-5 and report["wall_seconds"] > 0


def test_a_counter_off_the_prediction_is_a_mismatch(thesis, capsys):
    weights, plan, states = thesis
    status = dqn_job._report(parse(), plan, weights, "seeded", states, "recorded",
                             fake_run(plan, states, slow=True), 0.0, job="dqn")
    printed = capsys.readouterr().out
    assert status == 1 and "bit-exact against the golden model" in printed
    assert "counters: MISMATCH (11,698 cycles predicted)" in printed
    assert "input 0: TOTAL_CYCLES 11699, predicted 11698" in printed and "input 0: FC_2 sum cycles 37, predicted 36" in printed


def test_report_of_a_mismatch(thesis, capsys):
    weights, plan, states = thesis
    status = dqn_job._report(parse(), plan, weights, "seeded", states, "recorded",
                             fake_run(plan, states, corrupt=True), 0.0, job="dqn")
    assert status == 1
    printed = capsys.readouterr().out
    assert "MISMATCH" in printed and "state 1: Q[3] = " in printed


@pytest.mark.parametrize("corrupt", [False, True])
def test_the_job_end_to_end_with_a_stand_in_simulator(thesis, tmp_path, monkeypatch, corrupt):
    """``nnaccel run dqn`` through main with the simulation replaced by the golden model's results (the real one:
    tests/dqn/test_accelerator.py): exit status, the per-state Q-values of the JSON, as floats and as bits."""
    from nnaccel.testbench.dqn import host as dqn_host

    def stand_in(accelerator, plan, states, *, play, simulator, waves):
        assert accelerator.config == plan.config and play is None and simulator == "verilator"
        accelerator._MustUse__used = True       # never elaborated here: tell Amaranth (as sim.verilog's cache does)
        return fake_run(plan, states, corrupt=corrupt)

    monkeypatch.setattr(dqn_host, "run_on_accelerator", stand_in)
    report_path = tmp_path / "report.json"
    status = main(["run", "dqn", "--states", "2", "--seeded-weights", "--json", str(report_path)])
    assert status == (1 if corrupt else 0)
    report = json.loads(report_path.read_text())
    assert report["schema"] == "nnaccel.dqn/1" and report["bit_exact"] is not corrupt
    _, plan, states = thesis
    for state, row in enumerate(report["per_state"]):
        golden = golden_forward(plan, states[state])
        observed = golden.q_values.copy()
        if corrupt and state == 1:
            observed[3] ^= 1
        assert row["state"] == state and row["bit_exact"] is not (corrupt and state == 1)
        assert row["golden_q_bits"] == [f"0x{int(bits):08X}" for bits in golden.q_values]
        assert row["q_bits"] == [f"0x{int(bits):08X}" for bits in observed]
        assert row["q_values"] == observed.view(np.float32).tolist()
        assert row["action"] == row["golden_action"] == golden.action


def stand_in_host_loop(plan, play, *, corrupt_step=None):
    """What the testbench's host loop would return for a bit-exact accelerator: the emulator's frames, the golden
    model's Q-values and actions, the exploration's actions played where it gives one."""
    from nnaccel.models.dqn.atari import AtariGame, frames_to_states

    frames, episode_steps = [], []
    for episode in play["episodes"]:
        game = AtariGame(play["game"], seed=episode["seed"])
        for random_action in episode["explore"]:
            frames.append(game.state())
            action = golden_forward(plan, frames_to_states(frames[-1])).action
            game.step(action if random_action < 0 else random_action)
            if game.episode_over:
                break
        episode_steps.append(len(frames) - sum(episode_steps))
    states = frames_to_states(np.stack(frames))
    run = fake_run(plan, states)
    if corrupt_step is not None:
        run.q_values[corrupt_step, 0] ^= 1
    run.frames, run.episode_steps = np.stack(frames), np.array(episode_steps)
    return run


@pytest.mark.parametrize("corrupt", [False, True])
def test_play_scores_episodes_with_a_stand_in_simulator(tmp_path, monkeypatch, corrupt):
    """``nnaccel play`` through main with the host loop's simulation replaced by the golden model (the real one:
    tests/dqn/test_accelerator.py): two short episodes, their first 3 steps 'on the accelerator', the rest on the
    golden model, the random policy on the same seeds, the GIF and the JSON."""
    pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed")
    from PIL import Image

    from nnaccel.testbench.dqn import host as dqn_host

    calls = []

    def stand_in(accelerator, plan, states, *, play, simulator, waves):
        assert states is None and [episode["seed"] for episode in play["episodes"]] == [7, 8]
        assert [len(episode["explore"]) for episode in play["episodes"]] == [3, 3]
        accelerator._MustUse__used = True
        calls.append(play)
        return stand_in_host_loop(plan, play, corrupt_step=4 if corrupt else None)

    monkeypatch.setattr(dqn_host, "run_on_accelerator", stand_in)
    report_path, gif_path = tmp_path / "play.json", tmp_path / "episode.gif"
    status = main(["play", "--episodes", "2", "--seed", "7", "--rtl-steps", "3", "--max-steps", "12", "--epsilon",
                   "0.3", "--gif", str(gif_path), "--gif-steps", "10", "--json", str(report_path)])
    assert status == (1 if corrupt else 0) and len(calls) == 1
    report = json.loads(report_path.read_text())
    assert report["schema"] == "nnaccel.play/2" and report["bit_exact"] is not corrupt
    assert report["accelerator"]["states"] == 6 and report["accelerator"]["bit_exact"] is not corrupt
    assert report["weights"].startswith("trained for Breakout")
    explore = [episode["explore"] for episode in calls[0]["episodes"]]
    for index, row in enumerate(report["per_episode"]):
        assert row["seed"] == 7 + index and row["rtl_steps"] == 3 and row["steps"] == 12 and not row["game_over"]
        opening = [action if action >= 0 else golden for action, golden in
                   zip(explore[index], report["accelerator"]["golden_actions"][3 * index:3 * index + 3])]
        assert row["actions"][:3] == opening
        assert row["random_policy"]["steps"] == 12
    assert report["scores"] == [row["score"] for row in report["per_episode"]]
    assert report["mean_score"] == np.mean(report["scores"])
    with Image.open(gif_path) as gif:
        assert gif.n_frames == 10 and gif.size == (320 + 300, 420)


def test_play_whole_episodes_on_the_accelerator(tmp_path, monkeypatch, capsys):
    """--rtl-steps all: the host loop is asked for every step up to --max-steps, and every step of the episode is
    reported as chosen on the accelerator."""
    pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed")
    from nnaccel.testbench.dqn import host as dqn_host

    def stand_in(accelerator, plan, states, *, play, simulator, waves):
        assert [len(episode["explore"]) for episode in play["episodes"]] == [6]
        accelerator._MustUse__used = True
        return stand_in_host_loop(plan, play)

    monkeypatch.setattr(dqn_host, "run_on_accelerator", stand_in)
    report_path = tmp_path / "play.json"
    assert main(["play", "--rtl-steps", "all", "--max-steps", "6", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    assert report["rtl_steps"] == 6 and report["bit_exact"] is True
    assert report["per_episode"][0]["rtl_steps"] == report["per_episode"][0]["steps"] == 6
    assert report["accelerator"]["states"] == 6
    assert "every step on the accelerator" in capsys.readouterr().out


def test_play_without_the_accelerator(tmp_path, monkeypatch, capsys):
    """--rtl-steps 0: no simulation; the random policy's episodes are the seeded exploration's alone."""
    pytest.importorskip("ale_py", reason="ale-py (the [atari] extra) is needed")
    from nnaccel.testbench.dqn import host as dqn_host

    monkeypatch.setattr(dqn_host, "run_on_accelerator", None)      # calling it would fail the test
    report_path = tmp_path / "play.json"
    assert main(["play", "--rtl-steps", "0", "--max-steps", "5", "--seeded-weights", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    assert report["bit_exact"] is None and report["accelerator"] is None
    assert report["per_episode"][0]["rtl_steps"] == 0 and report["per_episode"][0]["steps"] == 5
    assert report["weights"].startswith("seeded He-uniform")
    assert "network:       scores 0, mean 0.00" in capsys.readouterr().out


def test_play_packs_the_emulators_frames_in_the_boards_format(monkeypatch):
    """play's host loop runs in the testbench, which packs each frame stack itself: in the plan's format (binary16
    on the board), as the plan packs a state."""
    from types import SimpleNamespace

    from nnaccel.models.dqn.atari import frames_to_states
    from nnaccel.testbench.dqn import host
    from nnaccel.testbench.dqn.accelerator_tb import frame_words

    class Simulated(Exception):
        pass

    def simulate(top, **options):
        raise Simulated(options["config"])

    monkeypatch.setattr(host, "simulate", simulate)
    stream = board.board_stream("de1soc", dqn_job._compile(parse("--board", "de1soc"), seeded_weights()))
    accelerator = SimpleNamespace(config=stream.config, module_name="board")   # never built: simulate is the stub
    with pytest.raises(Simulated) as simulated:
        host.run_on_accelerator(accelerator, stream, play={"game": "breakout", "episodes": []}, sdram_inside=False)
    frames = np.random.default_rng(29).integers(0, 256, (4, 84, 84), dtype=np.uint8)
    words = frame_words(simulated.value.args[0], frames)
    assert stream.config.fmt.name == "binary16"
    assert np.array_equal(words, stream.plan.input_words(frames_to_states(frames)))


def test_the_board_option_compiles_for_the_boards_configuration(capsys, monkeypatch):
    from nnaccel.hw.dqn.config import DE1_SOC_BINARY16_CONFIG, DE1_SOC_CONFIG
    from nnaccel.hw.shared.float_format import BINARY16
    from nnaccel.models.dqn.weight_stream import on_chip_twin

    # The board builds DE1_SOC_CONFIG in binary16 (the configuration that fits the 5CSEMA5).
    assert DE1_SOC_BINARY16_CONFIG == replace(DE1_SOC_CONFIG, fmt=BINARY16)
    plan = dqn_job._compile(parse("--board", "de1soc"), seeded_weights())
    assert plan.config == on_chip_twin(DE1_SOC_BINARY16_CONFIG)
    assert [layer.name for layer in plan.layers].count("FC_1 [0:8]") == 1     # FC_1 in channel tiles of 8
    assert plan.layers[-1].name == "FC_2 [16:18]" and plan.actions == 18     # FC_2 too: its last tile ends at 18
    assert main(["run", "dqn", "--board", "de1soc", "--lanes", "8"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "--board de1soc: the board's configuration is fixed; leave out --modules and --lanes")
    # FC_2 in channel tiles, every tile feeding the argmax (argmax_tiles): play takes the board.
    assert [layer.name for layer in plan.argmax_passes] == ["FC_2 [0:8]", "FC_2 [8:16]", "FC_2 [16:18]"]
    # Without argmax_tiles the ACTION register would be the last tile's argmax, not the network's action.
    monkeypatch.setitem(board.BOARDS, "de1soc", replace(DE1_SOC_BINARY16_CONFIG, argmax_tiles=False))
    assert main(["play", "--board", "de1soc", "--rtl-steps", "1", "--max-steps", "2"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "nnaccel: error: --board de1soc: FC_2 runs in channel tiles here (FC_2 [16:18] is the last pass), and the "
        "accelerator's ACTION covers the last tile only: play needs a configuration whose last pass holds all 18 "
        "actions")
