"""The co-search on a few hundred digits: every method returns a candidate of the space and its
exactly generated hardware; the hardware terms are the stated ones."""

import argparse

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import command, cosearch, training
from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.labels import distinct_units
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.training import TrainedEvaluator
from nnaccel.dse.dance.unit_cost import UnitSumCostEstimator, unit_structure
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace
from nnaccel.models.shared.mnist import sample_digits

torch.set_num_threads(1)
SETTINGS = cosearch.SearchSettings(search_epochs=1, warmup_epochs=0, retrain_epochs=1, batch=50)


@pytest.fixture(scope="module")
def digits():
    images, labels = sample_digits()
    data = (cosearch.images_tensor(images[:150]), torch.as_tensor(labels[:150].astype(np.int64)))
    test = (cosearch.images_tensor(images[150:]), torch.as_tensor(labels[150:].astype(np.int64)))
    return data, test


@pytest.fixture(scope="module")
def untrained_evaluator():
    space = TemplateHardwareSpace()
    generator = ev.freeze(ev.HardwareGenerator(NETWORK_SPACE.encoding_width, space.sizes))
    cost = ev.freeze(UnitSumCostEstimator(NETWORK_SPACE.encoding_width, space.encoding_width,
                                          *unit_structure(distinct_units(space)[1], NETWORK_SPACE), np.zeros(3)))
    return TrainedEvaluator(generator, cost, CostFunction("edap"))


@pytest.mark.parametrize("method", cosearch.METHODS)
def test_every_method_returns_a_candidate_on_its_exact_hardware(method, digits, untrained_evaluator):
    space = TemplateHardwareSpace()
    data, test = digits
    result = cosearch.run_method(method, data, test, SETTINGS, space, untrained_evaluator, CostFunction("edap"))
    network = NETWORK_SPACE.network(result.indices)
    points, costs = space.best_hardware([network], CostFunction("edap"))
    if method != "edd":     # EDD keeps the PE counts it searched; the others take the unrestricted optimum
        assert result.hardware == space.describe(points[0])
        assert result.edap == pytest.approx(float(np.prod(costs[0])))
    assert 0 <= result.accuracy <= 1 and result.macs == network.macs
    assert len(result.architecture_probabilities) == len(NETWORK_SPACE.sizes)


def test_a_network_that_fits_no_point_is_reported_without_hardware(digits):
    """On the small board's space (1,024 weight words on chip and as the tile buffer) conv 24x3x3/2, conv 40x5x5/2
    fits no point: the result says so, with no costs, and still goes into the result store as JSON."""
    from nnaccel.dse.dance.hardware_space import make_hardware_space
    from nnaccel.dse.dance.network_space import NetworkSpace
    from nnaccel.dse.shared.store import canonical_json

    one_network = NetworkSpace((("c1", (24,)), ("k1", (3,)), ("s1", (2,)), ("c2", (40,)), ("k2", (5,)), ("s2", (2,)),
                                ("d1", (128,))))
    data, test = digits
    result = cosearch.run_method("baseline", data, test, SETTINGS, make_hardware_space("rtl-stream-1k"), None,
                                 CostFunction("edap"), space=one_network)
    assert not result.fits and result.edap is None and result.latency_ms is None and result.hardware_point == []
    assert result.hardware == "fits no point of the space" and 0 <= result.accuracy <= 1
    assert result.first_choice == "" and result.candidates_checked == 1    # the space holds no other network
    assert '"fits":false' in canonical_json(result.to_dict())


def test_the_flops_term_is_the_macs_of_the_sampled_network():
    macs = cosearch._mac_tensor(NETWORK_SPACE)
    for indices in NETWORK_SPACE.sample(np.random.default_rng(3), 5):
        one_hots = [torch.nn.functional.one_hot(torch.tensor(int(i)), size).float()
                    for i, size in zip(indices, NETWORK_SPACE.sizes)]
        assert float(cosearch._contract(macs, one_hots)) == NETWORK_SPACE.network(indices).macs


def test_an_unknown_method_is_named(digits):
    with pytest.raises(ValueError, match="method must be one of"):
        cosearch.search("random", digits[0], SETTINGS)


def test_a_task_names_the_evaluator_it_searches_with_so_a_retrained_one_searches_again(monkeypatch, tmp_path):
    arguments = argparse.Namespace(space="rtl", cost="latency", seeds=(0, 1), methods=("dance",), lambdas=(0.01,),
                                   search_epochs=1, warmup_epochs=0, retrain_epochs=1, train_images=0)
    shipped = command.cases(arguments)
    assert [case["evaluator"] for case in shipped] == [training.checkpoint_digest("rtl", "latency")] * 2
    retrained = tmp_path / "cost_rtl.pt"
    retrained.write_bytes(training.cost_checkpoint("rtl").read_bytes() + b"\0")
    monkeypatch.setattr(training, "cost_checkpoint", lambda space_name, directory=None: retrained)
    again = command.cases(arguments)
    assert all(old["evaluator"] != new["evaluator"] for old, new in zip(shipped, again))
    assert [{**case, "evaluator": ""} for case in shipped] == [{**case, "evaluator": ""} for case in again]


SMALL_BOARD_CHOICES = (("c1", (24,)), ("k1", (3,)), ("s1", (2,)), ("c2", (40, 8)), ("k2", (5,)), ("s2", (2,)),
                       ("d1", (128,)))


def test_probable_networks_are_in_decreasing_probability():
    from nnaccel.dse.dance.network_space import NetworkSpace

    probabilities = [np.array([0.2, 0.8]), np.array([0.6, 0.3, 0.1])]
    space = NetworkSpace((("c1", (24, 32)), ("k1", (3, 5, 7))))
    order = cosearch.probable_networks(probabilities, space)
    assert [list(row) for row in order] == [[1, 0], [1, 1], [0, 0], [1, 2], [0, 1], [0, 2]]   # .48 .24 .12 .08 .06


def test_an_answer_that_fits_no_point_gives_way_to_the_most_probable_that_fits():
    """On the small board conv 24x3x3/2, conv 40x5x5/2 fits no point and conv 24x3x3/2, conv 8x5x5/2 does: a search
    that chose the first answers with the second, one more network checked; with room for one check, none fits."""
    from nnaccel.dse.dance.hardware_space import make_hardware_space
    from nnaccel.dse.dance.network_space import NetworkSpace

    space = NetworkSpace(SMALL_BOARD_CHOICES)
    board = make_hardware_space("rtl-stream-1k")
    chosen = [0, 0, 0, 0, 0, 0, 0]
    probabilities = [np.ones(size) / size for size in space.sizes]
    probabilities[3] = np.array([0.7, 0.3])
    edap = CostFunction("edap")
    assert not np.isfinite(board.best_hardware([space.network(chosen)], edap)[1]).all()
    indices, points, costs, checked = cosearch.fitting_answer(chosen, probabilities, board, edap, space=space)
    assert indices == [0, 0, 0, 1, 0, 0, 0] and checked == 2 and np.isfinite(costs).all()
    expected_points, expected_costs = board.best_hardware([space.network(indices)], edap)
    assert (points == expected_points).all() and (costs == expected_costs).all()
    unfit = cosearch.fitting_answer(chosen, probabilities, board, edap, space=space, limit=1)
    assert unfit[0] == chosen and unfit[3] == 1 and not np.isfinite(unfit[2]).all()
