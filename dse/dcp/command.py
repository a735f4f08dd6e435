"""What ``nnaccel dse dataflow`` and ``nnaccel dse predictor`` do (the CLI only registers them).

``dataflow``: DCP on one layer (``--layer``) or the DQN network (``--network dqn``) for an
objective; then random search, Optuna TPE and Optuna NSGA-II with the same number of cost-model
evaluations and at least the same wall time, and exhaustive search where the design space can
enumerate the layer (a baseline stops early after three trials per DCP evaluation, where its
trials keep landing on dataflows already evaluated, or after ten times DCP's wall time). Prints DCP's best dataflow in words with its predicted and cost-model
cost, a table of every searcher's best at the same budget and at the same wall time, writes a
plot of the searches and, with ``--json``, the report.

On the RTL family (``--space rtl``) it also prints the best mapping over every mapping the hardware
runs (any number of segments, ``dse.dcp.rtl_space.mapping_table``) for latency and energy, and with
``--simulate`` compiles DCP's answer and runs it on the simulated accelerator
(``dse.shared.rtl_validate.validate_case``): outputs against the golden model bit for bit, the
simulated cycles against the cost model's.

``predictor``: the labelling sweep (Dask, result store), training, the accuracy on the held-out
dataflows, layers and hardware, and the checkpoint.

PyTorch and Optuna (the ``dse`` extra) are imported when a job runs, so the CLI starts without
them.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np

from nnaccel.dse.dcp.dataset import Plan, collect, space_named
from nnaccel.dse.dcp.evaluator import OBJECTIVES
from nnaccel.dse.dcp.workloads import DEFAULT_HARDWARE, LAYERS, RTL_LAYERS, layer_by_name
from nnaccel.dse.shared.layer import LayerType, dqn_layers
from nnaccel.dse.shared.rtl_family import FORMATS as RTL_FORMATS
from nnaccel.dse.shared.template import NUMBER_FORMAT_BITS, TemplateHardware
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import float_format
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


def add_dataflow_arguments(parser):
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--layer", default=None,
                        help=f"layer to search (default CONV_2); one of "
                             f"{', '.join(dict.fromkeys(l.name for l in (*LAYERS, *RTL_LAYERS)))}")
    target.add_argument("--network", choices=["dqn"], help="search every layer of a network")
    parser.add_argument("--objective", choices=OBJECTIVES, default="latency",
                        help="what to minimise (default latency)")
    parser.add_argument("--space", choices=["template", "rtl"], default="template",
                        help="design space: the seeds' template or nnaccel's RTL family (the DQN "
                             "accelerator) (default template)")
    parser.add_argument("--pe", type=_array, default=(DEFAULT_HARDWARE.pe_y, DEFAULT_HARDWARE.pe_x),
                        metavar="YxX", help="template PE array, or the RTL family's modules x lanes "
                                            "(default 16x16)")
    parser.add_argument("--rf", type=int, default=DEFAULT_HARDWARE.rf_words,
                        help="register-file words per PE (default 64)")
    parser.add_argument("--style", choices=["WS", "OS", "RS"],
                        default=DEFAULT_HARDWARE.dataflow.value,
                        help="the template's dataflow style (default RS)")
    parser.add_argument("--format", choices=[*sorted(NUMBER_FORMAT_BITS), *RTL_FORMATS],
                        help=f"number format of the data (default {DEFAULT_HARDWARE.number_format} "
                             f"on the template, binary32 on the RTL family)")
    parser.add_argument("--simulate", action="store_true",
                        help="RTL family: compile DCP's answer and run it on the simulated "
                             "accelerator (outputs against the golden model, cycles against the "
                             "cost model)")
    parser.add_argument("--predictor", metavar="FILE",
                        help="predictor checkpoint (default: the shipped one)")
    parser.add_argument("--restarts", type=int, default=8,
                        help="gradient-descent starting points per search (default 8)")
    parser.add_argument("--steps", type=int, default=150,
                        help="gradient steps per starting point (default 150)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--start", choices=["random", "default"], default="random",
                        help="DCP's starting points: all random (default), or the compiler's "
                             "default mapping as the first (RTL family)")
    parser.add_argument("--baselines", nargs="*", choices=BASELINES, default=list(BASELINES),
                        help="baselines to run (default all)")
    parser.add_argument("--plot", metavar="FILE",
                        help="plot file (default dcp_<target>_<objective>.png)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")


def _hardware(arguments):
    rows, columns = arguments.pe
    if arguments.space == "rtl":
        fmt = arguments.format or "binary32"
        if fmt not in RTL_FORMATS:
            raise InputError(f"--format {fmt}: the RTL family's formats are "
                             f"{', '.join(RTL_FORMATS)}")
        try:
            return DqnConfig(modules=rows, lanes=columns, fmt=float_format(fmt))
        except ValueError as error:
            raise InputError(f"--pe {rows}x{columns}: {error}") from None
    fmt = arguments.format or DEFAULT_HARDWARE.number_format
    if fmt not in NUMBER_FORMAT_BITS:
        raise InputError(f"--format {fmt}: the template's formats are "
                         f"{', '.join(sorted(NUMBER_FORMAT_BITS))}")
    return TemplateHardware(pe_y=rows, pe_x=columns, rf_words=arguments.rf,
                            dataflow=arguments.style, number_format=fmt)


def _hardware_words(space, hardware):
    if space.name == "rtl":
        return (f"RTL {hardware.modules} modules x {hardware.lanes} lanes, {hardware.fmt.name}, "
                f"float-unit latencies {hardware.multiplier_latency}/{hardware.adder_latency}, "
                f"{hardware.max_layers} descriptors, weight RAM {hardware.weight_depth} words")
    return (f"template {hardware.pe_y}x{hardware.pe_x} PEs, RF {hardware.rf_words} words, "
            f"{hardware.dataflow.value}, {hardware.number_format}, GB {hardware.gb_kib} KiB, "
            f"{hardware.dram_gbps:g} GB/s")


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
    hardware = _hardware(arguments)
    if arguments.simulate and space.name != "rtl":
        raise InputError("--simulate runs the RTL family's answers: use it with --space rtl")
    if arguments.start == "default" and space.name != "rtl":
        raise InputError("--start default starts from the compiler's mapping: use it with "
                         "--space rtl")
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
    print(f"nnaccel: DCP on {target} ({objective}), {_hardware_words(space, hardware)}",
          flush=True)
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
    best_any = _best_any_mapping(space, layers, hardware, objective)

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
    plot = Path(arguments.plot or f"dcp_{target}_{objective}.png")
    _plot(results, plot, target, objective, unit)
    print(f"nnaccel: plot written to {plot}")
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


def _best_any_mapping(space, layers, hardware, objective):
    """The RTL family's best mapping over any number of segments (latency or energy), or None."""
    if space.name != "rtl" or objective == "edp":
        return None
    from nnaccel.dse.dcp.rtl_space import best_network_mapping

    start = time.perf_counter()
    cost, mappings = best_network_mapping(layers, hardware, objective)
    return {"best": cost, "mappings": [mapping.describe() for mapping in mappings],
            "seconds": time.perf_counter() - start}


