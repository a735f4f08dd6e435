"""``nnaccel dse validate`` on the reduced configuration: random networks and mappings compiled, simulated as
Dask tasks, outputs bit-exact with the golden model and every pass's counters equal to the prediction; a rerun
finds every case in the store."""

import json

import numpy as np

from nnaccel.cli.main import main
from nnaccel.dse.rtl.hardware import config_to_json, network_to_json
from nnaccel.dse.rtl.validate import SCHEMA, STATES, code_digest, reduced_configs, validate_case, validation_cases
from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.testbench.dqn.host import run_on_accelerator
from tests.dqn.test_golden import negative_split_max_pool, negative_states, split_max_pool
from tests.dse.rtl.test_cost_model import segmented_add_block


def test_cases_are_seeded_and_carry_the_code_digest():
    configs = reduced_configs()
    first, second = (validation_cases(4, seed=5, configs=configs, thesis=True) for _ in range(2))
    assert first == second and len(first) == 6
    assert [case["config"]["fmt"] for case in first[:4]] == ["binary32", "bfloat16", "binary16", "binary32"]
    assert [case["config"].get("max_pooling", False) for case in first[:4]] == [False, False, False, True]
    assert [case.get("split") for case in first[4:]] == ["auto", "never"]
    assert len({case["code"] for case in first}) == 1


def test_a_small_validation_through_the_command_line(tmp_path, capsys):
    """One case on the reduced configuration in binary32 (the build the DQN tests make), then the rerun."""
    store, report = tmp_path / "validate.sqlite", tmp_path / "validate.json"
    arguments = ["dse", "validate", "--cases", "1", "--hardware", "reduced", "--no-thesis", "--workers", "1",
                 "--seed", "3", "--store", str(store), "--json", str(report)]
    assert main(arguments) == 0
    document = json.loads(report.read_text())
    assert document["schema"] == SCHEMA
    assert (document["exact_cases"], document["total_cases"], document["run_now"]) == (1, 1, 1)
    assert document["hardware_configurations"] == 1 and document["cases"][0]["config"].startswith("2x4 binary32")
    for row in document["cases"]:
        assert row["bit_exact"] and row["counters_exact"] and row["cycles_exact"]
        assert row["measured"] == row["predicted"] and row["measured_cycles"][0] == row["predicted_cycles"]
    printed = capsys.readouterr().out
    assert "1 of 1 cases exact" in printed and "predicted" in printed
    assert main(arguments) == 0
    document = json.loads(report.read_text())
    assert (document["run_now"], document["skipped"], document["exact_cases"]) == (0, 1, 1)


def test_more_random_configurations_than_shapes_is_bad_input(tmp_path, capsys):
    """Each random configuration has its own modules x lanes: a 13th would be drawn for ever (the command once
    hung); one line, exit 2, no store written."""
    store = tmp_path / "validate.sqlite"
    assert main(["dse", "validate", "--cases", "1", "--configs", "13", "--store", str(store)]) == 2
    assert capsys.readouterr().err == ("nnaccel: error: --configs: at most 12 random configurations (each its own "
                                       "modules x lanes: (2, 4, 8) x (1, 2, 3, 4)), not 13\n")
    assert not store.exists()


def test_a_split_max_pools_sum_in_a_later_channel_tile_on_the_rtl():
    """tests/dqn/test_golden.py's split max pool on its 4 x 3 configuration: outputs bit-exact, every counter as
    predicted, 38 cycles by the RTL, the compiler and the cost model."""
    config, layers, mapping, _ = split_max_pool()
    result = _validated(config, layers, mapping)
    assert result["measured_cycles"] == [38] * STATES and result["model_cycles"] == result["predicted_cycles"] == 38


def test_the_smallest_segmented_add_on_the_rtl():
    """tests/dse/rtl/test_cost_model.py's two convolutions and ``add input``, the add in two segments (the later
    first) on the reduced configuration in bfloat16: outputs bit-exact, every counter as predicted, 64 cycles by the
    RTL, the compiler and the cost model."""
    result = _validated(*segmented_add_block())
    assert result["mapping"] == [[[0, 2, 2, 1]], [[0, 2, 2, 1]], [[1, 1, 2, 1], [0, 1, 2, 1]]]
    assert result["measured_cycles"] == [64] * STATES and result["model_cycles"] == result["predicted_cycles"] == 64


def _validated(config, layers, mapping):
    """``validate_case`` of a network and mapping (weights and inputs seeded), checked bit-exact with every counter
    as predicted; returns its result."""
    result = validate_case({"kind": "random", "config": config_to_json(config), "network": network_to_json(layers),
                            "mapping": mapping.to_json(), "weights_seed": 1, "inputs_seed": 2, "states": STATES,
                            "code": code_digest()})
    assert result["bit_exact"] and result["counters_exact"] and result["cycles_exact"]
    return result


def test_a_split_max_pool_of_negative_windows_on_the_rtl():
    """tests/dqn/test_golden.py's K-split max pool without padding, on inputs of negative elements only: the RTL's
    outputs are numpy's max pool (the partial maxima seeded -inf, not +0), every counter as predicted."""
    plan, max_pool = negative_split_max_pool(2)
    states = negative_states(np.random.default_rng(3), 2, 2)
    run = run_on_accelerator(DqnAccelerator(config=plan.config), plan, states)
    for index, state in enumerate(states):
        np.testing.assert_array_equal(run.q_values[index].astype(np.uint32).view(np.float32),
                                      max_pool(state).reshape(-1))
    assert run.layer_counters[0].astype(int).tolist() == [[layer.predicted[name] for name in
                                                           ("cycles", "product_cycles", "stall_cycles",
                                                            "drain_cycles")] for layer in plan.layers]
