"""``nnaccel dse``: design-space exploration (the logic lives in ``dse/``; this module registers the subcommands
and reports).

``dataflow`` and ``predictor`` are DCP's (:mod:`dse.dcp.command`), ``cosearch`` DANCE's and its baselines on MNIST
(:mod:`dse.dance.command`).  ``cost`` prints the latency, energy and area the RTL family's cost model
(:mod:`dse.rtl.cost_model`) gives a network on one configuration of the DQN accelerator, per layer and in total.
``validate`` draws seeded cases from the RTL family (configurations, random networks, random mappings; plus the
thesis network at full size), runs each as a Dask task (:func:`dse.shared.sweep.run_sweep`; results in a SQLite
store, so a rerun skips what is done), and prints per case the predicted and measured cycles and whether the
outputs were bit-exact.
"""

import contextlib
import time
from pathlib import Path

from nnaccel.cli import report as cli_report
from nnaccel.cli.report import ToolError, add_json_argument, non_negative_int, output_file, positive_int, write_json
from nnaccel.dse.shared.sweep import scheduler_address
from nnaccel.models.shared.input_files import InputError

__all__ = ["add_arguments"]

NETWORKS = ("dqn",)
COST_SCHEMA = "nnaccel.dse.cost/1"
STREAM_SCHEMA = "nnaccel.dse.stream/1"
# The integer fields of hw.dqn.config.DqnConfig that nnaccel dse cost takes as options (--modules, ...).
_INTEGER_FIELDS = (("modules", "matrix modules, a power of two"), ("lanes", "lanes per matrix module"),
                   ("multiplier_latency", "the multiplier's register stages"),
                   ("adder_latency", "the adder's register stages"),
                   ("row_elements", "elements per activation word"),
                   ("activation_depth", "words per activation RAM"), ("weight_depth", "words per weight RAM"),
                   ("max_layers", "descriptor-table entries"))


def add_arguments(parser):
    """The ``dse`` subcommands, each with its handler."""
    from nnaccel.dse.dance import command as dance_command
    from nnaccel.dse.dcp import command as dcp_command
    from nnaccel.dse.dcp import stream_command as dcp_stream_command

    commands = parser.add_subparsers(dest="dse_command", required=True, metavar="COMMAND")
    dataflow = commands.add_parser(
        "dataflow", help="DCP: the best dataflow of a layer or network by back-propagation through a learned "
                         "predictor, against random, TPE and NSGA-II",
        description="DCP: find the best dataflow of a layer or of every layer of a network by gradient descent "
                    "through the learned predictor, compared with random search, TPE and NSGA-II at the same "
                    "budget; report, plot and JSON.  On the RTL family (--space rtl) also the best mapping the "
                    "hardware allows and, with --simulate, the answer run on the simulated accelerator.")
    dcp_command.add_dataflow_arguments(dataflow, option_types=cli_report)
    dataflow.set_defaults(handler=run_dataflow)
    predictor = commands.add_parser(
        "predictor", help="label sampled dataflows (Dask sweep), train DCP's predictor, report its held-out "
                          "accuracy",
        description="Label sampled dataflows with the cost model (a Dask sweep, resumable), train DCP's "
                    "predictor and report its error on held-out dataflows and layers it never saw.")
    dcp_command.add_predictor_arguments(predictor, option_types=cli_report)
    predictor.set_defaults(handler=run_predictor)
    cosearch = commands.add_parser(
        "cosearch", help="DANCE: network and accelerator searched together on MNIST, against its baselines",
        description="Search a network (MNIST, conv-conv-dense-dense, every candidate compilable onto the DQN "
                    "accelerator) and its hardware together with DANCE's frozen evaluator, against the separate "
                    "design, a FLOPs penalty and EDD's loss; print the accuracy / latency / energy / area / EDAP "
                    "table and plot error against EDAP.")
    dance_command.add_arguments(cosearch, option_types=cli_report)
    cosearch.set_defaults(handler=run_cosearch)
    dcp_stream_command.add_stream_parser(commands, option_types=cli_report).set_defaults(handler=run_stream)
    _add_cost_arguments(commands.add_parser(
        "cost", help="latency, energy and area of a network on one configuration of the DQN accelerator",
        description="The RTL family's cost model on one configuration of the DQN accelerator: per layer the "
                    "passes, cycles (the compiler's prediction of the hardware's counters), stalls and energy per "
                    "action (45 nm table), and the configuration's FPGA area composed from per-component Yosys "
                    "estimates."))
    _add_validate_arguments(commands.add_parser(
        "validate", help="seeded cases of the RTL family on the simulator: outputs against the golden model, "
                         "cycles against the cost model",
        description="Draw seeded configurations, networks and mappings of the RTL family (plus the thesis network "
                    "at full size), compile and simulate each as a Dask task, and check the outputs bit for bit "
                    "against the golden model and every pass's four counters against the prediction.  Results are "
                    "kept in a SQLite store keyed by the case: a rerun skips what is done."))


