"""The cost network shaped like the cost: which choices shape each unit position, units absent from a network
gated off, area from the hardware alone, and a sum of per-unit costs learned from network totals."""

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.labels import distinct_units
from nnaccel.dse.dance.network_space import NETWORK_SPACE, NetworkSpace
from nnaccel.dse.dance.unit_cost import UnitSumCostEstimator, unit_structure
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

torch.set_num_threads(1)


def _columns(network_space, *names):
    starts = np.concatenate([[0], np.cumsum(network_space.sizes)])
    columns = np.zeros(network_space.encoding_width)
    for name in names:
        choice = network_space.names.index(name)
        columns[starts[choice]:starts[choice + 1]] = 1
    return columns


def test_the_template_layers_are_shaped_by_their_choices_and_the_hidden_layer_is_absent_without_d1():
    _, ids = distinct_units(TemplateHardwareSpace(), NETWORK_SPACE)
    masks, absent = unit_structure(ids, NETWORK_SPACE)
    assert np.array_equal(masks[0], _columns(NETWORK_SPACE, "c1", "k1", "s1"))
    assert np.array_equal(masks[1], _columns(NETWORK_SPACE, "c1", "k1", "s1", "c2", "k2", "s2"))
    # conv2's output (k1, s1, c2, k2, s2) and d1: the hidden layer, or the output layer of a network without one.
    assert np.array_equal(masks[2], _columns(NETWORK_SPACE, "k1", "s1", "c2", "k2", "s2", "d1"))
    assert np.array_equal(masks[3], _columns(NETWORK_SPACE, "d1"))      # the output layer after a hidden one
    no_hidden = np.zeros(NETWORK_SPACE.encoding_width)
    no_hidden[NETWORK_SPACE.encoding_width - len(dict(NETWORK_SPACE.choices)["d1"])] = 1
    assert np.array_equal(absent[3], no_hidden) and not absent[:3].any()


def test_a_position_missing_for_no_choice_value_is_refused():
    space = NetworkSpace((("a", (1, 2)), ("b", (1, 2))))
    ids = np.array([[0, 1], [0, -1], [0, 1], [0, 1]])        # the second unit missing for a=1, b=2 only
    with pytest.raises(ValueError, match="unit position 1: which networks lack it is not a set of choice values"):
        unit_structure(ids, space)


def _estimator():
    masks = np.zeros((4, 6))
    masks[0, :2] = masks[1, 2:4] = masks[2:, :] = 1
    absent = np.zeros((4, 6))
    absent[3, 5] = 1
    return ev.freeze(UnitSumCostEstimator(6, 3, masks, absent, np.log([2.0, 3.0, 5.0]), width=16))


def test_latency_and_energy_are_the_gated_sums_and_area_reads_the_hardware_alone():
    cost = _estimator()
    features = torch.tensor([[1, 0, 0, 1, 1, 0, 0, 1, 0], [1, 0, 0, 1, 0, 1, 0, 1, 0.0]])
    units = cost.unit_costs(features)
    total = cost(features)
    assert torch.allclose(total[0, :2], units[0].sum(dim=0))
    assert torch.allclose(total[1, :2], units[1, :3].sum(dim=0))        # the fourth unit is absent
    other_network = features.clone()
    other_network[:, :6] = torch.tensor([0, 1, 1, 0, 1, 0.0])
    assert torch.equal(cost(other_network)[:, 2], total[:, 2])
    assert not torch.equal(cost(other_network)[:, :2], total[:, :2])


def test_a_sum_of_unit_costs_is_learned_from_network_totals():
    """Two positions, each costing what its own choice and the hardware point say: trained on the totals, the
    held-out combinations' latency and energy come from units seen in other networks, better than the plain
    cost network does."""
    rng = np.random.default_rng(2)
    space = NetworkSpace((("a", (1, 2, 3, 4)), ("b", (1, 2, 3, 4))))
    networks = space.all_points()
    unit_table = rng.uniform(0.5, 2.0, size=(2, 4, 3))        # (position, choice value, hardware point)
    hardware = np.eye(3)
    pairs = [(n, h) for n in range(len(networks)) for h in range(3)]
    targets = np.array([[unit_table[0, networks[n, 0], h] + unit_table[1, networks[n, 1], h],
                         2 * unit_table[0, networks[n, 0], h] + unit_table[1, networks[n, 1], h], 1.0 + h]
                        for n, h in pairs])
    features = np.array([np.concatenate([space.encode(networks[n:n + 1])[0], hardware[h]]) for n, h in pairs])
    held_out = np.isin([n for n, _ in pairs], [0, 5, 10, 15])     # each unit also occurs in a training network
    masks = np.stack([_columns(space, "a"), _columns(space, "b")])
    log_mean = np.log(targets[~held_out]).mean(axis=0)
    shaped = UnitSumCostEstimator(8, 3, masks, np.zeros_like(masks), log_mean, width=32)
    plain = ev.CostEstimator(11, log_mean, width=32)
    accuracy = {}
    for name, cost in (("shaped", shaped), ("plain", plain)):
        torch.manual_seed(0)
        ev.train_cost(cost, features[~held_out], targets[~held_out], epochs=150, batch=12, lr=3e-3)
        predicted = ev.predict_costs(cost, features[held_out])
        accuracy[name] = ev.cost_accuracy(predicted[:, :2], targets[held_out, :2])["accuracy"]
    assert np.all(accuracy["shaped"] > 0.95) and np.all(accuracy["shaped"] > accuracy["plain"]), accuracy
