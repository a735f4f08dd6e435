"""Throughput and build time of the binary32 float units through the cocotb harness, and the
TestFloat level-2 files (f32_mul_2, f32_add_2: 300,000 cases each) on Verilator.

    python benchmarks/shared/bench_float.py [--verilator-count N] [--icarus-count N] [--latency L]

Build times are of fresh builds (an empty, temporary build cache). Operations per second are
stream_tb's one-operation-per-cycle rate: operations / run time of the simulation, which includes
the simulator's start-up and the cocotb (Python) driver and monitor, so they measure the harness as
much as the RTL.
"""

import argparse
import os
import tempfile

from nnaccel.hw.shared.float_adder import FloatAdder
from nnaccel.hw.shared.float_format import BINARY32
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.models.shared.float_arith import float_add, float_mul
from nnaccel.testbench.shared.float_stimulus import random_operands
from nnaccel.testbench.shared.float_stream import mismatches, run_float_stream
from nnaccel.testbench.shared.testfloat import load_testfloat

UNITS = {"mul": (FloatMultiplier, float_mul), "add": (FloatAdder, float_add)}


def throughput(operation, simulator, count, latency):
    unit_class, model = UNITS[operation]
    a, b = random_operands(BINARY32, operation, count, seed=2026)
    with tempfile.TemporaryDirectory(prefix="nnaccel-bench-cache-") as cache:
        previous = os.environ.get("NNACCEL_CACHE_DIR")
        os.environ["NNACCEL_CACHE_DIR"] = cache          # an empty cache forces a fresh build
        try:
            result = run_float_stream(unit_class(fmt=BINARY32, latency=latency), a, b, simulator=simulator)
        finally:
            if previous is None:
                del os.environ["NNACCEL_CACHE_DIR"]
            else:
                os.environ["NNACCEL_CACHE_DIR"] = previous
    wrong = len(mismatches(BINARY32, result.outputs["result"], model(BINARY32, a, b)))
    return result.build_seconds, result.run_seconds, wrong


def level2(operation, latency):
    unit_class, _ = UNITS[operation]
    vectors = load_testfloat(f"f32_{operation}_2")
    result = run_float_stream(unit_class(fmt=BINARY32, latency=latency), vectors.a, vectors.b)
    wrong = len(mismatches(BINARY32, result.outputs["result"], vectors.expected, any_nan=True))
    return len(vectors), len(vectors) - wrong, result.run_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verilator-count", type=int, default=200_000)
    parser.add_argument("--icarus-count", type=int, default=50_000)
    parser.add_argument("--latency", type=int, default=2)
    args = parser.parse_args()

    print(f"binary32 units, latency {args.latency}, one operation per cycle through testbench.shared.stream_tb")
    print(f"{'unit':<6} {'simulator':<10} {'fresh build s':>13} {'operations':>10} {'run s':>7} "
          f"{'ops/s':>9} {'mismatches':>10}")
    for operation in UNITS:
        for simulator, count in (("verilator", args.verilator_count), ("icarus", args.icarus_count)):
            build, run, wrong = throughput(operation, simulator, count, args.latency)
            print(f"{operation:<6} {simulator:<10} {build:13.1f} {count:10d} {run:7.1f} {count / run:9.0f} "
                  f"{wrong:10d}", flush=True)

    print("\nTestFloat level 2 (first 300,000 cases of each, see the vectors' README) on Verilator")
    for operation in UNITS:
        total, passed, run = level2(operation, args.latency)
        print(f"f32_{operation}_2: {passed} / {total} passed ({run:.1f} s run)", flush=True)


if __name__ == "__main__":
    main()
