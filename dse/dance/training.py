"""Train and check DANCE's evaluator on a labelled hardware space; its Table 1; its checkpoints.

``train_evaluator(table, ...)``:
- splits the network space into training and held-out networks (``labels.split_networks``), leaving out any
  network that fits no point of the space (``fitting_split``);
- cost cases: random (network, point) pairs of the training networks (``cost_cases``), plus the
  training networks on their ``near_optimal_points`` best points for every cost function (where the co-search
  uses the cost network: the generator's answer is the optimum or a near-tie of it); held-out: random pairs of
  the held-out networks; with ``cost_targets="units"`` the cost network learns instead what each unit of the
  training networks adds on every point (``unit_cost.train_on_units``);
- generator cases: every training network with, per hardware parameter, the share of each value among its
  near-optimal points under ``cost`` (``near_optimal_shares``: the exhaustive search's costs, soft labels);
  held-out: every held-out network, against the exhaustive search's best point;
- trains the cost network (with forwarding: ``cost_members`` networks from consecutive seeds, read as one,
  ``unit_cost.CostEnsemble``), the one without forwarding, and the generator (each of the last two
  ``generator_members`` networks from consecutive seeds, read as one), and
  measures Table 1 on the held-out networks: per-parameter generator accuracy, the cost network's
  accuracy with the true best point as input (with forwarding) and without it, and end to end
  (the generator's point forwarded into the cost network, against the true cost on the true best
  point; also against the generated point's own true cost, and the end-to-end error split by how far the generated
  point's true cost is from the optimum's, ``end_to_end_error_sources``); also the generated point's true cost
  against the optimum (regret).

Two readings of a generator's accuracy: *exact match* (a parameter's generated value equals the exhaustive
search's; the patent's per-parameter figures, which it does not define further, can only be this or a tolerance
per parameter) and *within 1 %*: the optimum with that one parameter set to the generated value costs at most
1 % more than the optimum (per parameter), or the whole generated point does (``all``). Near-ties under EDAP
(two values of a parameter costing within a fraction of a percent) count against exact match, not against
within 1 %. A cost metric's accuracy is 1 - mean |y_hat / y - 1|; also the share of cases within 1 %.

Checkpoints (``save`` / ``load``): ``data/cost_<space>.pt`` holds the shared cost network's members (``load_cost``),
``data/generator_<space>_<cost>.pt`` the members of one cost function's generator, their sizes, the cost function
and the training run's report (Table 1 and the settings); ``data/refiner_<space>.pt``, where there is one, the cost
network's refiner (``cost_refiner``, trained after the cost network: ``train_evaluator --refiner``), which
``load`` puts over the cost network.
"""

import hashlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional

from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.best_point_cost import BestPointCostEstimator, LogBins, ensemble_costs
from nnaccel.dse.dance.cost_argmin import CostArgminGenerator
from nnaccel.dse.dance.cost_refiner import CostRefiner
from nnaccel.dse.dance.cost_functions import COST_FUNCTIONS, CostFunction
from nnaccel.dse.dance.hardware_space import METRICS, make_hardware_space
from nnaccel.dse.dance.labels import split_networks
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.settings import GENERATORS
from nnaccel.dse.dance.unit_cost import (CostEnsemble, UnitSumCostEstimator, train_on_units, unit_structure,
                                        unit_training_cases)

WITHIN = 0.01       # "within 1 %" of the optimum's cost, or of the true cost
# The generator's targets weigh a point by exp(-excess / GENERATOR_TEMPERATURE), excess its cost over the optimum's:
# a point 0.3 % dearer weighs 1 / e of the optimum (near_optimal_shares).
GENERATOR_TEMPERATURE = 0.003
# The network without forwarding learns its costs and, beside them, where the network's best point lies (its hardware
# head against the generator's targets, cross entropy summed over the parameters) at this weight: 0 is a network
# that learns the costs alone; 1 gained 0.3-1.8 points of latency and area on a validation split of both spaces'
# training networks, 0.1, 0.3, 3 and 10 less on the whole (docs/dance.md).
HARDWARE_TARGET_WEIGHT = 1.0

