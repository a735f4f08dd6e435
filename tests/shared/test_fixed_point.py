# amaranth: UnusedElaboratable=no
"""hw.shared.fixed_point against models.shared.fixed_point: format checks, model edge cases, RTL bit for bit."""

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.fixed_point import AluOp, FixedPointALU, QFormat, fx_add
from nnaccel.models.shared import fixed_point as fx
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog

Q5_10 = QFormat(width=16, frac_bits=10)
Q15_16 = QFormat(width=32, frac_bits=16)
UQ8_8 = QFormat(width=16, frac_bits=8, signed=False)


# --- format description -------------------------------------------------------------------------

def test_format_properties():
    assert (Q5_10.min_raw, Q5_10.max_raw, Q5_10.name) == (-32768, 32767, "q5_10")
    assert (UQ8_8.min_raw, UQ8_8.max_raw, UQ8_8.name) == (0, 65535, "uq8_8")
    assert Q5_10.to_raw(1.0) == 1024 and Q5_10.to_raw(-0.5 / 1024) == -1 and Q5_10.to_raw(100.0) == 32767
    assert Q5_10.from_bits(Q5_10.to_bits(-3)) == -3
    assert Q15_16.to_float(Q15_16.max_raw) == 32768 - 2 ** -16


@pytest.mark.parametrize("kwargs, message", [
    ({"width": 1, "frac_bits": 0}, "width must be an integer from 2 to 64, not 1"),
    ({"width": 16.0, "frac_bits": 0}, "width must be an integer from 2 to 64, not 16.0"),
    ({"width": 16, "frac_bits": 16}, "frac_bits must be an integer from 0 to width - 1 = 15, not 16"),
    ({"width": 16, "frac_bits": -1}, "frac_bits must be an integer from 0 to width - 1 = 15, not -1"),
    ({"width": 16, "frac_bits": 4, "signed": 1}, "signed must be True or False, not 1"),
])
def test_format_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        QFormat(**kwargs)


def test_alu_parameter_errors():
    with pytest.raises(TypeError, match=r"^fmt must be a QFormat, not 16$"):
        FixedPointALU(fmt=16)
    with pytest.raises(ValueError, match=r"^overflow must be one of saturate, wrap, not 'clamp'$"):
        FixedPointALU(fmt=Q5_10, overflow="clamp")
    with pytest.raises(ValueError, match=r"^overflow must be one of saturate, wrap, not 'clamp'$"):
        fx.add([1], [2], Q5_10, overflow="clamp")
    with pytest.raises(ValueError, match=r"^overflow must be one of saturate, wrap, not 'x'$"):
        fx_add(Signal(16), Signal(16), Q5_10, overflow="x")


# --- model edge cases ---------------------------------------------------------------------------

def test_model_rounding_half_up():
    one_lsb, half = 1, 1 << 9                       # in Q5.10: 1 LSB times 0.5 = exactly half an LSB
    assert fx.mul([one_lsb], [half], Q5_10)[0] == 1        # +0.5 LSB rounds up
    assert fx.mul([-one_lsb], [half], Q5_10)[0] == 0       # -0.5 LSB rounds up (towards +inf) to 0
    assert fx.mul([3], [341], Q5_10)[0] == 1               # 1023/1024 LSB -> 1
    assert fx.mul([3], [170], Q5_10)[0] == 0               # 510/1024 LSB -> 0
    assert fx.mul([1024], [-7], Q5_10)[0] == -7            # times 1.0 is exact


def test_model_saturation_and_wrap():
    low, high = Q5_10.min_raw, Q5_10.max_raw
    assert fx.add([high], [1], Q5_10)[0] == high
    assert fx.sub([low], [1], Q5_10)[0] == low
    assert fx.mul([low], [low], Q5_10)[0] == high           # (-32)*(-32) = 1024 saturates
    assert fx.mul([low], [1024], Q5_10)[0] == low           # most negative times 1.0 is exact
    assert fx.sub([0], [low], Q5_10)[0] == high             # negating the most negative value saturates
    assert fx.add([high], [1], Q5_10, overflow="wrap")[0] == low
    assert fx.sub([3], [5], UQ8_8)[0] == 0                  # unsigned clamps at zero
    assert fx.mac([high], [1024], [1024], Q5_10)[0] == high


