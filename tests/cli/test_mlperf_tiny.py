"""``nnaccel run mlperf-tiny``: the job on a folder laid out as ``../shared/mlperf_tiny`` (the models, the first
KWS samples, the AD windows), without the RTL and with a stand-in simulator that gives the golden model's outputs
and the compiler's predicted counters; the JSON report; a folder without models."""

import json

import pytest

from nnaccel.cli.main import main
from nnaccel.models.dqn import mlperf_tiny
from nnaccel.sim.fpga.synth import estimate
from tests.cli import stand_in_simulator

KWS_SAMPLES = 3


@pytest.fixture
def folder(tmp_path):
    """A small MLPerf Tiny folder: the shared one's models and AD sample, its first KWS samples and their labels."""
    shared = mlperf_tiny.mlperf_tiny_dir()
    small = tmp_path / "mlperf_tiny"
    (small / "samples" / "kws01").mkdir(parents=True)
    (small / "models").symlink_to(shared / "models")
    (small / "samples" / "ad01").symlink_to(shared / "samples" / "ad01")
    kws = shared / "samples" / "kws01"
    names = sorted(path.name for path in kws.glob("*.bin"))[:KWS_SAMPLES]
    for name in names:
        (small / "samples" / "kws01" / name).symlink_to(kws / name)
    labels = [line for line in (kws / "y_labels.csv").read_text().splitlines() if line.split(",")[0] in names]
    (small / "samples" / "kws01" / "y_labels.csv").write_text("\n".join(labels) + "\n")
    return small


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*arguments, **keywords):
        raise AssertionError("--no-rtl builds and simulates nothing")

    monkeypatch.setattr(stand_in_simulator.dqn_host, "run_on_accelerator", refuse)


def test_kws_without_the_rtl(folder, tmp_path, capsys, no_simulation, monkeypatch):
    """The compiler's prediction, the golden model per format against LiteRT and the accuracy on every KWS sample of
    the folder, FINN beside; JSON ``nnaccel.mlperf_tiny/1``; in an empty cache, no resources and how to get them."""
    monkeypatch.setenv("NNACCEL_CACHE_DIR", str(tmp_path / "cache"))
    report_path = tmp_path / "report.json"
    assert main(["run", "mlperf-tiny", "--model", "kws", "--no-rtl", "--dir", str(folder), "--formats", "binary32",
                 "--json", str(report_path)]) == 0
    printed = capsys.readouterr().out
    assert "=== kws: keyword spotting, DS-CNN (kws_dscnn_float32.tflite) ===" in printed
    assert "nnaccel 16 x 16 binary32 (predicted)" in printed and "FINN KWS-W3A3, Pynq-Z2" in printed
    assert ("resources of dqn_m16_l16_binary32_r84_p4_a2048_w8192_d23_ml2_al2: not synthesized: run nnaccel synth dqn "
            "--model kws") in printed
    assert not (tmp_path / "cache").exists()            # neither Verilog generated nor Yosys run
    assert printed.count("depthwise convolution in channel tiles of whole groups") == 1 and "(host)" in printed
    report = json.loads(report_path.read_text())
    assert report["schema"] == "nnaccel.mlperf_tiny/1" and report["rtl"] is False
    kws, = report["models"]
    assert kws["task"] == "kws" and kws["cycles"] == kws["predicted_cycles"] and "bit_exact" not in kws
    assert kws["resources"] == {"synthesized": False, "hint": "not synthesized: run nnaccel synth dqn --model kws"}
    assert kws["mac_use"] == pytest.approx(kws["macs"] / (kws["cycles"] * 256))
    assert kws["latency_us_100mhz"] == pytest.approx(kws["cycles"] / 100)
    assert {row["flow"] for row in kws["published"]} == {"FINN"}
    binary32, = kws["formats"]
    assert (binary32["format"], binary32["inputs"]) == ("binary32", KWS_SAMPLES)
    # LiteRT quantises the DS-CNN's activations to int8 on the fly (docs/models.md): 2 % of the largest logit.
    assert binary32["classes_equal_litert"] == KWS_SAMPLES and binary32["max_rel_vs_litert"] < 0.05
    assert binary32["correct"] == binary32["litert_correct"] and f"{binary32['correct']} / {KWS_SAMPLES}" in printed


