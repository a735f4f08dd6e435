"""The float-unit conformance job: Berkeley TestFloat vectors through the RTL multiplier and adder.

``nnaccel run float`` runs it: every vector of each selected TestFloat file is streamed through
the matching unit in the chosen simulator and compared bit for bit with TestFloat's expected
result (NaN results: any NaN, as TestFloat itself rules).
"""

from dataclasses import asdict, dataclass

from nnaccel.cli.report import EXIT_DONE, EXIT_MISMATCH, add_json_argument, add_simulator_argument, progress, write_json
from nnaccel.hw.shared.float_format import float_format
from nnaccel.testbench.shared.float_stream import FloatUnitPair, mismatches, run_float_stream
from nnaccel.testbench.shared.testfloat import load_testfloat

__all__ = ["add_arguments", "run", "run_suite", "SUITES", "DEFAULT_SUITES", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.float/1"

# suite -> (format, output port of FloatUnitPair: the multiplier's "product" or the adder's "sum")
SUITES = {
    "f32_mul_1": ("binary32", "product"), "f32_add_1": ("binary32", "sum"),
    "f16_mul_1": ("binary16", "product"), "f16_add_1": ("binary16", "sum"),
    "f32_mul_2": ("binary32", "product"), "f32_add_2": ("binary32", "sum"),
}
DEFAULT_SUITES = ("f32_mul_1", "f32_add_1", "f16_mul_1", "f16_add_1")


@dataclass
class SuiteResult:
    suite: str
    unit: str
    vectors: int
    passed: int
    first_failures: list
    build_seconds: float
    run_seconds: float
    simulated_ops_per_second: float


def add_arguments(parser):
    """Options of ``nnaccel run float``."""
    add_simulator_argument(parser)
    parser.add_argument("--suite", action="append", choices=SUITES, metavar="NAME",
                        help=f"a TestFloat file to run (repeatable): {', '.join(SUITES)}; default "
                             f"{' '.join(DEFAULT_SUITES)}")
    add_json_argument(parser)


def run(arguments):
    """``nnaccel run float``; returns 0 when every vector gave TestFloat's result bits, 1 otherwise."""
    results = []
    for suite in arguments.suite or DEFAULT_SUITES:
        print(f"nnaccel: {suite}: building (cached after the first run) and simulating on {arguments.simulator} ...",
              flush=True)
        with progress():
            results.append(run_suite(suite, simulator=arguments.simulator))
    print("\n".join(report_rows(results)))
    document = as_json(results, arguments.simulator)
    total, passed = sum(r.vectors for r in results), sum(r.passed for r in results)
    print(f"\n{passed} of {total} TestFloat vectors gave the expected result bits "
          f"({'all passed' if document['all_passed'] else 'MISMATCHES'})")
    if arguments.json:
        write_json(arguments.json, document, schema=JSON_SCHEMA)
    return EXIT_DONE if document["all_passed"] else EXIT_MISMATCH


def run_suite(suite, *, simulator="verilator", latency=2):
    if suite not in SUITES:
        raise ValueError(f"unknown TestFloat suite {suite!r}; choose from {', '.join(SUITES)}")
    format_name, port = SUITES[suite]
    fmt = float_format(format_name)
    vectors = load_testfloat(suite)
    design = FloatUnitPair(fmt=fmt, latency=latency)
    result = run_float_stream(design, vectors.a, vectors.b, simulator=simulator)
    got = result.outputs[port]
    wrong = mismatches(fmt, got, vectors.expected, any_nan=True)
    digits = fmt.width // 4
    first_failures = [f"{int(vectors.a[i]):0{digits}X} {int(vectors.b[i]):0{digits}X} -> "
                      f"{int(got[i]):0{digits}X}, expected {int(vectors.expected[i]):0{digits}X}"
                      for i in wrong[:5]]
    unit = f"{design.module_name} ({'multiplier' if port == 'product' else 'adder'})"
    return SuiteResult(suite=suite, unit=unit, vectors=len(vectors), passed=len(vectors) - len(wrong),
                       first_failures=first_failures, build_seconds=result.build_seconds,
                       run_seconds=result.run_seconds,
                       simulated_ops_per_second=len(vectors) / result.run_seconds)


def report_rows(results):
    header = f"{'suite':<11} {'unit':<40} {'vectors':>8} {'passed':>8} {'build s':>8} {'sim s':>7} {'ops/s':>9}"
    lines = [header, "-" * len(header)]
    for r in results:
        lines.append(f"{r.suite:<11} {r.unit:<40} {r.vectors:>8} {r.passed:>8} {r.build_seconds:>8.1f} "
                     f"{r.run_seconds:>7.1f} {r.simulated_ops_per_second:>9.0f}")
        lines.extend(f"    mismatch: {failure}" for failure in r.first_failures)
    return lines


def as_json(results, simulator):
    return {"job": "float", "simulator": simulator,
            "all_passed": all(r.passed == r.vectors for r in results),
            "suites": [asdict(r) for r in results]}
