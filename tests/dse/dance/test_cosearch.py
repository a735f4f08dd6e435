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
