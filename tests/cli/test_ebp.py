"""``nnaccel run ebp``: training on a user's CSV (ring bit-exact with the golden model every epoch, the JSON
report), a digit task, the cycle table as JSON, the PWL plot only with --out; the same CSV on the simulated RTL
ring (extended)."""

import json
from pathlib import Path

import numpy as np
import pytest

from nnaccel.cli.main import main


@pytest.fixture
def tiny_csv(tmp_path):
    """20 samples of 3 features with a header line; label 1 where f1 + f2 / 2 > 0."""
    rng = np.random.default_rng(1)
    features = rng.normal(size=(20, 3))
    labels = (features[:, 0] + 0.5 * features[:, 1] > 0).astype(int)
    lines = ["f1,f2,f3,label"] + [",".join(f"{value:.3f}" for value in row) + f",{label}"
                                  for row, label in zip(features, labels)]
    path = tmp_path / "tiny.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _training(report_path):
    report = json.loads(report_path.read_text())
    assert report["schema"] == "nnaccel.ebp/1" and report["job"] == "ebp"
    (training,) = report["training"]
    return report, training


def test_training_on_a_users_csv(tiny_csv, tmp_path, capsys):
    report_path = tmp_path / "ebp.json"
    assert main(["run", "ebp", "--data", str(tiny_csv), "--epochs", "2", "--hidden", "4", "--json",
                 str(report_path)]) == 0
    report, training = _training(report_path)
    assert (training["network"], training["pes"], training["training_samples"], training["held_out_samples"]) == (
        "3-4-1", 4, 16, 4)
    assert [epoch["epoch"] for epoch in training["epochs"]] == [1, 2]
    assert all(epoch["bit_exact"] and epoch["ring_loss"] == epoch["golden_loss"] for epoch in training["epochs"])
    assert training["rtl"] is None and report["bit_exact"] is True
    assert report["pwl"] is None and report["cycles"] is None
    assert "Training 3-4-1 on 4 PEs" in capsys.readouterr().out


def test_a_digit_task_and_the_cycle_table(tmp_path, capsys):
    report_path = tmp_path / "digits.json"
    assert main(["run", "ebp", "--only", "16-5-1", "--epochs", "1", "--json", str(report_path)]) == 0
    _, training = _training(report_path)
    assert (training["network"], training["training_samples"], training["held_out_samples"]) == ("16-5-1", 160, 200)
    assert training["epochs"][0]["bit_exact"] is True
    capsys.readouterr()
    assert main(["run", "ebp", "--only", "cycles", "--json", "-"]) == 0
    cycles = json.loads(capsys.readouterr().out)["cycles"]
    assert [(row["network"], row["pes"], row["fits"]) for row in cycles][:2] == [("64-64-1", 4, False),
                                                                                ("64-64-1", 8, False)]
    row = next(row for row in cycles if (row["network"], row["pes"]) == ("16-5-1", 4))
    assert row["paper_forward_us"] == 0.7 and row["forward_compute_cycles"] == row["forward_busy_cycles"] - 2


@pytest.mark.extended
def test_training_on_a_users_csv_on_the_rtl_ring(tiny_csv, tmp_path):
    """The same training on the Verilator-simulated 4-PE ring: the weights and losses read back through the host
    port after every epoch equal the golden model's."""
    report_path = tmp_path / "ebp.json"
    assert main(["run", "ebp", "--data", str(tiny_csv), "--epochs", "2", "--rtl", "--json", str(report_path)]) == 0
    _, training = _training(report_path)
    assert training["rtl"]["bit_exact"] is True and training["rtl"]["bit_exact_epochs"] == [True, True]
    assert len(training["rtl"]["cycles_per_epoch"]) == 2


def test_the_pwl_plot_is_drawn_only_into_out(tmp_path, monkeypatch, capsys):
    """Without ``--out`` the job writes no file; with it, the plot and nothing else."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", "ebp", "--only", "pwl"]) == 0
    assert list(tmp_path.iterdir()) == []
    assert main(["run", "ebp", "--only", "pwl", "--out", "plots/pwl"]) == 0
    assert [path.name for path in (tmp_path / "plots" / "pwl").iterdir()] == ["pwl_sigmoid.png"]
