"""The transfer predictor of the external-weight space and DCP with it (``dse.dcp.stream_transfer``): trained on
the reduced network, used on another small network it never saw (every mapping of both costed once for all tests)."""

import copy
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("optuna")

from nnaccel.dse.dcp import stream_search, stream_transfer  # noqa: E402
from nnaccel.dse.rtl.stream_space import StreamSpace  # noqa: E402
from nnaccel.hw.dqn.config import REDUCED_CONFIG  # noqa: E402
from nnaccel.models.dqn.network import ConvLayer, DenseLayer, reduced_layers  # noqa: E402

BUDGET = 8
CONFIG = replace(REDUCED_CONFIG, external_weights=True, weight_depth=64)
OTHER_LAYERS = (ConvLayer("e1", 3, 9, 4, 3, 2), ConvLayer("e2", 4, 4, 6, 2, 1), DenseLayer("f1", 6 * 3 * 3, 5),
                DenseLayer("f2", 5, 6, relu=False))


def _costed(space):
    known = {}
    stream_search.exhaustive_search(space, "latency", known, progress=False)
    return known


@pytest.fixture(scope="module")
def training():
    space = StreamSpace(CONFIG, reduced_layers(), name="reduced")
    return space, _costed(space)


@pytest.fixture(scope="module")
def searched():
    space = StreamSpace(CONFIG, OTHER_LAYERS, name="other")
    return space, _costed(space)


@pytest.fixture(scope="module")
def predictor(training):
    torch.set_num_threads(1)
    space, known = training
    rows = stream_transfer.transfer_rows(space, dict(known), 60, progress=False)
    return stream_transfer.train_transfer([(space, rows)], epochs=400)


def _rows(known):
    return [(indices, (cost["latency"], cost["energy"])) for indices, cost in known.items() if cost is not None]


def test_features_come_from_the_shapes_alone_and_the_context_is_the_previous_layers(searched):
    space, _ = searched
    features, context = stream_transfer.choice_features(space)
    assert [len(table) for table in features] == [len(choices) for choices in space.choices] == \
        [len(table) for table in context]
    assert all(table.shape[1] == stream_transfer.FEATURES for table in features)
    assert all(np.array_equal(following, table[:, list(stream_transfer.CONTEXT_COLUMNS)])
               for table, following in zip(features, context))


def test_a_one_hot_softmax_predicts_its_mapping(searched, predictor):
    """The relaxed prediction (every pair weighted by the two layers' probabilities) is the mapping's own at a
    one-hot softmax, and moves smoothly away from it."""
    space, known = searched
    rows = [indices for indices, cost in known.items() if cost is not None][:5]
    features, context = stream_transfer.choice_features(space)
    one_hot = stream_transfer.TransferPredictor.one_hot(space, rows)
    with torch.no_grad():
        exact = predictor(one_hot, features, context)
        soft = predictor([torch.softmax(40.0 * layer, dim=1) for layer in one_hot], features, context)
    assert torch.allclose(exact, soft, atol=1e-6)
    assert np.allclose(stream_transfer.predict(predictor, space, rows), torch.exp(exact).numpy())


def test_trained_on_one_network_it_ranks_another(searched, predictor):
    """Held out: a network of other shapes, none of its mappings seen."""
    space, known = searched
    error = stream_transfer.held_out_error(predictor, space, _rows(known))
    assert error["mappings"] == len(_rows(known))
    assert error["latency_spearman"] > 0.5 and error["energy_spearman"] > 0.5


def test_the_file_keeps_the_predictor_and_its_evaluations(tmp_path, searched, predictor):
    space, known = searched
    path = tmp_path / "predictor.pt"
    stream_transfer.save_transfer(path, predictor, {"reduced": 60})
    loaded, evaluations = stream_transfer.load_transfer(path)
    rows = [indices for indices, cost in known.items() if cost is not None]
    assert evaluations == {"reduced": 60}
    assert np.array_equal(stream_transfer.predict(loaded, space, rows), stream_transfer.predict(predictor, space, rows))


