"""``nnaccel dse stream``: its options and its bad input (the comparison itself is a CLI run, docs/dcp.md)."""

from nnaccel.cli.main import main


def test_help_names_the_space_and_the_searchers(capsys):
    assert main(["dse", "stream", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--simulate" in out and "--budget" in out and "NSGA-II" in out


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["dse", "stream", "--budget", "0"]) == 2
    assert capsys.readouterr().err.strip().endswith("argument --budget: must be a positive integer, not '0'")
    assert main(["dse", "stream", "--objective", "edp"]) == 2
    assert "argument --objective: invalid choice: 'edp'" in capsys.readouterr().err
    assert main(["dse", "stream", "--objective", "energy", "--simulate"]) == 2
    assert capsys.readouterr().err.strip() == ("nnaccel: error: --simulate: runs DCP's latency answer; give "
                                               "--objective latency or both")


def test_dcps_training_mappings_must_leave_room_in_its_budget(capsys):
    assert main(["dse", "stream", "--budget", "20", "--samples", "20"]) == 2
    assert capsys.readouterr().err.strip() == ("nnaccel: error: --samples 20: DCP's training mappings count in its "
                                               "budget; give fewer than --budget (20)")
    assert main(["dse", "stream", "--model", "vww"]) == 2
    assert "argument --model: invalid choice: 'vww'" in capsys.readouterr().err
