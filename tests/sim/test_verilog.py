"""Verilog generation: module names and de-duplication of identical submodules."""

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.sim.verilog import check_module_name, generate_verilog
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


def test_identical_submodules_are_emitted_once():
    text = generate_verilog(DelayChain(), "chain")
    assert text.count("\nmodule ") == 3   # the top, one 1-cycle and one 2-cycle delay line
    assert text.count("\\chain.stage0 ") == 4   # its definition and three instantiations


def test_deduplicated_design_behaves_the_same():
    values = np.arange(50, dtype=np.uint64) * 977 % 65536
    config = {"inputs": {"data_in": {"lanes": 1, "bits": 16}}, "in_valid": "in_valid",
              "outputs": {"data_out": {"lanes": 1, "bits": 16}}, "out_valid": "out_valid", "expect": 50}
    result = simulate(DelayChain(), name="chain", test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"data_in": values}, config=config)
    assert np.array_equal(result.outputs["data_out"], values)
    assert np.all(result.outputs["cycle"] - result.outputs["in_cycle"] == 5)


def test_deduplicated_design_is_lint_clean():
    assert lint_verilog(DelayChain(), "chain") == []


@pytest.mark.parametrize("name", ["1st", "has space", "", None])
def test_bad_module_names_are_rejected(name):
    with pytest.raises(ValueError, match=f"Verilog module name must be an identifier .*, not {name!r}"):
        check_module_name(name)
