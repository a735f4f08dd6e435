"""The cost network shaped like the cost: which choices shape each unit position, units absent from a network
gated off, area from the hardware alone, a sum of per-unit costs learned from network totals or from unit
targets."""

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.labels import distinct_units
from nnaccel.dse.dance.network_space import NETWORK_SPACE, NetworkSpace
from nnaccel.dse.dance.unit_cost import UnitSumCostEstimator, train_on_units, unit_cases, unit_structure
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


def _small_template_table():
    from nnaccel.dse.dance.labels import LabelTable

    space = TemplateHardwareSpace()
    network_space = NetworkSpace((("c1", (24, 32)), ("k1", (5,)), ("s1", (2, 3)), ("c2", (48,)), ("k2", (3,)),
                                  ("s2", (2,)), ("d1", (0, 32, 64))))
    units, ids = distinct_units(space, network_space)
    cases = space.label_cases(units)
    return LabelTable(space, network_space, ids,
                      space.label_columns(units, cases, [space.label_task(case) for case in cases]))


def test_unit_cases_are_the_distinct_units_as_the_unit_network_reads_them():
    table = _small_template_table()
    masks, _ = unit_structure(table.unit_ids, table.network_space)
    networks = np.arange(len(table.unit_ids))
    inputs, ids, last = unit_cases(table, networks, masks)
    positions = inputs[:, :4].argmax(axis=1)
    present = table.unit_ids >= 0
    assert len(set(zip(positions, ids))) == len(ids)      # each (position, unit) once
    for network in networks:
        encoding = table.network_space.encode(table.network_space.all_points()[network:network + 1])[0]
        for position in np.flatnonzero(present[network]):
            row = np.flatnonzero((inputs == np.concatenate([np.eye(4)[position], encoding * masks[position]])).all(1))
            assert len(row) == 1 and ids[row[0]] == table.unit_ids[network, position]
            assert last[row[0]] == (position == np.flatnonzero(present[network]).max())
    assert last[positions == 3].all() and not last[positions < 2].any()


def test_unit_targets_teach_held_out_networks_costs_that_their_totals_add_up_to():
    """Trained on what each unit of 8 networks adds on every point, the other 4 networks' latency and energy (whose
    units the 8 have) are the predicted units' sums, within a few percent after a short training."""
    table = _small_template_table()
    networks = np.arange(len(table.unit_ids))
    held_out = np.array([1, 6, 8, 11])
    train = np.setdiff1d(networks, held_out)
    masks, absent = unit_structure(table.unit_ids, table.network_space)
    log_mean = np.log(table.costs(np.repeat(train, 5), np.arange(5 * len(train)) * 97 % len(table.area))).mean(0)
    cost = UnitSumCostEstimator(table.network_space.encoding_width, table.hardware_space.encoding_width, masks,
                                absent, log_mean, width=32)
    torch.manual_seed(0)
    cases = train_on_units(cost, table, train, epochs=24, area_epochs=100, batch=256)
    assert cases == len(unit_cases(table, train, masks)[1]) * len(table.area)      # every template unit fits
    # the area network keeps the batch-norm statistics of every point, not those of its last batches
    hardware = torch.as_tensor(table.hardware_space.encode(table.hardware_space.all_points()), dtype=torch.float32)
    first_norm = cost.area_network[1]
    with torch.no_grad():
        first_layer = cost.area_network[0](hardware)
    assert torch.allclose(first_norm.running_mean, first_layer.mean(dim=0), atol=1e-5)
    assert first_norm.momentum == 0.1 and not cost.training
    ev.freeze(cost)
    points = np.arange(0, len(table.area), 7)
    pairs = np.array([(n, p) for n in held_out for p in points])
    features = np.concatenate([table.network_space.encode(table.network_space.all_points()[pairs[:, 0]]),
                               table.hardware_space.encode(table.hardware_space.all_points()[pairs[:, 1]])], axis=1)
    accuracy = ev.cost_accuracy(ev.predict_costs(cost, features), table.costs(pairs[:, 0], pairs[:, 1]))["accuracy"]
    assert np.all(accuracy > 0.95), accuracy


def test_rtl_unit_targets_add_the_drain_to_the_last_context_alone_and_leave_unfit_points_out():
    from nnaccel.dse.rtl.hardware_space import CLOCK_MHZ, RtlHardwareSpace

    columns = {"cycles": np.array([[100.0, 200.0], [300.0, 400.0]]),
               "end_drain_cycles": np.array([[10.0, 20.0], [30.0, 40.0]]),
               "energy_pj": np.array([[1e6, 2e6], [3e6, 4e6]]), "feasible": np.array([[1, 1], [1, 0]])}
    targets = RtlHardwareSpace().unit_latency_energy(columns, np.array([False, True]))
    clock = CLOCK_MHZ * 1e3
    assert np.array_equal(targets[0], [[100 / clock, 1e-3], [200 / clock, 2e-3]])
    assert np.array_equal(targets[1, 0], [330 / clock, 3e-3]) and np.isnan(targets[1, 1]).all()


def test_unit_targets_are_refused_where_costs_do_not_add_up_over_units():
    from types import SimpleNamespace

    from nnaccel.dse.rtl.stream_hardware_space import RtlStreamHardwareSpace

    table = SimpleNamespace(hardware_space=RtlStreamHardwareSpace())
    with pytest.raises(ValueError, match="rtl-stream space's costs do not add up over its units"):
        train_on_units(None, table, np.arange(3), epochs=1)
