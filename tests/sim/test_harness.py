"""The simulation harness: builds, caching, data exchange, waveforms and its error messages."""

import numpy as np
import pytest
from amaranth import Instance, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.sim.harness import SimulationError, icarus_time_zero_fix, simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.sim.toolchain import SimulatorNotFound, simulator_environment


class DelayLine(wiring.Component):
    """A value and its valid flag delayed by ``depth`` registers; a small design for harness tests."""

    def __init__(self, depth, width=16):
        self.depth = depth
        super().__init__({"data_in": In(width), "in_valid": In(1), "data_out": Out(width), "out_valid": Out(1)})

    def elaborate(self, platform):
        m = Module()
        data, valid = self.data_in, self.in_valid
        for _ in range(self.depth):
            next_data, next_valid = Signal.like(data), Signal()
            m.d.sync += [next_data.eq(data), next_valid.eq(valid)]
            data, valid = next_data, next_valid
        m.d.comb += [self.data_out.eq(data), self.out_valid.eq(valid)]
        return m


def stream_config(count, **extra):
    return {"inputs": {"data_in": {"lanes": 1, "bits": 16}}, "in_valid": "in_valid",
            "outputs": {"data_out": {"lanes": 1, "bits": 16}}, "out_valid": "out_valid",
            "expect": count, **extra}


@pytest.mark.parametrize("simulator", ["verilator", pytest.param("icarus", marks=pytest.mark.icarus)])
def test_stream_through_delay_line(simulator):
    values = np.random.default_rng(7).integers(0, 1 << 16, size=500, dtype=np.uint64)
    result = simulate(DelayLine(3), name="delay3", test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"data_in": values}, config=stream_config(500, idle_seed=3),
                      simulator=simulator)
    assert np.array_equal(result.outputs["data_out"], values)
    assert np.all(result.outputs["cycle"] - result.outputs["in_cycle"] == 3)
    assert result.outputs["in_cycle"][-1] > 499, "idle cycles were inserted"


def test_second_run_reuses_the_build():
    values = np.arange(10, dtype=np.uint64)
    config = stream_config(10)
    first = simulate(DelayLine(1), name="delay1", test_module="nnaccel.testbench.shared.stream_tb",
                     stimulus={"data_in": values}, config=config)
    second = simulate(DelayLine(1), name="delay1", test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"data_in": values}, config=config)
    assert not second.built_now
    assert second.build_dir == first.build_dir
    assert np.array_equal(second.outputs["data_out"], values)


def test_combinational_design_has_zero_latency():
    values = np.arange(20, dtype=np.uint64)
    result = simulate(DelayLine(0), name="delay0", test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"data_in": values}, config=stream_config(20))
    assert np.array_equal(result.outputs["cycle"], result.outputs["in_cycle"])


def test_missing_outputs_fail_the_run():
    with pytest.raises(SimulationError, match="expected 11 output beats, saw 10"):
        simulate(DelayLine(1), name="delay1", test_module="nnaccel.testbench.shared.stream_tb",
                 stimulus={"data_in": np.arange(10, dtype=np.uint64)},
                 config=stream_config(11, drain_cycles=5))


def test_unknown_test_module_is_named():
    with pytest.raises(SimulationError, match=r"'nnaccel.testbench.no_such_tb' cannot be imported"):
        simulate(DelayLine(1), name="delay1", test_module="nnaccel.testbench.no_such_tb")


class BrokenInstance(wiring.Component):
    out: Out(1)

    def elaborate(self, platform):
        m = Module()
        m.submodules.missing = Instance("module_that_does_not_exist", o_y=self.out)
        return m


def test_build_failure_names_the_log():
    with pytest.raises(SimulationError, match=r"building 'broken' with verilator failed.*build log is"):
        simulate(BrokenInstance(), name="broken", test_module="nnaccel.testbench.shared.stream_tb")


def test_missing_simulator_says_how_to_install(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(SimulatorNotFound, match="apt-get install iverilog"):
        simulator_environment("icarus")


def test_unknown_simulator_is_rejected():
    with pytest.raises(ValueError, match="simulator must be one of verilator, icarus, not 'modelsim'"):
        simulator_environment("modelsim")


def test_waves_write_dump_and_gtkw():
    result = simulate(DelayLine(2), name="delay2", test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"data_in": np.arange(5, dtype=np.uint64)}, config=stream_config(5), waves=True)
    assert result.waves_path.exists() and result.waves_path.stat().st_size > 0
    gtkw = result.gtkw_path.read_text()
    inputs, outputs = gtkw.split("-inputs")[1], gtkw.split("-outputs")[1]
    assert "delay2.data_in[15:0]" in inputs and "delay2.in_valid" in inputs
    assert "delay2.data_out[15:0]" in outputs and "delay2.out_valid" in outputs
    assert "delay2.data_out" not in inputs.split("-outputs")[0]


def test_delay_line_is_lint_clean():
    assert lint_verilog(DelayLine(2), "delay2") == []


def test_icarus_time_zero_fix_moves_the_yosys_trigger_into_an_initial_block():
    text = "module m(a);\n  reg \\$auto$verilog_backend.cc:2355:dump_module$3  = 0;\n  input a;\nendmodule\n"
    fixed = icarus_time_zero_fix(text)
    assert "  reg \\$auto$verilog_backend.cc:2355:dump_module$3 ;\n" in fixed
    assert "  initial #0 \\$auto$verilog_backend.cc:2355:dump_module$3 = 1'b0;\n" in fixed
    assert "= 0;" not in fixed
