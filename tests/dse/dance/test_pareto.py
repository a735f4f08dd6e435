"""The co-search's Pareto view: fronts keep what nothing dominates, hypervolumes are the dominated areas worked
out by hand, the seed summary averages per (method, l2) against the separate design's means."""

import math

import pytest

from nnaccel.dse.dance import command, pareto
from nnaccel.dse.dance.cost_functions import CostFunction


def result(method, accuracy, edap, seed=0, lambda2=1.0):
    return {"method": method, "accuracy": accuracy, "edap": edap, "seed": seed, "lambda2": lambda2}


def test_the_front_drops_dominated_results():
    a, b, c, d = (result("dance", 0.98, 1.0), result("dance", 0.97, 0.1), result("dance", 0.96, 1.0),
                  result("dance", 0.97, 0.01))
    assert pareto.front([a, b, c, d]) == [d, a]


def test_hypervolume_is_the_dominated_area():
    reference = (5.0, 1.0)      # 5 % error, EDAP 10
    # (error 2 %, 1 decade below the reference) and (error 3 %, 2 decades below): 1 x 1 + 2 x 2 = 5.
    results = [result("dance", 0.98, 1.0), result("dance", 0.97, 0.1)]
    assert pareto.hypervolume(results, reference) == pytest.approx(1 * 1 + 2 * 2)
    # A dominated result and one beyond the reference add nothing.
    assert pareto.hypervolume(results + [result("dance", 0.96, 1.0), result("dance", 0.90, 1e-6)],
                              reference) == pytest.approx(5)
    assert pareto.hypervolume([], reference) == 0


def test_the_reference_is_a_decade_above_the_largest_edap():
    assert pareto.reference_point([result("baseline", 0.98, 0.5), result("dance", 0.97, 0.05)]) == \
        pytest.approx((pareto.REFERENCE_ERROR, 1 + math.log10(0.5)))


def test_hypervolumes_are_per_method_and_seed():
    results = [result("baseline", 0.98, 1.0, seed) for seed in (0, 1)] + \
              [result("dance", 0.97, 0.1, 0), result("dance", 0.96, 0.1, 1)]
    volumes = pareto.method_hypervolumes(results, (5.0, 1.0))
    assert volumes == {"baseline": pytest.approx((3.0, 3.0)), "dance": pytest.approx((4.0, 2.0))}


def test_the_seed_summary_compares_means_with_the_separate_design():
    results = [result("baseline", 0.98, 1.0, 0), result("baseline", 0.97, 1.0, 1),
               result("dance", 0.97, 0.1, 0, 0.01), result("dance", 0.96, 0.01, 1, 0.01)]
    summary = pareto.seed_summary(results)
    dance = summary[("dance", 0.01)]
    assert dance["seeds"] == 2
    assert dance["accuracy_mean"] == pytest.approx(0.965)
    assert dance["edap_geomean"] == pytest.approx(10 ** -1.5)
    assert dance["edap_gain"] == pytest.approx(10 ** 1.5)
    assert dance["accuracy_change"] == pytest.approx(-0.01)
    assert dance["latency_geomean"] is None and dance["latency_gain"] is None     # the results have no latency


def test_the_table_adds_the_seed_means_and_the_hypervolumes():
    rows = [result("baseline", 0.98, 1.0, 0), result("baseline", 0.97, 1.0, 1),
            result("dance", 0.97, 0.1, 0, 0.01), result("dance", 0.96, 0.01, 1, 0.01)]
    for row, latency in zip(rows, (1.0, 4.0, 0.5, 0.5)):
        row.update(cost="edap", latency_ms=latency, energy_mj=1.0, area_mm2=row["edap"] / latency, network="n",
                   hardware="h")
    lines = command.table_lines(rows)
    assert any(line.startswith("dance (edap)") and "96.50% +- 0.71" in line and "31.62x" in line
               and "-1.00 points" in line and line.endswith(" 0.50000    4.00x") for line in lines)
    report = command.pareto_report(rows)
    assert report["hypervolume_reference"] == {"error_percent": 5.0, "cost": "edap", "cost_value": pytest.approx(10.0)}
    assert report["hypervolumes"]["dance"] == pytest.approx(((5 - 3) * (1 + 1), (5 - 4) * (1 + 2)))
    assert any(line.startswith("Pareto-front hypervolume (error points x decades of EDAP)") for line in lines)


