"""What ``nnaccel dse dataflow`` and ``nnaccel dse predictor`` do (the CLI only registers them).

``dataflow``: DCP on one layer (``--layer``) or the DQN network (``--network dqn``) for an
objective; then random search, Optuna TPE and Optuna NSGA-II with the same number of cost-model
evaluations and at least the same wall time, and exhaustive search where the design space can
enumerate the layer. Prints DCP's best dataflow in words with its predicted and cost-model
cost, a table of every searcher's best at the same budget and at the same wall time, writes a
plot of the searches and, with ``--json``, the report.

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

from dse.dcp.dataset import Plan, collect, space_named
from dse.dcp.evaluator import OBJECTIVES
from dse.dcp.workloads import DEFAULT_HARDWARE, LAYERS, layer_by_name
from dse.shared.layer import LayerType, dqn_layers
from dse.shared.template import NUMBER_FORMAT_BITS, TemplateHardware
from models.shared.cache import cache_root

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
                             f"{', '.join(l.name for l in LAYERS)}")
    target.add_argument("--network", choices=["dqn"], help="search every layer of a network")
    parser.add_argument("--objective", choices=OBJECTIVES, default="latency",
                        help="what to minimise (default latency)")
    parser.add_argument("--space", choices=["template"], default="template",
                        help="design space (the RTL family joins later)")
    parser.add_argument("--pe", type=_array, default=(DEFAULT_HARDWARE.pe_y, DEFAULT_HARDWARE.pe_x),
                        metavar="YxX", help="template PE array (default 16x16)")
    parser.add_argument("--rf", type=int, default=DEFAULT_HARDWARE.rf_words,
                        help="register-file words per PE (default 64)")
    parser.add_argument("--style", choices=["WS", "OS", "RS"],
                        default=DEFAULT_HARDWARE.dataflow.value,
                        help="the template's dataflow style (default RS)")
    parser.add_argument("--format", choices=sorted(NUMBER_FORMAT_BITS),
                        default=DEFAULT_HARDWARE.number_format,
                        help=f"number format of the data (default {DEFAULT_HARDWARE.number_format})")
    parser.add_argument("--predictor", metavar="FILE",
                        help="predictor checkpoint (default: the shipped one)")
    parser.add_argument("--restarts", type=int, default=8,
                        help="gradient-descent starting points per search (default 8)")
    parser.add_argument("--steps", type=int, default=150,
                        help="gradient steps per starting point (default 150)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--baselines", nargs="*", choices=BASELINES, default=list(BASELINES),
                        help="baselines to run (default all)")
    parser.add_argument("--plot", metavar="FILE",
                        help="plot file (default dcp_<target>_<objective>.png)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")


def _hardware(arguments):
    rows, columns = arguments.pe
    return TemplateHardware(pe_y=rows, pe_x=columns, rf_words=arguments.rf,
                            dataflow=arguments.style, number_format=arguments.format)


def _layer_words(layer):
    if layer.type == LayerType.DENSE:
        return f"{layer.name}: dense {layer.c} -> {layer.k}"
    kind = "depthwise " if layer.type == LayerType.DEPTHWISE else ""
    return (f"{layer.name}: {kind}{layer.c}x{layer.y}x{layer.x} -> {layer.k}x{layer.out_y}x"
            f"{layer.out_x}, {layer.r}x{layer.s} filter, stride {layer.stride}")


def run_dataflow(arguments):
    """The ``nnaccel dse dataflow`` job; returns the report as a dict."""
    import torch

    from dse.dcp import predictor as predictor_module
    from dse.dcp.baselines import exhaustive_search, optuna_search, random_search
    from dse.dcp.search import dcp_search

    torch.set_num_threads(1)
    space = space_named(arguments.space)
    hardware = _hardware(arguments)
    layers = list(dqn_layers()) if arguments.network else [layer_by_name(arguments.layer or
                                                                         "CONV_2")]
    target = arguments.network or layers[0].name
    predictor = predictor_module.load(arguments.predictor)
    if predictor.space != space.name:
        raise ValueError(f"{arguments.predictor}: predictor is for the {predictor.space} space, "
                         f"not {space.name}")
    objective, unit = arguments.objective, UNITS[arguments.objective]
    print(f"nnaccel: DCP on {target} ({objective}), template {hardware.pe_y}x{hardware.pe_x} PEs, "
          f"RF {hardware.rf_words} words, {hardware.dataflow.value}, {hardware.number_format}, "
          f"GB {hardware.gb_kib} KiB, {hardware.dram_gbps:g} GB/s", flush=True)
    dcp = dcp_search(space, predictor, layers, hardware, objective, restarts=arguments.restarts,
                     steps=arguments.steps, seed=arguments.seed)
    results = [dcp]
    for name in arguments.baselines:
        common = dict(budget=dcp.evaluations, seconds=dcp.seconds, seed=arguments.seed)
        if name == "random":
            results.append(random_search(space, layers, hardware, objective, **common))
        else:
            results.append(optuna_search(space, layers, hardware, objective, sampler=name,
                                         **common))
    if len(layers) == 1:
        exhaustive = exhaustive_search(space, layers[0], hardware, objective, limit=1_000_000)
        if exhaustive is not None:
            results.append(exhaustive)

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
    plot = Path(arguments.plot or f"dcp_{target}_{objective}.png")
    _plot(results, plot, target, objective, unit)
    print(f"nnaccel: plot written to {plot}")
    report = {"target": target, "objective": objective, "unit": unit,
              "hardware": hardware.to_dict(), "space": space.name,
              "layers": [layer.to_dict() for layer in layers],
              "dcp": {"predicted": dcp.predicted, "cost_model": dcp.objective,
                      "dataflow": [space.describe(code) for code in dcp.codes],
                      "codes": [np.asarray(code).tolist() for code in dcp.codes]},
              "searchers": [_result_dict(result, dcp) for result in results]}
    if arguments.json:
        _write_json(arguments.json, report)
    return report


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

def default_store():
    return cache_root() / "dse" / "dcp_template.sqlite"


def add_predictor_arguments(parser):
    parser.add_argument("--space", choices=["template"], default="template",
                        help="design space to label (default template)")
    parser.add_argument("--per-layer", type=int, default=2000,
                        help="sampled dataflows per (training layer, hardware) (default 2000)")
    parser.add_argument("--held-out-per-layer", type=int, default=500,
                        help="held-out dataflows per layer, never trained on (default 500)")
    parser.add_argument("--kind", default="mlp", help="predictor architecture: mlp (default) or "
                                                      "transformer")
    parser.add_argument("--epochs", type=int, default=60, help="training epochs (default 60)")
    parser.add_argument("--store", metavar="FILE", help=f"result store (default {default_store()})")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help="an existing Dask scheduler (default: a local cluster)")
    parser.add_argument("--workers", type=int, help="local Dask workers (default: one per core)")
    parser.add_argument("--out", metavar="FILE", default="predictor_template.pt",
                        help="checkpoint to write")
    parser.add_argument("--json", metavar="FILE", help="also write the accuracy report as JSON")


def run_predictor(arguments):
    """The ``nnaccel dse predictor`` job: label, train, report accuracy, save."""
    import torch

    from dse.dcp import predictor as predictor_module

    torch.set_num_threads(1)
    space = space_named(arguments.space)
    plan = Plan(per_group=arguments.per_layer, held_out_per_group=arguments.held_out_per_layer)
    start = time.perf_counter()
    data = collect(space, plan, arguments.store or default_store(),
                   scheduler=arguments.scheduler, workers=arguments.workers)
    labelled = time.perf_counter() - start
    parts = data.split(plan)
    print(f"nnaccel: {len(data):,} labelled dataflows ({labelled:.0f} s); "
          + ", ".join(f"{name} {len(part):,}" for name, part in parts.items()), flush=True)
    predictor = predictor_module.new_predictor(space, arguments.kind)

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
