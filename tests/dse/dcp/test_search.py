import math

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("optuna")

from nnaccel.dse.dcp.baselines import exhaustive_search, optuna_search, random_search  # noqa: E402
from nnaccel.dse.dcp.evaluator import Evaluator, objective_value  # noqa: E402
from nnaccel.dse.dcp.search import dcp_search  # noqa: E402
from nnaccel.dse.dcp.workloads import DEFAULT_HARDWARE  # noqa: E402
from nnaccel.dse.shared.layer import dqn_layers  # noqa: E402


def test_objectives():
    assert objective_value(2.0, 3.0, "latency") == 2.0
    assert objective_value(2.0, 3.0, "energy") == 3.0
    assert objective_value(2.0, 3.0, "edp") == 6.0
    with pytest.raises(ValueError, match="objective must be one of latency, energy, edp, not 'power'"):
        objective_value(1.0, 1.0, "power")


def test_evaluator_counts_distinct_evaluations_and_keeps_the_best(space):
    layers = list(dqn_layers()[2:])
    evaluator = Evaluator(space, layers, DEFAULT_HARDWARE, "edp")
    first = [space.sample_codes(l, DEFAULT_HARDWARE, 2, seed=1) for l in layers]
    a = evaluator([first[0][0], first[1][0]])
    evaluator([first[0][0], first[1][0]])
    b = evaluator([first[0][1], first[1][0]])
    assert evaluator.evaluations == 3
    result = evaluator.result("test")
    assert result.objective == min(a, b) == result.latency * result.energy
    assert [t[0] for t in result.trace] == [2, 2, 3]
    assert result.best_within(evaluations=2) == a and result.best_within(evaluations=1) is None


def test_dcp_returns_a_legal_dataflow_costed_by_the_cost_model(space, tiny_predictor):
    layer = dqn_layers()[1]
    result = dcp_search(space, tiny_predictor, [layer], DEFAULT_HARDWARE, "latency", restarts=3,
                        steps=20, decode_every=10, progress=False)
    (code,) = result.codes
    assert space.violations(code, layer, DEFAULT_HARDWARE) == []
    assert result.objective == space.evaluate(layer, DEFAULT_HARDWARE, code[None])["latency"][0]
    assert len(result.step_trace) == 20 and result.predicted > 0
    assert 3 <= result.evaluations <= 3 * 3
    starts = space.sample_codes(layer, DEFAULT_HARDWARE, 3, seed=0)
    assert result.objective <= space.evaluate(layer, DEFAULT_HARDWARE, starts)["latency"].min()


def test_dcp_on_a_network_sums_the_layers(space, tiny_predictor):
    layers = list(dqn_layers()[1:])
    result = dcp_search(space, tiny_predictor, layers, DEFAULT_HARDWARE, "edp", restarts=2,
                        steps=10, decode_every=5, progress=False)
    assert len(result.codes) == 3
    total = [space.evaluate(l, DEFAULT_HARDWARE, c[None]) for l, c in zip(layers, result.codes)]
    latency = sum(t["latency"][0] for t in total)
    energy = sum(t["energy"][0] for t in total)
    assert result.objective == pytest.approx(latency * energy)


@pytest.mark.parametrize("run", [
    lambda s, l: random_search(s, l, DEFAULT_HARDWARE, "energy", budget=12, progress=False),
    lambda s, l: optuna_search(s, l, DEFAULT_HARDWARE, "energy", sampler="tpe", budget=12,
                               progress=False),
    lambda s, l: optuna_search(s, l, DEFAULT_HARDWARE, "energy", sampler="nsga2", budget=12,
                               population=4, progress=False),
])
def test_baselines_spend_the_budget_on_legal_dataflows(space, run):
    layers = [dqn_layers()[3]]
    result = run(space, layers)
    assert result.evaluations >= 12
    assert space.violations(result.codes[0], layers[0], DEFAULT_HARDWARE) == []
    assert math.isfinite(result.objective)
    assert result.best_within(evaluations=12) >= result.objective


def test_exhaustive_is_the_floor_of_every_searcher(space):
    layer = dqn_layers()[3]
    best = exhaustive_search(space, layer, DEFAULT_HARDWARE, "energy", progress=False)
    assert best.evaluations > 1000
    sampled = space.sample_codes(layer, DEFAULT_HARDWARE, 300, seed=4)
    assert best.objective <= space.evaluate(layer, DEFAULT_HARDWARE, sampled)["energy"].min()
    assert exhaustive_search(space, dqn_layers()[1], DEFAULT_HARDWARE, "energy", limit=10_000,
                             progress=False) is None
    assert np.asarray(best.codes[0]).shape == (3, 7, 2)
