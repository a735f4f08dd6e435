"""The ``nnaccel dse`` commands as a user runs them: with their output to a pipe they print plain lines (no carriage
return of a progress bar) and write no file the user did not ask for; bad options and an unreachable scheduler are
one line with exit 2 or 3, never a traceback."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nnaccel.cli.main import main

ROOT = Path(__file__).resolve().parents[2]

# Each command as cheaply as it runs; {store} is a folder outside the working folder.
CHEAP_RUNS = {
    "cost": "dse cost --modules 8 --lanes 32",
    "dataflow template": "dse dataflow --layer FC_2 --restarts 1 --steps 3 --baselines random",
    "dataflow rtl": "dse dataflow --space rtl --layer FC_2 --restarts 1 --steps 3 --baselines",
    "predictor": "dse predictor --per-layer 1 --held-out-per-layer 1 --epochs 1 --workers 1 --store {store}/p.sqlite",
    "cosearch": ("dse cosearch --methods baseline --search-epochs 1 --retrain-epochs 1 --train-images 256 "
                 "--rtl-digits 0 --workers 1 --store {store}/c.sqlite"),
    "validate": "dse validate --cases 1 --hardware reduced --no-thesis --workers 1 --store {store}/v.sqlite",
}


def _nnaccel(arguments, cwd):
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "nnaccel.cli.main", *arguments.split()], cwd=cwd,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=environment, timeout=600)


# Dask's local cluster warns when another one on the machine holds its dashboard's default port.
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
@pytest.mark.parametrize("arguments", CHEAP_RUNS.values(), ids=CHEAP_RUNS.keys())
def test_into_a_pipe_plain_lines_and_no_stray_files(arguments, tmp_path):
    working, store = tmp_path / "working", tmp_path / "store"
    working.mkdir()
    store.mkdir()
    run = _nnaccel(arguments.format(store=store), working)
    assert run.returncode == 0, run.stderr
    assert "\r" not in run.stdout and "\r" not in run.stderr
    assert "nnaccel: wall time" in run.stdout
    assert sorted(path.name for path in working.iterdir()) == []


def test_files_only_where_asked(tmp_path):
    working = tmp_path / "working"
    working.mkdir()
    plot, report = tmp_path / "dcp.png", tmp_path / "dcp.json"
    run = _nnaccel(f"{CHEAP_RUNS['dataflow rtl']} --plot {plot} --json {report}", working)
    assert run.returncode == 0, run.stderr
    assert plot.stat().st_size > 1000 and report.stat().st_size > 100
    assert f"plot written to {plot}" in run.stdout
    assert sorted(path.name for path in working.iterdir()) == []


BAD_OPTIONS = {
    "no restarts": ("dse dataflow --space rtl --layer CONV_2 --restarts 0",
                    "nnaccel dse dataflow: error: argument --restarts: must be a positive integer, not '0'"),
    "no steps": ("dse dataflow --steps 0", "nnaccel dse dataflow: error: argument --steps: must be a positive "
                                           "integer, not '0'"),
    "negative seed": ("dse dataflow --seed -1", "nnaccel dse dataflow: error: argument --seed: must be a "
                                                "non-negative integer, not '-1'"),
    "register file": ("dse dataflow --rf 100", "nnaccel: error: --pe 16x16, --rf, --style, --format: not a point of "
                                               "the template space: rf_words must be an integer in 4..64, not 100"),
    "plot folder": ("dse dataflow --plot {d}/missing/x.png", "nnaccel dse dataflow: error: argument --plot: cannot "
                                                             "write {d}/missing/x.png: the directory {d}/missing does "
                                                             "not exist"),
    "no epochs": ("dse predictor --epochs 0", "nnaccel dse predictor: error: argument --epochs: must be a positive "
                                              "integer, not '0'"),
    "predictor kind": ("dse predictor --kind cnn", "nnaccel dse predictor: error: argument --kind: invalid choice: "
                                                   "'cnn' (choose from 'mlp', 'transformer')"),
    "no workers": ("dse predictor --workers 0", "nnaccel dse predictor: error: argument --workers: must be a "
                                                "positive integer, not '0'"),
    "checkpoint folder": ("dse predictor --out {d}/missing/p.pt", "nnaccel dse predictor: error: argument --out: "
                                                                  "cannot write {d}/missing/p.pt: the directory "
                                                                  "{d}/missing does not exist"),
    "scheduler address": ("dse predictor --scheduler localhost", "nnaccel dse predictor: error: argument "
                                                                 "--scheduler: must be a Dask scheduler address, "
                                                                 "[PROTOCOL://]HOST:PORT (e.g. tcp://10.0.0.1:8786), "
                                                                 "not 'localhost'"),
    "cosearch seeds": ("dse cosearch --seeds 1,-2", "nnaccel dse cosearch: error: argument --seeds: must be "
                                                   "distinct non-negative integers, not '1,-2'"),
    "cosearch warm-up": ("dse cosearch --warmup-epochs -1", "nnaccel dse cosearch: error: argument "
                                                            "--warmup-epochs: must be a non-negative integer, not "
                                                            "'-1'"),
    "cosearch store": ("dse cosearch --store {d}/missing/s.sqlite", "nnaccel dse cosearch: error: argument --store: "
                                                                    "cannot write {d}/missing/s.sqlite: the "
                                                                    "directory {d}/missing does not exist"),
    "cosearch scheduler": ("dse cosearch --scheduler tcp://host:99999", "nnaccel dse cosearch: error: argument "
                                                                        "--scheduler: must be a Dask scheduler "
                                                                        "address, [PROTOCOL://]HOST:PORT (e.g. "
                                                                        "tcp://10.0.0.1:8786), not "
                                                                        "'tcp://host:99999'"),
    "cost json folder": ("dse cost --json {d}/missing/c.json", "nnaccel dse cost: error: argument --json: cannot "
                                                               "write {d}/missing/c.json: the directory {d}/missing "
                                                               "does not exist"),
    "validate seed": ("dse validate --seed -1", "nnaccel dse validate: error: argument --seed: must be a "
                                                "non-negative integer, not '-1'"),
    "validate cases": ("dse validate --cases 0", "nnaccel dse validate: error: argument --cases: must be a positive "
                                                 "integer, not '0'"),
    "validate store": ("dse validate --store {d}/missing/v.sqlite", "nnaccel dse validate: error: argument --store: "
                                                                    "cannot write {d}/missing/v.sqlite: the "
                                                                    "directory {d}/missing does not exist"),
}


@pytest.mark.parametrize("arguments, message", BAD_OPTIONS.values(), ids=BAD_OPTIONS.keys())
def test_bad_options_are_one_line_and_exit_2(arguments, message, tmp_path, capsys):
    status = main([word.format(d=tmp_path) for word in arguments.split()])
    error = capsys.readouterr().err
    assert (status, error.strip().splitlines()[-1]) == (2, message.format(d=tmp_path))
    assert error.count("\n") == 1 or error.startswith("usage: nnaccel")    # one line, or argparse's usage first
    assert "Traceback" not in error


def test_an_unreachable_scheduler_is_one_line_naming_it_and_exit_3(tmp_path, capsys):
    start = time.perf_counter()
    status = main(["dse", "validate", "--cases", "2", "--scheduler", "tcp://127.0.0.1:1", "--no-thesis",
                   "--store", str(tmp_path / "v.sqlite")])
    captured = capsys.readouterr()
    assert status == 3 and time.perf_counter() - start < 20
    assert captured.err.strip().splitlines() == [
        "nnaccel: error: the Dask scheduler at tcp://127.0.0.1:1 does not answer within 5 s (Timed out trying to "
        "connect to tcp://127.0.0.1:1 after 5 s)"]
