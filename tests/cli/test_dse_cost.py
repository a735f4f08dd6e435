"""``nnaccel dse cost``: the thesis network's per-layer costs on a configuration, as printed and as JSON; bad
configurations are bad input (exit 2)."""

import json

import pytest

from nnaccel.cli.dse import COST_SCHEMA
from nnaccel.cli.main import main
from nnaccel.dse.rtl.area import compose
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import BFLOAT16
from nnaccel.models.dqn.network import dqn_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network


def test_per_layer_cycles_are_the_compiled_passes_and_area_the_composition(tmp_path, capsys):
    path = tmp_path / "cost.json"
    assert main(["dse", "cost", "--modules", "8", "--lanes", "32", "--format", "bfloat16", "--adder-latency", "1",
                 "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    document = json.loads(path.read_text())
    assert document["schema"] == COST_SCHEMA
    config = DqnConfig(modules=8, lanes=32, fmt=BFLOAT16, adder_latency=1)
    plan = compile_network(config, dqn_layers(18), seeded_weights())
    cycles = {}
    for layer in plan.layers:
        cycles[layer.network_layer] = cycles.get(layer.network_layer, 0) + layer.predicted["cycles"]
    assert {row["name"]: row["latency_cycles"] for row in document["layers"]} == cycles
    assert document["total"]["latency_cycles"] == plan.estimated_cycles
    assert document["total"]["passes"] == len(plan.layers)
    _, area = compose(config)
    assert (document["area"]["alms"], document["area"]["dsp_blocks"], document["area"]["m10k"]) == \
        (area.alms, area.dsp_blocks, area.m10k)
    for name, layer_cycles in cycles.items():
        assert any(line.startswith(name) and f"{layer_cycles:,}" in line for line in printed.splitlines()), name
    assert f"{area.alms:,}" in printed


@pytest.mark.parametrize("options, fault", [
    (["--modules", "3"], "modules must be a power of two, not 3"),
    (["--modules", "64", "--weight-depth", "128"], "CONV_1"),
    (["--adder-latency", "5"], "the area table has no matrix module"),
])
def test_bad_configurations_exit_2_in_one_line(options, fault, capsys):
    assert main(["dse", "cost", *options]) == 2
    error = capsys.readouterr().err
    assert error.startswith("nnaccel: error: dse cost: ") and fault in error and error.count("\n") == 1