PATENT_TABLE_1 = {
    "generator": {"pe_x": 0.989, "pe_y": 0.983, "rf_words": 0.983, "dataflow": 0.988},
    "cost_without_forwarding": (0.937, 0.963, 0.928),
    "cost_with_forwarding": (0.996, 0.997, 0.999),
    "end_to_end": (0.983, 0.983, 0.992),
}


@dataclass
class EvaluatorSettings:
    cost_cases: int = 200_000
    validation_cases: int = 50_000
    cost_epochs: int = 20
    generator_epochs: int = 150
    near_optimal_points: int = 16      # per training network and cost function, among the cost cases
    seed: int = 0
    generator_members: int = 3         # generators (and networks without forwarding) per cost function, seeds seed..
    without_forwarding_epochs: int = 300       # the network without forwarding's (Table 1's first cost row)
    cost_members: int = 1              # cost networks with forwarding, seeds seed.., read as one (their geometric mean)
    # what the cost network learns from: "networks", the (network, point) cases' totals (the patent's), or "units",
    # what each unit of the training networks adds on every point (``unit_cost.train_on_units``)
    cost_targets: str = "networks"


@dataclass
class TrainedEvaluator:
    """One cost function's frozen evaluator: its generator (the trained ``ev.GeneratorEnsemble`` or the search over
    the cost network, ``CostArgminGenerator``) and the shared cost network (a ``UnitSumCostEstimator``, a
    ``CostEnsemble`` of them, or a ``CostRefiner`` over either)."""

    generator: ev.OneHotGenerator
    cost: torch.nn.Module
    cost_function: CostFunction
    report: dict = field(default_factory=dict)

    def evaluator(self):
        return ev.freeze(ev.Evaluator(self.generator, self.cost))


def cost_function_for(table, name, seed=0):
    return CostFunction(name, table.reference(np.random.default_rng(seed)))


