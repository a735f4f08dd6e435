"""sim.fpga.synth: Yosys maps buffers to M10K block RAM and multipliers to DSP blocks; hierarchy, cache, messages."""

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.hw.shared.float_format import BINARY16
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.hw.shared.float_operator import operand_layout
from nnaccel.sim.fpga import synth
from nnaccel.cli.main import main
from nnaccel.sim.fpga.synth import Resources, YosysNotFound, estimate, format_table, without_zero_memory_init, yosys_command
from nnaccel.sim.verilog import generate_verilog


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NNACCEL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


class RegisteredProduct(wiring.Component):
    """``product`` = ``a * b`` (16 x 16 unsigned bits), registered."""

    a: In(16)
    b: In(16)
    product: Out(32)

    def elaborate(self, platform):
        m = Module()
        m.d.sync += self.product.eq(self.a * self.b)
        return m


def test_buffer_maps_to_m10k_blocks():
    buffer = DualPortBuffer(width=40, depth=512)
    report = estimate(buffer, "synth_buffer_w40_d512")
    assert report.total.m10k == buffer.m10k_blocks == 2      # true dual-port: 512 x 20 bits per block
    assert report.total.memory_bits == 40 * 512
    assert report.total.flip_flops == 0                    # the read registers are the blocks' own


def test_integer_multiply_maps_to_a_dsp_multiplier():
    total = estimate(RegisteredProduct(), "synth_product_16x16").total
    assert (total.mul27, total.mul18, total.mul9) == (0, 1, 0)
    assert total.dsp_blocks == 0.5                          # two 18x18 multipliers per Cyclone V DSP block
    assert total.luts == 0


def test_binary16_multiplier_significand_product_is_one_dsp_multiplier():
    unit = FloatMultiplier(fmt=BINARY16)
    total = estimate(unit, unit.module_name).total
    assert (total.mul27, total.mul18, total.mul9) == (0, 1, 0)
    assert total.m10k == 0
    assert 50 < total.alms < 400


class ThreeMultipliers(wiring.Component):
    """Three binary16 multipliers side by side: one module generated once, instantiated three times."""

    def __init__(self):
        unit = wiring.Signature({"operands": In(stream.Signature(operand_layout(BINARY16), always_ready=True)),
                                 "result": Out(stream.Signature(BINARY16.width, always_ready=True))})
        super().__init__({f"unit{index}": Out(unit) for index in range(3)})

    def elaborate(self, platform):
        m = Module()
        for index in range(3):
            m.submodules[f"unit{index}"] = unit = FloatMultiplier(fmt=BINARY16, latency=1)
            wiring.connect(m, wiring.flipped(getattr(self, f"unit{index}")), unit)
        return m


def test_identical_submodules_are_counted_per_instance():
    report = estimate(ThreeMultipliers(), "synth_three")
    rows = {row.label: row for row in report.rows}
    multiplier = next(row for label, row in rows.items() if row.count == 3)
    assert multiplier.resources.flip_flops > 0 and multiplier.resources.flip_flops % 3 == 0
    assert report.total == sum((row.resources for row in report.rows), Resources())


def test_results_are_cached(fresh_cache, monkeypatch):
    first = estimate(RegisteredProduct(), "synth_product_16x16")
    monkeypatch.setattr(synth, "_run_yosys", lambda *args: pytest.fail("Yosys ran again"))
    assert estimate(RegisteredProduct(), "synth_product_16x16").total == first.total
    # also from a checkout elsewhere: the key holds the mapping files' contents, not their paths
    moved = Path(shutil.copytree(synth._LIBRARY, fresh_cache / "elsewhere" / "yosys"))
    monkeypatch.setattr(synth, "_LIBRARY", moved)
    for attribute in ("_M10K_RULES", "_M10K_CELLS", "_M10K_MAP"):
        monkeypatch.setattr(synth, attribute, moved / getattr(synth, attribute).name)
    assert estimate(RegisteredProduct(), "synth_product_16x16").total == first.total


def test_missing_yosys_names_the_fix(fresh_cache, monkeypatch):
    monkeypatch.setenv("PATH", str(fresh_cache))
    with pytest.raises(YosysNotFound, match=r"Yosys, which was not found on PATH: install it with "
                                            r"`apt-get install yosys`"):
        yosys_command()
    synth.yosys_version.cache_clear()
    try:
        with pytest.raises(YosysNotFound):
            estimate(RegisteredProduct(), "synth_product_16x16")
    finally:
        synth.yosys_version.cache_clear()


