"""``nnaccel dse ...``: design-space exploration jobs (their logic lives in ``dse/``)."""

from dse.dcp import command as dcp_command


def add_arguments(commands):
    """Register ``nnaccel dse`` and its subcommands on the top-level subparsers."""
    dse = commands.add_parser("dse", help="design-space exploration: DCP dataflow search, its "
                                          "predictor")
    jobs = dse.add_subparsers(dest="dse_job", required=True)
    dataflow = jobs.add_parser("dataflow", help="DCP: the best dataflow of a layer or network by "
                                                "back-propagation through a learned predictor, "
                                                "against random, TPE and NSGA-II")
    dcp_command.add_dataflow_arguments(dataflow)
    dataflow.set_defaults(handler=_run_dataflow)
    predictor = jobs.add_parser("predictor", help="label sampled dataflows (Dask sweep), train "
                                                  "DCP's predictor, report its held-out accuracy")
    dcp_command.add_predictor_arguments(predictor)
    predictor.set_defaults(handler=_run_predictor)


def _run_dataflow(arguments):
    dcp_command.run_dataflow(arguments)
    return 0


def _run_predictor(arguments):
    dcp_command.run_predictor(arguments)
    return 0