def train_evaluators(table, settings, costs=COST_FUNCTIONS, *, progress=None, checkpoint_dir=None, cost=None):
    """Train the cost network once and a generator per cost function on ``table`` (a
    ``labels.LabelTable``); returns {cost name: TrainedEvaluator} with each one's Table 1. With ``checkpoint_dir``
    the cost network's training (the long part) keeps its state there after every epoch, in a file named by the
    space and ``settings`` (``training_state_path``), and a rerun with the same settings resumes it. A trained
    ``cost`` network (``load_cost``, trained with the same ``settings``) is kept instead: only the generators and
    the networks without forwarding are trained.

    A cost function's generator is ``settings.generator_members`` generators trained alike from the seeds
    ``settings.seed``, ``settings.seed + 1``, ... (``ev.GeneratorEnsemble``); the network without forwarding
    likewise, the geometric mean of its members' costs."""
    rng = np.random.default_rng(settings.seed)
    network_space, hardware_space = table.network_space, table.hardware_space
    all_networks = network_space.all_points()
    train, held_out, unfit = fitting_split(table, settings.seed)
    functions = {name: cost_function_for(table, name, settings.seed) for name in COST_FUNCTIONS}
    best_points = {name: table.best(np.arange(len(all_networks)), functions[name])[0] for name in COST_FUNCTIONS}

    # Cost cases: random pairs + the training networks on every cost function's near-optimal points.
    random_networks, random_points = feasible_pairs(table, train, settings.cost_cases, rng)
    count = settings.near_optimal_points
    pair_networks = np.concatenate([random_networks] + [np.repeat(train, count)] * len(COST_FUNCTIONS))
    pair_points = np.concatenate([random_points] + [table.best_few(train, functions[name], count).ravel()
                                                    for name in COST_FUNCTIONS])
    targets = table.costs(pair_networks, pair_points)
    fits = np.isfinite(targets).all(axis=1)      # a network may fit fewer than ``count`` points
    pair_networks, pair_points, targets = pair_networks[fits], pair_points[fits], targets[fits]
    trained_cases = len(pair_networks)      # what the cost network learned from: these, or unit cases
    structure = unit_structure(table.unit_ids, network_space)
    if cost is None:
        members = [_seeded(settings.seed + member, UnitSumCostEstimator, network_space.encoding_width,
                           hardware_space.encoding_width, *structure, np.log(targets).mean(axis=0))
                   for member in range(settings.cost_members)]
        for member, network in enumerate(members):
            seed = settings.seed + member
            checkpoint = checkpoint_dir and training_state_path(checkpoint_dir, hardware_space.name, settings, member)
            if settings.cost_targets == "units":
                trained_cases = train_on_units(network, table, train, epochs=settings.cost_epochs, seed=seed,
                                               progress=progress, checkpoint=checkpoint)
            else:
                ev.train_cost(network, table.features(pair_networks, pair_points), targets,
                              epochs=settings.cost_epochs, seed=seed, progress=progress, checkpoint=checkpoint)
        cost = members[0] if len(members) == 1 else CostEnsemble(members)
    elif settings.cost_targets == "units":     # a kept network: the cases it learned, counted
        trained_cases = len(unit_training_cases(table, train, structure[0])[1])
    ev.freeze(cost)
    sizes = {"cost_cases_train": int(trained_cases), "cost_targets": settings.cost_targets,
             "cost_cases_validation": int(settings.validation_cases),
             "generator_cases_train": int(len(train)), "generator_cases_validation": int(len(held_out)),
             "labelled_cost_cases": int(table.cost_cases), "networks_fitting_no_point": unfit}

    trained = {}
    train_encodings = network_space.encode(all_networks[train])
    without_inputs = without_forwarding_inputs(table, train)
    seeds = range(settings.seed, settings.seed + settings.generator_members)
    for name in costs:
        best = best_points[name]
        shares = near_optimal_shares(table, train, functions[name])
        members = [ev.train_generator(_seeded(seed, ev.HardwareGenerator, network_space.encoding_width,
                                              hardware_space.sizes),
                                      train_encodings, shares, epochs=settings.generator_epochs, seed=seed,
                                      progress=progress) for seed in seeds]
        without = without_forwarding_costs(
            train_without_forwarding(without_inputs[train], table.costs(train, best[train]), shares, seeds,
                                     epochs=settings.without_forwarding_epochs, progress=progress),
            without_inputs[held_out])
        evaluator = TrainedEvaluator(ev.freeze(ev.GeneratorEnsemble(members)), cost, functions[name])
        evaluator.report = measure(table, evaluator, without, held_out, best, rng, settings)
        evaluator.report["sizes"] = sizes
        evaluator.report["settings"] = vars(settings)
        trained[name] = evaluator
    return trained


def without_forwarding_inputs(table, train):
    """What the cost network without forwarding reads of every network of ``table``'s network space (rows of
    ``all_points()``): its one-hots, its layer sizes (``NetworkSpace.layer_sizes``) and, on a space where some
    network does not fit some point, its fit shares (``fit_shares``); sizes and shares standardised over the
    ``train`` networks (flat indices). The fit shares say what the network's sizes say only through thresholds (its
    weights and activations against the space's RAM depths), where the RTL family's best points jump."""
    points = table.network_space.all_points()
    fits = table.fits
    measures = table.network_space.layer_sizes(points)
    if not fits.all():
        measures = np.concatenate([measures, fit_shares(table.hardware_space, fits)], axis=1)
    measures = (measures - measures[train].mean(axis=0)) / np.maximum(measures[train].std(axis=0), 1e-9)
    return np.concatenate([table.network_space.encode(points), measures], axis=1)


def fit_shares(hardware_space, fits):
    """(N, sum of the parameters' value counts): per value of each hardware parameter, the share of the points with
    that value each network fits (``fits``, (N, points) bool). A property of the network in the space, not of a
    point: no hardware is forwarded."""
    points = hardware_space.all_points()
    shares = []
    for column, size in enumerate(hardware_space.sizes):
        has_value = np.eye(size)[points[:, column]]
        shares.append(fits @ has_value / has_value.sum(axis=0))
    return np.concatenate(shares, axis=1)


