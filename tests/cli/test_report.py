"""cli.report: the progress displays (plain lines and tqdm bars), JSON writing and the output streams."""

import io
import json
import re

import pytest

from nnaccel.cli import report
from nnaccel.sim.progress import current_listener


def _feed(display):
    display.stage("Verilog generation")
    display.stage("C++ compile", 3)
    display.update(1, 3)
    display.update(3, 3)
    display.stage("simulation")
    display.update(1, 2)
    display.update(2, 2)
    display.close()


def test_plain_lines_name_the_stage_and_the_counts():
    stream = io.StringIO()
    _feed(report._LineDisplay(stream, "states", "weight load"))
    lines = [re.sub(r"^nnaccel: +\d+ s  ", "", line) for line in stream.getvalue().splitlines()]
    # counts between stage lines only when finished or PLAIN_PROGRESS_SECONDS after the last line
    assert lines == ["Verilog generation ...", "C++ compile (0 of 3) ...", "C++ compile: 3 of 3 objects done",
                     "simulation: start-up and weight load ...", "simulation: states: 2 of 2 done"]


def test_bars_on_a_terminal():
    stream = io.StringIO()
    _feed(report._BarDisplay(stream, "states", "weight load"))
    text = stream.getvalue()
    assert "nnaccel: C++ compile: 3/3 |" in text
    assert "nnaccel: simulation: start-up and weight load: " in text and "nnaccel: simulation: states: 2/2 |" in text


def test_progress_chooses_lines_without_a_terminal(capsys):   # capsys: standard output is not a terminal
    with report.progress("images") as display:
        assert isinstance(display, report._LineDisplay) and current_listener() is display
    assert current_listener() is None


def test_json_documents(tmp_path, capsys):
    with report.human_output_to_stderr():
        print("a human line")
        report.write_json("-", {"value": report.json_float(float("nan")), "inf": report.json_float(-float("inf")),
                                "x": report.json_float(0.5)}, schema="nnaccel.test/1")
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"schema": "nnaccel.test/1", "value": "NaN", "inf": "-Infinity", "x": 0.5}
    assert captured.err == "a human line\n"
    with pytest.raises(ValueError):         # never NaN in the JSON text
        report.write_json(tmp_path / "bad.json", {"value": float("nan")}, schema="nnaccel.test/1")
    report.write_json(tmp_path / "good.json", {"value": 1}, schema="nnaccel.test/1")
    assert json.loads((tmp_path / "good.json").read_text()) == {"schema": "nnaccel.test/1", "value": 1}
    assert not list(tmp_path.glob("*.partial"))


def test_an_output_file_is_checked_by_writing_nothing(tmp_path):
    """``output_file`` tries the file before the job runs: a new one is made and removed, an existing one keeps its
    bytes; what cannot be written is the argparse error."""
    import argparse

    existing = tmp_path / "kept.json"
    existing.write_text("old\n")
    assert report.output_file(str(tmp_path / "new.json")) == str(tmp_path / "new.json")
    assert report.output_file(str(existing)) == str(existing)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kept.json"] and existing.read_text() == "old\n"
    with pytest.raises(argparse.ArgumentTypeError, match=f"^cannot write {tmp_path}: it is a directory$"):
        report.output_file(str(tmp_path))
