"""DCP on the external-weight mapping space (``dse.rtl.stream_space.StreamSpace``) of a whole network, and the
searchers it is compared with, all counted by one :class:`StreamEvaluator`.

The space's mappings are one categorical choice per layer (``StreamSpace.choices``), so DCP's code here is, per
layer, a vector of logits over the layer's choices; its relaxation is their softmax.  The predictor's input is the
softmax (one-hot on a mapping) and the choices' attributes weighted by it (log2 tile, log2 column blocks, log2
position ranges, the order, log2 split), per layer; its output the standardised natural logs of latency and energy.

* :func:`fit_predictor`: a linear term plus a residual MLP (``dse.dcp.predictor.MLPNet``) fitted on costed legal
  mappings, drawn so that every choice of every layer appears about equally often (:func:`sample_balanced`: a
  one-hot the predictor never saw is a weight it never trained); :func:`dcp_counted` costs them inside DCP's budget.
  (``dse.dcp.stream_transfer`` has the predictor trained once on other networks.)
* :func:`dcp_search`: ``restarts`` random legal starts as logits; Adam on the predicted log objective of all
  restarts at once; every ``decode_every`` steps each restart is decoded (its most likely choice per layer, or the
  single-layer change of it that the predictor rates best, legal and not costed yet) and costed;
  each newly costed mapping is added to the predictor's training set and the predictor is refitted for a few steps
  (the search learns from its own answers).  The answer is the best mapping by the cost model.
* :func:`random_search`, :func:`optuna_search` (TPE, NSGA-II: one categorical parameter per layer) and
  :func:`exhaustive_search` (every mapping of the space).

Every searcher stops when it has costed ``budget`` distinct legal mappings (an illegal mapping is refused by the
compiler before any costing and is not counted; repeats are free) or after ``max_trials`` trials.
"""

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np
import optuna
import torch

from nnaccel.dse.dcp.baselines import optuna_sampler
from nnaccel.dse.dcp.predictor import MLPNet
from nnaccel.dse.rtl.stream_space import ORDERS
from nnaccel.sim.progress import counting

__all__ = ["StreamEvaluator", "StreamResult", "StreamPredictor", "sample_legal", "sample_balanced", "fit_predictor",
           "dcp_search", "dcp_counted", "random_search", "optuna_search", "coordinate_search",
           "exhaustive_search", "OBJECTIVES"]

OBJECTIVES = ("latency", "energy")


@dataclass
class StreamResult:
    """A searcher's best mapping (choice indices per layer), its cost, the evaluations used and the best-so-far
    trace ``(evaluations, best objective)``."""

    method: str
    indices: tuple
    objective: float
    cost: dict
    evaluations: int
    seconds: float
    trace: list = field(default_factory=list)

    def best_within(self, evaluations):
        best = math.inf
        for used, value in self.trace:
            if used > evaluations:
                break
            best = value
        return best


class StreamEvaluator:
    """Costs network mappings (choice indices per layer) of ``space`` for ``objective``, counting the distinct legal
    ones; ``known``: costs computed before (a dict of index tuples to costs or None), reused without changing the
    count."""

    def __init__(self, space, objective, known=None):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")
        self.space, self.objective = space, objective
        self.known = {} if known is None else known
        self.seen, self.evaluations = {}, 0
        self.best = (math.inf, None)
        self.trace, self.start = [], time.perf_counter()

    def cost(self, indices):
        """The cost dict of ``indices`` (None: illegal), from ``known`` or the cost model; not counted.  For the
        energy objective the latency is left out (unless ``known`` has it)."""
        indices = tuple(int(index) for index in indices)
        latency = self.objective == "latency"
        if indices not in self.known or (latency and self.known[indices] and "latency" not in self.known[indices]):
            choices = [layer_choices[index] for layer_choices, index in zip(self.space.choices, indices)]
            self.known[indices] = self.space.cost(choices, latency=latency)
        return self.known[indices]

    def legal(self, indices):
        """Whether ``indices`` compiles (cheap: no cycle formula)."""
        indices = tuple(int(index) for index in indices)
        if indices in self.known:
            return self.known[indices] is not None
        choices = [layer_choices[index] for layer_choices, index in zip(self.space.choices, indices)]
        try:
            self.space.compile(choices)
        except ValueError:
            self.known[indices] = None
            return False
        return True

    def __call__(self, indices):
        """The objective of ``indices`` (inf if illegal); counts it once if legal."""
        indices = tuple(int(index) for index in indices)
        if indices not in self.seen:
            cost = self.cost(indices)
            self.seen[indices] = math.inf if cost is None else cost[self.objective]
            if cost is not None:
                self.evaluations += 1
                if self.seen[indices] < self.best[0]:
                    self.best = (self.seen[indices], indices)
                self.trace.append((self.evaluations, self.best[0]))
        return self.seen[indices]

    def result(self, method):
        value, indices = self.best
        return StreamResult(method=method, indices=indices, objective=value,
                            cost=self.cost(indices) if indices else None, evaluations=self.evaluations,
                            seconds=time.perf_counter() - self.start, trace=self.trace)


