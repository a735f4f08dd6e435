# amaranth: UnusedElaboratable=no
"""Verilator build options: their checks, the arguments and make variables they give, the thread budget,
the choice of hierarchical blocks, and that the harness keys its build cache by them."""

import numpy as np
import pytest
from amaranth import Module
from amaranth.hdl import Fragment
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG
from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.sim.harness import simulate
from nnaccel.sim.separate_modules import SeparateModules
from nnaccel.sim.verilator_options import DEFAULT, PREVIOUS_DEFAULT, THREADS_VARIABLE, VerilatorOptions, thread_budget
from nnaccel.sim.verilog import generate_design


@pytest.mark.parametrize("arguments, message", [
    ({"public": "some"}, "public must be one of ports, all, not 'some'"),
    ({"hierarchy": "flat"}, "hierarchy must be one of marked, separate, none, not 'flat'"),
    ({"cxx_optimization": "-O9"}, "cxx_optimization must be None or a flag such as '-O2', not '-O9'"),
    ({"verilator_optimization": 3}, "verilator_optimization must be None or a flag such as '-O2', not 3"),
    ({"threads": 0}, "threads must be a positive integer, not 0"),
    ({"profile_guided": "yes"}, "profile_guided must be a bool, not 'yes'"),
])
def test_rejects_bad_options(arguments, message):
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        VerilatorOptions(**arguments)


def test_arguments_and_make_variables(tmp_path):
    arguments = DEFAULT.verilator_arguments(top="top", ports=["clk", "a"], hierarchical_blocks=["block"],
                                            build_dir=tmp_path)
    assert arguments == ["--no-public-flat-rw", str(tmp_path / "public_ports.vlt"),
                         str(tmp_path / "hierarchical_blocks.vlt"), "--hierarchical"]
    assert (tmp_path / "public_ports.vlt").read_text().splitlines()[2:] == [
        'public_flat_rw -module "top" -var "clk"', 'public_flat_rw -module "top" -var "a"']
    assert (tmp_path / "hierarchical_blocks.vlt").read_text().splitlines()[2:] == ['hier_block -module "block"']
    assert DEFAULT.make_variables() == ["OPT_FAST=-O2", "OPT_GLOBAL=-O2"]
    today = PREVIOUS_DEFAULT.verilator_arguments(top="top", ports=[], hierarchical_blocks=["block"],
                                                 build_dir=tmp_path)
    assert today[:3] == ["--public-flat-rw", str(tmp_path / "hierarchical_blocks.vlt"), "--hierarchical"]
    assert today[3] == "--build"
    assert PREVIOUS_DEFAULT.make_variables() == []
    tuned = VerilatorOptions(verilator_optimization="-O3", threads=2, profile_guided=True)
    assert tuned.verilator_arguments(top="t", ports=[], hierarchical_blocks=(), build_dir=tmp_path)[2:] == [
        "-O3", "--threads", "2"]
    assert tuned.make_variables("generate") == ["OPT_FAST=-O2 -fprofile-generate", "OPT_GLOBAL=-O2",
                                                "USER_LDFLAGS=-fprofile-generate"]
    assert tuned.make_variables("use")[0] == "OPT_FAST=-O2 -fprofile-use -fprofile-correction -Wno-missing-profile"


def test_thread_budget(monkeypatch):
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.delenv("PYTEST_XDIST_WORKER_COUNT", raising=False)
    monkeypatch.delenv(THREADS_VARIABLE, raising=False)
    assert thread_budget() == 4
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    assert thread_budget() == 2
    monkeypatch.setenv(THREADS_VARIABLE, "1")
    assert thread_budget() == 1
    assert VerilatorOptions(threads=8).with_thread_budget().threads == 1
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "8")
    monkeypatch.delenv(THREADS_VARIABLE)
    assert thread_budget() == 1
    monkeypatch.setenv(THREADS_VARIABLE, "two")
    with pytest.raises(ValueError, match=f"{THREADS_VARIABLE} must be a positive integer, not 'two'"):
        thread_budget()


def test_dqn_asks_for_the_matrix_module_as_its_only_block():
    """The reduced DQN accelerator generates its distinct modules once each (the matrix module, its float
    multiplier and adder, the weight slice, the activation RAM), the matrix module as a hierarchical block; the
    build picks from them."""
    accelerator = DqnAccelerator(config=REDUCED_CONFIG)
    design = generate_design(accelerator, accelerator.module_name)
    matrix_module = "matrix_module_w4_binary32_m2_a2_c16"
    assert set(design.separate_modules) == {matrix_module, "float_multiplier_binary32_l2", "float_adder_binary32_l2",
                                            "dual_port_buffer_w128_d256_g0", "dual_port_buffer_w384_d128_g32"}
    assert design.hierarchical_blocks == (matrix_module,)
    assert (design.blocks_for("marked"), design.blocks_for("none")) == ((matrix_module,), ())
    assert set(design.blocks_for("separate")) == set(design.separate_modules)
    for module in design.separate_modules:
        assert design.text.count(f"module {module}(") == 1
    assert {"clk", "rst", "host__write", "host__read_data__payload", "host__done"} <= set(design.ports)
    assert len(design.ports) == len(set(design.ports)) and all(port.isidentifier() for port in design.ports)
    with pytest.raises(ValueError, match="hierarchy must be one of marked, separate, none, not 'flat'"):
        design.blocks_for("flat")


def test_one_module_name_is_one_design():
    """Two components that ask to be the same module must be the same design and the same kind of block."""
    platform = SeparateModules()
    Fragment.get(platform.get_separate_module(DualPortBuffer(width=8, depth=4), hierarchical_block=False), None)
    with pytest.raises(ValueError, match="two different components ask to be module 'dual_port_buffer_w8_d4_g0'"):
        platform.get_separate_module(DualPortBuffer(width=8, depth=4), hierarchical_block=True)
    assert platform.names == ("dual_port_buffer_w8_d4_g0",) and platform.hierarchical_blocks == ()


class Counter(wiring.Component):
    """A free-running count, for a harness test of build options."""

    def __init__(self):
        super().__init__({"in_valid": In(1), "data_in": In(8), "out_valid": Out(1), "data_out": Out(8)})

    def elaborate(self, platform):
        m = Module()
        m.d.sync += [self.data_out.eq(self.data_in + 1), self.out_valid.eq(self.in_valid)]
        return m


def test_each_option_set_has_its_own_build():
    values = np.arange(20, dtype=np.uint64)
    config = {"inputs": {"data_in": {"lanes": 1, "bits": 8}}, "in_valid": "in_valid",
              "outputs": {"data_out": {"lanes": 1, "bits": 8}}, "out_valid": "out_valid", "expect": 20}
    runs = [simulate(Counter(), name="counter_options", test_module="nnaccel.testbench.shared.stream_tb", stimulus={"data_in": values},
                     config=config, verilator_options=options) for options in (DEFAULT, PREVIOUS_DEFAULT)]
    assert runs[0].build_dir != runs[1].build_dir
    for run in runs:
        assert np.array_equal(run.outputs["data_out"], values + 1)
