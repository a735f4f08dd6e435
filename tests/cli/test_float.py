"""``nnaccel run float`` on Verilator with a short TestFloat file (the first vectors of the real ones): every result
bit checked, the JSON report, the progress lines, and a wrong expected result found and reported (exit 1)."""

import gzip
import json

import pytest

from nnaccel.cli.main import main
from nnaccel.testbench.shared.testfloat import reference_vector_dir

VECTORS = 120


@pytest.fixture
def short_suites(tmp_path, monkeypatch):
    """The first VECTORS cases of f16_mul_1 and f16_add_1, the 8th expected sum made wrong in its last bit."""
    for name in ("f16_mul_1", "f16_add_1"):
        with gzip.open(reference_vector_dir() / f"{name}.txt.gz", "rt") as source:
            lines = [next(source) for _ in range(VECTORS)]
        if name == "f16_add_1":
            a, b, z, flags = lines[7].split()
            lines[7] = f"{a} {b} {int(z, 16) ^ 1:04X} {flags}\n"
        with gzip.open(tmp_path / f"{name}.txt.gz", "wt") as target:
            target.writelines(lines)
    monkeypatch.setenv("NNACCEL_TESTFLOAT_DIR", str(tmp_path))
    return tmp_path


def test_every_vector_checked_and_the_json_on_standard_output(short_suites, capfd):
    assert main(["run", "float", "--suite", "f16_mul_1", "--json", "-"]) == 0
    captured = capfd.readouterr()           # file descriptors: the simulator's own output counts too
    report = json.loads(captured.out)
    assert report["schema"] == "nnaccel.float/1" and report["all_passed"] is True
    assert [(suite["suite"], suite["vectors"], suite["passed"]) for suite in report["suites"]] == [
        ("f16_mul_1", VECTORS, VECTORS)]
    assert f"{VECTORS} of {VECTORS} TestFloat vectors gave the expected result bits (all passed)" in captured.err
    assert "Verilog generation ..." in captured.err and "simulation: start-up ..." in captured.err


def test_a_wrong_result_is_a_mismatch(short_suites, capsys):
    with gzip.open(short_suites / "f16_add_1.txt.gz", "rt") as vectors:
        a, b, z, _ = vectors.readlines()[7].split()
    assert main(["run", "float", "--suite", "f16_add_1"]) == 1
    printed = capsys.readouterr().out
    assert f"{VECTORS - 1} of {VECTORS} TestFloat vectors gave the expected result bits (MISMATCHES)" in printed
    assert f"mismatch: {a} {b} -> {int(z, 16) ^ 1:04X}, expected {z}" in printed
