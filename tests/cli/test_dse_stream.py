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
    assert main(["dse", "stream", "--dcp", "counted", "--budget", "20", "--samples", "20"]) == 2
    assert capsys.readouterr().err.strip() == ("nnaccel: error: --samples 20: DCP's training mappings count in its "
                                               "budget; give fewer than --budget (20)")
    assert main(["dse", "stream", "--dcp", "counted", "--from-compiler"]) == 2
    assert capsys.readouterr().err.strip() == ("nnaccel: error: --from-compiler: DCP starts from the compiler's "
                                               "mapping with --dcp transfer only")
    assert main(["dse", "stream", "--model", "ad", "--dcp", "transfer"]) == 2
    assert capsys.readouterr().err.strip() == ("nnaccel: error: --model ad: no transfer predictor trained without it "
                                               "(predictor_stream_ad.pt); give --dcp counted or train one "
                                               "(benchmarks/dse/train_stream_predictor.py)")
    assert main(["dse", "stream", "--held-out", "-1"]) == 2
    assert "argument --held-out" in capsys.readouterr().err
    assert main(["dse", "stream", "--model", "vww"]) == 2
    assert "argument --model: invalid choice: 'vww'" in capsys.readouterr().err


def test_a_models_space_is_the_boards_configuration_with_deeper_tables():
    """``--model kws``: the configuration ``run mlperf-tiny --board de1soc`` builds, sized from the binary32
    ``DE1_SOC_CONFIG`` (the space's; the board builds binary16), its descriptor and load tables 4 times as deep; the
    all-default mapping is the board's plan."""
    from dataclasses import replace

    import pytest

    from nnaccel.cli.dqn.accelerator_run import compile_model
    from nnaccel.cli.dqn.board import board_stream
    from nnaccel.hw.dqn.config import DE1_SOC_CONFIG
    from nnaccel.dse.dcp.stream_command import STREAM_TABLE_ROOM, stream_network
    from nnaccel.models.dqn.mlperf_tiny import mlperf_tiny_dir, model_path
    from nnaccel.models.dqn.weight_stream import model_base
    from nnaccel.models.shared.input_files import InputError

    try:
        mlperf_tiny_dir()
    except InputError:
        pytest.skip("no MLPerf Tiny folder")
    space, _, states = stream_network("kws")
    _, _, plan = compile_model(model_path("kws"), model_base(DE1_SOC_CONFIG))
    board = board_stream("de1soc", plan)
    assert replace(space.config, max_layers=board.config.max_layers,
                   weight_loads=board.config.weight_loads) == board.config
    assert space.config.max_layers == STREAM_TABLE_ROOM * 128 == 512
    assert space.config.weight_loads == STREAM_TABLE_ROOM * board.config.weight_loads
    stream, _, _ = space.compile(space.default())
    assert stream.plan.descriptors == board.plan.descriptors and stream.table == board.table
    assert states.shape == (1, 1, 49, 10)


def test_dcps_default_predictor_is_the_shipped_one_where_it_exists():
    """``--dcp`` left out: the predictor trained without the network where one ships (thesis, kws), else DCP's own
    (ad has none)."""
    from argparse import Namespace

    from nnaccel.dse.dcp.stream_command import check_arguments

    chosen = {}
    for model in ("thesis", "kws", "ad"):
        arguments = Namespace(model=model, dcp=None, simulate=False, objective="latency", from_compiler=False,
                              samples=16, budget=40)
        check_arguments(arguments)
        chosen[model] = arguments.dcp
    assert chosen == {"thesis": "transfer", "kws": "transfer", "ad": "counted"}
