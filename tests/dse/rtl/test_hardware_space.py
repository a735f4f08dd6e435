"""The RTL family as DANCE's hardware space, on a small grid: a network has a cost on exactly the points it
compiles onto, that cost is the RTL cost model's (cycles at 100 MHz, energy, ALM-equivalents), the labelling
sweep's table gives the same costs and the same exhaustive search, and a co-search's answer is a point of the grid
that is built as the configuration it names."""

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import command, cosearch
from nnaccel.dse.dance import evaluator as ev
from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.labels import label
from nnaccel.dse.dance.network_space import NETWORK_SPACE, NetworkSpace
from nnaccel.dse.dance.training import TrainedEvaluator, feasible_pairs
from nnaccel.dse.rtl.cost_model import evaluate, evaluate_network, hardware_area
from nnaccel.dse.rtl.hardware_space import PARAMETERS, RtlHardwareSpace, alm_equivalents
from nnaccel.models.dqn.plan import compile_network, layer_shapes
from nnaccel.models.shared.mnist import sample_digits

SMALL_GRID = (("modules", (8, 32)), ("lanes", (4, 16)), ("format", ("binary32", "bfloat16")),
              ("multiplier_latency", (1,)), ("adder_latency", (3,)), ("row_elements", (28, 84)),
              ("activation_depth", (512, 1024)), ("weight_depth", (1024, 4096)), ("split", ("auto", "never")))
NETWORKS = [NETWORK_SPACE.network(indices) for indices in (
    (3, 0, 0, 0, 3, 1, 0),     # conv 64 3x3/2 (832 words of output), conv 40 5x5/3 (1,601 weight words), dense 10
    (0, 1, 1, 0, 0, 1, 0),     # conv 24 5x5/3, conv 40 2x2/3, dense 10
    (1, 2, 0, 2, 1, 0, 2),     # conv 32 7x7/2, conv 64 3x3/2, dense 64, dense 10
)]


def _compiles(config, network, split):
    layers = network.dqn_layers()
    weights = [(np.zeros(layer.weight_shape, np.float32), np.zeros(layer.weight_shape[-1], np.float32))
               for layer in layers]
    try:
        compile_network(config, layers, weights, split=split)
    except ValueError:
        return False
    return True


def test_a_network_costs_what_the_cost_model_says_on_exactly_the_points_it_compiles_onto():
    space = RtlHardwareSpace(parameters=SMALL_GRID)
    costs = space.network_costs(NETWORKS)
    assert costs.shape == (3, len(space), 3) == (3, 128, 3)
    for row, network in enumerate(NETWORKS):
        for index, point in enumerate(space.all_points()):
            config, split = space.config(point), space.split(point)
            fits = _compiles(config, network, split)
            assert np.isfinite(costs[row, index]).all() == fits, (network.describe(), space.describe(point))
            if fits:
                _, _, totals = evaluate_network(config, network.dqn_layers(), split=split)
                assert costs[row, index, 0] == totals["latency_cycles"] / 1e5       # 100 MHz, ms
                assert costs[row, index, 1] == pytest.approx(totals["energy_pj"] * 1e-9, rel=1e-12)
                assert costs[row, index, 2] == alm_equivalents(hardware_area(config)) / 1e3
            else:
                assert np.isinf(costs[row, index]).all()
    fitting = np.isfinite(costs[..., 0]).sum(axis=1)
    assert fitting[0] < fitting[1] and 0 < fitting[0]      # the large conv1 and conv2 need the deeper RAMs


# Every value of the parameters that shape the passes and their timing (the others change only constants).
TIMING_GRID = (("modules", (8, 16, 32)), ("lanes", (4, 8, 16)), ("format", ("bfloat16",)),
               ("multiplier_latency", (1, 3)), ("adder_latency", (1, 3)), ("row_elements", (28, 84)),
               ("activation_depth", (1024,)), ("weight_depth", (4096,)), ("split", ("auto", "never")))


def test_the_space_s_latency_is_the_compiler_s_prediction_of_the_whole_run():
    """A network's layers run as one run: a pass sets up while the one before drains, waits for its writes or
    reads early where the compiler sets a handoff and a start delay; the space's sum over layer contexts counts the
    same cycles as the compiler's counter model (which the RTL's TOTAL_CYCLES equals) on every fitting point."""
    space = RtlHardwareSpace(parameters=TIMING_GRID)
    networks = [NETWORK_SPACE.network(indices) for indices in NETWORK_SPACE.sample(np.random.default_rng(27), 10)]
    networks.append(NETWORK_SPACE.network((0, 2, 1, 1, 0, 1, 3)))     # conv 24 7x7/3, conv 48 2x2/3, dense 128
    costs = space.network_costs(networks)
    compared = overlapping = 0
    for row, network in enumerate(networks):
        for index in np.flatnonzero(np.isfinite(costs[row, :, 0])):
            config, split = space.config(space.all_points()[index]), space.split(space.all_points()[index])
            mapping, _, totals = evaluate_network(config, network.dqn_layers(), split=split, area=False)
            assert costs[row, index, 0] == totals["latency_cycles"] / 1e5, (network.describe(), index)   # ms
            # Every pass as a run of its own (what the space summed before): more cycles than the run.
            alone = sum(evaluate(config, layer_mapping, shape)["latency_cycles"] for layer_mapping, shape in
                        zip(mapping.layers, layer_shapes(config, network.dqn_layers())))
            compared += 1
            overlapping += alone > totals["latency_cycles"]
    assert compared > 500 and overlapping == compared


