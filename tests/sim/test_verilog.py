"""Verilog generation: module names, modules generated once through the build's platform (and in one piece
without it), the generated design simulated and linted."""

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from amaranth.back import verilog

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.sim.verilog import check_module_name, generate_design
from tests.sim.test_harness import DelayLine


class DelayChain(wiring.Component):
    """Three 1-cycle delay lines and one 2-cycle delay line in series: 5 cycles in all."""

    data_in: In(16)
    in_valid: In(1)
    data_out: Out(16)
    out_valid: Out(1)

    def elaborate(self, platform):
        m = Module()
        stages = [DelayLine(1), DelayLine(1), DelayLine(2), DelayLine(1)]
        data, valid = self.data_in, self.in_valid
        for index, stage in enumerate(stages):
            m.submodules[f"stage{index}"] = stage
            m.d.comb += [stage.data_in.eq(data), stage.in_valid.eq(valid)]
            data, valid = stage.data_out, stage.out_valid
        m.d.comb += [self.data_out.eq(data), self.out_valid.eq(valid)]
        return m


class ThreeBuffers(wiring.Component):
    """Three identical RAMs, each written and read through its own port pair."""

    def __init__(self):
        port = BufferPortSignature(width=8, depth=4)
        super().__init__({f"ram{index}": Out(wiring.Signature({"a": In(port), "b": In(port)})) for index in range(3)})

    def elaborate(self, platform):
        m = Module()
        for index in range(3):
            m.submodules[f"ram{index}"] = ram = DualPortBuffer(width=8, depth=4)
            wiring.connect(m, wiring.flipped(getattr(self, f"ram{index}")), ram)
        return m


def test_a_separate_module_is_generated_once():
    design = generate_design(ThreeBuffers(), "three")
    assert design.separate_modules == ("dual_port_buffer_w8_d4_g0",) and design.hierarchical_blocks == ()
    assert design.text.count("module dual_port_buffer_w8_d4_g0(") == 1
    assert [design.text.count(f"dual_port_buffer_w8_d4_g0 ram{index} (") for index in range(3)] == [1, 1, 1]
    # Without the build's platform, Amaranth's converter gives the whole design in one piece.
    assert "dual_port_buffer_w8_d4_g0" not in verilog.convert(ThreeBuffers(), name="three", emit_src=False)


def test_generated_design_behaves_as_written():
    values = np.arange(50, dtype=np.uint64) * 977 % 65536
    config = {"inputs": {"data_in": {"lanes": 1, "bits": 16}}, "in_valid": "in_valid",
              "outputs": {"data_out": {"lanes": 1, "bits": 16}}, "out_valid": "out_valid", "expect": 50}
    result = simulate(DelayChain(), name="chain", test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"data_in": values}, config=config)
    assert np.array_equal(result.outputs["data_out"], values)
    assert np.all(result.outputs["cycle"] - result.outputs["in_cycle"] == 5)


def test_generated_designs_are_lint_clean():
    assert lint_verilog(DelayChain(), "chain") == []
    assert lint_verilog(ThreeBuffers(), "three") == []


@pytest.mark.parametrize("name", ["1st", "has space", "", None])
def test_bad_module_names_are_rejected(name):
    with pytest.raises(ValueError, match=f"Verilog module name must be an identifier .*, not {name!r}"):
        check_module_name(name)