# ---- the predictor -------------------------------------------------------------------------------------------------

def _attributes(choice):
    return [math.log2(choice.tile), math.log2(choice.blocks), math.log2(choice.segments),
            float(ORDERS.index(choice.order)), math.log2(choice.split)]


class StreamPredictor(torch.nn.Module):
    """Predicts ``(log latency, log energy)`` of a mapping from per-layer choice probabilities: a linear term plus a
    residual MLP (``dse.dcp.predictor.MLPNet``) on the features."""

    def __init__(self, space, *, width=64, depth=2):
        super().__init__()
        counts = [len(choices) for choices in space.choices]
        self.offsets = np.cumsum([0] + counts)
        attributes = [torch.tensor([_attributes(choice) for choice in choices], dtype=torch.float32)
                      for choices in space.choices]
        for index, matrix in enumerate(attributes):
            self.register_buffer(f"attributes_{index}", matrix)
        inputs = sum(counts) + 5 * len(counts)
        self.net = MLPNet(inputs=inputs, width=width, depth=depth)
        self.linear = torch.nn.Linear(inputs, 2)       # the costs are nearly sums over the layers' choices
        self.register_buffer("mean", torch.zeros(2))
        self.register_buffer("scale", torch.ones(2))

    def features(self, probabilities):
        """``probabilities``: (batch, sum of choices) -> the network's input."""
        parts = [probabilities]
        for index in range(len(self.offsets) - 1):
            part = probabilities[:, self.offsets[index]:self.offsets[index + 1]]
            parts.append(part @ getattr(self, f"attributes_{index}"))
        return torch.cat(parts, dim=1)

    def forward(self, probabilities):
        """Natural logs of (latency, energy)."""
        context = self.features(probabilities)
        return (self.linear(context) + self.net(context, context[:, :0])) * self.scale + self.mean

    def one_hot(self, rows):
        """Index tuples -> (batch, sum of choices) one-hot."""
        encoded = torch.zeros(len(rows), int(self.offsets[-1]))
        for row, indices in enumerate(rows):
            for layer, index in enumerate(indices):
                encoded[row, int(self.offsets[layer]) + int(index)] = 1.0
        return encoded


def _fit(predictor, rows, targets, *, epochs, learning_rate=3e-3):
    """Adam on the squared standardised error; a target that is NaN (a latency not costed) is left out."""
    inputs, targets = predictor.one_hot(rows), torch.log(torch.as_tensor(np.asarray(targets), dtype=torch.float32))
    known, targets = ~torch.isnan(targets), torch.nan_to_num(targets)
    optimiser = torch.optim.Adam(predictor.parameters(), lr=learning_rate)
    for _ in range(epochs):
        loss = ((((predictor(inputs) - targets) / predictor.scale) ** 2)[known]).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return float(loss.detach())


def sample_legal(evaluator, count, rng, *, tries=100):
    """``count`` distinct legal index tuples drawn uniformly (illegal draws are redrawn)."""
    counts = [len(choices) for choices in evaluator.space.choices]
    drawn = []
    for _ in range(count * tries):
        indices = tuple(int(rng.integers(n)) for n in counts)
        if indices not in drawn and evaluator.legal(indices):
            drawn.append(indices)
            if len(drawn) == count:
                break
    return drawn


