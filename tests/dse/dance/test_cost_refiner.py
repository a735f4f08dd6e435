"""The cost network's refiner: trained on the points a search over the cost network lands on, it corrects the cost
network there, and the search ranks only the cost network's cheapest points by it."""

import shutil

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import cost_refiner, training
from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.cost_argmin import CostArgminGenerator
from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.labels import LabelTable, distinct_units
from nnaccel.dse.dance.network_space import NetworkSpace
from nnaccel.dse.dance.unit_cost import UnitSumCostEstimator, unit_structure
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

torch.set_num_threads(1)
SMALL_SPACE = NetworkSpace((("c1", (24, 32)), ("k1", (5,)), ("s1", (2, 3)), ("c2", (48,)), ("k2", (3,)),
                            ("s2", (2,)), ("d1", (0, 32, 64))))
FUNCTIONS = (CostFunction("edap"), CostFunction("latency", (1.0, 1.0, 1.0)))


@pytest.fixture(scope="module")
def small():
    """The template's hardware space labelled for 12 networks, and an untrained cost network on it (its errors
    are what the refiner has to learn)."""
    space = TemplateHardwareSpace()
    units, ids = distinct_units(space, SMALL_SPACE)
    cases = space.label_cases(units)
    table = LabelTable(space, SMALL_SPACE, ids, space.label_columns(units, cases, [space.label_task(c) for c in cases]))
    torch.manual_seed(0)
    base = ev.freeze(UnitSumCostEstimator(SMALL_SPACE.encoding_width, space.encoding_width,
                                          *unit_structure(ids, SMALL_SPACE), np.log(table.costs([0], [0]))[0]))
    return table, base


def _predicted(base, table, network):
    """(points, 3) the cost network's costs of ``network`` (flat index) on every point."""
    hardware = table.hardware_space.encode(table.hardware_space.all_points())
    encoding = SMALL_SPACE.encode(SMALL_SPACE.all_points()[[network]])
    return ev.predict_costs(base, np.concatenate([np.repeat(encoding, len(hardware), 0), hardware], axis=1))


def test_it_is_trained_on_each_networks_cheapest_points_as_the_cost_network_ranks_them(small):
    table, base = small
    networks = np.array([1, 4, 9])
    pair_networks, pair_points = cost_refiner.training_points(table, base, networks, FUNCTIONS, 5)
    for network in networks:
        costs = _predicted(base, table, network)
        expected = set()
        for function in FUNCTIONS:
            expected |= set(np.argsort(function(*costs.T), kind="stable")[:5].tolist())
        assert set(pair_points[pair_networks == network].tolist()) == expected
    assert len(set(zip(pair_networks.tolist(), pair_points.tolist()))) == len(pair_networks)    # each pair once


def test_it_learns_the_cost_networks_error_on_those_points(small):
    table, base = small
    pair_networks, pair_points = cost_refiner.training_points(table, base, np.arange(12), FUNCTIONS, 8)
    refiner = cost_refiner.train_refiner(table, base, pair_networks, pair_points, epochs=400)   # one step an epoch
    features = np.concatenate([SMALL_SPACE.encode(SMALL_SPACE.all_points()[pair_networks]),
                               table.hardware_space.encode(table.hardware_space.all_points()[pair_points])], axis=1)
    truth = np.log(table.costs(pair_networks, pair_points))
    before = np.mean((np.log(ev.predict_costs(base, features)) - truth) ** 2)
    after = np.mean((np.log(ev.predict_costs(refiner, features)) - truth) ** 2)
    assert after < 0.05 * before
    assert all(not parameter.requires_grad for parameter in refiner.parameters())


def _refiner(base, candidates, scale, members=cost_refiner.MEMBERS):
    """A refiner whose correction is its random initial one times ``scale``."""
    torch.manual_seed(7)
    refiner = cost_refiner.CostRefiner(base, np.zeros(3), candidates, members=members)
    with torch.no_grad():
        for member in refiner.corrections:
            member[-1].weight.mul_(scale)
            member[-1].bias.mul_(scale)
    return ev.freeze(refiner)


def test_its_correction_is_the_mean_of_its_members(small):
    _, base = small
    refiner = _refiner(base, 4, 30.0, members=3)
    features = torch.rand(6, base.network_width + base.hardware_width)
    base_log = base.log_costs(features)
    alone = []
    for member in refiner.corrections:
        single = cost_refiner.CostRefiner(base, refiner.log_mean.numpy(), 4, members=1)
        single.corrections[0].load_state_dict(member.state_dict())
        alone.append(single.log_costs(features) - base_log)
    assert not torch.allclose(alone[0], alone[1])
    torch.testing.assert_close(refiner.log_costs(features) - base_log, sum(alone) / 3)


def test_the_search_ranks_only_the_cost_networks_cheapest_points_by_the_refined_costs(small):
    table, base = small
    space, function = table.hardware_space, FUNCTIONS[0]
    encodings = SMALL_SPACE.encode(SMALL_SPACE.all_points())
    unrefined = ev.predict_points(CostArgminGenerator(base, space, function, SMALL_SPACE), encodings)
    assert np.array_equal(unrefined, ev.predict_points(
        CostArgminGenerator(_refiner(base, 4, 0.0), space, function, SMALL_SPACE), encodings))
    assert np.array_equal(unrefined, ev.predict_points(
        CostArgminGenerator(_refiner(base, 1, 1e4), space, function, SMALL_SPACE), encodings))
    refiner = _refiner(base, 4, 1e4)
    refined = space.point_index(ev.predict_points(CostArgminGenerator(refiner, space, function, SMALL_SPACE),
                                                  encodings))
    assert not np.array_equal(space.point_index(unrefined), refined)      # the correction reorders some
    hardware = space.encode(space.all_points())
    for network, point in enumerate(refined):
        cheapest = np.argsort(function(*_predicted(base, table, network).T), kind="stable")[:4]
        features = np.concatenate([np.repeat(encodings[[network]], 4, 0), hardware[cheapest]], axis=1)
        assert point == cheapest[np.argmin(function(*ev.predict_costs(refiner, features).T))]


def test_a_refiner_next_to_the_cost_network_is_loaded_over_it(tmp_path):
    base = training.load_cost("template")
    refiner = _refiner(base, 6, 1.0)
    for name in ("cost_template.pt", "generator_template_edap.pt"):
        shutil.copy(training.data_path(name), tmp_path / name)
    training.save_refiner(refiner, "template", directory=tmp_path)
    loaded = training.load("template", "edap", directory=tmp_path)
    assert isinstance(loaded.cost, cost_refiner.CostRefiner) and loaded.cost.candidates == 6
    assert len(loaded.cost.corrections) == cost_refiner.MEMBERS
    features = torch.rand(5, base.network_width + base.hardware_width)
    assert torch.equal(loaded.cost(features), refiner(features))
    stale = torch.load(tmp_path / "refiner_template.pt", weights_only=True)
    stale["base"] = "0" * 16            # as if the cost network beside it had been trained again since
    torch.save(stale, tmp_path / "refiner_template.pt")
    with pytest.raises(ValueError, match=r"refiner_template.pt: it was trained over another cost network"):
        training.load("template", "edap", directory=tmp_path)
    del stale["members"]                # as if written before refiners had members
    torch.save(stale, tmp_path / "refiner_template.pt")
    with pytest.raises(ValueError, match=r"refiner_template.pt: not a refiner's state: no members"):
        training.load("template", "edap", directory=tmp_path)
    (tmp_path / "refiner_template.pt").unlink()
    assert not isinstance(training.load("template", "edap", directory=tmp_path).cost, cost_refiner.CostRefiner)
