# amaranth: UnusedElaboratable=no
"""CapsNetMatvecEngine: parameter check, ports, lint.  Its behaviour is simulated inside the accelerators, where its
memories are: tests/capsnet/test_accelerator.py (a requantizer per lane: random layers bit for bit against
models.capsnet.int8_layers, cycle counters against the compiler's formula) and
tests/capsnet/test_streaming_accelerator.py (shared requantizers, 2 cycles per result: predictions bit for bit,
counters against the cycle formula)."""

import dataclasses

import pytest

from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine, matvec_result_latency
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


@pytest.mark.parametrize("requantize_cycles", [1, 2, 4])
def test_lint_clean(requantize_cycles):
    config = dataclasses.replace(SMALL_CONFIG, matvec_requantize_cycles=requantize_cycles)
    assert lint_verilog(CapsNetMatvecEngine(config=config), f"capsnet_matvec_engine_small_q{requantize_cycles}") == []


def test_latency_with_shared_requantizers():
    assert matvec_result_latency(SMALL_CONFIG) == 3
    assert matvec_result_latency(dataclasses.replace(SMALL_CONFIG, matvec_requantize_cycles=4)) == 3 + 4