@contextlib.contextmanager
def _scheduler_failures():
    """A Dask scheduler that does not answer is a tool failure (exit 3), named in one line."""
    from nnaccel.dse.shared.sweep import SchedulerUnreachable

    try:
        yield
    except SchedulerUnreachable as error:
        raise ToolError(str(error)) from None


def run_dataflow(arguments):
    from nnaccel.dse.dcp import command as dcp_command

    dcp_command.run_dataflow(arguments)
    return 0


def run_predictor(arguments):
    from nnaccel.dse.dcp import command as dcp_command

    with _scheduler_failures():
        dcp_command.run_predictor(arguments)
    return 0


def run_stream(arguments):
    from nnaccel.dse.dcp import stream_command

    stream_command.check_arguments(arguments)
    report = stream_command.run_stream(arguments, *stream_command.stream_network(arguments.model, arguments.dir))
    if arguments.json:
        write_json(arguments.json, report, schema=STREAM_SCHEMA)
    simulation = report.get("simulation")
    return 1 if simulation and (not simulation["bit_exact"] or simulation["counter_mismatches"]) else 0


def run_cosearch(arguments):
    from nnaccel.dse.dance import command as dance_command

    try:
        with _scheduler_failures():
            results, seconds = dance_command.run(arguments)
    except ValueError as error:
        raise InputError(str(error)) from None
    except FileNotFoundError as error:
        raise ToolError(str(error)) from None
    cost_function = dance_command.chosen_cost_function(arguments)
    for line in dance_command.table_lines(results, cost_function):
        print(line)
    print(f"co-search wall time {seconds:.1f} s" + (f"; plot written to {arguments.plot}" if arguments.plot else ""))
    answer = (dance_command.winner(results, dance_command.result_cost(cost_function))
              if (arguments.rtl_digits or arguments.onnx) else None)
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
            rtl = dance_command.check_on_rtl(arguments, answer, network, model, test,
                                             progress=lambda text: print(f"nnaccel: {text} ...", flush=True))
            for line in dance_command.rtl_lines(rtl):
                print(line)
    if arguments.json:
        write_json(arguments.json, {"cost": arguments.cost, "space": arguments.space, "seconds": seconds,
                                    "results": results, "pareto": dance_command.pareto_report(results, cost_function),
                                    "rtl_check": rtl}, schema="nnaccel.dse.cosearch/4")
    if rtl is not None and not (rtl["all_bit_exact"] and rtl["cycles_equal"]):
        return 1
    return 0


def _add_cost_arguments(cost):
    from nnaccel.hw.dqn.config import DqnConfig

    cost.add_argument("--format", dest="fmt", choices=("binary32", "bfloat16", "binary16"), default="binary32",
                      help="number format of weights, activations and arithmetic (default binary32)")
    for field, help_text in _INTEGER_FIELDS:
        default = getattr(DqnConfig, field)
        cost.add_argument(f"--{field.replace('_', '-')}", type=positive_int, default=default,
                          help=f"{help_text} (default {default})")
    cost.add_argument("--network", choices=NETWORKS, default="dqn", help="the network: the thesis' DQN (18 actions)")
    cost.add_argument("--split", choices=("auto", "always", "never"), default="auto",
                      help="the compiler's K-split of idle modules (default auto: where it pays)")
    add_json_argument(cost, "the costs (schema nnaccel.dse.cost/1)")
    cost.set_defaults(handler=run_cost)


