"""What ``nnaccel dse dataflow`` and ``nnaccel dse predictor`` do (the CLI only registers them).

``dataflow``: DCP on one layer (``--layer``) or the DQN network (``--network dqn``) for an
objective; then random search, Optuna TPE and Optuna NSGA-II with the same number of cost-model
evaluations and at least the same wall time, and exhaustive search where the design space can
enumerate the layer (a baseline stops early after three trials per DCP evaluation, where its
trials keep landing on dataflows already evaluated, or after ten times DCP's wall time). Prints DCP's best dataflow in words with its predicted and cost-model
cost, a table of every searcher's best at the same budget and at the same wall time, and with
``--plot`` a plot of the searches, with ``--json`` the report.

On the RTL family (``--space rtl``) it also prints the best mapping over every mapping the hardware
runs (any number of segments, the space's ``best_over_every_mapping``) for latency and energy, and with
``--simulate`` compiles DCP's answer and runs it on the simulated accelerator (the space's ``simulation_case``
run by ``dse.rtl.validate.validate_case``): outputs against the golden model bit for bit, the
simulated cycles against the cost model's.

``predictor``: the labelling sweep (Dask, result store), training, the accuracy on the held-out
dataflows, layers and hardware, and with ``--out`` the checkpoint.

PyTorch and Optuna (the ``dse`` extra) are imported when a job runs, so the CLI starts without
them.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from nnaccel.dse.dcp.dataset import Plan, collect
from nnaccel.dse.dcp.evaluator import OBJECTIVES
from nnaccel.dse.dcp.space import SPACES, space_named
from nnaccel.dse.dcp.workloads import DEFAULT_HARDWARE, LAYERS, RTL_LAYERS, layer_by_name
from nnaccel.dse.shared.layer import LayerType, dqn_layers
from nnaccel.dse.shared.sweep import scheduler_address
from nnaccel.models.shared.cache import cache_root
from nnaccel.models.shared.input_files import InputError

UNITS = {"latency": "cycles", "energy": "pJ", "edp": "cycles x pJ"}
BASELINES = ("random", "tpe", "nsga2")


def _array(text):
    try:
        rows, columns = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be ROWSxCOLUMNS, e.g. 16x16, not {text!r}") \
            from None
    return rows, columns


def add_dataflow_arguments(parser, *, option_types):
    """The ``dataflow`` options; ``option_types`` gives the CLI floor's argparse types (``positive_int``,
    ``non_negative_int``, ``output_file``)."""
    formats = dict.fromkeys(fmt for space in SPACES.values() for fmt in space.number_formats)
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--layer", default=None,
                        help=f"layer to search (default CONV_2); one of "
                             f"{', '.join(dict.fromkeys(l.name for l in (*LAYERS, *RTL_LAYERS)))}")
    target.add_argument("--network", choices=["dqn"], help="search every layer of a network")
    parser.add_argument("--objective", choices=OBJECTIVES, default="latency",
                        help="what to minimise (default latency)")
    parser.add_argument("--space", choices=tuple(SPACES), default="template",
                        help="design space: the seeds' template or nnaccel's RTL family (the DQN "
                             "accelerator) (default template)")
    parser.add_argument("--pe", type=_array, default=(DEFAULT_HARDWARE.pe_y, DEFAULT_HARDWARE.pe_x),
                        metavar="YxX", help="template PE array, or the RTL family's modules x lanes "
                                            "(default 16x16)")
    parser.add_argument("--rf", type=option_types.positive_int, default=DEFAULT_HARDWARE.rf_words,
                        help="register-file words per PE (default 64)")
    parser.add_argument("--style", choices=["WS", "OS", "RS"],
                        default=DEFAULT_HARDWARE.dataflow.value,
                        help="the template's dataflow style (default RS)")
    parser.add_argument("--format", choices=list(formats),
                        help=f"number format of the data (default {DEFAULT_HARDWARE.number_format} "
                             f"on the template, binary32 on the RTL family)")
    parser.add_argument("--simulate", action="store_true",
                        help="RTL family: compile DCP's answer and run it on the simulated "
                             "accelerator (outputs against the golden model, cycles against the "
                             "cost model)")
    parser.add_argument("--predictor", metavar="FILE",
                        help="predictor checkpoint (default: the shipped one)")
    parser.add_argument("--restarts", type=option_types.positive_int, default=8,
                        help="gradient-descent starting points per search (default 8)")
    parser.add_argument("--steps", type=option_types.positive_int, default=150,
                        help="gradient steps per starting point (default 150)")
    parser.add_argument("--seed", type=option_types.non_negative_int, default=0, help="random seed (default 0)")
    parser.add_argument("--start", choices=["random", "default"], default="random",
                        help="DCP's starting points: all random (default), or the compiler's "
                             "default mapping as the first (RTL family)")
    parser.add_argument("--baselines", nargs="*", choices=BASELINES, default=list(BASELINES),
                        help="baselines to run (default all)")
    parser.add_argument("--plot", metavar="FILE", type=option_types.output_file,
                        help="also draw the searches into FILE (PNG)")
    parser.add_argument("--json", metavar="FILE", type=option_types.output_file,
                        help="also write the report as JSON")


def _hardware(space, arguments):
    try:
        return space.hardware_from_options(array=arguments.pe, rf_words=arguments.rf, style=arguments.style,
                                           number_format=arguments.format)
    except ValueError as error:
        raise InputError(f"--pe {arguments.pe[0]}x{arguments.pe[1]}, --rf, --style, --format: not a point of the "
                         f"{space.name} space: {error}") from None


def _layer_words(layer):
    if layer.type == LayerType.DENSE:
        return f"{layer.name}: dense {layer.c} -> {layer.k}"
    kind = "depthwise " if layer.type == LayerType.DEPTHWISE else ""
    return (f"{layer.name}: {kind}{layer.c}x{layer.y}x{layer.x} -> {layer.k}x{layer.out_y}x"
            f"{layer.out_x}, {layer.r}x{layer.s} filter, stride {layer.stride}")


def run_dataflow(arguments):
    """The ``nnaccel dse dataflow`` job; returns the report as a dict."""
    import torch

    from nnaccel.dse.dcp import predictor as predictor_module
    from nnaccel.dse.dcp.baselines import exhaustive_search, optuna_search, random_search
    from nnaccel.dse.dcp.search import dcp_search

    torch.set_num_threads(1)
    space = space_named(arguments.space)
    hardware = _hardware(space, arguments)
    if arguments.simulate and not hasattr(space, "simulation_case"):
        raise InputError(f"--simulate runs the answer on the simulated RTL: the {space.name} space has no RTL "
                         f"(use --space rtl)")
    if arguments.start == "default" and not hasattr(space, "default_codes"):
        raise InputError(f"--start default starts from the compiler's mapping: the {space.name} space has none "
                         f"(use --space rtl)")
    layers = list(dqn_layers()) if arguments.network else [layer_by_name(arguments.layer or
                                                                         "CONV_2")]
    for layer in layers:
        try:
            space.log2_limits(layer, hardware)
        except ValueError as error:
            raise InputError(f"--layer {layer.name}: {error}") from None
    target = arguments.network or layers[0].name
    predictor = predictor_module.load(arguments.predictor, space=space.name)
    if predictor.space != space.name:
        raise InputError(f"{arguments.predictor}: predictor is for the {predictor.space} space, "
                         f"not {space.name}")
    objective, unit = arguments.objective, UNITS[arguments.objective]
    print(f"nnaccel: DCP on {target} ({objective}), {space.describe_hardware(hardware)}", flush=True)
    start = space.default_codes(layers, hardware) if arguments.start == "default" else None
    dcp = dcp_search(space, predictor, layers, hardware, objective, restarts=arguments.restarts,
                     steps=arguments.steps, seed=arguments.seed, start=start)
    results = [dcp]
    for name in arguments.baselines:
        # A small space (the RTL family's) collapses many trials onto dataflows already
        # evaluated: a baseline stops after three trials per DCP evaluation, or ten times DCP's
        # wall time (at least a minute), whatever it has used.
        common = dict(budget=dcp.evaluations, seconds=dcp.seconds, seed=arguments.seed,
                      max_trials=max(100, 3 * dcp.evaluations),
                      max_seconds=max(60.0, 10 * dcp.seconds))
        if name == "random":
            results.append(random_search(space, layers, hardware, objective, **common))
        else:
            results.append(optuna_search(space, layers, hardware, objective, sampler=name,
                                         **common))
    if len(layers) == 1:
        exhaustive = exhaustive_search(space, layers[0], hardware, objective, limit=1_000_000)
        if exhaustive is not None:
            results.append(exhaustive)
    best_any = (space.best_over_every_mapping(layers, hardware, objective)
                if hasattr(space, "best_over_every_mapping") else None)

    print(f"\nDCP's best dataflow ({dcp.evaluations} cost-model evaluations, {dcp.seconds:.1f} s):")
    for layer, code, costs in zip(layers, dcp.codes, dcp.per_layer):
        print(f"  {_layer_words(layer)}  [{costs['latency']:,.0f} cycles, "
              f"{costs['energy'] / 1e6:,.2f} uJ]")
        for line in space.describe(code).splitlines():
            print(f"    {line}")
    error = dcp.predicted / dcp.objective - 1
    print(f"  {objective}: predicted {dcp.predicted:,.4g} {unit}, cost model "
          f"{dcp.objective:,.4g} {unit} (prediction {error:+.1%})")
    print(f"\n{'searcher':<11} {'best at ' + str(dcp.evaluations) + ' evaluations':>26} "
          f"{'best in ' + format(dcp.seconds, '.1f') + ' s':>18} {'best of the run':>16} "
          f"{'evaluations':>12} {'seconds':>8}")
    for result in results:
        at_budget = result.best_within(evaluations=dcp.evaluations)
        at_time = result.best_within(seconds=dcp.seconds)
        print(f"{result.method:<11} {_number(at_budget):>26} {_number(at_time):>18} "
              f"{_number(result.objective):>16} {result.evaluations:>12,} {result.seconds:>8.1f}")
    best_there_is = next((r for r in results if r.method == "exhaustive"), None)
    if best_there_is:
        print(f"exhaustive: {best_there_is.evaluations:,} legal dataflows; DCP is "
              f"{dcp.objective / best_there_is.objective - 1:+.2%} from the best there is")
    if best_any:
        print(f"best over every mapping the hardware runs (any number of segments, within the "
              f"descriptor table; {best_any['seconds']:.1f} s): {_number(best_any['best'])} {unit}: "
              f"{' | '.join(best_any['mappings'])}; DCP is "
              f"{dcp.objective / best_any['best'] - 1:+.2%} from it")
    simulation = _simulate(space, layers, hardware, dcp) if arguments.simulate else None
    if arguments.plot:
        _plot(results, arguments.plot, target, objective, unit)
        print(f"nnaccel: plot written to {arguments.plot}")
    report = {"target": target, "objective": objective, "unit": unit,
              "hardware": space.hardware_to_dict(hardware), "space": space.name,
              "layers": [layer.to_dict() for layer in layers],
              "dcp": {"predicted": dcp.predicted, "cost_model": dcp.objective,
                      "dataflow": [space.describe(code) for code in dcp.codes],
                      "codes": [np.asarray(code).tolist() for code in dcp.codes]},
              "searchers": [_result_dict(result, dcp) for result in results],
              "best_any_mapping": best_any, "simulation": simulation}
    if arguments.json:
        _write_json(arguments.json, report)
    return report


def _simulate(space, layers, hardware, dcp):
    """Compile DCP's answer into its network, run it on the simulator, compare (see the module
    docstring); prints and returns the comparison."""
    from nnaccel.dse.rtl.hardware import network_from_json
    from nnaccel.dse.rtl.validate import validate_case
    from nnaccel.models.dqn.mapping import DqnMapping

    case, names = space.simulation_case(layers, hardware, dcp.codes)
    mapping = DqnMapping.from_json(case["mapping"])
    print(f"\nnnaccel: simulating {' | '.join(l.name for l in network_from_json(case['network']))} with "
          f"{mapping.describe()} on {hardware.module_name} ...", flush=True)
    result = validate_case(case)
    searched = [row for name, row in zip(result["passes"], result["measured"])
                if name.split(" ")[0] in names]
    simulated = sum(row[0] for row in searched)
    model = sum(entry["latency"] for entry in dcp.per_layer)
    print(f"  simulated: {', '.join(result['passes'])}; {'bit-exact' if result['bit_exact'] else 'MISMATCH: ' + '; '.join(result['mismatches'])} "
          f"against the golden model; every pass's counters "
          f"{'equal' if result['counters_exact'] else 'DIFFER from'} the prediction")
    # The search costs each pass alone; in the run a pass sets up while the one before drains (never slower).
    overlap = "equal" if simulated == model else (f"{model - simulated:,.0f} fewer: set-ups overlapping a drain"
                                                  if simulated < model else "MORE than the cost model")
    print(f"  {' + '.join(sorted(names))}: simulated {simulated:,} cycles, cost model (each pass alone) "
          f"{model:,.0f} cycles ({overlap}); whole network TOTAL_CYCLES "
          f"{result['measured_cycles'][0]:,}, cost model {result['model_cycles']:,}")
    return {"network_mapping": case["mapping"], "searched_layers": names,
            "simulated_cycles": simulated, "cost_model_cycles": model,
            "total_cycles": result["measured_cycles"][0], "model_total_cycles": result["model_cycles"],
            "bit_exact": result["bit_exact"], "counters_exact": result["counters_exact"],
            "cycles_exact": result["cycles_exact"], "build_seconds": result["build_seconds"],
            "seconds": result["seconds"]}


def _number(value):
    return "-" if value is None else f"{value:,.5g}"


def _result_dict(result, dcp):
    return {"method": result.method, "best": result.objective, "latency": result.latency,
            "energy": result.energy, "per_layer": result.per_layer,
            "evaluations": result.evaluations, "seconds": result.seconds,
            "best_at_dcp_budget": result.best_within(evaluations=dcp.evaluations),
            "best_at_dcp_seconds": result.best_within(seconds=dcp.seconds),
            "codes": [np.asarray(code).tolist() for code in result.codes]}


def _plot(results, path, target, objective, unit):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    dcp = results[0]
    figure, axes = pyplot.subplots(1, 3, figsize=(15, 4.2))
    steps = np.array(dcp.step_trace)
    axes[0].plot(steps[:, 0], steps[:, 1], color="C0")
    axes[0].set(xlabel="gradient step", ylabel=f"predicted {objective} ({unit})",
                title="DCP: best restart's predicted objective", yscale="log")
    for index, result in enumerate(results):
        trace = np.array(result.trace)
        style = dict(label=result.method, color=f"C{index}", drawstyle="steps-post")
        if result.method == "exhaustive":
            for axis in axes[1:]:
                axis.axhline(result.objective, color="k", linestyle="--", label="exhaustive")
            continue
        axes[1].plot(trace[:, 0], trace[:, 2], **style)
        axes[2].plot(trace[:, 1], trace[:, 2], **style)
    for axis, label in ((axes[1], "cost-model evaluations"), (axes[2], "wall time (s)")):
        axis.axvline(dcp.evaluations if axis is axes[1] else dcp.seconds, color="grey",
                     linewidth=0.8)
        axis.set(xlabel=label, ylabel=f"best {objective} ({unit}), cost model", yscale="log")
        axis.legend()
    axes[1].set_title(f"{target}: best so far per evaluation")
    axes[2].set_title(f"{target}: best so far per second")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)


def _write_json(path, document):
    path = Path(path)
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"nnaccel: report written to {path}")


# ---- nnaccel dse predictor ------------------------------------------------------------------

def default_store(space="template"):
    return cache_root() / "dse" / f"dcp_{space}.sqlite"


def add_predictor_arguments(parser, *, option_types):
    """The ``predictor`` options; ``option_types`` as for :func:`add_dataflow_arguments`."""
    parser.add_argument("--space", choices=tuple(SPACES), default="template",
                        help="design space to label (default template)")
    parser.add_argument("--per-layer", type=option_types.positive_int, default=2000,
                        help="sampled dataflows per (training layer, hardware) (default 2000)")
    parser.add_argument("--held-out-per-layer", type=option_types.non_negative_int, default=500,
                        help="held-out dataflows per layer, never trained on (default 500)")
    parser.add_argument("--kind", choices=("mlp", "transformer"), default="mlp",
                        help="predictor architecture: mlp (default) or transformer")
    parser.add_argument("--epochs", type=option_types.positive_int, default=60, help="training epochs (default 60)")
    parser.add_argument("--store", metavar="FILE", type=option_types.output_file,
                        help=f"result store (default {default_store('<space>')})")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT", type=scheduler_address,
                        help="an existing Dask scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=option_types.positive_int,
                        help="local Dask workers (default: one per core)")
    parser.add_argument("--width", type=option_types.positive_int, default=256,
                        help="the MLP's width (default 256)")
    parser.add_argument("--depth", type=option_types.positive_int, default=3,
                        help="the MLP's residual blocks (default 3)")
    parser.add_argument("--out", metavar="FILE", type=option_types.output_file,
                        help="write the trained predictor's checkpoint to FILE (for dataflow --predictor)")
    parser.add_argument("--json", metavar="FILE", type=option_types.output_file,
                        help="also write the accuracy report as JSON")


def run_predictor(arguments):
    """The ``nnaccel dse predictor`` job: label, train, report accuracy, save."""
    import torch

    from nnaccel.dse.dcp import predictor as predictor_module

    torch.set_num_threads(1)
    space = space_named(arguments.space)
    plan = Plan.for_space(space.name, per_group=arguments.per_layer,
                          held_out_per_group=arguments.held_out_per_layer)
    start = time.perf_counter()
    data = collect(space, plan, arguments.store or default_store(space.name),
                   scheduler=arguments.scheduler, workers=arguments.workers)
    labelled = time.perf_counter() - start
    parts = data.split(plan)
    print(f"nnaccel: {len(data):,} labelled dataflows ({labelled:.0f} s); "
          + ", ".join(f"{name} {len(part):,}" for name, part in parts.items()), flush=True)
    hyper = {"width": arguments.width, "depth": arguments.depth} if arguments.kind == "mlp" else {}
    predictor = predictor_module.new_predictor(space, arguments.kind, **hyper)

    def progress(epoch, loss, validation):
        held_out = "-" if validation is None else f"{validation:.5f}"     # none held out of tiny groups
        print(f"nnaccel: epoch {epoch:3d}  train {loss:.5f}  held-out dataflows {held_out}", flush=True)

    report = predictor_module.train(predictor, parts["train"], space, epochs=arguments.epochs,
                                    validation=parts["held_out_dataflows"], progress=progress)
    predictor.freeze()
    accuracy = {name: predictor_module.accuracy(predictor, part, space)
                for name, part in parts.items() if name != "train" and len(part)}
    print(f"\n{report.parameters:,} parameters, {report.samples:,} training samples, "
          f"{report.epochs} epochs in {report.seconds:.0f} s")
    print_accuracy(accuracy)
    document = {"kind": arguments.kind, "epochs": arguments.epochs,
                "train_seconds": report.seconds, "parameters": report.parameters,
                "samples": {name: len(part) for name, part in parts.items()},
                "history": report.history, "accuracy": accuracy}
    if arguments.out:
        predictor_module.save(predictor, arguments.out, extra=document)
        print(f"nnaccel: predictor written to {arguments.out}")
    if arguments.json:
        _write_json(arguments.json, document)
    return document


def print_accuracy(accuracy):
    print(f"{'held out':<20} {'samples':>8}  " + "  ".join(
        f"{m + ' MRE':>12} {m + ' <=5%':>12}" for m in ("latency", "energy", "edp")))
    for name, entry in accuracy.items():
        cells = "  ".join(f"{e:>12.2%} {w:>12.1%}" for e, w in
                          zip(entry["mean_relative_error"], entry["within_5_percent"]))
        print(f"{name:<20} {entry['samples']:>8,}  {cells}")
