"""FloatAdder and FloatMultiplier on Verilator (and Icarus): TestFloat level 1, directed IEEE-754
cases, seeded edge-biased random operands against the golden models, latency/throughput,
flush-to-zero, lint. Every test runs once per operation of ``OPERATIONS`` (ids ``add``, ``mul``)."""

import time
from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np
import pytest

from nnaccel.hw.shared.float_adder import FloatAdder
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.models.shared.float_arith import bitlevel_add, bitlevel_mul, float_add, float_mul
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.float_stimulus import random_operands
from nnaccel.testbench.shared.float_stream import (FloatUnitPair, check_against_model, check_results, check_testfloat,
                                   run_float_stream)
from nnaccel.testbench.shared.testfloat import load_testfloat


@dataclass(frozen=True)
class Seeds:
    """Seeds of the random operands of each test, so that every run draws the same vectors."""
    random_binary32: int
    random_bfloat16: int
    flush_to_zero: int
    latency: int
    latency_idle: int       # idle cycles between operands in test_latency


@dataclass(frozen=True)
class FloatOperation:
    """What the tests need to know of one two-operand float unit."""
    name: str               # "add" or "mul": the test id and the ``operation`` of random_operands
    unit: type              # the component streamed alone (Icarus run, lint)
    output: str             # its field of FloatUnitPair's result (one build holds both units)
    model: Callable         # model(fmt, a, b): the golden model through the host's float arithmetic
    bitlevel_model: Callable  # bitlevel_model(fmt, a, b, *, flush_to_zero): integer-only model, any format
    testfloat_level1: dict  # format name -> TestFloat level-1 vector file
    directed: list          # binary32 (a, b, expected), independent of any model
    seeds: Seeds


ADD = FloatOperation(
    name="add", unit=FloatAdder, output="sum", model=float_add, bitlevel_model=bitlevel_add,
    testfloat_level1={"binary32": "f32_add_1", "binary16": "f16_add_1"},
    directed=[
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
    ],
    seeds=Seeds(random_binary32=20261122, random_bfloat16=17, flush_to_zero=18, latency=19, latency_idle=15),
)

MUL = FloatOperation(
    name="mul", unit=FloatMultiplier, output="product", model=float_mul, bitlevel_model=bitlevel_mul,
    testfloat_level1={"binary32": "f32_mul_1", "binary16": "f16_mul_1"},
    directed=[
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
    ],
    seeds=Seeds(random_binary32=20261121, random_bfloat16=7, flush_to_zero=8, latency=9, latency_idle=5),
)

OPERATIONS = [ADD, MUL]

# Stacked below the other parametrizations so that ids start with the operation: [add-binary32].
each_operation = pytest.mark.parametrize("operation", OPERATIONS, ids=lambda operation: operation.name)


def directed_columns(operation):
    """The directed cases of ``operation`` as the arrays ``a``, ``b``, ``expected``."""
    return (np.array(column, dtype=np.uint32) for column in zip(*operation.directed))


@pytest.mark.parametrize("fmt", [BINARY32, BINARY16], ids=lambda fmt: fmt.name)
@each_operation
def test_testfloat_level1(operation, fmt):
    vectors = load_testfloat(operation.testfloat_level1[fmt.name])
    check_testfloat(FloatUnitPair(fmt=fmt, latency=2), operation.output, vectors)


@pytest.mark.icarus
@each_operation
def test_testfloat_level1_icarus(operation):
    start = time.perf_counter()
    vectors = operation.testfloat_level1[BINARY32.name]
    result = check_testfloat(operation.unit(fmt=BINARY32, latency=2), "result", load_testfloat(vectors),
                             simulator="icarus")
    print(f"icarus {vectors}: build {result.build_seconds:.1f} s, run {result.run_seconds:.1f} s, "
          f"total {time.perf_counter() - start:.1f} s")


@each_operation
def test_directed_binary32(operation):
    a, b, expected = directed_columns(operation)
    result = run_float_stream(FloatUnitPair(fmt=BINARY32, latency=2), a, b)
    check_results(BINARY32, a, b, result.outputs[operation.output], expected)


@each_operation
def test_directed_cases_match_model(operation):
    a, b, expected = directed_columns(operation)
    check_results(BINARY32, a, b, operation.model(BINARY32, a, b), expected)
    check_results(BINARY32, a, b, operation.bitlevel_model(BINARY32, a, b), expected)


@pytest.mark.parametrize("count", [
    100_000,
    pytest.param(1_000_000, marks=pytest.mark.extended),
])
@each_operation
def test_random_binary32(operation, count):
    a, b = random_operands(BINARY32, operation.name, count, seed=operation.seeds.random_binary32)
    check_against_model(FloatUnitPair(fmt=BINARY32, latency=2), operation.output,
                        partial(operation.model, BINARY32), a, b)


@each_operation
def test_random_bfloat16(operation):
    a, b = random_operands(BFLOAT16, operation.name, 30_000, seed=operation.seeds.random_bfloat16)
    check_against_model(FloatUnitPair(fmt=BFLOAT16, latency=1), operation.output,
                        partial(operation.bitlevel_model, BFLOAT16), a, b)


@each_operation
def test_flush_to_zero(operation):
    a, b = random_operands(BINARY16, operation.name, 30_000, seed=operation.seeds.flush_to_zero)
    check_against_model(FloatUnitPair(fmt=BINARY16, latency=1, flush_to_zero=True), operation.output,
                        partial(operation.bitlevel_model, BINARY16, flush_to_zero=True), a, b)


@pytest.mark.parametrize("latency", [0, 3], ids=lambda latency: f"latency{latency}")
@pytest.mark.parametrize("idle", [False, True], ids=["back_to_back", "idle_cycles"])
@each_operation
def test_latency(operation, idle, latency):
    # Same bits as the model (and so as latency 2) and results exactly `latency` cycles after the
    # operands, back to back and with random idle cycles.
    a, b = random_operands(BINARY32, operation.name, 5_000, seed=operation.seeds.latency)
    check_against_model(FloatUnitPair(fmt=BINARY32, latency=latency), operation.output,
                        partial(operation.model, BINARY32), a, b,
                        idle_seed=operation.seeds.latency_idle if idle else None)


@pytest.mark.parametrize("latency", [0, 3], ids=lambda latency: f"latency{latency}")
@pytest.mark.parametrize("fmt", [BINARY32, BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
@each_operation
def test_lint(operation, fmt, latency):
    unit = operation.unit(fmt=fmt, latency=latency)
    assert lint_verilog(unit, unit.module_name) == []
