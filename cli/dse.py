"""``nnaccel dse ...``: design-space exploration jobs (their logic lives in ``dse/``)."""

from dse.dcp import command as dcp_command


def add_arguments(commands):
    """Register ``nnaccel dse`` and its subcommands on the top-level subparsers."""
    dse = commands.add_parser("dse", help="design-space exploration: DCP dataflow search, its "
                                          "predictor",
                              description="Design-space exploration: search dataflows through a learned "
                                          "predictor (DCP) and train that predictor.")
    jobs = dse.add_subparsers(dest="dse_job", required=True)
    dataflow = jobs.add_parser("dataflow", help="DCP: the best dataflow of a layer or network by "
                                                "back-propagation through a learned predictor, "
                                                "against random, TPE and NSGA-II",
                               description="DCP: find the best dataflow of a layer or of every layer of "
                                           "a network by gradient descent through the learned predictor, "
                                           "compared with random search, TPE and NSGA-II at the same "
                                           "budget; report, plot and JSON.")
    dcp_command.add_dataflow_arguments(dataflow)
    dataflow.set_defaults(handler=_run_dataflow)
    predictor = jobs.add_parser("predictor", help="label sampled dataflows (Dask sweep), train "
                                                  "DCP's predictor, report its held-out accuracy",
                                description="Label sampled dataflows with the cost model (a Dask sweep, "
                                            "resumable), train DCP's predictor and report its error on "
                                            "held-out dataflows and layers it never saw.")
    dcp_command.add_predictor_arguments(predictor)
    predictor.set_defaults(handler=_run_predictor)


def _run_dataflow(arguments):
    dcp_command.run_dataflow(arguments)
    return 0


def _run_predictor(arguments):
    dcp_command.run_predictor(arguments)
    return 0
