"""FloatAdder on Verilator (and Icarus): TestFloat level 1, directed IEEE-754 cases, seeded
edge-biased random operands against the golden model, latency/throughput, flush-to-zero, lint."""

import time
from functools import partial

import numpy as np
import pytest

from hw.float_adder import FloatAdder
from hw.float_format import BFLOAT16, BINARY16, BINARY32
from models.float_arith import bitlevel_add, float_add
from sim.lint import lint_verilog
from testbench.float_stimulus import random_operands
from testbench.float_stream import (FloatUnitPair, check_against_model, check_results, check_testfloat,
                                   run_float_stream)
from testbench.testfloat import load_testfloat

OUTPUT = "sum"          # port of FloatUnitPair (a FloatAdder with a FloatMultiplier beside it)

# binary32 (a, b, a + b), independent of any model.
DIRECTED = [
    (0x3F800000, 0xBF800000, 0x00000000),   # x + (-x) = +0
    (0xBF800000, 0x3F800000, 0x00000000),   # (-x) + x = +0
    (0x80000000, 0x80000000, 0x80000000),   # -0 + -0 = -0
    (0x00000000, 0x80000000, 0x00000000),   # +0 + -0 = +0
    (0x80000000, 0x00000000, 0x00000000),   # -0 + +0 = +0
    (0x80000000, 0x3F800000, 0x3F800000),   # -0 + 1 = 1
    (0x7F800000, 0xFF800000, 0x7FC00000),   # inf - inf -> canonical NaN
    (0xFF800000, 0xFF800000, 0xFF800000),   # -inf + -inf = -inf
    (0xFF800000, 0x7F7FFFFF, 0xFF800000),   # -inf + largest finite = -inf
    (0x7FA00000, 0x3F800000, 0x7FC00000),   # signalling NaN operand -> canonical NaN
    (0x3F800000, 0xFFC00001, 0x7FC00000),   # negative NaN with payload -> canonical NaN
    (0x7F7FFFFF, 0x73000000, 0x7F800000),   # largest finite + half its ulp: tie, odd -> overflow to inf
    (0x7F7FFFFF, 0x72FFFFFF, 0x7F7FFFFF),   # just below the tie stays finite
    (0x3F800000, 0x33800000, 0x3F800000),   # 1 + half ulp: tie -> even (1)
    (0x3F800001, 0x33800000, 0x3F800002),   # (1 + ulp) + half ulp: tie -> even (1 + 2 ulp)
    (0x3F800000, 0x33800001, 0x3F800001),   # just above the tie rounds up
    (0x3F800000, 0xB3800000, 0x3F7FFFFF),   # 1 - 2**-24: exact (the ulp below 1 is 2**-24)
    (0x00000001, 0x80000001, 0x00000000),   # subnormal cancellation -> +0
    (0x00800000, 0x80000001, 0x007FFFFF),   # smallest normal - smallest subnormal -> largest subnormal
    (0x007FFFFF, 0x00000001, 0x00800000),   # largest subnormal + smallest subnormal -> smallest normal
    (0x4B800000, 0xBF800000, 0x4B7FFFFF),   # 2**24 - 1: exact across the binade
    (0x4B800000, 0x3F800000, 0x4B800000),   # 2**24 + 1: tie -> even
    (0x4B800001, 0x3F800000, 0x4B800002),   # (2**24 + 2) + 1: tie -> even (up)
]


@pytest.mark.parametrize("fmt, vectors", [(BINARY32, "f32_add_1"), (BINARY16, "f16_add_1")])
def test_testfloat_level1(fmt, vectors):
    check_testfloat(FloatUnitPair(fmt=fmt, latency=2), OUTPUT, load_testfloat(vectors))


@pytest.mark.icarus
def test_testfloat_level1_icarus():
    start = time.perf_counter()
    result = check_testfloat(FloatAdder(fmt=BINARY32, latency=2), "result", load_testfloat("f32_add_1"),
                             simulator="icarus")
    print(f"icarus f32_add_1: build {result.build_seconds:.1f} s, run {result.run_seconds:.1f} s, "
          f"total {time.perf_counter() - start:.1f} s")


def test_directed_binary32():
    a, b, expected = (np.array(column, dtype=np.uint32) for column in zip(*DIRECTED))
    result = run_float_stream(FloatUnitPair(fmt=BINARY32, latency=2), a, b)
    check_results(BINARY32, a, b, result.outputs[OUTPUT], expected)


def test_directed_cases_match_model():
    a, b, expected = (np.array(column, dtype=np.uint32) for column in zip(*DIRECTED))
    check_results(BINARY32, a, b, float_add(BINARY32, a, b), expected)
    check_results(BINARY32, a, b, bitlevel_add(BINARY32, a, b), expected)


@pytest.mark.parametrize("count", [
    100_000,
    pytest.param(1_000_000, marks=pytest.mark.extended),
])
def test_random_binary32(count):
    a, b = random_operands(BINARY32, "add", count, seed=20261122)
    check_against_model(FloatUnitPair(fmt=BINARY32, latency=2), OUTPUT, partial(float_add, BINARY32), a, b)


def test_random_bfloat16():
    a, b = random_operands(BFLOAT16, "add", 30_000, seed=17)
    check_against_model(FloatUnitPair(fmt=BFLOAT16, latency=1), OUTPUT, partial(bitlevel_add, BFLOAT16), a, b)


def test_flush_to_zero():
    a, b = random_operands(BINARY16, "add", 30_000, seed=18)
    check_against_model(FloatUnitPair(fmt=BINARY16, latency=1, flush_to_zero=True), OUTPUT,
                        partial(bitlevel_add, BINARY16, flush_to_zero=True), a, b)


@pytest.mark.parametrize("latency", [0, 3])
@pytest.mark.parametrize("idle_seed", [None, 15])
def test_latency(latency, idle_seed):
    # Same bits as the model (and so as latency 2) and results exactly `latency` cycles after the
    # operands, back to back and with random idle cycles.
    a, b = random_operands(BINARY32, "add", 5_000, seed=19)
    check_against_model(FloatUnitPair(fmt=BINARY32, latency=latency), OUTPUT, partial(float_add, BINARY32), a, b,
                        idle_seed=idle_seed)


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
@pytest.mark.parametrize("latency", [0, 3])
def test_lint(fmt, latency):
    unit = FloatAdder(fmt=fmt, latency=latency)
    assert lint_verilog(unit, unit.module_name) == []
