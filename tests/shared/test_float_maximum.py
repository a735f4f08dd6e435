# amaranth: UnusedElaboratable=no
"""FloatMaximum on Verilator: directed cases (signed zeros, NaNs, infinities, subnormals) independent of any model,
edge-biased random operands of every format against ``models.shared.float_arith.float_max``, latency with idle
cycles, lint."""

from functools import partial

import numpy as np
import pytest

from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.hw.shared.float_maximum import FloatMaximum
from nnaccel.models.shared.float_arith import float_max
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.float_stimulus import random_operands
from nnaccel.testbench.shared.float_stream import check_against_model, check_results, run_float_stream

SEED = 20261125

DIRECTED = [                                 # binary32 (a, b, max)
    (0x80000000, 0x00000000, 0x00000000),   # max(-0, +0) = +0
    (0x00000000, 0x80000000, 0x00000000),   # max(+0, -0) = +0, either order
    (0x80000000, 0x80000000, 0x80000000),   # max(-0, -0) = -0
    (0x80000000, 0x80000001, 0x80000000),   # -0 beats the negative smallest subnormal
    (0x00000001, 0x00000000, 0x00000001),   # the smallest subnormal beats +0
    (0x3F800000, 0x3F800001, 0x3F800001),   # one ulp apart
    (0xBF800000, 0xBF800001, 0xBF800000),   # negative: the smaller magnitude wins
    (0xC0000000, 0x3F800000, 0x3F800000),   # -2 < 1
    (0xFF800000, 0xFF7FFFFF, 0xFF7FFFFF),   # -inf < the lowest finite
    (0x7F800000, 0x7F7FFFFF, 0x7F800000),   # +inf wins
    (0xFF800000, 0xFF800000, 0xFF800000),   # max(-inf, -inf) = -inf: the max mode's identity
    (0x7FC00000, 0x3F800000, 0x7FC00000),   # a NaN wins ...
    (0x3F800000, 0xFFC00001, 0x7FC00000),   # ... in either place, as the canonical NaN
    (0x7FA00000, 0x7F800000, 0x7FC00000),   # a signalling NaN against +inf
    (0xFF800001, 0xFF800000, 0x7FC00000),   # the NaN just past -inf's encoding
]


def directed_columns():
    return (np.array(column, dtype=np.uint32) for column in zip(*DIRECTED))


def test_directed_cases_match_model():
    a, b, expected = directed_columns()
    check_results(BINARY32, a, b, float_max(BINARY32, a, b), expected)


def test_directed_binary32():
    a, b, expected = directed_columns()
    check_results(BINARY32, a, b, run_float_stream(FloatMaximum(fmt=BINARY32), a, b).outputs["result"], expected)


def random_maximum_operands(fmt, count, seed):
    """Edge-biased operands (``random_operands`` of an addition: specials, exponent edges, cancellations), then the
    pairs that make a maximum hard: ``x`` against ``-x``, against itself and against its neighbour encodings."""
    a, b = random_operands(fmt, "add", count, seed=seed)
    rng = np.random.default_rng(seed)
    sign_bit = 1 << (fmt.width - 1)
    mirrored = a[: count // 4] ^ sign_bit
    neighbours = (a[: count // 4].astype(np.int64) + rng.integers(-1, 2, size=count // 4)) % (1 << fmt.width)
    return (np.concatenate([a, a[: count // 4], a[: count // 4], a[: count // 4]]),
            np.concatenate([b, mirrored, a[: count // 4], neighbours]).astype(a.dtype))


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
def test_random(fmt):
    a, b = random_maximum_operands(fmt, 20_000, SEED)
    check_against_model(FloatMaximum(fmt=fmt), "result", partial(float_max, fmt), a, b)


@pytest.mark.parametrize("latency", [0, pytest.param(3, marks=pytest.mark.extended)],
                         ids=lambda latency: f"latency{latency}")
def test_latency_with_idle_cycles(latency):
    a, b = random_maximum_operands(BINARY32, 2_000, SEED + 1)
    check_against_model(FloatMaximum(fmt=BINARY32, latency=latency), "result", partial(float_max, BINARY32), a, b,
                        idle_seed=SEED)


def test_module_name():
    assert FloatMaximum(fmt=BFLOAT16, latency=1).module_name == "float_maximum_bfloat16_l1"


@pytest.mark.parametrize(("fmt", "latency"), [(BINARY32, 0), (BINARY32, 2), (BINARY16, 2), (BFLOAT16, 2)],
                         ids=lambda value: getattr(value, "name", f"latency{value}"))
def test_lint(fmt, latency):
    unit = FloatMaximum(fmt=fmt, latency=latency)
    assert lint_verilog(unit, unit.module_name) == []