def test_alm_equivalents_count_blocks_at_the_reference_device_ratio():
    area = {"alms": 1000, "dsp_blocks": 87, "m10k": 397}
    assert alm_equivalents(area) == pytest.approx(1000 + 2 * 32_070)


def test_the_grid_must_name_every_parameter_in_order():
    with pytest.raises(ValueError, match="modules, lanes"):
        RtlHardwareSpace(parameters=PARAMETERS[1:])


# When another Dask cluster on the machine holds the scheduler's default HTTP port, distributed warns
# and leaves the probing socket open; neither concerns the labels.
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use", "ignore::ResourceWarning",
                            "ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_labelling_sweep_gives_the_space_s_costs_and_exhaustive_search(tmp_path):
    small = NetworkSpace((("c1", (24, 64)), ("k1", (3,)), ("s1", (2,)), ("c2", (40,)), ("k2", (5,)), ("s2", (3,)),
                          ("d1", (0, 32))))
    store = tmp_path / "labels.sqlite"
    table, report, _ = label(RtlHardwareSpace(parameters=SMALL_GRID), store_path=store, workers=1, progress=False,
                                 network_space=small)
    assert report.new == 16 and not report.failures         # modules x lanes x rows x split
    networks = [small.network(indices) for indices in small.all_points()]
    reference = RtlHardwareSpace(parameters=SMALL_GRID).network_costs(networks)
    assert np.array_equal(table.all_points(np.arange(4)), reference)
    points = np.array([0, 5, 77, 127])
    assert np.array_equal(table.costs(np.arange(4), points), reference[np.arange(4), points])
    assert table.fitting_cases() == np.isfinite(reference[..., 0]).sum() < 4 * 128
    assert np.array_equal(table.fits, np.isfinite(reference[..., 0]))

    function = CostFunction("edap")
    best, costs = table.best(np.arange(4), function)
    assert np.array_equal(best, function(reference[..., 0], reference[..., 1], reference[..., 2]).argmin(axis=1))
    assert np.isfinite(costs).all()
    pair_networks, pair_points = feasible_pairs(table, np.arange(4), 200, np.random.default_rng(0))
    assert np.isfinite(table.costs(pair_networks, pair_points)).all()
    assert np.isfinite(table.reference(np.random.default_rng(0), samples=500)).all()

    _, again, _ = label(RtlHardwareSpace(parameters=SMALL_GRID), store_path=store, workers=1, progress=False,
                            network_space=small)
    assert again.new == 0 and again.skipped == 16


def test_dance_on_the_rtl_family_answers_with_a_configuration_that_is_built_as_chosen():
    space = RtlHardwareSpace(parameters=SMALL_GRID)
    images, labels = sample_digits()
    data = (cosearch.images_tensor(images[:100]), torch.as_tensor(labels[:100].astype(np.int64)))
    test = (cosearch.images_tensor(images[100:]), torch.as_tensor(labels[100:].astype(np.int64)))
    generator = ev.freeze(ev.HardwareGenerator(NETWORK_SPACE.encoding_width, space.sizes))
    cost = ev.freeze(ev.CostEstimator(NETWORK_SPACE.encoding_width + space.encoding_width, np.zeros(3)))
    settings = cosearch.SearchSettings(search_epochs=1, warmup_epochs=0, retrain_epochs=1, batch=50)
    result = cosearch.run_method("dance", data, test, settings, space, TrainedEvaluator(generator, cost,
                                 CostFunction("edap")), CostFunction("edap"))
    network = NETWORK_SPACE.network(result.indices)
    points, costs = space.best_hardware([network], CostFunction("edap"))
    assert result.hardware_point == list(points[0]) and result.area_unit == "kALMeq"
    assert result.hardware == space.describe(points[0]) and result.area_mm2 == costs[0, 2]
    config, split = command.answer_configuration("rtl", {"hardware_point": [0, 1, 1, 0, 0, 0, 1, 1, 0]})
    assert (config.modules, config.lanes, config.fmt.name, config.row_elements, config.activation_depth,
            config.weight_depth, split) == (8, 8, "bfloat16", 28, 1024, 2048, "auto")
    assert command.answer_configuration("template", {"hardware_point": [0, 0, 0, 0]}) == (None, "auto")
