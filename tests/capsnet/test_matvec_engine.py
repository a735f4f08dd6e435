# amaranth: UnusedElaboratable=no
"""CapsNetMatvecEngine: parameter check, ports, lint.  Its behaviour is simulated inside the accelerator
(tests/capsnet/test_accelerator.py: random layers bit for bit against models.capsnet.int8_layers, cycle counters against
the compiler's formula), where its memories are."""

import pytest

from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.sim.lint import lint_verilog
from nnaccel.hw.capsnet.config import SMALL_CONFIG


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a CapsNetConfig, not 'small'$"):
        CapsNetMatvecEngine(config="small")


def test_ports():
    engine = CapsNetMatvecEngine(config=SMALL_CONFIG)
    assert engine.config == SMALL_CONFIG
    members = engine.signature.members
    assert list(members) == ["control", "inputs", "weights", "predictions"]
    assert members["control"].signature.flip() == EngineControlSignature(descriptor_layout(SMALL_CONFIG))
    # 12 int8 per activation word, 4 int8 lanes per weight and prediction word, byte enables.
    for name, width, depth in (("inputs", 96, 512), ("weights", 32, 1024), ("predictions", 32, 128)):
        assert members[name].signature == BufferPortSignature(width=width, depth=depth, granularity=8), name


def test_lint_clean():
    assert lint_verilog(CapsNetMatvecEngine(config=SMALL_CONFIG), "capsnet_matvec_engine_small") == []
