# amaranth: UnusedElaboratable=no
"""hw.pe_ring.pe: its ports and lint of one PE. Its behaviour (every instruction form, both modes, the four
ports) is checked inside the ring against the instruction-set model in tests/pe_ring/test_ring.py: a PE
alone has no sequencer to feed it."""

import pytest

from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.pe import ProcessingElement
from nnaccel.hw.pe_ring.signatures import IssueSignature, RingLinkSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.models.pe_ring import pwl
from nnaccel.sim.lint import lint_verilog

TABLE = pwl.sigmoid_table(fmt=QFormat(width=16, frac_bits=10), segments=16)


def test_ports_are_the_named_interfaces():
    pe = ProcessingElement(config=RingConfig(table=TABLE, registers=4, lm_depth=256))
    members = pe.signature.members
    assert members["issue"].signature == IssueSignature(lm_depth=256)
    assert members["left"].signature == RingLinkSignature(TABLE.fmt.shape)
    assert members["right"].signature == RingLinkSignature(TABLE.fmt.shape)
    assert members["memory"].signature == BufferPortSignature(width=16, depth=256)
    assert not members["issue"].flow.value == members["right"].flow.value == "in"


def test_takes_a_config():
    with pytest.raises(TypeError, match="^config must be a RingConfig, not 3$"):
        ProcessingElement(config=3)


def test_lint_clean():
    pe = ProcessingElement(config=RingConfig(table=TABLE, registers=8, lm_depth=1024))
    assert lint_verilog(pe, "pe_q5_10_r8_lm1024") == []
