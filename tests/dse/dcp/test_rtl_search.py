"""DCP on the RTL family: the data set, a tiny predictor, the search and its answer on the simulator."""

import json

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("optuna")
pytest.importorskip("matplotlib")

from nnaccel.cli.main import main  # noqa: E402
from nnaccel.dse.dcp import predictor  # noqa: E402
from nnaccel.dse.dcp.command import _simulate  # noqa: E402
from nnaccel.dse.dcp.evaluator import Evaluator  # noqa: E402
from nnaccel.dse.dcp.search import dcp_search  # noqa: E402
from nnaccel.dse.shared.layer import Layer, dqn_layers  # noqa: E402
from nnaccel.hw.dqn.config import DqnConfig, REDUCED_CONFIG  # noqa: E402

from .conftest import RTL_TINY_PLAN  # noqa: E402


def test_the_rtl_data_set_is_split_and_learnable(rtl_space, rtl_tiny_data, rtl_tiny_predictor):
    parts = rtl_tiny_data.split(RTL_TINY_PLAN)
    assert rtl_tiny_data.codes.shape[1:] == (9, 7, 2)
    assert len(parts["train"]) > 100 and len(parts["held_out_layers"]) and len(parts["held_out_hardware"])
    accuracy = predictor.accuracy(rtl_tiny_predictor, parts["held_out_dataflows"], rtl_space)
    assert max(accuracy["log_mse"]) < 0.5       # standardised: half the spread of the labels, after seconds
    assert rtl_tiny_predictor.derived is False


def test_dcp_on_the_dqn_network_respects_the_shared_descriptor_table(rtl_space, rtl_tiny_predictor):
    config = DqnConfig()
    layers = list(dqn_layers())
    result = dcp_search(rtl_space, rtl_tiny_predictor, layers, config, "latency", restarts=2, steps=10,
                        progress=False)
    assert rtl_space.network_violations(result.codes, layers, config) == []
    assert result.latency == sum(rtl_space.evaluate(layer, config, code[None])["latency"][0]
                                 for layer, code in zip(layers, result.codes))
    assert result.latency >= 11792        # the best there is (rtl_space.best_network_mapping; passes costed alone)


def test_dcp_from_the_default_mapping_keeps_it_when_nothing_is_better(rtl_space, rtl_tiny_predictor):
    config, layers = DqnConfig(), list(dqn_layers())
    start = rtl_space.default_codes(layers, config)
    result = dcp_search(rtl_space, rtl_tiny_predictor, layers, config, "latency", restarts=2, steps=10,
                        start=start, progress=False)
    assert result.trace[0][2] == 11792 == result.latency     # the best there is, from the first evaluation


def test_the_answer_runs_on_the_simulator_bit_exact_in_the_predicted_cycles(rtl_space, capsys):
    """A reduced-configuration build (the one the DQN tests make)."""
    layer = Layer.conv(in_channels=2, in_size=7, out_channels=4, kernel=3, name="small")
    evaluator = Evaluator(rtl_space, [layer], REDUCED_CONFIG, "latency")
    codes = rtl_space.sample_codes(layer, REDUCED_CONFIG, 6, seed=1)
    multi = next(code for code in codes if len(rtl_space.mapping(code, layer, REDUCED_CONFIG).segments) > 1)
    evaluator([multi])
    result = evaluator.result("DCP")
    simulation = _simulate(rtl_space, [layer], REDUCED_CONFIG, result)
    assert simulation["bit_exact"] and simulation["counters_exact"] and simulation["cycles_exact"]
    # The search costs each pass alone; the run overlaps a pass's set-up with the drain of the one before.
    assert simulation["simulated_cycles"] <= simulation["cost_model_cycles"] == result.latency
    assert simulation["total_cycles"] == simulation["model_total_cycles"]
    assert "bit-exact" in capsys.readouterr().out


def test_dataflow_on_the_rtl_family_prints_the_answer_and_the_best_there_is(tmp_path, rtl_tiny_predictor,
                                                                             capsys):
    checkpoint, report = tmp_path / "rtl.pt", tmp_path / "report.json"
    predictor.save(rtl_tiny_predictor, checkpoint)
    status = main(["dse", "dataflow", "--space", "rtl", "--layer", "FC_2", "--predictor", str(checkpoint),
                   "--restarts", "2", "--steps", "10", "--baselines", "random", "--plot",
                   str(tmp_path / "plot.png"), "--json", str(report)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "RTL 16 modules x 16 lanes, binary32" in printed and "K-split" in printed
    document = json.loads(report.read_text())
    assert [entry["method"] for entry in document["searchers"]] == ["DCP", "random", "exhaustive"]
    assert document["searchers"][2]["best"] == document["best_any_mapping"]["best"] == 78.0
    assert np.asarray(document["dcp"]["codes"]).shape == (1, 9, 7, 2)


@pytest.mark.parametrize("arguments, message", [
    (["--space", "rtl", "--layer", "dw_3x3_32"], "--layer dw_3x3_32: dw_3x3_32: the RTL family runs"),
    (["--space", "rtl", "--format", "fp16"], "not a point of the rtl space: the RTL family's number formats are "
                                             "binary32, bfloat16, binary16, not fp16"),
    (["--space", "rtl", "--pe", "3x16"], "not a point of the rtl space: modules"),
    (["--space", "template", "--pe", "30x16"], "not a point of the template space: pe_y must be an integer in 8..24"),
    (["--space", "template", "--simulate"], "--simulate runs the answer on the simulated RTL: the template space"),
    (["--space", "template", "--start", "default"], "--start default starts from the compiler's mapping"),
])
def test_bad_rtl_input_is_one_line_and_exit_2(arguments, message, capsys):
    assert main(["dse", "dataflow", *arguments]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
