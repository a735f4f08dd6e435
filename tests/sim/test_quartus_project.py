"""sim.fpga.quartus_project: the project files name the right device, top level and files; the CLI writes them."""

import re

import pytest

from nnaccel.hw.shared.float_format import BINARY16
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.cli.main import main
from nnaccel.sim.fpga.quartus_project import write_project

DEVICES = {"de5net": ("5SGXEA7N2F45C2", "AW35"), "de1soc": ("5CSEMA5F31C6", "AF14"),
           "de10nano": ("5CSEBA6U23I7", "V11")}


def _assignments(qsf, name):
    return re.findall(rf"^set_global_assignment -name {name} (.+)$", qsf, re.M)


@pytest.mark.parametrize("board", DEVICES)
def test_project_names_device_top_level_and_existing_files(board, tmp_path):
    unit = FloatMultiplier(fmt=BINARY16)
    project, paths = write_project(unit, unit.module_name, board=board, out_dir=tmp_path)
    assert project == f"{unit.module_name}_{board}"
    assert {path.name for path in paths} >= {f"{project}.qpf", f"{project}.qsf", f"{project}.sdc", f"{project}.v",
                                             f"{unit.module_name}.v"}
    qsf = (tmp_path / f"{project}.qsf").read_text()
    device, clock_pin = DEVICES[board]
    assert _assignments(qsf, "DEVICE") == [device]
    assert _assignments(qsf, "TOP_LEVEL_ENTITY") == [project]
    verilog_files = [name.strip('"') for name in _assignments(qsf, "VERILOG_FILE")]
    assert sorted(verilog_files) == sorted([f"{unit.module_name}.v", f"{project}.v"])
    for name in verilog_files:
        assert (tmp_path / name).exists()
    assert re.search(rf"^module {project}\(", (tmp_path / f"{project}.v").read_text(), re.M)
    assert re.search(rf"^module {unit.module_name}\(", (tmp_path / f"{unit.module_name}.v").read_text(), re.M)
    assert f'PROJECT_REVISION = "{project}"' in (tmp_path / f"{project}.qpf").read_text()
    # The clock on the board's pin, every other port a virtual pin (no location).
    assert re.findall(r"^set_location_assignment -to (\S+) PIN_(\w+)$", qsf, re.M) == [('"clk50_0__io"', clock_pin)]
    for port in ('"operands__payload\\[*]"', '"operands__valid"', '"result__payload\\[*]"', '"result__valid"'):
        assert f"set_instance_assignment -name VIRTUAL_PIN ON -to {port}" in qsf


def test_clock_constraint_follows_the_parameter(tmp_path):
    unit = FloatMultiplier(fmt=BINARY16)
    for clock_mhz, period in [(100, "10.0"), (125, "8.0")]:
        project, _ = write_project(unit, unit.module_name, board="de1soc", out_dir=tmp_path / str(clock_mhz),
                                   clock_mhz=clock_mhz)
        sdc = (tmp_path / str(clock_mhz) / f"{project}.sdc").read_text()
        assert f'create_clock -name "clk50_0__io" -period {period} [get_ports "clk50_0__io"]' in sdc


@pytest.mark.parametrize("kwargs, message", [
    ({"board": "de0"}, "board must be one of de1soc, de10nano, de5net, not 'de0'"),
    ({"board": "de1soc", "clock_mhz": 0}, "clock_mhz must be a number from 1 to 1000, not 0"),
    ({"board": "de1soc", "clock_mhz": "100"}, "clock_mhz must be a number from 1 to 1000, not '100'"),
])
def test_bad_arguments_are_rejected(kwargs, message, tmp_path):
    unit = FloatMultiplier(fmt=BINARY16)
    with pytest.raises(ValueError, match=re.escape(message)):
        write_project(unit, unit.module_name, out_dir=tmp_path, **kwargs)
    unit._MustUse__used = True      # never elaborated: the arguments were refused first


def test_cli_writes_the_project(tmp_path, capsys):
    assert main(["verilog", "fadd", "--board", "de10nano", "--out", str(tmp_path)]) == 0
    assert "Quartus project float_adder_binary32_l2_de10nano" in capsys.readouterr().out
    qsf = (tmp_path / "float_adder_binary32_l2_de10nano.qsf").read_text()
    assert _assignments(qsf, "DEVICE") == ["5CSEBA6U23I7"]
