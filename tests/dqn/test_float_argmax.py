# amaranth: UnusedElaboratable=no
"""hw.dqn.float_argmax.FloatArgmax on Amaranth's simulator: a running argmax over masked beats, against the
argmax NumPy computes on the values as floats (ties to the lowest index, -0 below +0), and its parameter checks."""

import numpy as np
import pytest
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nnaccel.hw.dqn.float_argmax import FloatArgmax
from nnaccel.hw.shared.float_format import BINARY16, BINARY32

SEED = 5151
LANES = 4


def reference_argmax(values, indices):
    """Index and bits of the largest float32 among ``values`` (raw bits) at ``indices``: NumPy's float order, +0 above
    -0, the lowest index among equal values."""
    floats = values.view(np.float32).astype(np.float64)
    best = None
    for position, index in enumerate(indices):
        key = (floats[position], not np.signbit(floats[position]))
        if best is None or key > best[0]:
            best = (key, index, int(values[position]))
    return best[1], best[2]


def simulate_beats(beats, clear_before=()):
    """Feed ``beats`` (values, mask, base_index), one per cycle with an idle cycle after every third; ``clear`` on
    the cycles of ``clear_before`` (beat numbers). Returns (index, value, found) seen after every beat."""
    dut = FloatArgmax(fmt=BINARY32, lanes=LANES, index_bits=10)
    seen = []
    simulator = Simulator(dut)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        for number, (values, mask, base) in enumerate(beats):
            ctx.set(dut.clear, number in clear_before)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            ctx.set(dut.candidates.payload, {"values": [int(v) for v in values], "mask": mask, "base_index": base})
            ctx.set(dut.candidates.valid, 1)
            await ctx.tick()
            ctx.set(dut.candidates.valid, 0)
            seen.append((ctx.get(dut.index), ctx.get(dut.value), ctx.get(dut.found)))
            if number % 3 == 2:
                await ctx.tick()           # an idle cycle changes nothing

    simulator.add_testbench(testbench)
    simulator.run()
    return seen


def test_running_argmax_against_numpy():
    rng = np.random.default_rng(SEED)
    pool = np.array([1.5, -2.0, 0.0, -0.0, 3.25, np.inf, -np.inf, 7.0, 7.0, -1e-30], np.float32)
    beats, pending = [], []
    for number in range(24):
        values = rng.choice(pool, LANES).view(np.uint32) if number % 2 else \
            (rng.standard_normal(LANES) * 4).astype(np.float32).view(np.uint32)
        mask = int(rng.integers(0, 1 << LANES))
        beats.append((values, mask, number * LANES))
    seen = simulate_beats(beats, clear_before=(0, 12))
    for number, (values, mask, base) in enumerate(beats):
        if number in (0, 12):
            pending = []
        pending += [(base + lane, values[lane]) for lane in range(LANES) if mask >> lane & 1]
        if not pending:
            assert seen[number][2] == 0, f"beat {number}: found without a lane"
            continue
        indices, bits = zip(*pending)
        assert seen[number] == (*reference_argmax(np.array(bits, np.uint32), indices), 1), f"beat {number}"


def test_ties_and_signed_zeros():
    def bits(*values):
        return np.array(values, np.float32).view(np.uint32)
    # Ties inside a beat and across beats keep the lowest index; +0 beats -0 whichever comes first.
    seen = simulate_beats([(bits(-0.0, 5.0, 5.0, 0.0), 0b1111, 0), (bits(5.0, 0.0, -0.0, 1.0), 0b1111, 4)])
    assert seen == [(1, int(bits(5.0)[0]), 1)] * 2
    seen = simulate_beats([(bits(-0.0, -1.0, -2.0, -3.0), 0b1111, 0), (bits(0.0, -1.0, -0.0, -3.0), 0b0101, 4)])
    assert [index for index, _, _ in seen] == [0, 4]
    # Masked lanes never win, even when larger.
    seen = simulate_beats([(bits(1.0, 9.0, 2.0, 8.0), 0b0101, 100)])
    assert seen == [(102, int(bits(2.0)[0]), 1)]


def test_ports_and_parameters():
    unit = FloatArgmax(fmt=BINARY16, lanes=3, index_bits=5)
    assert (unit.fmt, unit.lanes, unit.index_bits) == (BINARY16, 3, 5)
    payload = data.StructLayout({"values": data.ArrayLayout(16, 3), "mask": 3, "base_index": 5})
    assert dict(unit.signature.members) == {
        "clear": In(1), "candidates": In(stream.Signature(payload, always_ready=True)),
        "index": Out(5), "value": Out(16), "found": Out(1)}


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"fmt": "binary32"}, TypeError, "fmt must be a FloatFormat, not 'binary32'"),
    ({"lanes": 0}, ValueError, "lanes must be a positive integer, not 0"),
    ({"index_bits": True}, ValueError, "index_bits must be a positive integer, not True"),
    ({"lanes": 5, "index_bits": 2}, ValueError, "index_bits must number the 5 lanes, not 2"),
])
def test_rejects_bad_parameters(arguments, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        FloatArgmax(**arguments)