@pytest.mark.parametrize("objective", stream_search.OBJECTIVES)
def test_dcp_with_the_transfer_spends_its_whole_budget_searching(searched, predictor, objective):
    space, known = searched
    best = stream_search.exhaustive_search(space, objective, known, progress=False).objective
    before = [parameter.detach().clone() for parameter in predictor.parameters()]
    result = stream_transfer.dcp_transfer(space, predictor, objective, dict(known), budget=BUDGET, seed=1)
    assert result.evaluations == BUDGET
    assert [used for used, _ in result.trace] == list(range(1, BUDGET + 1))
    assert known[result.indices][objective] == result.objective >= best
    assert all(torch.equal(old, new) for old, new in zip(before, predictor.parameters()))     # refits a copy


def test_from_the_compiler_every_searcher_costs_its_mapping_first(searched, predictor):
    space, known = searched
    default = tuple(0 for _ in space.choices)
    first = known[default]["latency"]
    results = [stream_transfer.dcp_transfer(space, predictor, "latency", dict(known), budget=BUDGET, seed=2,
                                            start_default=True),
               stream_search.random_search(space, "latency", dict(known), budget=BUDGET, seed=2, start=default),
               stream_search.optuna_search(space, "latency", dict(known), sampler="tpe", budget=BUDGET, seed=2,
                                           start=default)]
    for result in results:
        assert result.trace[0] == (1, first)
        assert result.objective <= first


@pytest.mark.parametrize("model", ["kws", "thesis"])
def test_the_shipped_predictors_never_saw_the_network_they_search(model):
    path = stream_transfer.transfer_path(model)
    _, evaluations = stream_transfer.load_transfer(path)
    assert model not in evaluations and sum(evaluations.values()) > 0


@pytest.mark.parametrize("objective", stream_search.OBJECTIVES)
def test_dcp_goes_on_from_the_best_mapping_it_has_costed(monkeypatch, searched, predictor, objective):
    """The one restart moves to every mapping that beats its best: the next mapping costed is a single-layer change
    of it (the decoding of its own one-hot), not where the transferred gradient would have gone."""
    space, known = searched
    costed = []

    class Recording(stream_search.StreamEvaluator):
        def __call__(self, indices):
            fresh = tuple(indices) not in self.seen
            value = super().__call__(indices)
            if fresh and value < float("inf"):
                costed.append((tuple(indices), value))
            return value

    monkeypatch.setattr(stream_transfer, "StreamEvaluator", Recording)
    followed = 0
    for seed in range(3):
        costed.clear()
        stream_transfer.dcp_transfer(space, predictor, objective, dict(known), budget=BUDGET, seed=seed)
        assert len(costed) == BUDGET
        best = costed[0][1]
        for (mapping, value), (following, _) in zip(costed[1:], costed[2:]):
            if value < best:
                best = value
                followed += 1
                assert sum(a != b for a, b in zip(mapping, following)) == 1
    assert followed > 0


@pytest.mark.parametrize("stretch, fitted", [(0.25, 0.25), (1.5, 1.5), (-2.0, 0.0)])
def test_the_costs_stretch_or_shrink_the_transferred_differences(searched, predictor, stretch, fitted):
    """Costs whose log differences are ``stretch`` times the transferred predictions' (about a level of their own):
    the recalibration's factor is that stretch, with no per-choice correction left; costs that reverse the
    transferred order leave the predictions' differences ignored (factor 0), never reversed."""
    space, known = searched
    rows = [indices for indices, cost in known.items() if cost is not None][:12]
    tables = stream_transfer.choice_features(space)
    model = copy.deepcopy(predictor)
    with torch.no_grad():
        transferred = model(stream_transfer.TransferPredictor.one_hot(space, rows), *tables)[:, 1].double()
    logs = 5.0 + stretch * (transferred - transferred.mean())
    evaluator = SimpleNamespace(seen={row: float(np.exp(value)) for row, value in zip(rows, logs.tolist())})
    slope, corrections = [0.0, 0.0], [torch.zeros(len(choices)) for choices in space.choices]
    stream_transfer._correct(model, slope, corrections, space, rows, evaluator, tables, 1, 0.1)
    assert 1 + slope[0] == pytest.approx(fitted, abs=0.02)
    if stretch > 0:
        assert max(float(correction.abs().max()) for correction in corrections) < 0.01
        recalibrated = model(stream_transfer.TransferPredictor.one_hot(space, rows), *tables)[:, 1].double()
        assert torch.allclose(recalibrated + slope[0] * (recalibrated - slope[1]), logs, atol=0.01)
