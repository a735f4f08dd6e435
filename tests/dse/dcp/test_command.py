import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("optuna")
pytest.importorskip("matplotlib")

from nnaccel.cli.main import main  # noqa: E402
from nnaccel.dse.dcp import predictor  # noqa: E402


@pytest.fixture
def checkpoint(tmp_path, tiny_predictor):
    path = tmp_path / "tiny.pt"
    predictor.save(tiny_predictor, path)
    return path


def test_dataflow_prints_the_answer_writes_the_plot_and_the_report(tmp_path, checkpoint, capsys):
    plot, report = tmp_path / "search.png", tmp_path / "report.json"
    status = main(["dse", "dataflow", "--layer", "FC_2", "--objective", "energy",
                   "--predictor", str(checkpoint), "--restarts", "2", "--steps", "10",
                   "--baselines", "random", "tpe", "--plot", str(plot), "--json", str(report)])
    assert status == 0
    printed = capsys.readouterr().out
    assert "FC_2: dense 256 -> 18" in printed and "unrolled over the PEs" in printed
    assert "predicted" in printed and "cost model" in printed
    assert plot.stat().st_size > 10_000
    document = json.loads(report.read_text())
    methods = [entry["method"] for entry in document["searchers"]]
    assert methods == ["DCP", "random", "TPE", "exhaustive"]
    dcp = document["searchers"][0]
    assert document["dcp"]["cost_model"] == dcp["best"]
    budget = dcp["evaluations"]
    for entry in document["searchers"][1:3]:
        assert entry["evaluations"] >= budget and entry["seconds"] >= dcp["seconds"]
        assert entry["best_at_dcp_budget"] >= entry["best"]
    exhaustive = document["searchers"][3]
    assert all(exhaustive["best"] <= entry["best"] for entry in document["searchers"])


@pytest.mark.parametrize("arguments, message", [
    (["--layer", "CONV_9"], "unknown layer 'CONV_9'"),
    (["--predictor", "/nonexistent/p.pt"], "/nonexistent/p.pt: no predictor checkpoint there"),
    (["--predictor", __file__], f"{__file__}: not a predictor checkpoint"),
])
def test_bad_input_is_one_line_and_exit_2(arguments, message, capsys):
    assert main(["dse", "dataflow", *arguments]) == 2
    error = capsys.readouterr().err
    assert message in error and "Traceback" not in error
