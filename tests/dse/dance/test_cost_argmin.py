"""Hardware generation by search over the cost network: the point of least predicted cost, as one-hots a
co-search can forward, with the gradient reaching the network through the cost network."""

import argparse

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import command, training
from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.cost_argmin import CostArgminGenerator
from nnaccel.dse.dance.cost_refiner import CostRefiner
from nnaccel.dse.dance.hardware_space import make_hardware_space
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

torch.set_num_threads(1)


def _brute_force(cost, cost_function, encoding, space):
    """The point of least cost as ``cost`` predicts it; over a refiner, of the refined costs among the base cost
    network's ``candidates`` cheapest points."""
    features = np.concatenate([np.repeat(encoding[None], len(space), 0), space.encode(space.all_points())], axis=1)
    if isinstance(cost, CostRefiner):
        features = features[np.argsort(cost_function(*ev.predict_costs(cost.base, features).T),
                                       kind="stable")[:cost.candidates]]
    return space.decode(features[np.argmin(cost_function(*ev.predict_costs(cost, features).T)), len(encoding):])[0]


@pytest.mark.parametrize("cost_name", ["edap", "balanced"])
def test_the_generated_point_is_the_cost_networks_cheapest(cost_name):
    shipped = training.load("template", cost_name, generator="argmin")
    assert isinstance(shipped.generator, CostArgminGenerator)
    encodings = NETWORK_SPACE.encode(NETWORK_SPACE.all_points()[[0, 700, 2900]])
    points = ev.predict_points(shipped.generator, encodings)
    for encoding, point in zip(encodings, points):
        brute_force = _brute_force(shipped.cost, shipped.cost_function, encoding, TemplateHardwareSpace())
        assert np.array_equal(point, brute_force)


def test_on_the_rtl_family_it_searches_the_points_the_network_fits():
    space = make_hardware_space("rtl")
    shipped = training.load("rtl", "edap", generator="argmin", hardware_space=space)
    networks = NETWORK_SPACE.all_points()[[0, 1234, 3000]]
    encodings = NETWORK_SPACE.encode(networks)
    points = space.point_index(ev.predict_points(shipped.generator, encodings))
    fits = space.network_fits([NETWORK_SPACE.network(indices) for indices in networks])
    unmasked = [space.point_index(_brute_force(shipped.cost, shipped.cost_function, encoding, space)[None])[0]
                for encoding in encodings]
    assert not all(row[point] for row, point in zip(fits, unmasked))     # the cheapest predicted point may not fit
    log_costs = shipped.generator.log_costs(torch.as_tensor(encodings)).numpy()
    for row, point, costs in zip(fits, points, log_costs):
        assert row[point] and point == np.argmin(np.where(row, costs, np.inf))
        assert np.isinf(costs[~row]).all() and np.isfinite(costs[row]).all()


def test_its_one_hots_go_through_the_cost_network_with_a_gradient_to_the_network():
    shipped = training.load("template", "edap", generator="argmin")
    encoding = torch.tensor(NETWORK_SPACE.encode(NETWORK_SPACE.all_points()[[42]]), dtype=torch.float32,
                            requires_grad=True)
    hardware, costs = ev.Evaluator(shipped.generator, shipped.cost)(encoding)
    space = TemplateHardwareSpace()
    assert np.array_equal(space.decode(hardware.detach().numpy()), ev.predict_points(shipped.generator,
                                                                                    encoding.detach().numpy()))
    shipped.cost_function(costs[0, 0], costs[0, 1], costs[0, 2]).backward()
    assert encoding.grad.abs().sum() > 0


def test_an_unknown_generator_is_named():
    with pytest.raises(ValueError, match="generator must be one of mlp, argmin, not 'tree'"):
        training.load("template", "edap", generator="tree")


def test_the_argmin_generator_is_part_of_a_dance_task_and_of_no_other():
    arguments = argparse.Namespace(space="template", cost="edap", seeds=(0,), methods=("dance", "flops"),
                                   lambdas=(0.01,), search_epochs=1, warmup_epochs=0, retrain_epochs=1,
                                   train_images=0, generator="argmin")
    cases = command.cases(arguments)
    assert [case.get("generator") for case in cases] == ["argmin", None]
    assert cases[0]["searched_points"] == "fitting"
    arguments.generator = "mlp"                  # the trained generator's tasks are keyed as before the option
    assert all("generator" not in case for case in command.cases(arguments))
