"""The installed package: a wheel built from the repository's tracked files (a clean clone's), installed into a
folder of its own, carries every file of the floors, imports as the one package ``nnaccel`` beside a user's own
``models`` package, and runs jobs that read its shipped files from another folder."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ("hw", "models", "train", "sim", "testbench", "dse", "cli")
# What the jobs read besides Python modules, by kind; the wheel must carry each (pyproject.toml's package data).
SHIPPED_DATA = ("models/dqn/data/atari_states.npz", "models/dqn/data/dqn_breakout.npz",
                "models/dqn/data/dqn_breakout.json", "models/capsnet/data/capsnet_reduced.npz",
                "models/capsnet/data/capsnet_full.npz", "models/shared/data/mnist_sample.npz",
                "dse/shared/data/energy_45nm.json", "dse/rtl/data/rtl_area_cyclonev.json",
                "dse/dcp/data/predictor_template.pt", "sim/verilator_waivers.vlt", "sim/fpga/yosys/m10k_tdp_map.v",
                "testbench/shared/host_program.cpp", "testbench/shared/sdram_model.v")

# Run from a folder holding a ``models`` package of its own, as many PyTorch projects have: the user's package and
# nnaccel's golden models both import, each under its own name; the shipped weights, states and digits load, and
# Verilator lints with the shipped waivers.
API_SCRIPT = """
import json, sys
import models.dqn
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.capsnet.golden import classify_fixed_batch, load_capsnet
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import TRAINED_WEIGHTS, dqn_layers, load_weights
from nnaccel.models.dqn.plan import compile_network
from nnaccel.models.shared.mnist import sample_digits
from nnaccel.sim.lint import lint_verilog_text
import nnaccel

plan = compile_network(DqnConfig(), dqn_layers(18), load_weights(TRAINED_WEIGHTS))
images, labels = sample_digits()
print(json.dumps({"nnaccel": nnaccel.__file__, "users_models": models.dqn.WHOSE,
                  "action": golden_forward(plan, recorded_states(1)[0]).action,
                  "capsnet_classes": classify_fixed_batch(images[:4], load_capsnet("reduced")).tolist(),
                  "labels": labels[:4].tolist(),
                  "lint": lint_verilog_text("module ok(input wire a, output wire b); assign b = a; endmodule\\n",
                                            "ok")}))
"""


def _tracked_files():
    listing = subprocess.run(["git", "ls-files", "-z", "nnaccel", *FLOORS, "setup.py", "pyproject.toml", "README.md"],
                             cwd=ROOT, capture_output=True, check=True).stdout
    return [name for name in listing.decode().split("\0") if name and (ROOT / name).is_file()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel, folder the wheel is installed into)."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("needs the repository's git checkout (the wheel is built from its tracked files)")
    clone = tmp_path_factory.mktemp("clone")
    for name in _tracked_files():                    # the tracked files only: nothing local reaches the wheel
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, clone / name)
    wheels = tmp_path_factory.mktemp("wheels")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--quiet", "-w", str(wheels), str(clone)],
                   check=True, capture_output=True)
    (wheel,) = wheels.glob("nnaccel-*.whl")
    target = tmp_path_factory.mktemp("site")
    subprocess.run([*pip, "install", "--no-deps", "--quiet", "--target", str(target), str(wheel)],
                   check=True, capture_output=True)
    return wheel, target


@pytest.fixture
def elsewhere(tmp_path):
    """A folder with a ``models`` package of its own (``models/__init__.py``, ``models/dqn.py``)."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "dqn.py").write_text('WHOSE = "the user\'s"\n')
    return tmp_path


def _environment(target):
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {**environment, "PYTHONPATH": str(target)}


def test_the_wheel_is_one_package_with_every_file_of_the_floors(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    project, version = wheel.name.split("-")[:2]
    assert {name.split("/")[0] for name in names} == {"nnaccel", f"{project}-{version}.dist-info"}
    floor_files = [name for name in _tracked_files() if name.split("/")[0] in FLOORS]
    missing = [name for name in floor_files if f"nnaccel/{name}" not in names]
    assert missing == []
    assert all(f"nnaccel/{name}" in names for name in SHIPPED_DATA)


def test_the_api_imports_beside_a_users_models_package_and_reads_the_shipped_files(installed, elsewhere):
    _, target = installed
    result = subprocess.run([sys.executable, "-c", API_SCRIPT], cwd=elsewhere, env=_environment(target),
                            capture_output=True, text=True, check=True)
    found = json.loads(result.stdout)
    assert Path(found["nnaccel"]).is_relative_to(target) and found["users_models"] == "the user's"
    assert found["action"] in range(18) and found["lint"] == []
    assert found["capsnet_classes"] == found["labels"]


def test_a_job_runs_from_another_folder_on_the_shipped_tables(installed, elsewhere):
    """``nnaccel dse cost`` reads the shipped energy and area tables; run by the installed package from a folder with
    its own ``models``, it writes only the JSON it was asked for."""
    _, target = installed
    result = subprocess.run([sys.executable, "-c", "import sys; from nnaccel.cli.main import main; sys.exit(main())",
                             "dse", "cost", "--modules", "16", "--lanes", "16", "--json", "cost.json"],
                            cwd=elsewhere, env=_environment(target), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    report = json.loads((elsewhere / "cost.json").read_text())
    assert report["schema"].startswith("nnaccel.dse.cost/")
    assert report["total"]["latency_cycles"] == 11_698      # the thesis network's cycles, as the RTL counts them
    assert sorted(path.name for path in elsewhere.iterdir()) == ["cost.json", "models"]
