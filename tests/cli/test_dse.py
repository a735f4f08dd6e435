"""``nnaccel dse cosearch``: its options and its bad input (the runs themselves are CLI jobs)."""

from nnaccel.cli.main import main


def test_help_lists_the_cost_functions(capsys):
    assert main(["dse", "cosearch", "--help"]) == 0
    out = capsys.readouterr().out
    assert "edap" in out and "balanced" in out and "--scheduler" in out
    assert "{template,rtl,rtl-stream,rtl-stream-1k}" in out


def test_bad_input_is_one_line_and_exit_2(capsys):
    assert main(["dse", "cosearch", "--methods", "dance,random"]) == 2
    assert capsys.readouterr().err.strip() == ("nnaccel: error: --methods: unknown method random "
                                               "(choose from baseline, flops, edd, dance)")
    assert main(["dse", "cosearch", "--lambdas", "0.5,x"]) == 2
    assert "--lambdas: must be comma-separated numbers" in capsys.readouterr().err
    assert main(["dse", "cosearch", "--cost", "area"]) == 2
    capsys.readouterr()
    assert main(["dse", "cosearch", "--seeds", "0,0"]) == 2
    assert "--seeds: must be distinct non-negative integers, not '0,0'" in capsys.readouterr().err
