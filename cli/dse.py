"""``nnaccel dse``: design-space exploration. ``dataflow`` and ``predictor`` run DCP
(:mod:`dse.dcp.command`), ``cosearch`` runs DANCE and its baselines on MNIST (:mod:`dse.dance.command`);
the logic lives in ``dse/``, this module registers the subcommands and reports."""

from cli.report import ToolError, add_json_argument, output_file, positive_int, write_json
from models.shared.input_files import InputError

__all__ = ["add_arguments"]


def add_arguments(parser):
    """The ``dse`` subcommands, each with its handler."""
    from dse.dance import command as dance_command
    from dse.dcp import command as dcp_command

    commands = parser.add_subparsers(dest="dse_command", required=True, metavar="COMMAND")
    dataflow = commands.add_parser(
        "dataflow", help="DCP: the best dataflow of a layer or network by back-propagation through a learned "
                         "predictor, against random, TPE and NSGA-II",
        description="DCP: find the best dataflow of a layer or of every layer of a network by gradient descent "
                    "through the learned predictor, compared with random search, TPE and NSGA-II at the same "
                    "budget; report, plot and JSON.")
    dcp_command.add_dataflow_arguments(dataflow)
    dataflow.set_defaults(handler=run_dataflow)
    predictor = commands.add_parser(
        "predictor", help="label sampled dataflows (Dask sweep), train DCP's predictor, report its held-out "
                          "accuracy",
        description="Label sampled dataflows with the cost model (a Dask sweep, resumable), train DCP's "
                    "predictor and report its error on held-out dataflows and layers it never saw.")
    dcp_command.add_predictor_arguments(predictor)
    predictor.set_defaults(handler=run_predictor)
    cosearch = commands.add_parser(
        "cosearch", help="DANCE: network and accelerator searched together on MNIST, against its baselines",
        description="Search a network (MNIST, conv-conv-dense-dense, every candidate compilable onto the DQN "
                    "accelerator) and its hardware together with DANCE's frozen evaluator, against the separate "
                    "design, a FLOPs penalty and EDD's loss; print the accuracy / latency / energy / area / EDAP "
                    "table and plot error against EDAP.")
    dance_command.add_arguments(cosearch, positive_int=positive_int, output_file=output_file,
                                add_json_argument=add_json_argument)
    cosearch.set_defaults(handler=run_cosearch)


def run_dataflow(arguments):
    from dse.dcp import command as dcp_command

    dcp_command.run_dataflow(arguments)
    return 0


def run_predictor(arguments):
    from dse.dcp import command as dcp_command

    dcp_command.run_predictor(arguments)
    return 0


def run_cosearch(arguments):
    from dse.dance import command as dance_command

    try:
        results, seconds, plot = dance_command.run(arguments)
    except ValueError as error:
        raise InputError(str(error)) from None
    except FileNotFoundError as error:
        raise ToolError(str(error)) from None
    for line in dance_command.table_lines(results):
        print(line)
    print(f"plot written to {plot}; co-search wall time {seconds:.1f} s")
    answer = dance_command.winner(results) if (arguments.rtl_digits or arguments.onnx) else None
    rtl = None
    if answer is not None:
        print(f"nnaccel: retraining DANCE's answer ({answer['network']}) ...", flush=True)
        network, model, accuracy, test = dance_command.retrain_winner(arguments, answer)
        if arguments.onnx:
            dance_command.export_winner(network, model, arguments.onnx)
            print(f"DANCE's winner ({answer['network']}; lambda2 {answer['lambda2']}) written to {arguments.onnx}: "
                  f"retrained test accuracy {accuracy:.2%} (the search's {answer['accuracy']:.2%}); run it with "
                  f"`nnaccel run net {arguments.onnx}`")
        if arguments.rtl_digits:
            rtl = dance_command.check_on_rtl(arguments, network, model, test,
                                             progress=lambda text: print(f"nnaccel: {text} ...", flush=True))
            for line in dance_command.rtl_lines(rtl):
                print(line)
    if arguments.json:
        write_json(arguments.json, {"cost": arguments.cost, "space": arguments.space, "seconds": seconds,
                                    "results": results, "rtl_check": rtl}, schema="nnaccel.dse.cosearch/2")
    if rtl is not None and not (rtl["all_bit_exact"] and rtl["cycles_equal"]):
        return 1
    return 0