def _simulated_network(layers):
    """The RTL network the searched layers run in: the DQN when they are DQN layers (the others
    with the compiler's mapping), else the layer alone."""
    from nnaccel.dse.dcp.rtl_space import rtl_network
    from nnaccel.models.dqn.network import dqn_layers as rtl_dqn_layers

    if all(layer in dqn_layers() for layer in layers):
        return rtl_dqn_layers(18), [dqn_layers().index(layer) for layer in layers]
    network, index = rtl_network(layers[0])
    return network, [index]


def _simulate(space, layers, hardware, dcp):
    """Compile DCP's answer into its network, run it on the simulator, compare (see the module
    docstring); prints and returns the comparison."""
    from nnaccel.dse.shared.rtl_family import config_to_json, network_to_json
    from nnaccel.dse.shared.rtl_validate import code_digest, validate_case
    from nnaccel.models.dqn.mapping import DqnMapping
    from nnaccel.models.dqn.plan import default_mapping, layer_shapes

    network, indices = _simulated_network(layers)
    mapping = list(default_mapping(hardware, layer_shapes(hardware, network)).layers)
    for index, layer, code in zip(indices, layers, dcp.codes):
        mapping[index] = space.mapping(code, layer, hardware)
    mapping = DqnMapping(tuple(mapping))
    case = {"kind": "random", "config": config_to_json(hardware),
            "network": network_to_json(network), "mapping": mapping.to_json(),
            "weights_seed": 1, "inputs_seed": 2, "states": 1, "code": code_digest()}
    print(f"\nnnaccel: simulating {' | '.join(l.name for l in network)} with {mapping.describe()} "
          f"on {hardware.module_name} ...", flush=True)
    result = validate_case(case)
    names = {network[index].name for index in indices}
    searched = [row for name, row in zip(result["passes"], result["measured"])
                if name.split(" ")[0] in names]
    simulated = sum(row[0] for row in searched)
    model = sum(entry["latency"] for entry in dcp.per_layer)
    print(f"  simulated: {', '.join(result['passes'])}; {'bit-exact' if result['bit_exact'] else 'MISMATCH: ' + '; '.join(result['mismatches'])} "
          f"against the golden model; every pass's counters "
          f"{'equal' if result['counters_exact'] else 'DIFFER from'} the prediction")
    print(f"  {' + '.join(sorted(names))}: simulated {simulated:,} cycles, cost model {model:,.0f} "
          f"cycles ({'equal' if simulated == model else 'DIFFERENT'}); whole network TOTAL_CYCLES "
          f"{result['measured_cycles'][0]:,}, cost model {result['model_cycles']:,}")
    return {"network_mapping": mapping.to_json(), "searched_layers": sorted(names),
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


def add_predictor_arguments(parser):
    parser.add_argument("--space", choices=["template", "rtl"], default="template",
                        help="design space to label (default template)")
    parser.add_argument("--per-layer", type=int, default=2000,
                        help="sampled dataflows per (training layer, hardware) (default 2000)")
    parser.add_argument("--held-out-per-layer", type=int, default=500,
                        help="held-out dataflows per layer, never trained on (default 500)")
    parser.add_argument("--kind", default="mlp", help="predictor architecture: mlp (default) or "
                                                      "transformer")
    parser.add_argument("--epochs", type=int, default=60, help="training epochs (default 60)")
    parser.add_argument("--store", metavar="FILE",
                        help=f"result store (default {default_store('<space>')})")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="an existing Dask scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, help="local Dask workers (default: one per core)")
    parser.add_argument("--width", type=int, default=256,
                        help="the MLP's width (default 256)")
    parser.add_argument("--depth", type=int, default=3,
                        help="the MLP's residual blocks (default 3)")
    parser.add_argument("--out", metavar="FILE",
                        help="checkpoint to write (default predictor_<space>.pt)")
    parser.add_argument("--json", metavar="FILE", help="also write the accuracy report as JSON")


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
        print(f"nnaccel: epoch {epoch:3d}  train {loss:.5f}  held-out dataflows {validation:.5f}",
              flush=True)

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
    out = arguments.out or f"predictor_{space.name}.pt"
    predictor_module.save(predictor, out, extra=document)
    print(f"nnaccel: predictor written to {out}")
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
