# amaranth: UnusedElaboratable=no
"""hw.pe_ring.pwl_activation against models.pe_ring.pwl: table checks, model accuracy and saturation, RTL bit for bit."""

import numpy as np
import pytest

from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.pe_ring.pwl_activation import PWLActivation, PWLTable
from nnaccel.models.shared import fixed_point as fx
from nnaccel.models.pe_ring import pwl
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.stream_ports import stream_config

Q5_10 = QFormat(width=16, frac_bits=10)
Q15_16 = QFormat(width=32, frac_bits=16)


def test_table_geometry():
    table = pwl.sigmoid_table(fmt=Q5_10)
    assert (table.segments, table.range_log2, table.segment_shift) == (256, 13, 6)
    assert pwl.function_table("tanh", fmt=Q5_10, segments=16).segment_shift == 9


@pytest.mark.parametrize("kwargs, error, message", [
    ({"input_range": 3.0}, ValueError,
     r"input_range must be a power of two times the LSB of a signed q5_10, at most 2\*\*15 LSBs, not 3.0"),
    ({"input_range": 64.0}, ValueError,
     r"input_range must be a power of two times the LSB of a signed q5_10, at most 2\*\*15 LSBs, not 64.0"),
    ({"slopes": (0,) * 3, "intercepts": (0,) * 3}, ValueError,
     r"the number of segments must be a power of two from 2 to 16384 \(one LSB per segment\), not 3"),
    ({"intercepts": (0,) * 3}, ValueError, r"3 intercepts for 4 slopes: they must pair up"),
    ({"slopes": (0, 0, 0, 40000)}, ValueError, r"slope 40000 is not a raw q5_10 integer"),
    ({"fmt": 16}, TypeError, r"fmt must be a QFormat, not 16"),
])
def test_table_errors(kwargs, error, message):
    arguments = {"fmt": Q5_10, "input_range": 8.0, "slopes": (0,) * 4, "intercepts": (0,) * 4, **kwargs}
    with pytest.raises(error, match=f"^{message}$"):
        PWLTable(**arguments)


def test_component_errors():
    with pytest.raises(TypeError, match=r"^table must be a PWLTable, not 'sigmoid'$"):
        PWLActivation(table="sigmoid")
    with pytest.raises(ValueError, match=r"^segments must be an integer power of two of at least 2, not 1$"):
        pwl.sigmoid_table(fmt=Q5_10, segments=1)


def test_model_saturates_outside_range():
    table = pwl.sigmoid_table(fmt=Q5_10)
    inside_low, inside_high = pwl.evaluate(table, [-8 * 1024, 8 * 1024 - 1])
    assert np.array_equal(pwl.evaluate(table, [Q5_10.min_raw, -9000, -8 * 1024]), [inside_low] * 3)
    assert np.array_equal(pwl.evaluate(table, [8 * 1024, 20000, Q5_10.max_raw]), [inside_high] * 3)


@pytest.mark.parametrize("name, max_error_256", [("sigmoid", 0.001), ("tanh", 0.001), ("gaussian", 0.001)])
def test_model_accuracy_improves_with_segments(name, max_error_256):
    errors = [pwl.error_statistics(pwl.function_table(name, fmt=Q15_16, segments=n), pwl.FUNCTIONS[name])[0]
              for n in (16, 64, 256)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < max_error_256


def _inputs(table, rng):
    fmt = table.fmt
    span = 1 << table.range_log2
    sweep = np.arange(-span - 64, span + 64, max(1, span // 2048))
    edges = [fmt.min_raw, fmt.min_raw + 1, -span - 1, -span, -span + 1, -1, 0, 1, span - 1, span, fmt.max_raw]
    return np.concatenate([sweep, edges, rng.integers(fmt.min_raw, fmt.max_raw + 1, 1000)]).astype(np.int64)


@pytest.mark.parametrize("table", [pwl.sigmoid_table(fmt=Q5_10), pwl.function_table("tanh", fmt=Q15_16, segments=16)],
                         ids=["sigmoid_q5_10_256", "tanh_q15_16_16"])
def test_rtl_matches_model(table):
    rng = np.random.default_rng(11)
    x = _inputs(table, rng)
    dut = PWLActivation(table=table)
    name = f"pwl_{table.name}_{table.fmt.name}_{table.segments}"
    assert lint_verilog(dut, name) == []
    fmt = table.fmt
    result = simulate(dut, name=name, test_module="nnaccel.testbench.shared.stream_tb", stimulus={"x": fx.to_bits(x, fmt)},
                      config=stream_config(dut, input="x", output="y", expect=len(x), idle_seed=3))
    got = fx.from_bits(result.outputs["y"], fmt)
    expected = pwl.evaluate(table, x)
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, f"{bad.size} mismatches, first x={x[bad[0]]}: rtl {got[bad[0]]} model {expected[bad[0]]}"
    assert np.all(result.outputs["cycle"] - result.outputs["in_cycle"] == 1)
