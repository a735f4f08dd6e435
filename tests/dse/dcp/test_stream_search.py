"""DCP and its baselines on the external-weight mapping space (``dse.dcp.stream_search``), on the reduced network
and configuration (324 mappings, every one costed once for all tests)."""

from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("optuna")

from nnaccel.dse.dcp import stream_search  # noqa: E402
from nnaccel.dse.rtl.stream_space import StreamSpace  # noqa: E402
from nnaccel.hw.dqn.config import REDUCED_CONFIG  # noqa: E402
from nnaccel.models.dqn.network import reduced_layers  # noqa: E402

BUDGET = 8


@pytest.fixture(scope="module")
def space():
    return StreamSpace(replace(REDUCED_CONFIG, external_weights=True, weight_depth=64), reduced_layers())


@pytest.fixture(scope="module")
def known(space):
    table = {}
    stream_search.exhaustive_search(space, "latency", table, progress=False)
    return table


@pytest.fixture(scope="module")
def trained(space, known):
    """A predictor fitted on 30 balanced mappings and those rows."""
    evaluator = stream_search.StreamEvaluator(space, "latency", dict(known))
    rows = stream_search.sample_balanced(evaluator, 30, np.random.default_rng(0))
    targets = [(known[row]["latency"], known[row]["energy"]) for row in rows]
    return stream_search.fit_predictor(space, rows, targets, epochs=150), list(zip(rows, targets))


def test_the_evaluator_counts_each_legal_mapping_once(space, known):
    evaluator = stream_search.StreamEvaluator(space, "latency", dict(known))
    legal = next(indices for indices, cost in known.items() if cost is not None)
    illegal = next((indices for indices, cost in known.items() if cost is None), None)
    assert evaluator(legal) == known[legal]["latency"]
    evaluator(legal)
    assert evaluator.evaluations == 1
    if illegal is not None:
        assert evaluator(illegal) == float("inf") and evaluator.evaluations == 1


def test_exhaustive_is_the_minimum_of_every_mapping(space, known):
    for objective in stream_search.OBJECTIVES:
        best = stream_search.exhaustive_search(space, objective, known, progress=False)
        values = [cost[objective] for cost in known.values() if cost is not None]
        assert best.objective == min(values)
        assert best.evaluations == len(values)


@pytest.mark.parametrize("objective", stream_search.OBJECTIVES)
def test_every_searcher_stays_within_its_budget_and_answers_a_legal_mapping(space, known, trained, objective):
    predictor, training = trained
    best = stream_search.exhaustive_search(space, objective, known, progress=False).objective
    results = [stream_search.dcp_search(space, predictor, training, objective, known, budget=BUDGET, seed=1,
                                        progress=False),
               stream_search.random_search(space, objective, known, budget=BUDGET, seed=1),
               stream_search.optuna_search(space, objective, known, sampler="tpe", budget=BUDGET, seed=1),
               stream_search.optuna_search(space, objective, known, sampler="nsga2", budget=BUDGET, seed=1)]
    for result in results:
        assert 0 < result.evaluations <= BUDGET
        assert known[result.indices][objective] == result.objective >= best
        assert result.best_within(BUDGET) == result.objective
        assert [value for _, value in result.trace] == sorted((value for _, value in result.trace), reverse=True)
    assert len(training) == 30                   # DCP refits a copy of the predictor on its own answers


def test_dcp_leaves_the_callers_predictor_as_trained(space, known, trained):
    import torch

    predictor, training = trained
    before = [parameter.detach().clone() for parameter in predictor.parameters()]
    stream_search.dcp_search(space, predictor, training, "latency", known, budget=BUDGET, seed=2, progress=False)
    assert all(torch.equal(old, new) for old, new in zip(before, predictor.parameters()))


@pytest.mark.parametrize("objective", stream_search.OBJECTIVES)
def test_dcps_training_mappings_count_in_its_budget(space, known, objective):
    samples, budget = 6, 14
    result = stream_search.dcp_counted(space, objective, dict(known), budget=budget, samples=samples, seed=3)
    assert result.evaluations == budget          # the 6 training mappings and 8 the search costs
    assert [used for used, _ in result.trace] == list(range(1, budget + 1))
    assert known[result.indices][objective] == result.objective
    with pytest.raises(ValueError, match="samples must be between 1 and the budget"):
        stream_search.dcp_counted(space, objective, known, budget=samples, samples=samples)


@pytest.mark.parametrize("objective", stream_search.OBJECTIVES)
def test_coordinate_descent_ends_where_no_single_layer_change_improves(space, known, objective):
    default = tuple(0 for _ in space.choices)
    result = stream_search.coordinate_search(space, objective, known, starts=[default], progress=False)
    best = stream_search.exhaustive_search(space, objective, known, progress=False).objective
    assert best <= result.objective <= known[default][objective]
    for layer, choices in enumerate(space.choices):
        for index in range(len(choices)):
            neighbour = result.indices[:layer] + (index,) + result.indices[layer + 1:]
            assert known[neighbour] is None or known[neighbour][objective] >= result.objective