def test_model_32_bit_products_exact():
    rng = np.random.default_rng(5)
    a = rng.integers(Q15_16.min_raw, Q15_16.max_raw + 1, 1000)
    b = rng.integers(Q15_16.min_raw, Q15_16.max_raw + 1, 1000)
    exact = [(int(x) * int(y) + (1 << 15)) >> 16 for x, y in zip(a, b)]
    expected = np.clip(exact, Q15_16.min_raw, Q15_16.max_raw)
    assert np.array_equal(fx.mul(a, b, Q15_16), expected)


# --- RTL against the model ----------------------------------------------------------------------

class RegisteredALU(wiring.Component):
    """Test wrapper: registers FixedPointALU's result (latency 1) and a valid beside it."""

    def __init__(self, *, fmt, overflow):
        self._alu = FixedPointALU(fmt=fmt, overflow=overflow)
        super().__init__({"op": In(2), "a": In(fmt.shape), "b": In(fmt.shape), "c": In(fmt.shape),
                          "in_valid": In(1), "y": Out(fmt.shape), "out_valid": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.alu = alu = self._alu
        m.d.comb += [alu.op.eq(self.op), alu.a.eq(self.a), alu.b.eq(self.b), alu.c.eq(self.c)]
        m.d.sync += [self.y.eq(alu.y), self.out_valid.eq(self.in_valid)]
        return m


def _operands(fmt, count, rng):
    edges = np.array(sorted({fmt.min_raw, fmt.min_raw + 1, -1 if fmt.signed else 1, 0, 1,
                             1 << fmt.frac_bits, fmt.max_raw - 1, fmt.max_raw}), dtype=np.int64)
    a_edge, b_edge = (grid.ravel() for grid in np.meshgrid(edges, edges))
    random = rng.integers(fmt.min_raw, fmt.max_raw + 1, size=(3, count), dtype=np.int64)
    a = np.concatenate([a_edge, random[0]])
    b = np.concatenate([b_edge, random[1]])
    c = np.concatenate([np.resize(edges, len(a_edge)), random[2]])
    return a, b, c


@pytest.mark.parametrize("fmt, overflow", [(Q5_10, "saturate"), (Q15_16, "saturate"), (UQ8_8, "wrap")],
                         ids=["q5_10_sat", "q15_16_sat", "uq8_8_wrap"])
def test_alu_rtl_matches_model(fmt, overflow):
    rng = np.random.default_rng(2024)
    a, b, c = _operands(fmt, 1500, rng)
    ops = np.arange(len(a) * 4) % 4
    a, b, c = (np.repeat(v, 4) for v in (a, b, c))
    dut = RegisteredALU(fmt=fmt, overflow=overflow)
    name = f"fx_alu_{fmt.name}_{overflow}"
    assert lint_verilog(dut, name) == []
    result = simulate(dut, name=name, test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus={"op": ops.astype(np.uint64), "a": fx.to_bits(a, fmt),
                                "b": fx.to_bits(b, fmt), "c": fx.to_bits(c, fmt)},
                      config={"inputs": {p: {"lanes": 1, "bits": fmt.width if p != "op" else 2}
                                         for p in ("op", "a", "b", "c")},
                              "in_valid": "in_valid", "outputs": {"y": {"lanes": 1, "bits": fmt.width}},
                              "out_valid": "out_valid", "expect": len(a)})
    model = {AluOp.ADD.value: fx.add(a, b, fmt, overflow=overflow),
             AluOp.SUB.value: fx.sub(a, b, fmt, overflow=overflow),
             AluOp.MUL.value: fx.mul(a, b, fmt, overflow=overflow),
             AluOp.MAC.value: fx.mac(c, a, b, fmt, overflow=overflow)}
    expected = np.choose(ops, [model[k] for k in range(4)])
    got = fx.from_bits(result.outputs["y"], fmt)
    mismatches = np.flatnonzero(got != expected)
    assert mismatches.size == 0, (
        f"{mismatches.size} mismatches, first: op {ops[mismatches[0]]} a {a[mismatches[0]]} "
        f"b {b[mismatches[0]]} c {c[mismatches[0]]}: rtl {got[mismatches[0]]} model {expected[mismatches[0]]}")
    assert np.array_equal(result.outputs["cycle"] - result.outputs["in_cycle"], np.ones(len(a), dtype=np.int64))
