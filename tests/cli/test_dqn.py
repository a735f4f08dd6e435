"""The ``nnaccel run dqn`` / ``nnaccel play`` job without a simulator: inputs, checking and the report."""

import argparse
import json

import numpy as np
import pytest

from hw.dqn.config import DqnConfig
from models.dqn.atari import recorded_states
from models.dqn.golden import golden_forward
from models.dqn.network import dqn_layers, save_weights, seeded_weights
from models.dqn.plan import compile_network
from cli import dqn as dqn_job
from cli.main import main
from testbench.dqn.host import AcceleratorRun


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
    assert play_parser.parse_args([]).steps == 20


def test_states_files(tmp_path):
    """Good files load (bad ones: tests/cli/test_bad_input.py)."""
    states = recorded_states(2)
    np.save(tmp_path / "good.npy", states)
    np.savez(tmp_path / "good.npz", frames=states)
    assert np.array_equal(dqn_job.load_states_file(tmp_path / "good.npy"), states)
    assert np.array_equal(dqn_job.load_states_file(tmp_path / "good.npz"), states)


def test_weights_files(tmp_path):
    weights, note = dqn_job._weights(parse())
    assert note.startswith("seeded He-uniform") and weights["fc2_w"].shape == (256, 18)
    save_weights(tmp_path / "w.npz", weights)
    loaded, note = dqn_job._weights(parse("--weights", str(tmp_path / "w.npz")))
    assert note == f"from {tmp_path / 'w.npz'}" and all(np.array_equal(loaded[k], weights[k]) for k in weights)


def fake_run(plan, states, *, corrupt=False):
    """What the testbench would return for a bit-exact accelerator taking exactly the ideal cycles."""
    goldens = [golden_forward(plan, state) for state in states]
    q_values = np.stack([golden.q_values for golden in goldens])
    if corrupt:
        q_values[1, 3] ^= 1
    counters = np.array([[[layer.product_cycles + 10, layer.product_cycles, 0, 2] for layer in plan.layers]] *
                        len(states))
    total = sum(layer.product_cycles + 10 for layer in plan.layers)
    return AcceleratorRun(q_values=q_values, output_words=None, actions=np.array([g.action for g in goldens]),
                          action_values=np.array([g.action_value for g in goldens], np.uint32),
                          total_cycles=np.full(len(states), total), layer_counters=counters,
                          load_cycles=np.full(len(states), 336), run_wall_seconds=np.full(len(states), 0.5),
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
    assert "CONV_1          6435    6425       0      2  0.0644    50.9    99.5%  |     0.064    50.0" in printed
    assert "INPUT            336" in printed
    # CONV_2 and FC_2 are split: their passes' counters add up, and each pass is listed under its layer.
    assert "  tail            75      65       0      2" in printed and "  sum             19       9       0      2" in printed
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["bit_exact"] is True and report["simulator"] == "verilator"
    assert report["total_cycles"] == 11_770 and report["ideal_cycles"] == 11_700
    assert [layer["cycles"] for layer in report["layers"]] == [6435, 2580 + 75 + 15, 2603, 43 + 19]
    assert [part["name"] for part in report["layers"][3]["passes"]] == ["FC_2 partials", "FC_2 sum"]
    assert sum(layer["macs"] for layer in report["layers"]) == sum(layer.macs for layer in dqn_layers(18))
    assert report["float64_max_rel"] < 1e-5 and report["wall_seconds"] > 0


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
    import testbench.dqn.host

    def stand_in(accelerator, plan, states, *, play, simulator, waves):
        assert accelerator.config == plan.config and play is None and simulator == "verilator"
        accelerator._MustUse__used = True       # never elaborated here: tell Amaranth (as sim.verilog's cache does)
        return fake_run(plan, states, corrupt=corrupt)

    monkeypatch.setattr(testbench.dqn.host, "run_on_accelerator", stand_in)
    report_path = tmp_path / "report.json"
    assert main(["run", "dqn", "--states", "2", "--json", str(report_path)]) == (1 if corrupt else 0)
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
