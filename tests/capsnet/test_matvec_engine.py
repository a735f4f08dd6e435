# amaranth: UnusedElaboratable=no
"""CapsNetMatvecEngine: parameter check, ports, lint.  Its behaviour is simulated inside the accelerator
(tests/capsnet/test_accelerator.py: random layers bit for bit against models.capsnet.int8_layers, cycle counters against
the compiler's formula), where its memories are."""

import pytest
from amaranth.hdl import Shape

from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.sim.lint import lint_verilog
from nnaccel.hw.capsnet.config import SMALL_CONFIG


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a CapsNetConfig, not 'small'$"):
        CapsNetMatvecEngine(config="small")


def test_ports():
    engine = CapsNetMatvecEngine(config=SMALL_CONFIG)
    assert engine.config == SMALL_CONFIG
    members = engine.signature.members
    assert list(members) == ["start", "layer", "busy", "done", "read_address", "read_enable", "read_data",
                             "weight_address", "weight_read", "weight_data", "write_address", "write_data",
                             "write_enable", "issue", "draining"]
    widths = {name: Shape.cast(member.shape).width for name, member in members.items()}
    for name, width in (("read_data", 96), ("weight_data", 32), ("write_data", 32), ("write_enable", 1)):
        assert widths[name] == width, name


def test_lint_clean():
    assert lint_verilog(CapsNetMatvecEngine(config=SMALL_CONFIG), "capsnet_matvec_engine_small") == []