def test_ad_without_the_rtl(folder, tmp_path, capsys, no_simulation):
    """Every window of the AD sample in the golden model in binary32 and bfloat16; the anomaly scores beside
    LiteRT's; hls4ml beside."""
    report_path = tmp_path / "report.json"
    assert main(["run", "mlperf-tiny", "--model", "ad", "--no-rtl", "--dir", str(folder), "--formats", "binary32",
                 "bfloat16", "--json", str(report_path)]) == 0
    printed = capsys.readouterr().out
    assert "hls4ml AD08, Pynq-Z2" in printed and "\nbfloat16 " in printed
    ad, = json.loads(report_path.read_text())["models"]
    assert ad["ops"][0].startswith("fully_connected_0") and ad["published"][0]["flow"] == "hls4ml"
    binary32, bfloat16 = ad["formats"]
    assert binary32["inputs"] == bfloat16["inputs"] == 40 and bfloat16["format"] == "bfloat16"
    assert binary32["max_score_difference"] < 0.01 and binary32["max_rel_vs_litert"] < 1e-4
    assert binary32["max_rel_vs_litert"] < bfloat16["max_rel_vs_litert"] < 0.5      # bfloat16's 8-bit significand


@pytest.mark.parametrize("fault", [None, "wrong_counter"])
def test_ad_with_a_stand_in_simulator(folder, tmp_path, capsys, monkeypatch, fault):
    runs = stand_in_simulator.install(monkeypatch, **({fault: True} if fault else {}))
    report_path = tmp_path / "report.json"
    status = main(["run", "mlperf-tiny", "--model", "ad", "--inputs", "3", "--dir", str(folder), "--formats",
                   "binary32", "--json", str(report_path)])
    assert status == (1 if fault else 0)
    (plan, states), = runs
    assert states.tobytes() == mlperf_tiny.ad_windows(folder)[:3].tobytes()
    printed = capsys.readouterr().out
    ad = json.loads(report_path.read_text())["models"][0]
    assert ad["inputs"] == 3 and ad["bit_exact"] and ad["total_cycles"] == plan.estimated_cycles
    assert ad["counters_as_predicted"] is (fault is None)
    assert ("counters MISMATCH" in printed) is (fault is not None)
    assert "nnaccel 16 x 16 binary32 (simulated RTL)" in printed
    assert ad["litert_max_rel"] < 1e-4 and [row["name"] for row in ad["layers"]][0] == "fully_connected_0"


def test_the_cached_resources_of_the_configuration(folder, tmp_path, capsys, monkeypatch, no_simulation):
    """With the synthesis cache holding the configuration: its totals and fits in the model's section, the summary
    table and the JSON (a small design's estimate stands in for the accelerator's)."""
    from nnaccel.cli.dqn import mlperf_tiny as job
    from tests.sim.test_synth_modules import BufferedMultipliers

    stand_in = estimate(BufferedMultipliers(), "synth_buffered")
    configs = []
    monkeypatch.setattr(job, "cached_estimate", lambda config: configs.append(config) or stand_in)
    report_path = tmp_path / "report.json"
    assert main(["run", "mlperf-tiny", "--model", "ad", "--no-rtl", "--dir", str(folder), "--formats", "binary32",
                 "--json", str(report_path)]) == 0
    [config] = configs
    assert (config.row_elements, config.activation_depth, config.weight_depth, config.max_layers) == (84, 1024, 4096,
                                                                                                       13)
    printed = capsys.readouterr().out
    total = stand_in.total
    assert (f"resources of {config.module_name}: {total.alms:,} ALMs (est.), {total.dsp_blocks:g} DSP blocks, "
            f"{total.m10k} M10K ({stand_in.m20k} M20K), {total.memory_bits:,} memory bits; Cyclone V 5CSEMA5: fits: "
            f"ALMs") in printed
    summary = printed[printed.index("\nsummary"):]
    assert f"  {total.alms:,}  " in summary and "5CSEMA5, 5SGXEA7" in summary
    resources = json.loads(report_path.read_text())["models"][0]["resources"]
    assert resources["synthesized"] and resources["total"]["alms"] == total.alms
    assert resources["fits"] == {"Cyclone V 5CSEMA5": True, "Stratix V 5SGXEA7": True}


