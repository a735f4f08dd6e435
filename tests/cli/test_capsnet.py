"""``nnaccel run capsnet``: arguments, and the reduced CapsNet end to end on the default hardware (3 digits, every
step-1 / step-2 output and class bit-exact, the report and its JSON); the full CapsNet (extended)."""

import argparse
import json

import numpy as np
import pytest

from nnaccel.cli import capsnet as capsnet_job
from nnaccel.cli.main import main
from tests.shared.test_mnist import write_mnist_dir


def parse(*argv):
    parser = argparse.ArgumentParser()
    capsnet_job.add_arguments(parser)
    return parser.parse_args(argv)


def test_arguments():
    arguments = parse()
    assert (arguments.variant, arguments.images, arguments.weights, arguments.conv_multipliers,
            arguments.matvec_multipliers, arguments.simulator) == ("reduced", None, None, "dsp", "dsp", "verilator")
    for bad in (("--images", "0"), ("--variant", "tiny"), ("--conv-multipliers", "alm")):
        with pytest.raises(SystemExit):
            parse(*bad)


def test_digits_from_a_users_idx_directory(tmp_path):
    images, labels = write_mnist_dir(tmp_path, count=4)
    chosen, chosen_labels, source = capsnet_job._images(3, tmp_path)
    assert np.array_equal(chosen, images[:3]) and np.array_equal(chosen_labels, labels[:3])
    assert source == f"IDX test files in {tmp_path}"          # named by its path: any corpus can be IDX files
    with pytest.raises(ValueError, match="--images 5: the test split has 4 digits"):
        capsnet_job._images(5, tmp_path)


def test_reduced_capsnet_end_to_end(tmp_path, capsys):
    report_path = tmp_path / "capsnet.json"
    assert main(["run", "capsnet", "--images", "3", "--json", str(report_path)]) == 0
    printed = capsys.readouterr().out
    assert "simulation: start-up and weight load ..." in printed and "simulation: images: 3 of 3 done" in printed
    assert "bit-exact against the fixed-point golden model" in printed
    assert "conv1 features 3/3, primary capsules 3/3, predictions 3/3, classes 3/3" in printed
    report = json.loads(report_path.read_text())
    assert report["schema"] == "nnaccel.capsnet/1"
    assert report["bit_exact"] and report["images"] == 3 and report["variant"] == "reduced"
    assert report["layer_counters"][0][1] == 6_480 and report["layer_counters"][1][1] == 31_104
    assert report["layer_counters"][2][1] == 23_040
    assert [counters[0] for counters in report["layer_counters"]] == report["expected_cycles"]
    assert [row["paper_ms"] for row in report["steps"]] == [137, 119]
    assert report["dsp"][0]["dsp_blocks"] == 70


def test_reduced_capsnet_on_the_de1soc(tmp_path, capsys):
    """The whole image from the SDRAM model, routing on chip: every step bit-exact, the counters equal to the cycle
    formula, the per-step table against the paper."""
    report_path = tmp_path / "de1soc.json"
    assert main(["run", "capsnet", "--board", "de1soc", "--images", "2", "--json", str(report_path)]) == 0
    printed = capsys.readouterr().out
    assert "counters: equal to the compiler's cycle formula (SDRAM model in the loop) for every image" in printed
    assert ("bit-exact against the fixed-point golden model in every step: features 2/2, primary 2/2, predictions "
            "2/2, sums 2/2, digit_caps 2/2, squared_lengths 2/2, class 2/2") in printed
    report = json.loads(report_path.read_text())
    assert report["schema"] == "nnaccel.capsnet-board/1"
    assert report["board"] == "de1soc" and report["bit_exact"] and report["counters_equal_formula"]
    assert [row["product_cycles"] for row in report["steps"]] == [31_104, 124_416, 23_040, 0]
    assert report["image_cycles"] == sum(row["cycles"] for row in report["steps"])
    assert report["dsp_blocks"] == 6 and report["step1_gops_per_dsp"] > report["paper"]["gops_per_dsp"]
    # The paper's every column beside this run's (resources only when `nnaccel synth capsnet` has run).
    assert "against the paper" in printed
    comparison = {row["column"]: row for row in report["paper_comparison"]}
    assert comparison["image ms"]["ours"] == pytest.approx(report["image_cycles"] / 1e5)
    assert comparison["GOP/s per DSP block"]["ours"] == pytest.approx(report["step1_gops_per_dsp"])
    assert comparison["M10K blocks"]["paper"] is None and comparison["memory Kbit"]["paper"] == 163


@pytest.mark.extended
def test_full_capsnet_one_digit(tmp_path):
    """The full-size network (1,152 capsules) through the same hardware: about 1.14 M cycles."""
    from nnaccel.models.capsnet.golden import weights_path

    if not weights_path("full").exists():
        pytest.skip("no trained full-size weights shipped (models/capsnet/data/capsnet_full.npz)")
    report_path = tmp_path / "full.json"
    assert main(["run", "capsnet", "--variant", "full", "--images", "1", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    assert [counters[1] for counters in report["layer_counters"]] == [51_840, 995_328, 92_160]
    assert [counters[0] for counters in report["layer_counters"]] == report["expected_cycles"]