def _add_validate_arguments(validate):
    validate.add_argument("--cases", type=positive_int, default=30, help="random cases (default 30)")
    validate.add_argument("--seed", type=non_negative_int, default=0, help="seed of configurations, networks and mappings "
                                                              "(default 0)")
    validate.add_argument("--hardware", choices=("random", "reduced"), default="random",
                          help="random: --configs seeded small configurations (every other one with the max mode: "
                               "max pools); reduced: the 2 x 4 configuration in each number format and in binary32 "
                               "with the max mode (quick builds)")
    validate.add_argument("--configs", type=positive_int, default=6, help="random configurations (default 6)")
    validate.add_argument("--no-thesis", action="store_true",
                          help="leave out the thesis network at full size (two cases on the full-size build)")
    validate.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                          help="a running Dask scheduler, tcp://HOST:PORT (default: a local cluster)")
    validate.add_argument("--workers", type=positive_int, help="local cluster workers (default: one per core)")
    validate.add_argument("--store", metavar="FILE", type=output_file,
                          help="result store (SQLite; default in the nnaccel cache)")
    add_json_argument(validate, "the table (schema nnaccel.dse.validate/1)")
    validate.set_defaults(handler=run_validate)


# ---- cost -----------------------------------------------------------------------------------------------------

def _config(arguments):
    from nnaccel.dse.rtl.hardware import config_from_json

    return config_from_json({"fmt": arguments.fmt,
                             **{field: getattr(arguments, field) for field, _ in _INTEGER_FIELDS}})


def run_cost(arguments):
    from nnaccel.dse.rtl.cost_model import area_breakdown, evaluate_network
    from nnaccel.dse.rtl.hardware import config_to_json
    from nnaccel.models.dqn.network import dqn_layers, seeded_weights
    from nnaccel.models.dqn.plan import compile_network

    try:
        config = _config(arguments)
    except ValueError as error:
        raise InputError(f"dse cost: not a configuration of the DQN accelerator: {error}") from None
    layers = dqn_layers(18)
    try:
        # The compiler checks what the cost model does not: RAM capacities, descriptor fields.
        compile_network(config, layers, seeded_weights(), split=arguments.split)
        mapping, per_layer, totals = evaluate_network(config, layers, split=arguments.split)
        components, area = area_breakdown(config)
    except ValueError as error:
        raise InputError(f"dse cost: cannot cost the DQN on this configuration: {error}") from None
    print(f"DQN (thesis network, 18 actions) on {config.modules} x {config.lanes} {config.fmt.name} MACs, multiplier "
          f"latency {config.multiplier_latency}, adder latency {config.adder_latency}, {config.row_elements}-element "
          f"rows, RAMs {config.activation_depth} / {config.weight_depth} words")
    print(f"mapping: {mapping.describe()}\n")
    header = (f"{'layer':<8}{'passes':>7}{'cycles':>9}{'stalls':>8}{'energy nJ':>11}{'MAC':>9}{'weights':>9}"
              f"{'acts':>8}{'regs':>8}")
    print(header)
    print("-" * len(header))
    for row in [*per_layer, {"name": "total", **totals}]:
        if row["name"] == "total":
            print("-" * len(header))
        print(f"{row['name']:<8}{row['passes']:>7.0f}{row['latency_cycles']:>9,.0f}{row['stall_cycles']:>8.0f}"
              f"{row['energy_pj'] / 1e3:>11.1f}{row['mac_pj'] / 1e3:>9.1f}{row['weight_ram_pj'] / 1e3:>9.1f}"
              f"{row['activation_ram_pj'] / 1e3:>8.1f}{row['register_pj'] / 1e3:>8.1f}")
    print("(cycles: the compiler's prediction of the hardware's counters; energy per action at 45 nm, nJ: MACs, "
          "weight RAM, activation RAMs, registers)\n")
    print(f"{'area (Cyclone V, composed Yosys estimate)':<44}{'ALMs':>9}{'DSP':>8}{'M10K':>8}")
    for name, count, resources in components:
        label = f"  {name}" + (f" x{count}" if count > 1 else "")
        print(f"{label:<44}{resources.alms:>9,}{resources.dsp_blocks:>8.1f}{resources.m10k:>8,}")
    print(f"{'total':<44}{area.alms:>9,}{area.dsp_blocks:>8.1f}{area.m10k:>8,}")
    if arguments.json:
        write_json(arguments.json, {
            "config": config_to_json(config), "network": arguments.network,
            "mapping": mapping.to_json(), "layers": per_layer, "total": totals,
            "area": {"alms": area.alms, "dsp_blocks": area.dsp_blocks, "m10k": area.m10k,
                     "components": [{"component": name, "instances": count, "alms": resources.alms,
                                     "dsp_blocks": resources.dsp_blocks, "m10k": resources.m10k}
                                    for name, count, resources in components]}}, schema=COST_SCHEMA)
    return 0


# ---- validate -------------------------------------------------------------------------------------------------

