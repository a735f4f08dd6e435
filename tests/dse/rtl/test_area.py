"""The RTL family's area table: the M10K rule against every RAM Yosys mapped, the matrix module's lane model
against its measurements, the composition against the measured components, and the fit on configurations it has
not seen.  (The composition against whole-design Yosys runs, minutes each, is benchmarks/dse/bench_rtl_area.py.)"""

import dataclasses

import numpy as np
import pytest

from nnaccel.dse.rtl.area import FEATURES, RESOURCE_FIELDS, component_features, compose, fit_table, ram_cells, table
from nnaccel.dse.rtl.hardware import config_from_json
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import BFLOAT16


def test_the_ram_rule_is_what_yosys_mapped():
    """M10K blocks exactly; LUTs (read multiplexers over blocks in depth, write enables) within 2 per RAM."""
    rams = []
    for entry in table()["measurements"]["configs"]:
        config = config_from_json(entry["config"])
        bits = config.fmt.width
        rams += [((config.lanes * bits, config.weight_depth, None), entry["cells"]["weight_slice"]),
                 ((config.row_elements * bits, config.activation_depth, bits), entry["cells"]["activation_ram"])]
    rams += [((ram["width"], ram["depth"], ram["granularity"]), ram["cells"])
             for ram in table()["measurements"]["rams"]]
    assert any(depth >= 4096 for (_, depth, _), _ in rams)
    for shape, measured in rams:
        rule = ram_cells(*shape)
        assert (rule["m10k"], rule["memory_bits"], rule["flip_flops"]) == \
            (measured["m10k"], measured["memory_bits"], measured["flip_flops"]), shape
        assert abs(rule["luts"] - measured["luts"]) <= 2, shape


def test_the_matrix_module_model_reproduces_its_measurements():
    models = table()["matrix_module"]
    for entry in table()["measurements"]["matrix_module"]:
        model = models[f"{entry['fmt']}/{entry['multiplier_latency']}/{entry['adder_latency']}"]
        for field in RESOURCE_FIELDS:
            assert model["fixed"][field] + entry["lanes"] * model["per_lane"][field] == \
                pytest.approx(entry["cells"][field])
    assert len(models) == 3 * 3 * 3


@pytest.mark.xfail(strict=True, reason="known defect (issue 12): with the 16-module and 40-element fit configurations "
                   "re-measured, two fitted components miss the in-sample bound: the writer of 4 x 8 binary32 r40 by "
                   "10.3 % (6,296 vs 7,016 LUTs) and the sequencer of 16 x 2 binary32 by 44 LUTs (bound 43.6); the "
                   "composition still holds within 5 % of whole-design runs (benchmarks/dse/bench_rtl_area.py)")
def test_the_composition_is_close_to_the_components_it_was_fitted_on():
    for entry in table()["measurements"]["configs"]:
        config = config_from_json(entry["config"])
        parts, _ = compose(config)
        for component in FEATURES:
            instances, cells = parts[component]
            for field in ("luts", "carry", "flip_flops"):
                measured = entry["cells"][component][field] * instances
                assert abs(cells[field] - measured) <= max(0.1 * measured, 40), (config.module_name, component,
                                                                                  field, cells[field], measured)


def test_the_fitted_components_of_a_configuration_left_out_of_the_fit():
    """Held out: each fit configuration's fitted components (sequencer, feeder, writer, argmax, control, top)
    predicted by a fit on the other configurations; their sum's LUTs, carry bits and flip-flops within 5 %."""
    measured = [(config_from_json(entry["config"]), entry["cells"]) for entry in table()["measurements"]["configs"]]
    assert len(measured) >= 8
    for index, (config, cells) in enumerate(measured):
        held_out = fit_table(measured[:index] + measured[index + 1:], {})["components"]
        for field in ("luts", "carry", "flip_flops"):
            predicted = sum(component_features(component, config) @ np.array(held_out[component]["coefficients"][field])
                            for component in FEATURES)
            actual = sum(cells[component][field] for component in FEATURES)
            assert predicted == pytest.approx(actual, rel=0.05), (config.module_name, field, predicted, actual)


def test_the_thesis_configuration():
    parts, total = compose(DqnConfig())
    assert total.dsp_blocks == 256 and parts["matrix_module"][0] == 16
    assert total.m10k == 16 * 206 + 2 * 336          # 512 x 4096 in 2K x 5 mode; 84 x 32 bits in 1K x 10
    assert total.memory_bits == 16 * 4096 * 512 + 2 * 1024 * 84 * 32


def test_the_max_mode_adds_its_measured_cells_to_each_matrix_module():
    """The max mode's cells (measured module by module at 2 and 4 lanes, binary32, latencies 2 / 2; 16 lanes
    measured as a check) on top of the plain module's, per module; a format it was not measured for named in the
    error."""
    for entry in table()["measurements"]["matrix_module_max"]:
        model = table()["matrix_module_max"][f"{entry['fmt']}/{entry['multiplier_latency']}/{entry['adder_latency']}"]
        for field in RESOURCE_FIELDS:          # the line through 2 and 4 lanes; 16 lanes (a check) within 3 %
            assert model["fixed"][field] + entry["lanes"] * model["per_lane"][field] == \
                pytest.approx(entry["added_cells"][field], rel=0.03 if entry.get("check_only") else 1e-9)
    assert any(entry.get("check_only") for entry in table()["measurements"]["matrix_module_max"])
    plain, maximum = DqnConfig(), dataclasses.replace(DqnConfig(), max_pooling=True)
    (modules, plain_cells), (_, max_cells) = compose(plain)[0]["matrix_module"], compose(maximum)[0]["matrix_module"]
    added = {field: max_cells[field] - plain_cells[field] for field in RESOURCE_FIELDS}
    assert added["luts"] == modules * round(-3 + 16 * 317.5) and added["flip_flops"] == modules * (7 + 16 * 132)
    assert added["mul27"] == added["m10k"] == 0
    assert 1.10 < compose(maximum)[1].alms / compose(plain)[1].alms < 1.25
    with pytest.raises(ValueError, match="no matrix module's max mode for bfloat16 with multiplier latency 2"):
        compose(dataclasses.replace(maximum, fmt=BFLOAT16))
