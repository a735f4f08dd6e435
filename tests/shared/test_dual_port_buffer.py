# amaranth: UnusedElaboratable=no
"""hw.shared.dual_port_buffer and models.shared.dual_port_buffer: parameter checks, init packing, lint, random dual-port traffic."""

import numpy as np
import pytest

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer, block_ram_count, pack_words
from nnaccel.models.shared.dual_port_buffer import DualPortBufferModel, PortRequest
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.dual_port_buffer_tb import random_requests

WIDTH, DEPTH, LANES = 96, 32, 3     # a word wider than 64 bits, a depth small enough for many collisions


# --- parameters and initial contents -----------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"width": 0, "depth": 4}, "width must be a positive integer, not 0"),
    ({"width": 8.0, "depth": 4}, "width must be a positive integer, not 8.0"),
    ({"width": 8, "depth": True}, "depth must be a positive integer, not True"),
    ({"width": 8, "depth": 4, "init": np.zeros(4, dtype=np.int32)},
     "init must be an array of unsigned integers \\(raw bits\\), not dtype int32"),
    ({"width": 8, "depth": 4, "init": np.zeros(5, dtype=np.uint8)},
     "init must have shape \\(4,\\) or \\(4, lanes\\), not \\(5,\\)"),
    ({"width": 8, "depth": 4, "init": np.zeros((4, 3), dtype=np.uint8)},
     "init has 3 lanes, which do not divide the 8-bit word"),
    ({"width": 8, "depth": 4, "init": np.array([0, 256, 0, 0], dtype=np.uint16)},
     "init holds 256, which does not fit in 8 bits"),
    ({"width": 8, "depth": 2, "init": np.array([[0, 16], [0, 0]], dtype=np.uint8)},
     "init holds 16, which does not fit in 4 bits"),
    ({"width": 8, "depth": 2, "granularity": 0}, "granularity must be a positive integer, not 0"),
    ({"width": 8, "depth": 2, "granularity": 3}, "granularity must divide the width 8, not 3"),
])
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        DualPortBuffer(**kwargs)


def test_properties_and_signature():
    buffer = DualPortBuffer(width=2688, depth=336)
    assert (buffer.width, buffer.depth, buffer.size_bits) == (2688, 336, 2688 * 336)
    assert (buffer.m20k_blocks, buffer.m10k_blocks) == (135, 135)
    assert block_ram_count(4096, 5184, block_depth=1024) == 205 * 6
    port = BufferPortSignature(width=2688, depth=336)
    assert buffer.signature.members["a"].signature == port
    assert repr(port) == "BufferPortSignature(width=2688, depth=336, granularity=None)"
    assert buffer.granularity is None
    byte_enables = DualPortBuffer(width=96, depth=4, granularity=32)
    assert byte_enables.granularity == 32
    assert byte_enables.signature.members["b"].signature.members["write_enable"].shape == 3
    assert port != BufferPortSignature(width=2688, depth=337)


def test_pack_words_lane_zero_at_lsb():
    init = np.array([[1, 2], [0xFFFF, 0]], dtype=np.uint16)
    assert pack_words(init, width=32, depth=2) == [0x0002_0001, 0x0000_FFFF]
    assert pack_words(np.array([7, 9], dtype=np.uint64), width=70, depth=2) == [7, 9]


@pytest.mark.parametrize("granularity", [None, WIDTH // LANES])
def test_lint_clean(granularity):
    init = np.arange(DEPTH * LANES, dtype=np.uint32).reshape(DEPTH, LANES)
    buffer = DualPortBuffer(width=WIDTH, depth=DEPTH, init=init, granularity=granularity)
    assert lint_verilog(buffer, f"dual_port_buffer_w96_d32_g{granularity or 0}") == []


# --- the model on directed cases ---------------------------------------------------------------

def test_model_read_during_write():
    model = DualPortBufferModel(width=8, depth=4, init=np.array([10, 11, 12, 13], dtype=np.uint8))
    # port a writes address 1 and reads it (new data); port b reads address 1 on the same cycle (old data)
    assert model.step(PortRequest(1, True, True, 99), PortRequest(1, True)) == (99, 11)
    # neither port reads: both outputs hold
    assert model.step(PortRequest(2, False, True, 5), PortRequest()) == (99, 11)
    assert model.step(PortRequest(2, True), PortRequest(1, True)) == (5, 99)
    with pytest.raises(ValueError, match="^both ports write address 3 on one cycle: undefined$"):
        model.step(PortRequest(3, False, True, 1), PortRequest(3, False, True, 2))
    with pytest.raises(ValueError, match="^address 4 is outside 0..3$"):
        model.step(PortRequest(4, True), PortRequest())


def test_model_granularity():
    model = DualPortBufferModel(width=16, depth=2, init=np.array([0xAABB, 0], dtype=np.uint16), granularity=8)
    assert model.step(PortRequest(0, True, 0b10, 0x1122), PortRequest(0, True)) == (0x11BB, 0xAABB)
    assert model.step(PortRequest(0, True), PortRequest(1, False, 0b01, 0x3344)) == (0x11BB, 0xAABB)
    assert model.words == [0x11BB, 0x0044]


# --- RTL: random simultaneous traffic on both ports --------------------------------------------

@pytest.mark.parametrize("granularity", [None, WIDTH // LANES])
def test_random_traffic_against_model(simulator, granularity):
    rng = np.random.default_rng(2024)
    cycles = 3000
    init = rng.integers(0, 1 << 32, size=(DEPTH, LANES), dtype=np.uint64)
    stimulus = random_requests(rng, cycles, depth=DEPTH, lanes=LANES, lane_bits=32, granularity=granularity)
    reads = {port: stimulus[f"{port}_read_enable"].astype(bool) for port in "ab"}
    writes = {port: stimulus[f"{port}_write_enable"].astype(bool) for port in "ab"}
    same_address = stimulus["a_address"] == stimulus["b_address"]
    # the traffic exercises both read-during-write cases
    assert np.count_nonzero(reads["a"] & writes["a"]) > 100
    assert np.count_nonzero(reads["a"] & writes["b"] & same_address) > 10
    assert np.count_nonzero(reads["b"] & writes["a"] & same_address) > 10

    result = simulate(DualPortBuffer(width=WIDTH, depth=DEPTH, init=init, granularity=granularity),
                      name=f"dual_port_buffer_w96_d32_g{granularity or 0}", test_module="nnaccel.testbench.shared.dual_port_buffer_tb",
                      stimulus=stimulus, simulator=simulator,
                      config={"width": WIDTH, "depth": DEPTH, "lanes": LANES, "granularity": granularity,
                              "init": init.tolist()})
    assert int(result.outputs["checked"]) == 2 * cycles
    # the last word read on each port, as a sanity check on the saved samples
    model = DualPortBufferModel(width=WIDTH, depth=DEPTH, init=init, granularity=granularity)
    for cycle in range(cycles):
        last = model.step(*(PortRequest(int(stimulus[f"{p}_address"][cycle]), bool(reads[p][cycle]),
                                        int(stimulus[f"{p}_write_enable"][cycle]),
                                        pack_words(stimulus[f"{p}_write_data"][cycle:cycle + 1], width=WIDTH,
                                                   depth=1)[0]) for p in "ab"))
    assert tuple(pack_words(result.outputs[f"read_data_{p}"][-1:], width=WIDTH, depth=1)[0] for p in "ab") == last
