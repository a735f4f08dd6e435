"""The shipped evaluators (dse/dance/data; the template's, the RTL family's and its weight-placement spaces') still
fit the network and hardware spaces: on held-out networks the generated hardware is near the exhaustive search's and
the costs near the model's."""

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance import training
from nnaccel.dse.dance.cost_functions import COST_FUNCTIONS
from nnaccel.dse.dance.cost_refiner import CostRefiner
from nnaccel.dse.dance.hardware_space import make_hardware_space
from nnaccel.dse.dance.labels import split_networks
from nnaccel.dse.dance.network_space import NETWORK_SPACE

torch.set_num_threads(1)
#: held-out networks that fit a point of the space (the small board's holds 222 of the 768 on none)
HELD_OUT_FITTING = {"rtl-stream": 768, "rtl-stream-1k": 546}


@pytest.mark.parametrize("space_name", ("template", "rtl"))
@pytest.mark.parametrize("cost", COST_FUNCTIONS)
def test_checkpoints_load_with_their_table_1(space_name, cost):
    trained = training.load(space_name, cost)
    assert set(trained.report["generator_accuracy"]) == set(make_hardware_space(space_name).names) | {"all"}
    assert trained.report["sizes"]["generator_cases_validation"] == 768
    # the cost network (under its refiner) has the members its training run's settings say
    assert isinstance(trained.cost, CostRefiner)
    assert len(trained.cost.base.members) == trained.report["settings"].get("cost_members", 1)


@pytest.mark.parametrize("space_name", ("rtl-stream", "rtl-stream-1k"))
@pytest.mark.parametrize("cost", ("edap", "latency"))
def test_the_rtl_stream_checkpoints_load_with_their_table_1(space_name, cost):
    """The weight-placement spaces (and the small board's) ship the EDAP and latency generators only (a reduced
    training)."""
    trained = training.load(space_name, cost)
    assert set(trained.report["generator_accuracy"]) == set(make_hardware_space(space_name).names) | {"all"}
    assert trained.report["sizes"]["generator_cases_validation"] == HELD_OUT_FITTING[space_name]


@pytest.mark.parametrize("space_name, count, cost", [("template", 6, "edap"), ("rtl", 3, "edap"),
                                                      ("rtl", 3, "latency"), ("rtl-stream", 3, "edap"),
                                                      ("rtl-stream", 3, "latency"), ("rtl-stream-1k", 3, "edap"),
                                                      ("rtl-stream-1k", 3, "latency")])
def test_generated_hardware_and_costs_on_held_out_networks(space_name, count, cost):
    trained = training.load(space_name, cost)
    space = make_hardware_space(space_name)
    _, held_out = split_networks(len(NETWORK_SPACE), trained.report["settings"]["seed"])
    candidates = NETWORK_SPACE.all_points()[held_out[:3 * count]]
    fits = np.isfinite(space.network_costs([NETWORK_SPACE.network(indices) for indices in candidates])[..., 0])
    chosen = candidates[fits.any(axis=1)][:count]       # the small board's space holds some networks on no point
    networks = [NETWORK_SPACE.network(indices) for indices in chosen]
    function = trained.cost_function
    _, best = space.best_hardware(networks, function)
    encodings = NETWORK_SPACE.encode(chosen)
    generated = ev.predict_points(trained.generator, encodings)
    costs = space.network_costs(networks)[np.arange(len(networks)), space.point_index(generated)]
    regret = function(*costs.T) / function(*best.T) - 1
    assert np.median(regret) < 0.05
    hardware = space.encode(generated)
    predicted = ev.predict_costs(trained.cost, np.concatenate([encodings, hardware], axis=1))
    assert np.median(np.abs(predicted / costs - 1)) < 0.1