def train_without_forwarding(inputs, train_costs, train_shares, seeds, *, epochs, progress=None):
    """The cost network without forwarding (``best_point_cost.BestPointCostEstimator``), one member per seed,
    frozen: from each training network's ``inputs`` (rows of ``without_forwarding_inputs``) to ``train_costs``, its
    costs on its best point. Latency (given the true area) and energy are trained on the mean absolute relative
    error (``ev.mare``), the area on the cross entropy of its bins against the true area's (``LogBins.targets``),
    and, at ``HARDWARE_TARGET_WEIGHT``, the hardware head on the cross entropy against ``train_shares`` (per
    hardware parameter (networks, values): the generator's targets, ``near_optimal_shares``).
    ``without_forwarding_costs`` reads the members as one."""
    log_costs = np.log(train_costs)
    area_bins = LogBins.around(log_costs[:, 2])
    features = torch.as_tensor(inputs, dtype=torch.float32)
    targets = torch.as_tensor(train_costs[:, :2], dtype=torch.float32)
    log_areas = torch.as_tensor(log_costs[:, 2], dtype=torch.float32)
    area_targets = area_bins.targets(log_costs[:, 2])
    shares = [torch.as_tensor(share, dtype=torch.float32) for share in train_shares]

    def member(seed):
        network = _seeded(seed, BestPointCostEstimator, inputs.shape[1], log_costs.mean(axis=0), area_bins,
                          [share.shape[1] for share in shares])

        def loss(index, epoch):
            log_latency_energy, area_logits, hardware_logits = network.outputs(features[index], log_areas[index])
            latency_energy = ev.cost_loss(epoch, lambda: log_latency_energy, lambda: torch.exp(log_latency_energy),
                                          targets[index], ev.mare)
            area = functional.cross_entropy(area_logits, area_targets[index])
            return latency_energy + area + HARDWARE_TARGET_WEIGHT * sum(
                functional.cross_entropy(parameter, share[index]) for parameter, share in zip(hardware_logits, shares))

        return ev.freeze(ev.fit(network, len(features), loss, epochs=epochs, batch=256, lr=2e-3, seed=seed,
                                progress=progress))

    return [member(seed) for seed in seeds]


def without_forwarding_costs(members, inputs):
    """The costs the network without forwarding (``train_without_forwarding``'s members) gives networks of
    ``inputs``, its members read as one (``best_point_cost.ensemble_costs``)."""
    return ev.predict_costs(lambda features: ensemble_costs(members, features), inputs)


def fitting_split(table, seed):
    """``split_networks``' training and held-out networks (flat indices) less those that fit no point of the space,
    and how many fit none: on a small board's space (``rtl-stream-1k``) some do, and such a network has no optimum
    to learn or to be measured against."""
    fits = table.fits.any(axis=1)
    train, held_out = split_networks(len(fits), seed)
    return train[fits[train]], held_out[fits[held_out]], int((~fits).sum())


def _seeded(seed, network_class, *arguments):
    """``network_class(*arguments)`` with its initial weights drawn after ``torch.manual_seed(seed)``: a member's
    training is the same whatever ran before it in the process."""
    torch.manual_seed(seed)
    return network_class(*arguments)


def near_optimal_shares(table, networks, cost_function, temperature=GENERATOR_TEMPERATURE):
    """The generator's targets: per hardware parameter, (networks, choices) the share of each value among the
    networks' near-optimal points (``LabelTable.near_optimal_weights``): near-ties share the target instead of
    the exhaustive search's pick among them deciding it."""
    weights = table.near_optimal_weights(networks, cost_function, temperature)
    points = table.hardware_space.all_points()
    return [weights @ np.eye(size)[points[:, column]] for column, size in enumerate(table.hardware_space.sizes)]


def training_state_path(directory, space_name, settings, member=0):
    """The training state of the cost network's ``member`` in ``directory`` for ``space_name`` and ``settings``
    (their digest in the name, with a later member's seed and without the member count: a run with other settings
    starts afresh instead of resuming a different training, and a run with more members resumes the first ones)."""
    shaping = dict(vars(settings), **({"member_seed": settings.seed + member} if member else {}))
    del shaping["cost_members"], shaping["without_forwarding_epochs"]    # neither shapes a member's training
    digest = hashlib.sha256(repr((space_name, UnitSumCostEstimator.__name__,
                                  sorted(shaping.items()))).encode()).hexdigest()[:12]
    return Path(directory) / f"cost_{space_name}_training_{digest}.pt"


