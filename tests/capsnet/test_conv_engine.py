# amaranth: UnusedElaboratable=no
"""CapsNetConvEngine: parameter check, ports, lint.  Its behaviour is simulated inside the accelerator
(tests/capsnet/test_accelerator.py: random layers bit for bit against models.capsnet.int8_layers, cycle counters against
the compiler's formula), where its memories are."""

import dataclasses

import pytest

from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.tile_handshake import TileHandshakeSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.sim.lint import lint_verilog
from nnaccel.hw.capsnet.config import SMALL_CONFIG


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a CapsNetConfig, not 'small'$"):
        CapsNetConvEngine(config="small")


def test_ports():
    engine = CapsNetConvEngine(config=SMALL_CONFIG)
    assert engine.config == SMALL_CONFIG
    members = engine.signature.members
    assert list(members) == ["control", "inputs", "weights", "biases", "outputs"]
    assert members["control"].signature.flip() == EngineControlSignature(descriptor_layout(SMALL_CONFIG))
    # The RAM ports: 12 int8 per activation word, 4 int8 per weight word, 4 int32 per bias word, byte enables.
    for name, width, depth in (("inputs", 96, 512), ("weights", 32, 1024), ("biases", 128, 16), ("outputs", 96, 512)):
        assert members[name].signature == BufferPortSignature(width=width, depth=depth, granularity=8), name
    tiled = CapsNetConvEngine(config=dataclasses.replace(SMALL_CONFIG, conv_tiled=True))
    assert tiled.signature.members["tiles"].signature.flip() == TileHandshakeSignature()


def test_lint_clean():
    assert lint_verilog(CapsNetConvEngine(config=SMALL_CONFIG), "capsnet_conv_engine_small") == []
