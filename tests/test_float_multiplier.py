"""FloatMultiplier on Verilator (and Icarus): TestFloat level 1, directed IEEE-754 cases, seeded
edge-biased random operands against the golden model, latency/throughput, flush-to-zero, lint."""

import time
from functools import partial

import numpy as np
import pytest

from hw.float_format import BFLOAT16, BINARY16, BINARY32
from hw.float_multiplier import FloatMultiplier
from models.float_arith import bitlevel_mul, float_mul
from sim.lint import lint_verilog
from testbench.float_stimulus import random_operands
from testbench.float_stream import (FloatUnitPair, check_against_model, check_results, check_testfloat,
                                   run_float_stream)
from testbench.testfloat import load_testfloat

OUTPUT = "product"          # port of FloatUnitPair (a FloatMultiplier with a FloatAdder beside it)

# binary32 (a, b, a * b), independent of any model.
DIRECTED = [
    (0x7F800000, 0x00000000, 0x7FC00000),   # inf * 0 -> canonical NaN
    (0x80000000, 0x7F800000, 0x7FC00000),   # -0 * inf -> canonical NaN
    (0x7FA00000, 0x3F800000, 0x7FC00000),   # signalling NaN operand -> canonical NaN
    (0xFFC00001, 0x00000000, 0x7FC00000),   # negative quiet NaN with payload -> canonical NaN
    (0xFF800000, 0xBF800000, 0x7F800000),   # -inf * -1 = +inf
    (0x80000000, 0x3F800000, 0x80000000),   # -0 * 1 = -0
    (0x80000000, 0x80000000, 0x00000000),   # -0 * -0 = +0
    (0x7F7FFFFF, 0x40000000, 0x7F800000),   # overflow -> inf
    (0xFF7FFFFF, 0x3F800001, 0xFF800000),   # overflow by rounding -> -inf
    (0x3F800001, 0x3F800001, 0x3F800002),   # (1 + 2**-23)**2 rounds down to 1 + 2**-22
    (0x3F800001, 0x3FC00000, 0x3FC00002),   # (1 + 2**-23) * 1.5 = 1.5 + 1.5 ulp: tie -> even (+2 ulp)
    (0x3F800003, 0x3FC00000, 0x3FC00004),   # (1 + 3 * 2**-23) * 1.5 = 1.5 + 4.5 ulp: tie -> even (+4 ulp)
    (0x3FC00001, 0x3FC00000, 0x40100001),   # 2.25 + 2.25 * 2**-23 = 2.25 + 1.125 ulp -> +1 ulp
    (0x00000001, 0x3F000000, 0x00000000),   # smallest subnormal / 2: tie -> even (0)
    (0x00000003, 0x3F000000, 0x00000002),   # 3 * 2**-150: tie -> even (2 * 2**-149)
    (0x80000001, 0x3F400000, 0x80000001),   # -0.75 * smallest subnormal -> -smallest subnormal
    (0x00800000, 0x3F000000, 0x00400000),   # smallest normal / 2 -> subnormal, exact
    (0x007FFFFF, 0x40000000, 0x00FFFFFE),   # largest subnormal * 2 -> normal
    (0x00800000, 0x3F7FFFFF, 0x00800000),   # smallest normal * (1 - 2**-24) rounds up to the normal range
    (0x00000001, 0x4B000000, 0x00800000),   # subnormal * 2**23 -> smallest normal
    (0x00000001, 0x00000001, 0x00000000),   # underflow to +0
]


@pytest.mark.parametrize("fmt, vectors", [(BINARY32, "f32_mul_1"), (BINARY16, "f16_mul_1")])
def test_testfloat_level1(fmt, vectors):
    check_testfloat(FloatUnitPair(fmt=fmt, latency=2), OUTPUT, load_testfloat(vectors))


@pytest.mark.icarus
def test_testfloat_level1_icarus():
    start = time.perf_counter()
    result = check_testfloat(FloatMultiplier(fmt=BINARY32, latency=2), "result", load_testfloat("f32_mul_1"),
                             simulator="icarus")
    print(f"icarus f32_mul_1: build {result.build_seconds:.1f} s, run {result.run_seconds:.1f} s, "
          f"total {time.perf_counter() - start:.1f} s")


def test_directed_binary32():
    a, b, expected = (np.array(column, dtype=np.uint32) for column in zip(*DIRECTED))
    result = run_float_stream(FloatUnitPair(fmt=BINARY32, latency=2), a, b)
    check_results(BINARY32, a, b, result.outputs[OUTPUT], expected)


def test_directed_cases_match_model():
    a, b, expected = (np.array(column, dtype=np.uint32) for column in zip(*DIRECTED))
    check_results(BINARY32, a, b, float_mul(BINARY32, a, b), expected)
    check_results(BINARY32, a, b, bitlevel_mul(BINARY32, a, b), expected)


@pytest.mark.parametrize("count", [
    100_000,
    pytest.param(1_000_000, marks=pytest.mark.extended),
])
def test_random_binary32(count):
    a, b = random_operands(BINARY32, "mul", count, seed=20261121)
    check_against_model(FloatUnitPair(fmt=BINARY32, latency=2), OUTPUT, partial(float_mul, BINARY32), a, b)


def test_random_bfloat16():
    a, b = random_operands(BFLOAT16, "mul", 30_000, seed=7)
    check_against_model(FloatUnitPair(fmt=BFLOAT16, latency=1), OUTPUT, partial(bitlevel_mul, BFLOAT16), a, b)


def test_flush_to_zero():
    a, b = random_operands(BINARY16, "mul", 30_000, seed=8)
    check_against_model(FloatUnitPair(fmt=BINARY16, latency=1, flush_to_zero=True), OUTPUT,
                        partial(bitlevel_mul, BINARY16, flush_to_zero=True), a, b)


@pytest.mark.parametrize("latency", [0, 3])
@pytest.mark.parametrize("idle_seed", [None, 5])
def test_latency(latency, idle_seed):
    # Same bits as the model (and so as latency 2) and results exactly `latency` cycles after the
    # operands, back to back and with random idle cycles.
    a, b = random_operands(BINARY32, "mul", 5_000, seed=9)
    check_against_model(FloatUnitPair(fmt=BINARY32, latency=latency), OUTPUT, partial(float_mul, BINARY32), a, b,
                        idle_seed=idle_seed)


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
@pytest.mark.parametrize("latency", [0, 3])
def test_lint(fmt, latency):
    unit = FloatMultiplier(fmt=fmt, latency=latency)
    assert lint_verilog(unit, unit.module_name) == []