def run_validate(arguments):
    import numpy as np

    from nnaccel.dse.rtl.validate import (SCHEMA, describe_config, describe_network, reduced_configs,
                                         validate_case, validation_cases, validation_configs)
    from nnaccel.dse.shared.store import ResultStore
    from nnaccel.dse.shared.sweep import run_sweep
    from nnaccel.models.dqn.mapping import DqnMapping
    from nnaccel.models.shared.cache import cache_root

    start = time.perf_counter()
    if arguments.hardware == "reduced":
        configs = reduced_configs()
    else:
        try:
            configs = validation_configs(np.random.default_rng([arguments.seed, 1]), arguments.configs)
        except ValueError as error:
            raise InputError(f"--configs: {error}") from None
    print(f"nnaccel: drawing {arguments.cases} cases over {len(configs)} configurations (seed {arguments.seed})"
          + ("" if arguments.no_thesis else " and the thesis network at full size") + " ...", flush=True)
    cases = validation_cases(arguments.cases, seed=arguments.seed, configs=configs, thesis=not arguments.no_thesis)
    store_path = Path(arguments.store) if arguments.store else cache_root() / "dse" / "validate.sqlite"
    with ResultStore(store_path) as store, _scheduler_failures():
        report = run_sweep(validate_case, cases, store=store, scheduler=arguments.scheduler, workers=arguments.workers,
                           description="validate")
        results = [store.get(case) for case in cases]
    rows = []
    for index, (case, result) in enumerate(zip(cases, results)):
        mapping = result["mapping"] if result else case.get("mapping")
        described = DqnMapping.from_json(mapping).describe() if mapping else ""
        if case["kind"] == "thesis":
            described = f"split={case['split']}: {described}"
        row = {"case": index, "kind": case["kind"], "config": describe_config(case["config"]),
               "network": describe_network(case), "mapping": described, "failed": result is None}
        if result is not None:
            row.update({key: result[key] for key in ("passes", "predicted", "measured", "predicted_cycles",
                                                     "model_cycles", "measured_cycles", "bit_exact",
                                                     "counters_exact", "cycles_exact", "mismatches")})
            row["exact"] = result["bit_exact"] and result["counters_exact"] and result["cycles_exact"]
        else:
            row["exact"] = False
        rows.append(row)
    _print_table(rows)
    exact = sum(row["exact"] for row in rows)
    distinct = len({case_config_key(case) for case in cases})
    wall = time.perf_counter() - start
    print(f"\n{exact} of {len(rows)} cases exact (outputs bit-exact with the golden model and every pass's four "
          f"counters equal to the prediction) over {distinct} hardware configurations; {report.new} run now, "
          f"{report.skipped} already in {store_path}")
    for key, error in report.failures.items():
        print(f"  failed: {key[:12]}: {error[:300]}")
    print(f"validation wall time {wall:.0f} s")
    if arguments.json:
        write_json(arguments.json, {"seed": arguments.seed, "hardware": arguments.hardware,
                                    "exact_cases": exact, "total_cases": len(rows),
                                    "hardware_configurations": distinct, "run_now": report.new,
                                    "skipped": report.skipped, "failures": report.failures, "wall_seconds": wall,
                                    "store": str(store_path), "cases": rows}, schema=SCHEMA)
    return 0 if exact == len(rows) else 1


def case_config_key(case):
    return tuple(sorted(case["config"].items()))


def _print_table(rows):
    header = (f"{'#':>3}  {'configuration':<32}{'network':<44}{'predicted':>10}{'measured':>10}  {'bit-exact':<9}  "
              "mapping")
    print("\n" + header)
    print("-" * (len(header) + 20))
    for row in rows:
        if row["failed"]:
            print(f"{row['case']:>3}  {row['config']:<32}{row['network'][:43]:<44}{'-':>10}{'-':>10}  {'FAILED':<9}  "
                  f"{row['mapping']}")
            continue
        measured = row["measured_cycles"][0]
        mark = (" (counters differ)" if not row["counters_exact"] or measured != row["predicted_cycles"] else
                f" (cost model: {row['model_cycles']:,} cycles)" if not row["cycles_exact"] else "")
        print(f"{row['case']:>3}  {row['config']:<32}{row['network'][:43]:<44}{row['predicted_cycles']:>10,}"
              f"{measured:>10,}  {'yes' if row['bit_exact'] else 'NO':<9}  {row['mapping']}{mark}")