def test_the_hypervolume_follows_the_chosen_cost():
    """Under the latency cost a result of low EDAP but long latency gains less area: the fronts are the cost's."""
    rows = [result("baseline", 0.98, 1.0, seed) for seed in (0, 1)] + \
           [result("dance", 0.97, 0.01, seed, 0.01) for seed in (0, 1)]
    for row in rows:
        latency = 1.0 if row["method"] == "baseline" else 10.0
        row.update(cost="latency", latency_ms=latency, energy_mj=row["edap"] / latency, area_mm2=1.0, network="n",
                   hardware="h")
    latency_cost = CostFunction("latency", reference=(1.0, 1.0, 1.0))     # L + 0.1 E + 0.1 A
    by_edap = command.pareto_report(rows)["hypervolumes"]
    assert by_edap["dance"] == pytest.approx((2 * 3, 2 * 3))      # reference EDAP 10: 3 decades below it
    report = command.pareto_report(rows, latency_cost)
    reference = 10 * (10.0 + 0.1 * 0.001 + 0.1)                    # a decade above the largest latency cost
    assert report["hypervolume_reference"] == {"error_percent": 5.0, "cost": "latency",
                                               "cost_value": pytest.approx(reference)}
    assert report["hypervolumes"]["dance"] == pytest.approx([2 * math.log10(reference / 10.1001)] * 2)
    assert report["hypervolumes"]["baseline"] == pytest.approx([3 * math.log10(reference / 1.2)] * 2)
    lines = command.table_lines(rows, latency_cost)
    assert any(line.startswith("Pareto-front hypervolume (error points x decades of the latency cost 1 L / 1 ms + "
                               "0.1 E / 1 mJ + 0.1 A / 1 mm2) against the reference (5 % error, latency cost 101)")
               for line in lines)


def test_a_network_that_fits_no_point_has_no_cost_and_no_area():
    """On a small board's space a search may end at a network no point of the space holds: its accuracy counts,
    its cost does not (no front, no hypervolume, the EDAP means of the seeds that fit)."""
    rows = [result("baseline", 0.98, 1.0, 0), result("baseline", 0.99, None, 1),
            result("dance", 0.97, 0.1, 0, 0.01), result("dance", 0.96, 0.01, 1, 0.01)]
    for row in rows:
        fits = row["edap"] is not None
        row.update(cost="edap", latency_ms=1.0 if fits else None, energy_mj=1.0 if fits else None,
                   area_mm2=row["edap"], network="n", hardware="h" if fits else "fits no point of the space",
                   fits=fits)
    assert pareto.front([row for row in rows if row["method"] == "baseline"]) == [rows[0]]
    assert pareto.reference_point(rows) == pytest.approx((5.0, 1.0))
    assert pareto.method_hypervolumes(rows)["baseline"] == pytest.approx((3.0, 0.0))
    summary = pareto.seed_summary(rows)
    assert summary[("baseline", 1.0)]["fitting"] == 1 and summary[("baseline", 1.0)]["edap_geomean"] == 1.0
    assert summary[("baseline", 1.0)]["accuracy_mean"] == pytest.approx(0.985)
    assert summary[("dance", 0.01)]["edap_gain"] == pytest.approx(10 ** 1.5)
    lines = command.table_lines(rows)
    assert any(line.startswith("baseline") and line.endswith("fits no point of the space  n") for line in lines)
    assert any(line.startswith("baseline") and " 1/2 " in line and "98.50% +- 0.71" in line for line in lines)
    assert command.winner(rows + [dict(rows[1], method="dance", lambda2=0.01)]) is rows[3]


def test_dances_answer_is_the_one_of_lowest_chosen_cost():
    def answer(edap, latency):
        return {"method": "dance", "accuracy": 0.98, "edap": edap, "latency_ms": latency, "fits": True}

    by_edap, by_latency = answer(0.1, 2.0), answer(0.2, 1.0)
    assert command.winner([by_edap, by_latency]) is by_edap
    assert command.winner([by_edap, by_latency], cost=lambda result: result["latency_ms"]) is by_latency