def feasible_pairs(table, networks, count, rng):
    """``count`` random (network of ``networks``, point) pairs, flat indices, on which the network fits: pairs
    drawn at random, those that do not fit drawn again."""
    pair_networks = rng.choice(networks, count)
    pair_points = rng.integers(len(table.hardware_space), size=count)
    while True:
        unfit = np.flatnonzero(~np.isfinite(table.costs(pair_networks, pair_points)).all(axis=1))
        if not len(unfit):
            return pair_networks, pair_points
        pair_networks[unfit] = rng.choice(networks, len(unfit))
        pair_points[unfit] = rng.integers(len(table.hardware_space), size=len(unfit))


def measure(table, trained, without, held_out, best, rng, settings):
    """Table 1 on the held-out networks (see the module docstring); ``without``: the costs the network without
    forwarding gives them (``train_without_forwarding``), or None."""
    network_space, hardware_space = table.network_space, table.hardware_space
    encodings = network_space.encode(network_space.all_points()[held_out])
    true_points = hardware_space.all_points()[best[held_out]]
    predicted_points = ev.predict_points(trained.generator, encodings)
    generator = {name: float((predicted_points[:, column] == true_points[:, column]).mean())
                 for column, name in enumerate(hardware_space.names)}
    generator["all"] = float((predicted_points == true_points).all(axis=1).mean())
    function = trained.cost_function
    true_costs = table.costs(held_out, best[held_out])

    def excess(points):
        """Each held-out network's cost on ``points`` over its optimum's (inf where it does not fit)."""
        return function(*table.costs(held_out, hardware_space.point_index(points)).T) / function(*true_costs.T) - 1

    within = {}
    for column, name in enumerate(hardware_space.names):
        one_changed = true_points.copy()
        one_changed[:, column] = predicted_points[:, column]
        within[name] = float((excess(one_changed) <= WITHIN).mean())
    regret = excess(predicted_points)
    within["all"] = float((regret <= WITHIN).mean())

    pair_networks, pair_points = feasible_pairs(table, held_out, settings.validation_cases, rng)
    random_pairs = ev.cost_accuracy(ev.predict_costs(trained.cost, table.features(pair_networks, pair_points)),
                                    table.costs(pair_networks, pair_points))
    predicted_on_optimum = ev.predict_costs(trained.cost, table.features(held_out, best[held_out]))
    with_forwarding = ev.cost_accuracy(predicted_on_optimum, true_costs)
    seen = unit_coverage(table, held_out)
    coverage = {"networks": int(len(held_out)), "every_unit_seen": int(seen.sum())}
    if not seen.all():
        coverage["with_forwarding_some_unit_unseen"] = _lists(ev.cost_accuracy(predicted_on_optimum[~seen],
                                                                               true_costs[~seen]))
    generated_index = hardware_space.point_index(predicted_points)
    predicted_costs = ev.predict_costs(trained.cost, table.features(held_out, generated_index))
    end_to_end = ev.cost_accuracy(predicted_costs, true_costs)
    macs = np.array([network_space.network(indices).macs for indices in network_space.all_points()[held_out]])
    optimum = function(*true_costs.T)
    ranking = {"evaluator": rank_correlation(function(*predicted_costs.T), optimum),
               "macs": rank_correlation(macs, optimum)}
    fits = np.isfinite(regret)      # a generated point the network does not fit has no cost
    on_generated = ev.cost_accuracy(predicted_costs[fits], table.costs(held_out, generated_index)[fits])
    sources = end_to_end_error_sources(np.abs(predicted_costs / true_costs - 1), regret)
    regret = regret[fits]
    seconds_generator = ev.time_generator(trained.generator, encodings[0])
    report = {"generator_accuracy": generator, "generator_within_1_percent": within,
              "cost_random_pairs": _lists(random_pairs), "cost_with_forwarding": _lists(with_forwarding),
              "end_to_end": _lists(end_to_end), "end_to_end_on_generated_point": _lists(on_generated),
              "end_to_end_error_sources": sources,
            "generated_point_regret": {"mean": float(regret.mean()), "median": float(np.median(regret)),
                                       "optimal_fraction": float((regret <= 1e-12).mean()),
                                       "unfit_fraction": float(1 - fits.mean())},
              "optimum_rank_correlation": ranking, "generator_inference_s": seconds_generator,
              "held_out_unit_coverage": coverage}
    if without is not None:
        report["cost_without_forwarding"] = _lists(ev.cost_accuracy(without, true_costs))
    return report


