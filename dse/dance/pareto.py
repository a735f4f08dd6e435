"""Accuracy against the hardware cost for every (method, l2, seed) of a co-search (patent Figure 9): the seed means
of each (method, l2), each method's Pareto front and its hypervolume.

A result is a point (test error in %, log10 of its hardware cost), both minimised. The hardware cost is a function
of the result (``cost``, default :func:`edap`; the co-search passes its cost function's value, so a latency-oriented
search is judged by the cost it minimised). A front's hypervolume is the area it dominates up to a reference point,
in percentage points of error x decades of the cost: the reference is ``REFERENCE_ERROR`` % error and a decade above
the table's largest cost (``reference_point``), so every result of the table counts and a method gains area by lower
error, by lower cost, or by covering more of the trade-off. Hypervolumes are taken per seed (the fronts of one
seed's search and retraining) and then averaged. A result whose network fits no point of the space (``"fits"``
False: no hardware, no cost; a small board's space) is on no front and adds no area.
"""

from collections import defaultdict

import numpy as np

REFERENCE_ERROR = 5.0       # % test error: worse answers add nothing to a front's hypervolume
REFERENCE_DECADES = 1.0     # the reference cost, in decades above the table's largest cost


def fitting(results):
    """The results whose network fits a point of the space (those with a hardware cost)."""
    return [result for result in results if result.get("fits", True)]


def edap(result):
    """A result's EDAP: the hardware cost these functions take unless told another."""
    return result["edap"]


def point(result, cost=edap):
    """(error %, log10 cost) of a result dict."""
    return 100 * (1 - result["accuracy"]), float(np.log10(cost(result)))


def reference_point(results, cost=edap):
    """(REFERENCE_ERROR, log10 of the largest cost + REFERENCE_DECADES)."""
    return REFERENCE_ERROR, max(point(result, cost)[1] for result in fitting(results)) + REFERENCE_DECADES


def front(results, cost=edap):
    """The fitting results no other of ``results`` dominates (lower or equal error and cost, one of them lower), by
    cost."""
    results = fitting(results)
    points = [point(result, cost) for result in results]
    kept = [result for result, (error, value) in zip(results, points)
            if not any(e <= error and c <= value and (e < error or c < value) for e, c in points)]
    return sorted(kept, key=cost)


def hypervolume(results, reference, cost=edap):
    """Area (error points x cost decades) the results dominate up to ``reference`` (error %, log10 cost)."""
    reference_error, reference_cost = reference
    inside = [result for result in fitting(results)
              if point(result, cost)[0] < reference_error and point(result, cost)[1] < reference_cost]
    strips = sorted(point(result, cost) for result in front(inside, cost))      # error rising, cost falling
    upper_errors = [error for error, _ in strips[1:]] + [reference_error]
    return float(sum((upper - error) * (reference_cost - value) for (error, value), upper in zip(strips, upper_errors)))


def by_seed(results):
    """{seed: that seed's results}."""
    grouped = defaultdict(list)
    for result in results:
        grouped[result.get("seed", 0)].append(result)
    return dict(grouped)


def method_hypervolumes(results, reference=None, cost=edap):
    """{method: (per-seed hypervolumes in seed order)} against ``reference`` (default ``reference_point``)."""
    reference = reference or reference_point(results, cost)
    seeds = by_seed(results)
    methods = dict.fromkeys(result["method"] for result in results)
    return {method: tuple(hypervolume([r for r in seeds[seed] if r["method"] == method], reference, cost)
                          for seed in sorted(seeds)) for method in methods}


def seed_summary(results):
    """Per (method, l2) in first-seen order: seeds, how many of them fit the space, accuracy mean and standard
    deviation (every seed), the geometric mean EDAP and the standard deviation of log10 EDAP (the fitting seeds; None
    without one), and the EDAP gain and accuracy change against the separate design's seed means (None without a
    separate design); where every fitting result has a latency, its geometric mean and gain likewise (what a
    latency-oriented search minimises)."""
    groups = defaultdict(list)
    for result in results:
        groups[(result["method"], result["lambda2"])].append(result)
    with_latency = all("latency_ms" in result for result in fitting(results))
    summary = {}
    for key, chosen in groups.items():
        accuracy = np.array([r["accuracy"] for r in chosen])
        built = fitting(chosen)
        log_edap = np.log10([r["edap"] for r in built])
        summary[key] = {"seeds": len(chosen), "fitting": len(built), "accuracy_mean": float(accuracy.mean()),
                        "accuracy_std": float(accuracy.std(ddof=1)) if len(chosen) > 1 else 0.0,
                        "edap_geomean": float(10 ** log_edap.mean()) if built else None,
                        "log10_edap_std": float(log_edap.std(ddof=1)) if len(built) > 1 else 0.0,
                        "latency_geomean": float(10 ** np.log10([r["latency_ms"] for r in built]).mean())
                        if with_latency and built else None}
    baseline = next((value for (method, _), value in summary.items() if method == "baseline"), None)
    for value in summary.values():
        value["edap_gain"] = _ratio(baseline and baseline["edap_geomean"], value["edap_geomean"])
        value["latency_gain"] = _ratio(baseline and baseline["latency_geomean"], value["latency_geomean"])
        value["accuracy_change"] = value["accuracy_mean"] - baseline["accuracy_mean"] if baseline else None
    return summary


def _ratio(numerator, denominator):
    return numerator / denominator if numerator and denominator else None
