"""The bookkeeping every searcher shares, so that DCP and the baselines are counted alike.

A *problem* is a list of layers on one hardware point and an objective: ``latency`` (cycles,
summed over the layers), ``energy`` (pJ, summed) or ``edp`` (summed latency x summed energy).
``Evaluator`` evaluates one code per layer with the design space's cost model, counts distinct
(layer, code) evaluations, keeps the best and the best-so-far trace; ``SearchResult`` is what a
searcher returns. A network dataflow is first fitted to the budgets its layers share
(``DataflowSpace.fit_network``, e.g. the RTL family's descriptor table); one offered that still
breaks them (``network_violations``) has an infinite objective and is never the best.
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

OBJECTIVES = ("latency", "energy", "edp")


def objective_value(latency, energy, objective):
    """The objective from summed latency (cycles) and energy (pJ)."""
    if objective == "latency":
        return latency
    if objective == "energy":
        return energy
    if objective == "edp":
        return latency * energy
    raise ValueError(f"objective must be one of {', '.join(OBJECTIVES)}, not {objective!r}")


@dataclass
class SearchResult:
    """A searcher's best network dataflow: one code per layer, its cost-model objective and
    costs, the evaluations and seconds used, and the best-so-far trace
    ``(evaluations, seconds, best objective)`` (plus, for DCP, the predicted objective of the
    best restart per gradient step in ``step_trace``)."""

    method: str
    codes: list
    objective: float
    latency: float
    energy: float
    per_layer: list
    evaluations: int
    seconds: float
    trace: list = field(default_factory=list)
    step_trace: list = field(default_factory=list)
    predicted: float | None = None

    def best_within(self, *, evaluations=None, seconds=None):
        """The best objective within the first ``evaluations`` or ``seconds`` (None: none)."""
        best = None
        for used, elapsed, value in self.trace:
            if (evaluations is not None and used > evaluations) or \
                    (seconds is not None and elapsed > seconds):
                break
            best = value
        return best


class Evaluator:
    """Cost-model evaluation of network dataflows with a count of distinct (layer, code)
    evaluations, a clock, and the best-so-far trace."""

    def __init__(self, space, layers, hardware, objective):
        objective_value(1.0, 1.0, objective)
        self.space, self.layers, self.hardware, self.objective = space, layers, hardware, objective
        self.cache = [dict() for _ in layers]
        self.evaluations = 0
        self.start = time.perf_counter()
        self.best = (math.inf, None, None)
        self.trace = []

    def elapsed(self):
        return time.perf_counter() - self.start

    def layer_costs(self, index, code):
        key = np.asarray(code, dtype=np.int64).tobytes()
        if key not in self.cache[index]:
            costs = self.space.evaluate(self.layers[index], self.hardware, np.asarray(code)[None])
            self.cache[index][key] = (float(costs["latency"][0]), float(costs["energy"][0]))
            self.evaluations += 1
        return self.cache[index][key]

    def __call__(self, codes):
        """The objective of one code per layer (fitted to the shared budgets); updates the best and
        the trace."""
        if len(codes) > 1:
            codes = self.space.fit_network(codes, self.layers, self.hardware)
        return self.offer(codes, [self.layer_costs(i, code) for i, code in enumerate(codes)])

    def offer(self, codes, per_layer, *, evaluations=0):
        """Record a network dataflow whose (latency, energy) per layer is known, counting
        ``evaluations`` more cost-model evaluations; returns its objective."""
        self.evaluations += evaluations
        value = objective_value(sum(c[0] for c in per_layer), sum(c[1] for c in per_layer),
                                self.objective)
        if len(codes) > 1 and self.space.network_violations(codes, self.layers, self.hardware):
            value = math.inf
        if value < self.best[0]:
            self.best = (value, [np.asarray(c) for c in codes], per_layer)
        self.trace.append((self.evaluations, self.elapsed(), self.best[0]))
        return value

    def result(self, method, **extra):
        value, codes, per_layer = self.best
        return SearchResult(method=method, codes=codes, objective=value,
                            latency=sum(c[0] for c in per_layer),
                            energy=sum(c[1] for c in per_layer),
                            per_layer=[{"latency": l, "energy": e} for l, e in per_layer],
                            evaluations=self.evaluations, seconds=self.elapsed(),
                            trace=self.trace, **extra)