# The end-to-end error by the generated point's true cost over the optimum's (upper bounds, relative).
REGRET_BANDS = (("optimum", 1e-12), ("within_0.1_percent", 1e-3), ("within_1_percent", WITHIN),
                ("beyond_1_percent", np.inf))


def end_to_end_error_sources(error, regret):
    """Per band of the generated point's ``regret`` (its true cost over the optimum's; inf: the network does not fit
    it): the held-out networks in it and their share of the summed end-to-end ``error`` (N, metrics)."""
    fits, lower, bands = np.isfinite(regret), -np.inf, {}
    for band, upper in REGRET_BANDS:
        bands[band] = fits & (regret > lower) & (regret <= upper)
        lower = upper
    bands["unfit"] = ~fits
    return {band: {"networks": int(inside.sum()),
                   "error_share": [float(v) for v in error[inside].sum(axis=0) / error.sum(axis=0)]}
            for band, inside in bands.items()}


def unit_coverage(table, held_out):
    """Per held-out network (flat indices): whether every one of its cost units (the template's layers, the RTL
    family's layer contexts) is also a unit of some training network (the other networks)."""
    train_units = np.delete(table.unit_ids, held_out, axis=0)
    units = table.unit_ids[held_out]
    return (np.isin(units, train_units) | (units < 0)).all(axis=1)


def remeasure(table, trained):
    """Table 1 of a loaded evaluator (``load``) on ``table`` as labelled now, on the held-out networks of its
    training run. The cost network without forwarding is not kept in the checkpoints: its figures stay the
    training run's."""
    settings = EvaluatorSettings(**trained.report["settings"])
    _, held_out, _ = fitting_split(table, settings.seed)
    best = table.best(np.arange(len(table.unit_ids)), trained.cost_function)[0]
    report = measure(table, trained, None, held_out, best, np.random.default_rng(settings.seed), settings)
    report["cost_without_forwarding"] = trained.report["cost_without_forwarding"]
    return report


def _average_ranks(values):
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(len(values))
    _, inverse = np.unique(values, return_inverse=True)
    return (np.bincount(inverse, weights=ranks) / np.bincount(inverse))[inverse]


def rank_correlation(first, second):
    """Spearman's rank correlation of two sequences (ties at their average rank)."""
    return float(np.corrcoef(_average_ranks(np.asarray(first)), _average_ranks(np.asarray(second)))[0, 1])


def _lists(metrics):
    return {key: [float(v) for v in value] for key, value in metrics.items()}


def _errors(metrics, column):
    """A cost metric's mean relative error (signed) and, where measured, its share of cases within 1 %."""
    text = f"MRE {100 * metrics['mean_relative_error'][column]:+.2f}%"
    if "within_1_percent" in metrics:
        text += f", {100 * metrics['within_1_percent'][column]:.1f}% within 1 %"
    return text