def test_alm_estimate():
    assert Resources(luts=10, lut6=4, carry=4, flip_flops=8).alms == 4 + (6 + 4) / 2
    assert Resources(luts=2, flip_flops=40).alms == 10       # register bound: four flip-flops per ALM


def test_table_says_it_is_an_estimate():
    table = format_table([estimate(RegisteredProduct(), "synth_product_16x16")])
    assert "synth_product_16x16" in table
    assert "Yosys estimate" in table and "not a Quartus fit" in table


def test_cli_prints_table_and_writes_json(tmp_path, capsys):
    path = tmp_path / "estimate.json"
    assert main(["synth", "fmul", "--json", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "float_multiplier_binary32_l2" in printed and "Cyclone V 5CSEMA5" in printed
    document = json.loads(path.read_text())
    [entry] = document["systems"]
    assert entry["system"] == "fmul"
    assert entry["total"]["mul27"] == 1 and entry["total"]["dsp_blocks"] == 1
    assert "not a Quartus fit" in document["note"]


def test_only_all_zero_memory_initialisation_is_dropped():
    zeros = generate_verilog(DualPortBuffer(width=8, depth=4), "synth_zeros")
    assert "initial begin" in zeros and "initial begin" not in without_zero_memory_init(zeros)
    loaded = generate_verilog(DualPortBuffer(width=8, depth=4, init=np.arange(4, dtype=np.uint8)), "synth_loaded")
    assert without_zero_memory_init(loaded) == loaded


def test_cli_synthesizes_the_mlperf_and_a_json_configuration(tmp_path, capsys, monkeypatch):
    """``synth dqn --dqn-config F --model ad``: each configuration built and estimated (a small design's estimate
    stands in for Yosys on the accelerator), named in words, fitted to both devices, in one table and the JSON."""
    from nnaccel.cli import fpga as job
    from nnaccel.hw.dqn.config import REDUCED_CONFIG
    from nnaccel.sim.fpga.dqn_configurations import config_fields

    stand_in = estimate(RegisteredProduct(), "synth_product_16x16")
    built = []

    def stand_in_estimate(component, name, **options):
        component._MustUse__used = True         # never elaborated here: tell Amaranth (as sim.verilog's cache does)
        built.append((component.config, name, options))
        return stand_in

    monkeypatch.setattr(job, "estimate", stand_in_estimate)
    config_file = tmp_path / "reduced.json"
    config_file.write_text(json.dumps(config_fields(REDUCED_CONFIG)))
    path = tmp_path / "estimate.json"
    assert main(["synth", "dqn", "--dqn-config", str(config_file), "--model", "ad", "--jobs", "2", "--json",
                 str(path)]) == 0
    (reduced, reduced_name, options), (ad, ad_name, _) = built
    assert reduced == REDUCED_CONFIG and reduced_name == REDUCED_CONFIG.module_name and options == {"jobs": 2}
    assert (ad.modules, ad.lanes, ad.row_elements, ad.activation_depth, ad.weight_depth, ad.max_layers) == (
        16, 16, 84, 1024, 4096, 13)
    printed = capsys.readouterr().out
    assert ("dqn, MLPerf Tiny ad (anomaly detection, dense autoencoder): synth_product_16x16: 16 x 16 binary32 MACs, "
            "84-element rows, 2 activation RAMs of 1,024 x 2,688 bits, weight RAM of 4,096 x 8,192 bits, 13 "
            "descriptors") in printed
    assert "synth_product_16x16 on Stratix V 5SGXEA7: fits: ALMs" in printed
    table = [re.split(r"\s{2,}", line) for line in printed[printed.index("configuration  "):].splitlines()]
    total = stand_in.total
    row = [f"{total.alms:,}", f"{total.dsp_blocks:g}", str(total.m10k), f"{total.memory_bits:,}", str(stand_in.m20k),
           "yes", "yes"]
    assert table[2] == [str(config_file), "12 / 128 / 256 / 8", *row]
    assert table[3] == ["MLPerf Tiny ad (anomaly detection, dense autoencoder)", "84 / 1,024 / 4,096 / 13", *row]
    document = json.loads(path.read_text())
    assert [entry["config"] for entry in document["systems"]] == [config_fields(REDUCED_CONFIG), config_fields(ad)]
    assert {device["name"] for device in document["devices"]} == {"Cyclone V 5CSEMA5", "Stratix V 5SGXEA7"}
    assert document["systems"][1]["fits"]["Stratix V 5SGXEA7"].startswith("synth_product_16x16 on Stratix V 5SGXEA7")
