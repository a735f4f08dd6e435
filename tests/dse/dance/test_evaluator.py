"""The evaluator networks learn small synthetic tasks, the accuracy measures are the stated ones,
and checkpoints load back to the same predictions."""

import copy
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance import train_evaluator, training
from nnaccel.dse.dance.best_point_cost import LogBins
from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.labels import LabelTable, distinct_units, split_networks
from nnaccel.dse.dance.network_space import NetworkSpace
from nnaccel.dse.dance.unit_cost import CostEnsemble, UnitSumCostEstimator, unit_cases, unit_structure
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

torch.set_num_threads(1)
SMALL_SPACE = NetworkSpace((("c1", (24, 32)), ("k1", (5,)), ("s1", (2, 3)), ("c2", (48,)), ("k2", (3,)),
                            ("s2", (2,)), ("d1", (0, 32, 64))))


def test_cost_accuracy_is_one_minus_the_mean_absolute_relative_error():
    target = np.array([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    predicted = np.array([[1.1, 2.0, 3.0], [0.9, 2.0, 5.0]])
    measured = ev.cost_accuracy(predicted, target)
    assert np.allclose(measured["accuracy"], [0.9, 1.0, 0.75])
    assert np.allclose(measured["mean_relative_error"], [0.0, 0.0, 0.0])
    assert np.allclose(measured["within_1_percent"], [0.0, 1.0, 0.0])


def test_msre_is_the_patents_loss():
    predicted = torch.tensor([[2.0, 1.0, 1.0]])
    target = torch.tensor([[1.0, 2.0, 1.0]])
    assert float(ev.msre(predicted, target)) == pytest.approx(1.0 + 0.25)


def test_mare_is_what_the_accuracy_misses_and_leads_a_two_valued_target_to_the_nearer_value():
    target = torch.tensor([[1.0, 2.0, 4.0], [1.0, 2.0, 4.0]])
    predicted = torch.tensor([[1.1, 2.0, 3.0], [0.9, 2.0, 5.0]])
    accuracy = ev.cost_accuracy(predicted.numpy(), target.numpy())["accuracy"]
    assert float(ev.mare(predicted, target)) == pytest.approx(float((1 - accuracy).sum()))
    # One prediction for three networks alike but for which side of a near-tie their best point fell: 1, 1, 2.
    constants = torch.linspace(0.5, 2.5, 201)
    sides = torch.tensor([[1.0], [1.0], [2.0]])
    by_mare = constants[np.argmin([float(ev.mare(c.expand(3, 1), sides)) for c in constants])]
    by_msre = constants[np.argmin([float(ev.msre(c.expand(3, 1), sides)) for c in constants])]
    assert float(by_mare) == pytest.approx(1.0) and 1.05 < float(by_msre) < 1.2       # MSRE's: 10 / 9


def test_fit_shares_are_per_parameter_value_the_share_of_its_points_a_network_fits():
    space = SimpleNamespace(all_points=lambda: np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 0], [2, 1]]),
                            sizes=(3, 2))
    fits = np.array([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=bool)
    assert training.fit_shares(space, fits) == pytest.approx(np.array([[1, 0.5, 0, 2 / 3, 1 / 3], [1, 1, 1, 1, 1]]))


def test_the_split_leaves_out_the_networks_that_fit_no_point():
    fits = np.ones((20, 3), dtype=bool)
    fits[[2, 7, 15]] = False                            # three networks fit no point
    fits[[4, 9], 1:] = False                            # two fit one point: they stay
    train, held_out, unfit = training.fitting_split(SimpleNamespace(fits=fits), seed=0)
    all_train, all_held_out = split_networks(20, 0)
    kept = np.sort(np.concatenate([train, held_out]))
    assert unfit == 3 and np.array_equal(kept, np.setdiff1d(np.arange(20), [2, 7, 15]))
    assert set(train) <= set(all_train) and set(held_out) <= set(all_held_out)


def test_the_network_without_forwarding_reads_fit_shares_only_where_some_network_does_not_fit():
    count = len(SMALL_SPACE.all_points())
    space = SimpleNamespace(all_points=lambda: np.array([[0], [1]]), sizes=(2,))
    train = np.arange(count)
    everywhere = SimpleNamespace(network_space=SMALL_SPACE, hardware_space=space, fits=np.ones((count, 2), dtype=bool))
    odd_ones_on_one_point = SimpleNamespace(network_space=SMALL_SPACE, hardware_space=space,
                                            fits=np.stack([np.ones(count), train % 2], axis=1).astype(bool))
    plain = training.without_forwarding_inputs(everywhere, train)
    assert plain.shape[1] == SMALL_SPACE.encoding_width + SMALL_SPACE.layer_sizes(SMALL_SPACE.all_points()).shape[1]
    with_shares = training.without_forwarding_inputs(odd_ones_on_one_point, train)
    assert np.array_equal(with_shares[:, :plain.shape[1]], plain) and with_shares.shape[1] == plain.shape[1] + 2
    assert np.all(with_shares[:, -2] == 0)              # every network fits value 0's point: a constant, zeroed
    assert np.all((with_shares[:, -1] > 0) == (train % 2 == 1))


def test_the_generator_learns_a_lookup_and_emits_one_hots():
    rng = np.random.default_rng(0)
    inputs = np.eye(8, dtype=np.float32)[rng.integers(8, size=400)]
    labels = np.stack([inputs.argmax(axis=1) % 3, inputs.argmax(axis=1) // 3], axis=1)
    generator = ev.HardwareGenerator(8, (3, 3))
    ev.train_generator(generator, inputs, [np.eye(3)[labels[:, 0]], np.eye(3)[labels[:, 1]]], epochs=40, lr=3e-3)
    assert (ev.predict_points(generator, inputs) == labels).mean() > 0.95
    one_hot = generator.one_hot(torch.as_tensor(inputs[:5]), noise=True)
    assert one_hot.shape == (5, 6) and torch.all(one_hot.sum(dim=1) == 2)


def test_the_cost_network_fits_positive_costs_with_forwarded_inputs():
    rng = np.random.default_rng(1)
    features = rng.integers(2, size=(2000, 6)).astype(np.float32)
    targets = np.exp(features @ rng.uniform(-1, 1, size=(6, 3))) * np.array([1e-3, 1e-2, 2.0])
    cost = ev.CostEstimator(6, np.log(targets).mean(axis=0))
    before = ev.cost_accuracy(ev.predict_costs(ev.freeze(ev.CostEstimator(6, np.log(targets).mean(axis=0))),
                                               features), targets)["accuracy"]
    for parameter in cost.parameters():
        parameter.requires_grad_(True)
    ev.train_cost(cost, features, targets, epochs=30, batch=128)
    after = ev.cost_accuracy(ev.predict_costs(cost, features), targets)["accuracy"]
    assert np.all(after > 0.9) and np.all(after > before)


def test_the_network_without_forwarding_learns_its_costs_and_where_the_best_point_lies():
    rng = np.random.default_rng(3)
    kinds = rng.integers(8, size=2000)
    inputs = np.eye(8, dtype=np.float32)[kinds]
    costs = np.exp(inputs @ rng.uniform(-1, 1, size=(8, 3)))
    best = np.stack([kinds % 3, kinds // 3], axis=1)                # the best point's two parameter values
    shares = [np.eye(3)[best[:, 0]], np.eye(3)[best[:, 1]]]
    members = training.train_without_forwarding(inputs, costs, shares, seeds=(0, 1), epochs=40)
    accuracy = ev.cost_accuracy(training.without_forwarding_costs(members, inputs), costs)["accuracy"]
    assert np.all(accuracy > 0.95), accuracy
    features = torch.as_tensor(inputs)
    for network in members:
        with torch.no_grad():
            _, area_logits, hardware_logits = network.outputs(features, torch.log(torch.as_tensor(costs[:, 2])))
            costs_read = network(features)
            hidden = network.hidden(features)       # at use the latency reads the network's own area readout
            own_area = network.area_bins.least_relative_error(torch.softmax(area_logits, dim=1))
            given_own = network.latency_energy(hidden, own_area)
            given_more = network.latency_energy(hidden, own_area + 1.0)
        assert torch.equal(costs_read[:, :2], torch.exp(given_own))
        assert torch.equal(costs_read[:, 2], torch.exp(own_area).float())
        assert not torch.allclose(given_more[:, 0], given_own[:, 0])     # the latency follows the area it is given
        assert torch.equal(given_more[:, 1], given_own[:, 1])            # the energy does not read it
        silenced = copy.deepcopy(network)                                       # the costs never read the head
        torch.nn.init.normal_(silenced.hardware.weight)
        with torch.no_grad():
            assert torch.equal(silenced(features), costs_read)
        assert area_logits.shape == (2000, len(network.area_bins.centres))
        assert [tuple(part.shape) for part in hardware_logits] == [(2000, 3), (2000, 3)]
        assert all((part.argmax(dim=1).numpy() == best[:, column]).mean() > 0.95
                   for column, part in enumerate(hardware_logits))
    disagreeing = copy.deepcopy(members[1])         # members read as one: the area of their mean distribution,
    torch.nn.init.normal_(disagreeing.area.bias)     # each latency given it (a second member whose area differs)
    pair = [members[0], disagreeing]
    with torch.no_grad():
        hidden = [network.hidden(features) for network in pair]
        distributions = [torch.softmax(network.area(layer), dim=1) for network, layer in zip(pair, hidden)]
        area = members[0].area_bins.least_relative_error(sum(distributions) / 2)
        log_latency_energy = [network.latency_energy(layer, area) for network, layer in zip(pair, hidden)]
        alone = members[0].area_bins.least_relative_error(distributions[0])
    together = training.without_forwarding_costs(pair, inputs)
    assert not torch.equal(area, alone)
    assert np.allclose(together[:, :2], torch.exp(sum(log_latency_energy) / 2).numpy())
    assert np.array_equal(together[:, 2], torch.exp(area).float().numpy())


def test_log_bins_spread_a_value_around_its_bin_and_read_the_value_of_least_relative_error():
    bins = LogBins(0.0, np.log(4.0), count=201, spread=2.0)
    targets = bins.targets(torch.tensor([np.log(2.0)], dtype=torch.float64))
    assert targets.shape == (1, 201) and targets.sum().item() == pytest.approx(1.0)
    assert targets.argmax().item() == 100 and targets[0, 98].item() == pytest.approx(targets[0, 102].item())
    # two modes, 1 and 3, equally likely: guessing 1 errs by 2/3 if it is 3; guessing 3 errs by 2 if it is 1
    one, three = int(torch.argmin((bins.centres - 0.0).abs())), int(torch.argmin((bins.centres - np.log(3)).abs()))
    both = torch.zeros(2, 201, dtype=torch.float64)
    both[0, [one, three]] = 0.5
    both[1, [one, three]] = torch.tensor([0.2, 0.8], dtype=torch.float64)     # 0.2 x 2 < 0.8 x 2/3: now 3
    assert torch.equal(bins.least_relative_error(both), bins.centres[[one, three]])
    with pytest.raises(ValueError, match="high > low"):
        LogBins(1.0, 1.0)


class _Stop(Exception):
    pass


def test_cost_training_stopped_after_an_epoch_resumes_to_the_uninterrupted_result(tmp_path):
    rng = np.random.default_rng(2)
    features = rng.integers(2, size=(600, 6)).astype(np.float32)
    targets = np.exp(features @ rng.uniform(-1, 1, size=(6, 3)))

    def trained(**options):
        torch.manual_seed(7)
        return ev.train_cost(ev.CostEstimator(6, np.log(targets).mean(axis=0)), features, targets, epochs=3,
                             batch=128, **options)

    def stop():
        raise _Stop

    uninterrupted = trained()
    state = tmp_path / "state" / "cost.pt"
    with pytest.raises(_Stop):
        trained(checkpoint=state, progress=stop)          # killed after its first epoch
    assert torch.load(state, weights_only=True)["epochs_done"] == 1
    resumed = trained(checkpoint=state)
    assert torch.load(state, weights_only=True)["epochs_done"] == 3
    for name, value in uninterrupted.state_dict().items():
        assert torch.equal(resumed.state_dict()[name], value), name


def test_the_training_state_is_named_by_space_and_settings(tmp_path):
    settings = training.EvaluatorSettings()
    path = training.training_state_path(tmp_path, "template", settings)
    assert path.parent == tmp_path and path.name.startswith("cost_template_training_")
    assert training.training_state_path(tmp_path, "template", training.EvaluatorSettings()) == path
    assert training.training_state_path(tmp_path, "template", training.EvaluatorSettings(cost_epochs=40)) != path
    assert training.training_state_path(tmp_path, "rtl", settings) != path
    # the network without forwarding's epochs do not shape the cost network: its state resumes
    longer = training.EvaluatorSettings(without_forwarding_epochs=9)
    assert training.training_state_path(tmp_path, "template", longer) == path
    # a cost network's members: the first keeps the one-member name (a run with more members resumes it)
    pair = training.EvaluatorSettings(cost_members=2)
    assert training.training_state_path(tmp_path, "template", pair) == path
    assert training.training_state_path(tmp_path, "template", pair, 1) not in (
        path, training.training_state_path(tmp_path, "template", training.EvaluatorSettings(seed=1)))


def test_a_generator_ensemble_averages_its_members_log_probabilities():
    """One member reads as that generator (the same argmax and straight-through one-hots); two members pick the value
    whose mean log-probability is highest, even where neither member alone would."""
    torch.manual_seed(0)
    first, second = ev.freeze(ev.HardwareGenerator(4, (3, 2))), ev.freeze(ev.HardwareGenerator(4, (3, 2)))
    encoding = torch.rand(64, 4)
    assert torch.equal(ev.GeneratorEnsemble([first]).one_hot(encoding), first.one_hot(encoding))
    pair = ev.GeneratorEnsemble([first, second])
    for head, (one, two) in enumerate(zip(first(encoding), second(encoding))):
        mean = (torch.log_softmax(one, dim=1) + torch.log_softmax(two, dim=1)) / 2
        assert torch.allclose(pair(encoding)[head], mean)
    assert pair.sizes == (3, 2) and pair.one_hot(encoding).shape == (64, 5)


def test_end_to_end_error_sources_split_the_error_by_the_generated_points_regret():
    error = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 1.0], [4.0, 2.0], [10.0, 0.0]])
    sources = training.end_to_end_error_sources(error, np.array([0.0, 5e-4, 0.02, np.inf, 0.005]))
    assert {band: source["networks"] for band, source in sources.items()} == {
        "optimum": 1, "within_0.1_percent": 1, "within_1_percent": 1, "beyond_1_percent": 1, "unfit": 1}
    assert sources["within_1_percent"]["error_share"] == [0.5, 0.0]
    assert sources["unfit"]["error_share"] == [0.2, 0.5]


def test_checkpoints_round_trip(tmp_path):
    generator = ev.freeze(ev.GeneratorEnsemble([ev.HardwareGenerator(5, (2, 3)), ev.HardwareGenerator(5, (2, 3))]))
    masks = np.ones((4, 5))
    cost = ev.freeze(UnitSumCostEstimator(5, 5, masks, np.zeros((4, 5)), np.zeros(3), width=16))
    trained = {"edap": training.TrainedEvaluator(generator, cost, CostFunction("edap"), {"note": 1})}
    training.save(trained, "toy", directory=tmp_path)
    loaded = training.load("toy", "edap", directory=tmp_path)
    encoding = torch.eye(5)
    assert torch.equal(loaded.generator.one_hot(encoding), generator.one_hot(encoding))
    features = torch.rand(4, 10)
    assert torch.equal(loaded.cost(features), cost(features))
    assert loaded.report == {"note": 1}
    with pytest.raises(FileNotFoundError, match="python -m nnaccel.dse.dance.train_evaluator"):
        training.load("toy", "energy", directory=tmp_path)


def test_a_cost_ensemble_is_its_members_geometric_mean_and_round_trips(tmp_path):
    torch.manual_seed(0)
    masks = np.ones((4, 5))
    members = [ev.freeze(UnitSumCostEstimator(5, 5, masks, np.zeros((4, 5)), np.zeros(3), width=16)) for _ in range(2)]
    for member in members:      # move the outputs apart from their initial ones
        for parameter in member.parameters():
            parameter.add_(0.1 * torch.randn_like(parameter))
    ensemble = ev.freeze(CostEnsemble(members))
    features = torch.rand(6, 10)
    first, second = (member(features) for member in members)
    assert not torch.allclose(first, second)
    assert torch.allclose(ensemble(features), torch.sqrt(first * second))
    generator = ev.freeze(ev.GeneratorEnsemble([ev.HardwareGenerator(5, (2, 3))]))
    training.save({"edap": training.TrainedEvaluator(generator, ensemble, CostFunction("edap"))}, "toy",
                  directory=tmp_path)
    loaded = training.load_cost("toy", directory=tmp_path)
    assert isinstance(loaded, CostEnsemble) and torch.equal(loaded(features), ensemble(features))


def test_table_1_on_a_small_space_and_again_from_the_checkpoints(tmp_path):
    """A tiny training on 12 networks: every parameter within 1 % at least as often as exact, the report's parts,
    and a loaded checkpoint measured again gives the same generator figures."""
    space = TemplateHardwareSpace()
    units, ids = distinct_units(space, SMALL_SPACE)
    cases = space.label_cases(units)
    table = LabelTable(space, SMALL_SPACE, ids, space.label_columns(units, cases, [space.label_task(c) for c in cases]))
    settings = training.EvaluatorSettings(cost_cases=300, validation_cases=50, cost_epochs=2, generator_epochs=2,
                                          without_forwarding_epochs=2, near_optimal_points=3)
    trained = training.train_evaluators(table, settings, ("edap",))["edap"]
    report = trained.report
    assert len(trained.generator.members) == settings.generator_members
    for name in (*space.names, "all"):
        assert report["generator_within_1_percent"][name] >= report["generator_accuracy"][name]
    assert set(report["optimum_rank_correlation"]) == {"evaluator", "macs"}
    assert any("within 1 %" in line for line in training.format_table_1(report))
    training.save({"edap": trained}, "small", directory=tmp_path)
    again = training.remeasure(table, training.load("small", "edap", directory=tmp_path))
    assert again["generator_accuracy"] == report["generator_accuracy"]
    assert again["cost_without_forwarding"] == report["cost_without_forwarding"]
    torch.manual_seed(1)
    kept = training.train_evaluators(table, settings, ("edap",), cost=trained.cost)["edap"]
    assert kept.cost is trained.cost and kept.report["cost_with_forwarding"] == report["cost_with_forwarding"]
    assert kept.report["sizes"] == report["sizes"]
    on_units = training.train_evaluators(table, dataclasses.replace(settings, cost_targets="units"), ("edap",),
                                         cost=trained.cost)["edap"]
    train, _, _ = training.fitting_split(table, settings.seed)
    masks, _ = unit_structure(ids, SMALL_SPACE)     # a kept network's cases are its units', every unit on every point
    assert on_units.report["sizes"]["cost_cases_train"] == len(unit_cases(table, train, masks)[0]) * len(table.area)
    torch.manual_seed(2)        # whatever the process drew before, the members start from their own seeds
    again = training.train_evaluators(table, settings, ("edap",), cost=trained.cost)["edap"]
    for first, second in zip(kept.generator.state_dict().values(), again.generator.state_dict().values()):
        assert torch.equal(first, second)
    torch.manual_seed(3)        # and so do the cost network's
    single = training.train_evaluators(table, settings, ("edap",))["edap"]
    for first, second in zip(trained.cost.state_dict().values(), single.cost.state_dict().values()):
        assert torch.equal(first, second)
    # two cost networks from consecutive seeds, read as one: the first is the one-member run's
    torch.manual_seed(4)
    pair = training.train_evaluators(table, dataclasses.replace(settings, cost_members=2), ("edap",))["edap"]
    assert isinstance(pair.cost, CostEnsemble) and len(pair.cost.members) == 2
    first, second = (dict(member.named_parameters()) for member in pair.cost.members)
    for name, value in single.cost.named_parameters():
        assert torch.equal(first[name], value), name
        assert not torch.equal(second[name], value), name


def test_the_generators_targets_are_the_near_optimal_points_shares():
    """Each network's weights are a distribution peaking at the exhaustive search's point and falling by e per
    GENERATOR_TEMPERATURE of excess cost; the per-parameter shares are its marginals."""
    space = TemplateHardwareSpace()
    units, ids = distinct_units(space, SMALL_SPACE)
    cases = space.label_cases(units)
    table = LabelTable(space, SMALL_SPACE, ids, space.label_columns(units, cases, [space.label_task(c) for c in cases]))
    function = CostFunction("edap")
    networks = np.arange(len(ids))
    weights = table.near_optimal_weights(networks, function, training.GENERATOR_TEMPERATURE)
    best, _ = table.best(networks, function)
    assert np.allclose(weights.sum(axis=1), 1) and np.array_equal(weights.argmax(axis=1), best)
    costs = table.all_points(networks)
    excess = function(*costs.transpose(2, 0, 1)) / function(*costs[networks, best].T)[:, None] - 1
    assert np.allclose(weights / weights.max(axis=1, keepdims=True), np.exp(-excess / training.GENERATOR_TEMPERATURE))
    shares = training.near_optimal_shares(table, networks, function)
    points = space.all_points()
    for column, share in enumerate(shares):
        assert np.allclose(share[0, points[best[0], column]],
                           weights[0, points[:, column] == points[best[0], column]].sum())
        assert np.allclose(share.sum(axis=1), 1)


@pytest.mark.parametrize("argv, message", [(["--generator-members", "0"], "must be at least 1, not 0"),
                                           (["--measure", "--generators-only"], "not allowed with argument"),
                                           (["--refiner", "--measure"], "not allowed with argument"),
                                           (["--refiner-candidates", "0"], "must be at least 1, not 0"),
                                           (["--refiner-members", "0"], "must be at least 1, not 0"),
                                           (["--without-forwarding-epochs", "0"], "must be at least 1, not 0")])
def test_train_evaluator_rejects_bad_options_with_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        train_evaluator.main(argv)
    assert stopped.value.code == 2 and message in capsys.readouterr().err