def format_table_1(report):
    """Table 1 beside the patent's, as text lines."""
    lines = ["evaluator on held-out networks (this run | patent Table 1)"]
    gen = report["generator_accuracy"]
    patent = PATENT_TABLE_1["generator"]
    names = [name for name in gen if name != "all"]
    lines.append("hardware generation   " + "  ".join(
        f"{name} {100 * gen[name]:.1f}%" + (f" | {100 * patent[name]:.1f}%" if name in patent else "")
        for name in names) + f"  (all {len(names)} right: {100 * gen['all']:.1f}%)")
    within = report.get("generator_within_1_percent")
    if within:
        lines.append("  within 1 % of the optimum's cost   " + "  ".join(
            f"{name} {100 * within[name]:.1f}%" for name in names) + f"  (the whole point: {100 * within['all']:.1f}%)")
    for key, title in (("cost_without_forwarding", "cost w/o forwarding  "),
                       ("cost_with_forwarding", "cost w/ forwarding   "), ("end_to_end", "end to end           ")):
        ours, theirs = report[key], PATENT_TABLE_1[key]
        lines.append(title + "  ".join(
            f"{metric.split('_')[0]} {100 * ours['accuracy'][i]:.1f}% | {100 * theirs[i]:.1f}% "
            f"({_errors(ours, i)})" for i, metric in enumerate(METRICS)))
    ours = report.get("end_to_end_on_generated_point")
    if ours:
        lines.append("end to end, against the generated point's own true cost (where the network fits it)   " + "  ".join(
            f"{metric.split('_')[0]} {100 * ours['accuracy'][i]:.2f}%" for i, metric in enumerate(METRICS)))
    sources = report.get("end_to_end_error_sources")
    if sources:
        lines.append("end-to-end error by the generated point's true cost over the optimum's: " + "; ".join(
            f"{band} {source['networks']} networks, " + "/".join(f"{100 * share:.0f}" for share in source["error_share"])
            + " % of the latency/energy/area error" for band, source in sources.items()))
    ours = report["cost_random_pairs"]
    lines.append("cost, random pairs   " + "  ".join(
        f"{metric.split('_')[0]} {100 * ours['accuracy'][i]:.1f}% ({_errors(ours, i)})"
        for i, metric in enumerate(METRICS)))
    regret = report["generated_point_regret"]
    lines.append(f"generated point's true cost over the optimum: mean +{100 * regret['mean']:.2f}%, median "
                 f"+{100 * regret['median']:.2f}%, optimal for {100 * regret['optimal_fraction']:.1f}% of networks"
                 + (f"; the network does not fit the generated point for {100 * regret['unfit_fraction']:.1f}%"
                    if regret.get("unfit_fraction") else ""))
    coverage = report.get("held_out_unit_coverage")
    if coverage:
        line = (f"held-out networks whose every cost unit also occurs in a training network: "
                f"{coverage['every_unit_seen']} of {coverage['networks']}")
        unseen = coverage.get("with_forwarding_some_unit_unseen")
        if unseen:
            line += "; cost w/ forwarding on the others " + "  ".join(
                f"{metric.split('_')[0]} {100 * unseen['accuracy'][i]:.1f}%" for i, metric in enumerate(METRICS))
        lines.append(line)
    ranking = report.get("optimum_rank_correlation")
    if ranking:
        lines.append(f"ranking the held-out networks by their optimum's cost (Spearman): the evaluator end to end "
                     f"{ranking['evaluator']:.4f}, their MACs {ranking['macs']:.4f}")
    return lines


# ---- checkpoints --------------------------------------------------------------------------------

def data_path(name):
    return Path(str(resources.files("nnaccel.dse.dance").joinpath("data", name)))


def _checkpoint(name, directory):
    return data_path(name) if directory is None else Path(directory) / name


def cost_checkpoint(space_name, directory=None):
    """The shared cost network's checkpoint: shipped, or in ``directory``."""
    return _checkpoint(f"cost_{space_name}.pt", directory)


def refiner_checkpoint(space_name, directory=None):
    """The cost network's refiner's checkpoint (``cost_refiner``): shipped, or in ``directory``."""
    return _checkpoint(f"refiner_{space_name}.pt", directory)


def generator_checkpoint(space_name, cost, directory=None):
    """``cost``'s generator checkpoint: shipped, or in ``directory``."""
    return _checkpoint(f"generator_{space_name}_{cost}.pt", directory)


def checkpoint_digest(space_name, cost):
    """SHA-256 (16 hex digits) of the shipped cost network (and its refiner) and ``cost``'s generator: what a
    co-search result was searched with (part of its result store key, so that a retrained evaluator does not reuse
    stale results)."""
    digest = hashlib.sha256()
    for path in (cost_checkpoint(space_name), generator_checkpoint(space_name, cost)):
        digest.update(path.read_bytes())
    if refiner_checkpoint(space_name).exists():
        digest.update(refiner_checkpoint(space_name).read_bytes())
    return digest.hexdigest()[:16]