def sample_balanced(evaluator, count, rng):
    """``count`` distinct legal index tuples in which every choice of every layer appears about equally often: per
    layer its choices in random order, repeated; a draw that is illegal or repeated is replaced by a uniform legal
    one."""
    counts = [len(choices) for choices in evaluator.space.choices]
    columns = [np.concatenate([rng.permutation(n) for _ in range(-(-count // n))])[:count] for n in counts]
    drawn = []
    for row in zip(*columns):
        indices = tuple(int(index) for index in row)
        if indices in drawn or not evaluator.legal(indices):
            indices = next(candidate for candidate in iter(lambda: sample_legal(evaluator, 1, rng)[0], None)
                           if candidate not in drawn)
        drawn.append(indices)
    return drawn


def fit_predictor(space, rows, targets, *, epochs=300, seed=0, width=64, depth=2):
    """A :class:`StreamPredictor` fitted on ``rows`` (index tuples) and their ``targets`` ((latency, energy)s), its
    outputs standardised on them."""
    torch.manual_seed(seed)
    predictor = StreamPredictor(space, width=width, depth=depth)
    logs = np.log(np.asarray(targets, dtype=np.float64))
    costed = ~np.isnan(logs).all(0)             # the energy objective's rows have no latency
    mean, spread = np.zeros(2), np.ones(2)
    mean[costed], spread[costed] = np.nanmean(logs[:, costed], 0), np.nanstd(logs[:, costed], 0)
    predictor.mean.copy_(torch.as_tensor(mean, dtype=torch.float32))
    predictor.scale.copy_(torch.as_tensor(np.maximum(spread, 1e-4), dtype=torch.float32))
    _fit(predictor, rows, targets, epochs=epochs)
    return predictor


def _targets(evaluator, rows):
    """``(latency, energy)`` of each row (latency NaN where the evaluator did not cost it)."""
    return [(evaluator.cost(row).get("latency", math.nan), evaluator.cost(row)["energy"]) for row in rows]


# ---- the searchers ---------------------------------------------------------------------------------------------

def _decode(evaluator, predictor, probabilities, target):
    """The mapping a restart costs next: among its most likely choice per layer and every single-layer change of
    that, the legal one not costed yet of best predicted objective (None if there is none).  The candidates are
    ranked first and compiled in that order (a legality check compiles the network)."""
    best = tuple(int(np.argmax(layer)) for layer in probabilities)
    candidates = [best] + [best[:position] + (index,) + best[position + 1:]
                           for position, layer in enumerate(probabilities) for index in range(len(layer))
                           if index != best[position]]
    candidates = [candidate for candidate in candidates if candidate not in evaluator.seen]
    if not candidates:
        return None
    with torch.no_grad():
        predicted = predictor(predictor.one_hot(candidates))[:, target]
    return next((candidates[index] for index in torch.argsort(predicted).tolist()
                 if evaluator.legal(candidates[index])), None)


def dcp_search(space, predictor, training, objective, known, *, budget, restarts=4, steps=150, decode_every=5,
               learning_rate=0.3, refit_epochs=40, seed=0, progress=True, evaluator=None):
    """DCP on the whole network (module docstring); ``training``: the predictor's ``(indices, (latency, energy))``
    rows, extended with the mappings the search costs.  Stops at ``budget`` evaluations or after ``steps``.
    ``evaluator``: a :class:`StreamEvaluator` that has counted evaluations already (the predictor's training
    mappings, :func:`dcp_counted`): the search then starts from the ``restarts`` best of them, else from random legal
    mappings."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    predictor = copy.deepcopy(predictor)        # refitted on the search's answers: the caller's stays as trained
    evaluator = evaluator or StreamEvaluator(space, objective, known)
    target = OBJECTIVES.index(objective)
    rows, targets = [row for row, _ in training], [cost for _, cost in training]
    starts = (sorted(evaluator.seen, key=evaluator.seen.get)[:restarts] if evaluator.evaluations
              else sample_legal(evaluator, restarts, rng))
    logits = predictor.one_hot(starts) * 3.0
    logits = (logits + 0.1 * torch.randn_like(logits)).requires_grad_(True)
    optimiser = torch.optim.Adam([logits], lr=learning_rate)
    offsets = predictor.offsets

    def probabilities():
        return torch.cat([torch.softmax(logits[:, offsets[layer]:offsets[layer + 1]], dim=1)
                          for layer in range(len(offsets) - 1)], dim=1)

    with counting("DCP descent: gradient steps", total=steps, enabled=progress) as shown:
        for start in starts:
            evaluator(start)
        for step in range(1, steps + 1):
            if evaluator.evaluations >= budget:
                break
            loss = predictor(probabilities())[:, target].sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            if step % decode_every == 0:
                current = probabilities().detach().numpy()
                fresh = []
                for restart in range(restarts):
                    decoded = _decode(evaluator, predictor, [current[restart, offsets[layer]:offsets[layer + 1]]
                                                             for layer in range(len(offsets) - 1)], target)
                    if decoded is not None and evaluator.evaluations < budget:      # decoded: not costed yet
                        evaluator(decoded)
                        fresh.append(decoded)
                rows += fresh               # the search learns from its own answers
                targets += _targets(evaluator, fresh)
                if fresh:
                    _fit(predictor, rows, targets, epochs=refit_epochs)
                if not fresh:               # every restart sits on a mapping already costed: move one elsewhere
                    restart = int(rng.integers(restarts))
                    with torch.no_grad():
                        logits[restart] = predictor.one_hot(sample_legal(evaluator, 1, rng))[0] * 3.0
            shown.update()
    return evaluator.result("DCP")


def dcp_counted(space, objective, known, *, budget, samples, seed=0, epochs=300, **search):
    """DCP with its predictor's training inside ``budget``: ``samples`` legal mappings (:func:`sample_balanced`)
    costed through the search's own evaluator (each one evaluation), the predictor fitted on them
    (:func:`fit_predictor`), then :func:`dcp_search` for the remaining ``budget - samples``; ``search``: its
    options."""
    if not 0 < samples < budget:
        raise ValueError(f"samples must be between 1 and the budget ({budget}) minus one, not {samples!r}")
    evaluator = StreamEvaluator(space, objective, known)
    rows = sample_balanced(evaluator, samples, np.random.default_rng(seed))
    for row in rows:
        evaluator(row)
    targets = _targets(evaluator, rows)
    predictor = fit_predictor(space, rows, targets, epochs=epochs, seed=seed)
    return dcp_search(space, predictor, list(zip(rows, targets)), objective, known, budget=budget, seed=seed,
                      evaluator=evaluator, progress=False, **search)


def random_search(space, objective, known, *, budget, seed=0, max_trials=10_000, start=None):
    """Uniform random mappings; ``start`` (an index tuple, e.g. the compiler's mapping): costed first."""
    evaluator = StreamEvaluator(space, objective, known)
    rng = np.random.default_rng(seed)
    counts = [len(choices) for choices in space.choices]
    if start is not None:
        evaluator(start)
    for _ in range(max_trials):
        if evaluator.evaluations >= budget:
            break
        evaluator(tuple(int(rng.integers(n)) for n in counts))
    return evaluator.result("random")


def optuna_search(space, objective, known, *, sampler, budget, seed=0, population=20, max_trials=2_000, start=None):
    """Optuna's TPE (``sampler="tpe"``) or NSGA-II (``"nsga2"``) with one categorical parameter per layer;
    ``start`` (an index tuple, e.g. the compiler's mapping): its first trial (``enqueue_trial``)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    evaluator = StreamEvaluator(space, objective, known)
    study = optuna.create_study(direction="minimize", sampler=optuna_sampler(sampler, seed, population))
    counts = [len(choices) for choices in space.choices]
    if start is not None:
        study.enqueue_trial({layer.name: int(index) for layer, index in zip(space.layers, start)})

    def trial_objective(trial):
        value = evaluator(tuple(trial.suggest_categorical(layer.name, list(range(count)))
                                for layer, count in zip(space.layers, counts)))
        return math.log(value) if math.isfinite(value) else 1e3

    for _ in range(max_trials):
        if evaluator.evaluations >= budget:
            break
        study.optimize(trial_objective, n_trials=1)
    return evaluator.result({"tpe": "TPE", "nsga2": "NSGA-II"}[sampler])


def coordinate_search(space, objective, known, *, starts, progress=True):
    """The best known where the space is too large to cost whole: from each of ``starts`` (index tuples), one layer
    at a time every choice of it with the others fixed, the best kept, sweep after sweep over the layers until a
    sweep changes nothing (a local optimum for single-layer changes); the best over the starts."""
    evaluator = StreamEvaluator(space, objective, known)
    counts = [len(choices) for choices in space.choices]
    with counting("coordinate descent: sweeps", total=None, enabled=progress) as shown:
        for start in starts:
            current, changed = tuple(start), True
            while changed:
                changed = False
                for layer, count in enumerate(counts):
                    for index in range(count):
                        candidate = current[:layer] + (index,) + current[layer + 1:]
                        if evaluator(candidate) < evaluator(current):
                            current, changed = candidate, True
                shown.update()
    return evaluator.result("coordinate descent")


def exhaustive_search(space, objective, known, *, progress=True):
    """Every mapping of the space costed (the best known)."""
    evaluator = StreamEvaluator(space, objective, known)
    counts = [len(choices) for choices in space.choices]
    with counting("exhaustive: mappings", total=int(np.prod(counts)), enabled=progress) as shown:
        for indices in np.ndindex(*counts):
            evaluator(indices)
            shown.update()
    return evaluator.result("exhaustive")
