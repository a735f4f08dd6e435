"""sim.fpga.systems: every system's top level is lint-clean at its small size (the same code as the full size)."""

import pytest

from nnaccel.sim.lint import lint_verilog
from nnaccel.sim.fpga.systems import SYSTEMS, system

# The PE ring's small configuration is the one tests/pe_ring/test_ring.py already lints (a minute of Verilator);
# tests/capsnet/test_streaming_accelerator.py lints the streaming CapsNet at its small and its DE1-SoC size.
LINTED_ELSEWHERE = {"pe_ring", "capsnet"}


@pytest.mark.parametrize("name", [name for name in SYSTEMS if name not in LINTED_ELSEWHERE])
def test_top_level_is_lint_clean(name):
    entry = system(name)
    component = entry.build_small()
    assert lint_verilog(component, component.module_name) == []


def test_unknown_system_is_rejected():
    with pytest.raises(ValueError, match="system must be one of fmul, .*, not 'tpu'"):
        system("tpu")