def save(trained, space_name, *, directory=None):
    """Write the shared cost network's members and every cost function's generator (and its report)."""
    cost = next(iter(trained.values())).cost
    members = cost.members if isinstance(cost, CostEnsemble) else [cost]
    cost_path = cost_checkpoint(space_name, directory)
    cost_path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"space": space_name, "network_width": cost.network_width, "hardware_width": cost.hardware_width,
                "units": cost.units, "width": cost.width, "members": [member.state_dict() for member in members]},
               cost_path)
    for name, evaluator in trained.items():
        path = generator_checkpoint(space_name, name, directory)
        torch.save({"space": space_name, "inputs": evaluator.generator.inputs,
                    "sizes": list(evaluator.generator.sizes),
                    "members": [member.state_dict() for member in evaluator.generator.members],
                    "cost_function": {"name": name, "reference": list(evaluator.cost_function.reference)},
                    "report": evaluator.report}, path)


def _required(path, space_name):
    if not path.exists():
        raise FileNotFoundError(f"{path}: no trained evaluator; train one with "
                                f"`python -m nnaccel.dse.dance.train_evaluator --space {space_name}`")
    return torch.load(path, weights_only=True)


def load_cost(space_name, *, directory=None):
    """The frozen shared cost network of ``space_name`` from its checkpoint: its one member, or a ``CostEnsemble``
    of them (a checkpoint written before members has its one network's ``state``)."""
    cost_data = _required(cost_checkpoint(space_name, directory), space_name)
    masks = np.zeros((cost_data["units"], cost_data["network_width"]))
    members = []
    for state in cost_data["members"] if "members" in cost_data else [cost_data["state"]]:
        members.append(UnitSumCostEstimator(cost_data["network_width"], cost_data["hardware_width"], masks, masks,
                                            np.zeros(3), width=cost_data["width"]))
        members[-1].load_state_dict(state)
    return ev.freeze(members[0] if len(members) == 1 else CostEnsemble(members))


def save_refiner(refiner, space_name, *, directory=None):
    """Write the cost network's refiner (``cost_refiner.CostRefiner``, without its base network)."""
    path = refiner_checkpoint(space_name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"space": space_name, **refiner.state()}, path)


def load(space_name, cost, *, directory=None, generator="mlp", hardware_space=None):
    """The frozen ``TrainedEvaluator`` of ``cost`` from its checkpoints; its generator the trained one (``mlp``) or
    the search over the cost network (``argmin``, ``cost_argmin.CostArgminGenerator``; the cost function and the
    report still come from the generator's checkpoint) on ``hardware_space`` (default a new one of ``space_name``;
    pass one that has its units' costs, labelled or computed, to check fits without computing them again). Where
    the cost network has a refiner (``refiner_checkpoint``), the evaluator's cost network is the refined one."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {', '.join(GENERATORS)}, not {generator!r}")
    cost_network = load_cost(space_name, directory=directory)
    refiner_path = refiner_checkpoint(space_name, directory)
    if refiner_path.exists():
        try:
            cost_network = ev.freeze(CostRefiner.from_state(cost_network, torch.load(refiner_path, weights_only=True)))
        except ValueError as fault:
            raise ValueError(f"{refiner_path}: {fault}") from None
    data = _required(generator_checkpoint(space_name, cost, directory), space_name)
    function = CostFunction(data["cost_function"]["name"], tuple(data["cost_function"]["reference"]))
    if generator == "argmin":
        if hardware_space is None:
            hardware_space = make_hardware_space(space_name)
        chosen = CostArgminGenerator(cost_network, hardware_space, function, NETWORK_SPACE)
    else:
        members = [ev.HardwareGenerator(data["inputs"], data["sizes"]) for _ in data["members"]]
        for member, state in zip(members, data["members"]):
            member.load_state_dict(state)
        chosen = ev.GeneratorEnsemble(members)
    return TrainedEvaluator(ev.freeze(chosen), cost_network, function, data["report"])
