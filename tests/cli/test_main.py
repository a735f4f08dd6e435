"""``nnaccel`` itself: --version, help for every command and option, and what each kind of failure exits with."""

import argparse
import json

import pytest

from nnaccel.cli import float_units
from nnaccel.cli.main import build_parser, main
from nnaccel.sim.harness import SimulationError
from nnaccel.sim.toolchain import SimulatorNotFound


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("nnaccel ")


def _subparsers(parser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, subparser in action.choices.items():
                yield name, subparser
                yield from ((f"{name} {inner}", nested) for inner, nested in _subparsers(subparser))


def test_every_command_has_a_description_and_every_option_help():
    commands = dict(_subparsers(build_parser()))
    assert set(commands) >= {"run", "run dqn", "run float", "run ebp", "run capsnet", "play", "verilog", "synth",
                             "info"}
    for name, parser in commands.items():
        assert parser.description, f"nnaccel {name} has no description"
        undocumented = [action.dest for action in parser._actions
                        if not action.help and not isinstance(action, argparse._SubParsersAction)]
        assert undocumented == [], f"nnaccel {name}: options without help: {undocumented}"


def _failing_suite(error):
    def run_suite(suite, *, simulator):
        raise error
    return run_suite


def test_a_simulator_failure_exits_3_naming_its_log(monkeypatch, capsys):
    monkeypatch.setattr(float_units, "run_suite", _failing_suite(SimulationError(
        "1 of 1 cocotb tests in testbench.shared.stream_tb failed on 'float_pair' (verilator); log /runs/x/sim.log:\n"
        "tail line")))
    assert main(["run", "float", "--suite", "f16_mul_1"]) == 3
    assert "nnaccel: error: 1 of 1 cocotb tests in testbench.shared.stream_tb failed on 'float_pair' (verilator); " \
           "log /runs/x/sim.log:" in capsys.readouterr().err


def test_a_missing_simulator_exits_3(monkeypatch, capsys):
    monkeypatch.setattr(float_units, "run_suite", _failing_suite(SimulatorNotFound("iverilog is not on PATH")))
    assert main(["run", "float", "--suite", "f16_mul_1", "--simulator", "icarus"]) == 3
    assert capsys.readouterr().err == "nnaccel: error: iverilog is not on PATH\n"


def test_a_missing_optional_package_exits_3_naming_the_extra(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(float_units, "run_suite", _failing_suite(ModuleNotFoundError("No module", name="sklearn")))
    assert main(["run", "float", "--suite", "f16_mul_1"]) == 3
    assert capsys.readouterr().err == ("nnaccel: error: this job needs the Python package sklearn, which is not "
                                       "installed: pip install -e '.[ebp]'\n")
    monkeypatch.setenv("NNACCEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(float_units, "run_suite", _failing_suite(ModuleNotFoundError("No module", name="nnacel")))
    assert main(["run", "float", "--suite", "f16_mul_1"]) == 4          # a misspelt import of ours is a bug


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    """``nnaccel ... | head``: the reader has gone, so the rest of the output goes nowhere; not a bug."""
    import sys

    monkeypatch.setattr(sys, "stdout", sys.stdout)          # restored after the test: main swaps it for devnull
    monkeypatch.setattr(float_units, "run_suite", _failing_suite(BrokenPipeError(32, "Broken pipe")))
    assert main(["run", "float", "--suite", "f16_mul_1"]) == 141
    sys.stdout.close()
    assert capsys.readouterr().err == ""


def test_a_bug_exits_4_with_the_traceback_in_a_file(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("NNACCEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(float_units, "run_suite", _failing_suite(ZeroDivisionError("division by zero")))
    assert main(["run", "float", "--suite", "f16_mul_1"]) == 4
    error = capsys.readouterr().err
    assert error.startswith("nnaccel: internal error: ZeroDivisionError: division by zero (a bug in nnaccel; the "
                            "traceback is in ") and error.count("\n") == 1 and "Traceback" not in error
    written = list((tmp_path / "errors").glob("traceback-*.txt"))
    assert len(written) == 1 and str(written[0]) in error
    assert "Traceback (most recent call last)" in written[0].read_text()
    assert "ZeroDivisionError: division by zero" in written[0].read_text()


@pytest.mark.parametrize("json_option", ["-", "FILE"])
def test_json_to_standard_output_holds_only_the_json(tmp_path, capfd, json_option):
    """``synth --json -``: the table and every other line go to standard error."""
    path = tmp_path / "fmul.json"
    target = "-" if json_option == "-" else str(path)
    assert main(["synth", "fmul", "--json", target]) == 0
    captured = capfd.readouterr()           # file descriptors: Yosys' own output counts too
    text = captured.out if json_option == "-" else path.read_text()
    document = json.loads(text)
    assert document["schema"] == "nnaccel.synth/1" and document["systems"][0]["system"] == "fmul"
    human = captured.err if json_option == "-" else captured.out
    assert "float_multiplier_binary32_l2 on Cyclone V 5CSEMA5: fits" in human and "nnaccel: wall time" in human


def test_a_command_whose_options_need_a_missing_extra_says_so_and_the_others_run(capsys):
    """Without the [dse] extra (PyTorch), ``nnaccel dse ...`` exits 3 naming the extra; ``nnaccel`` itself still starts
    (the options of ``dse cosearch`` come from DANCE's search settings, which import PyTorch)."""
    from nnaccel.cli import main as cli_main

    def options_needing_torch(parser):
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    parser = argparse.ArgumentParser()
    commands = parser.add_subparsers(dest="command", required=True)
    cli_main._command(commands, "dse", "summary", "description", options_needing_torch, None)
    cli_main._command(commands, "info", "summary", "description", lambda parser: None, lambda arguments: 0)
    assert parser.parse_args(["info"]).handler(None) == 0
    arguments = parser.parse_args(["dse", "cost", "--modules", "2"])
    with pytest.raises(cli_main.ToolError, match=r"^nnaccel dse needs the Python package torch, which is not "
                                                 r"installed: pip install -e '\.\[dse\]'$"):
        arguments.handler(arguments)
