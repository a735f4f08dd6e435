# amaranth: UnusedElaboratable=no
"""hw.pe_ring.pe: parameters and lint of one PE. Its behaviour (every instruction form, both modes, the four
ports) is checked inside the ring against the instruction-set model in tests/pe_ring/test_ring.py: a PE
alone has no sequencer to feed it."""

import pytest

from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.pe_ring.pe import ProcessingElement
from nnaccel.models.pe_ring import pwl
from nnaccel.sim.lint import lint_verilog

TABLE = pwl.sigmoid_table(fmt=QFormat(width=16, frac_bits=10), segments=16)


def test_parameters():
    pe = ProcessingElement(table=TABLE, registers=4, lm_depth=256)
    assert (pe.registers, pe.lm_depth, pe.fmt, pe.table) == (4, 256, TABLE.fmt, TABLE)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"table": 3}, TypeError, "table must be a PWLTable, not 3"),
    ({"registers": 0}, ValueError, "registers must be an integer from 1 to 12, not 0"),
    ({"registers": True}, ValueError, "registers must be an integer from 1 to 12, not True"),
    ({"lm_depth": 8}, ValueError, "lm_depth must be a power of two from 16 to 16384, not 8"),
    ({"lm_depth": 1000}, ValueError, "lm_depth must be a power of two from 16 to 16384, not 1000"),
])
def test_parameter_errors(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        ProcessingElement(**{"table": TABLE, **kwargs})


def test_lint_clean():
    assert lint_verilog(ProcessingElement(table=TABLE, registers=8, lm_depth=1024), "pe_q5_10_r8_lm1024") == []
