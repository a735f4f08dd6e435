"""The searchers DCP is compared with, on the same problems and the same ``Evaluator``:

- ``random_search``: legal dataflows drawn by the design space's sampler, one per layer per
  trial;
- ``optuna_search``: Optuna's TPE sampler or its genetic NSGA-II sampler over the relaxed code
  (every slot score in [0, N - 1] and log2 size in [0, ``DataflowSpace.log2_limits``] a float
  parameter), each
  trial decoded to the nearest legal dataflow by the same decoder DCP uses;
- ``exhaustive_search``: every cost-distinct legal dataflow of one layer, where the design space
  can enumerate them within a limit.

The first two run until they have used at least ``budget`` distinct cost-model evaluations and
at least ``seconds`` of wall time, so one run gives "best at the same budget" and "best at the
same wall time" (``SearchResult.best_within``). ``max_seconds`` caps a run's wall time and
``max_trials`` stops a run whose trials keep
landing on dataflows already evaluated.
"""

import math

import numpy as np
import optuna

from nnaccel.dse.dcp.evaluator import Evaluator, objective_value
from nnaccel.sim.progress import counting


def _running(evaluator, budget, seconds, trials, max_trials, max_seconds):
    if trials >= max_trials or evaluator.elapsed() >= max_seconds:
        return False
    return evaluator.evaluations < (budget or 0) or evaluator.elapsed() < (seconds or 0)


def random_search(space, layers, hardware, objective, *, budget=None, seconds=None, seed=0,
                  max_trials=100_000, max_seconds=math.inf, progress=True):
    evaluator = Evaluator(space, layers, hardware, objective)
    trials = 0
    with counting("random search: trials", enabled=progress) as bar:
        while _running(evaluator, budget, seconds, trials, max_trials, max_seconds):
            evaluator([space.sample_codes(layer, hardware, 1, seed=seed * 1_000_003 + trials)[0]
                       for layer in layers])
            trials += 1
            bar.update()
    return evaluator.result("random")


SAMPLERS = ("tpe", "nsga2")


def optuna_sampler(name, seed, population):
    """Optuna's TPE (``"tpe"``) or NSGA-II (``"nsga2"``) sampler, seeded."""
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=population)
    raise ValueError(f"sampler must be one of {', '.join(SAMPLERS)}, not {name!r}")


def optuna_search(space, layers, hardware, objective, *, sampler, budget=None, seconds=None,
                  seed=0, population=20, max_trials=100_000, max_seconds=math.inf,
                  progress=True):
    """Optuna's ``sampler`` (``tpe`` or ``nsga2``) minimising the log objective."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    evaluator = Evaluator(space, layers, hardware, objective)
    study = optuna.create_study(direction="minimize", sampler=optuna_sampler(sampler, seed, population))
    levels, dims = len(space.levels), len(space.dims)

    def trial_objective(trial):
        codes = []
        for index, layer in enumerate(layers):
            relaxed = np.empty((levels, dims, 2))
            limits = space.log2_limits(layer, hardware)
            for level in range(levels):
                for dim in range(dims):
                    name = f"{index}.{space.levels[level]}.{space.dims[dim]}"
                    relaxed[level, dim, 0] = trial.suggest_float(f"{name}.slot", 0.0, dims - 1.0)
                    relaxed[level, dim, 1] = (trial.suggest_float(f"{name}.log2", 0.0,
                                                                  float(limits[level, dim]))
                                              if limits[level, dim] > 0 else 0.0)
            codes.append(space.nearest(relaxed, layer, hardware))
        return math.log(evaluator(codes))

    trials = 0
    label = {"tpe": "TPE", "nsga2": "NSGA-II"}[sampler]
    with counting(f"Optuna {label}: trials", enabled=progress) as bar:
        while _running(evaluator, budget, seconds, trials, max_trials, max_seconds):
            study.optimize(trial_objective, n_trials=1)
            trials += 1
            bar.update()
    return evaluator.result(label)


def exhaustive_search(space, layer, hardware, objective, *, limit=2_000_000, progress=True):
    """The best dataflow of one layer over every cost-distinct legal dataflow, or None when the
    design space has more than ``limit`` of them."""
    chunks = space.enumerate_codes(layer, hardware, limit=limit)
    if chunks is None:
        return None
    evaluator = Evaluator(space, [layer], hardware, objective)
    with counting("exhaustive search: chunks of dataflows", enabled=progress) as bar:
        for chunk in chunks:
            costs = space.evaluate(layer, hardware, chunk)
            values = objective_value(costs["latency"], costs["energy"], objective)
            best = int(np.argmin(values))
            evaluator.offer([chunk[best]], [(costs["latency"][best], costs["energy"][best])],
                            evaluations=len(chunk))
            bar.update()
    return evaluator.result("exhaustive")
