"""The template as DANCE's hardware space: heuristic mappings are legal, costs match the shared cost
model, the exhaustive search finds the minimum."""

import numpy as np
import pytest

from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.shared.layer import Layer
from nnaccel.dse.template.cost_model import evaluate
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace, layer_arrays
from nnaccel.dse.template.mapping import Mapping

SPACE = TemplateHardwareSpace()


def _sample_cases(count, seed):
    rng = np.random.default_rng(seed)
    networks = [NETWORK_SPACE.network(indices) for indices in NETWORK_SPACE.sample(rng, count)]
    layers = [layer for network in networks for layer in SPACE.cost_units(network.dqn_layers())]
    points = SPACE.all_points()[rng.integers(len(SPACE), size=len(layers))]
    return layers, points


def test_the_grid():
    assert SPACE.sizes == (17, 17, 5, 3) and len(SPACE) == 4335
    assert SPACE.encoding_width == 42
    point = SPACE.all_points()[1234]
    assert SPACE.point_index(point[None])[0] == 1234
    assert np.array_equal(SPACE.decode(SPACE.encode(point[None]))[0], point)
    assert SPACE.hardware(point).pe_x == 8 + point[0]


def test_heuristic_mappings_are_legal():
    layers, points = _sample_cases(60, seed=1)
    codes = SPACE.mapping_codes(layer_arrays(layers), points)
    for layer, point, code in zip(layers, points, codes):
        assert Mapping.from_code(code).violations(layer, SPACE.hardware(point)) == []


def test_case_costs_are_the_shared_cost_model():
    layers, points = _sample_cases(5, seed=2)
    latency, energy = SPACE.case_costs(layer_arrays(layers), points)
    codes = SPACE.mapping_codes(layer_arrays(layers), points)
    for index in range(len(layers)):
        costs = evaluate(SPACE.hardware(points[index]), Mapping.from_code(codes[index]), layers[index])
        assert latency[index] == costs["latency_cycles"] and energy[index] == costs["energy_pj"]


def test_the_array_has_a_shape():
    # WS unrolls output channels on PE_x and input channels on PE_y: 24 x 8 is busy, 8 x 24 is not.
    layer = Layer.conv(in_channels=8, in_size=10, out_channels=24, kernel=3)
    wide = SPACE.all_points()[(SPACE.all_points() == (16, 0, 4, 0)).all(axis=1)]
    tall = SPACE.all_points()[(SPACE.all_points() == (0, 16, 4, 0)).all(axis=1)]
    latency_wide, _ = SPACE.case_costs(layer_arrays([layer]), wide)
    latency_tall, _ = SPACE.case_costs(layer_arrays([layer]), tall)
    assert latency_wide[0] * 2 < latency_tall[0]


def test_network_costs_add_the_layers_and_the_search_finds_the_minimum():
    network = NETWORK_SPACE.network((0, 0, 1, 0, 0, 1, 1))
    costs = SPACE.network_costs([network])[0]
    table = SPACE.unit_table(SPACE.cost_units(network.dqn_layers()))
    assert np.allclose(costs[:, 0], table["latency_ms"].sum(axis=0))
    assert np.allclose(costs[:, 1], table["energy_mj"].sum(axis=0))
    assert np.allclose(costs[:, 2], SPACE.area())
    function = CostFunction("edap")
    points, best = SPACE.best_hardware([network], function)
    scores = function(costs[:, 0], costs[:, 1], costs[:, 2])
    assert function(*best[0]) == pytest.approx(scores.min())
    fixed_points, _ = SPACE.best_hardware([network], function, fixed={"pe_x": 3, "pe_y": 5})
    assert tuple(fixed_points[0][:2]) == (3, 5)