def test_a_folder_without_models(tmp_path, capsys):
    assert main(["run", "mlperf-tiny", "--dir", str(tmp_path), "--no-rtl"]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"nnaccel: error: {tmp_path}: no MLPerf Tiny models here (the folder given; ")
    assert error.count("\n") == 1


def test_a_model_on_the_board_is_sized_from_the_boards_base(folder):
    """``--board de1soc``: the board's 2 x 4 binary16 MACs and weight halves, rows of at least 512 bits (a
    descriptor fits the host port's word), the rows, activation RAMs and descriptor table (in block RAM) grown to the
    model, the load table to the power of two that holds its loads."""
    from nnaccel.cli.dqn.accelerator_run import compile_model
    from nnaccel.cli.dqn.board import board_stream, model_base

    _, _, plan = compile_model(mlperf_tiny.model_path("ad", folder), model_base("de1soc"))
    stream = board_stream("de1soc", plan)
    config = stream.config
    assert (config.modules, config.lanes, config.fmt.name, config.row_elements, config.weight_depth) == (
        2, 4, "binary16", 32, 1024)
    assert config.external_weights and config.descriptor_ram and config.max_layers == len(plan.layers) == 209
    assert (len(stream.loads), config.weight_loads) == (257, 512)


def test_the_board_fixes_the_configuration(folder, capsys):
    assert main(["run", "mlperf-tiny", "--board", "de1soc", "--lanes", "8", "--dir", str(folder)]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "nnaccel: error: --board de1soc: the board's configuration is fixed; leave out --modules, --lanes and --format")


def test_synth_sizes_the_flat_configuration_run_names(folder, tmp_path, capsys, monkeypatch, no_simulation):
    """``run mlperf-tiny --flat-window 6 --flat-slots 2`` names the ``synth dqn --model`` options of its
    configuration, and ``synth`` with them estimates that configuration (a small design's estimate stands in for
    Yosys' of the accelerator)."""
    from nnaccel.cli import fpga
    from tests.sim.test_synth_modules import BufferedMultipliers

    monkeypatch.setenv("NNACCEL_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["run", "mlperf-tiny", "--model", "kws", "--no-rtl", "--dir", str(folder), "--formats", "binary32",
                 "--flat-window", "6", "--flat-slots", "2"]) == 0
    printed = capsys.readouterr().out
    hint = "not synthesized: run nnaccel synth dqn --model kws --flat-window 6 --flat-slots 2"
    flat_kws = "dqn_m16_l16_binary32_r84_p4_a1024_w4096_d23_ml2_al2_flat2w6"
    assert f"resources of {flat_kws}: {hint}" in printed
    stand_in = estimate(BufferedMultipliers(), "synth_buffered")
    estimated = []

    def stand_in_estimate(component, name, **options):
        component._MustUse__used = True         # never elaborated here: tell Amaranth (as sim.verilog's cache does)
        estimated.append(name)
        return stand_in

    monkeypatch.setattr(fpga, "estimate", stand_in_estimate)
    command = hint.removeprefix("not synthesized: run nnaccel ").split()
    assert main([*command, "--dir", str(folder)]) == 0
    assert estimated == [flat_kws]
    assert "MLPerf Tiny kws (keyword spotting, DS-CNN), --flat-window 6 --flat-slots 2" in capsys.readouterr().out
