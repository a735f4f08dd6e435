"""The ``nnaccel`` command line.

    nnaccel run dqn [--states N | --states-file F] [--weights F] ...    Atari states through the DQN accelerator
    nnaccel play [--steps N] [--game G] ...                            the emulator's host loop on the accelerator
    nnaccel run float [--simulator S] [--suite NAME ...] [--json FILE]   TestFloat conformance of the float units
    nnaccel run ebp [--epochs N] [--rtl] [--only PART]                 EBP training on the PE ring
    nnaccel run capsnet [--variant reduced|full] [--images N] ...      MNIST digits through the CapsNet accelerator
    nnaccel verilog SYSTEM --board B [--out DIR] [--clock-mhz F]       Verilog + Quartus project for a board
    nnaccel synth [SYSTEM ...] [--json FILE]                           Yosys resource estimate (Cyclone V)
    nnaccel info                                                       toolchain, simulators and cache
"""

import argparse
import sys
import time

from cli import dqn as dqn_job
from models.shared.cache import cache_root
from cli.report import write_json
from sim.harness import SimulationError
from sim.toolchain import SIMULATORS, SimulatorNotFound, simulator_environment, simulator_version


def _run_float(arguments):
    from cli import float_units as float_conformance

    results = []
    for suite in arguments.suite or float_conformance.DEFAULT_SUITES:
        print(f"nnaccel: {suite}: building (cached after the first run) and simulating on {arguments.simulator} ...",
              flush=True)
        results.append(float_conformance.run_suite(suite, simulator=arguments.simulator))
    print("\n".join(float_conformance.report_rows(results)))
    document = float_conformance.as_json(results, arguments.simulator)
    total, passed = sum(r.vectors for r in results), sum(r.passed for r in results)
    print(f"\n{passed} of {total} TestFloat vectors gave the expected result bits "
          f"({'all passed' if document['all_passed'] else 'MISMATCHES'})")
    if arguments.json:
        write_json(arguments.json, document)
    return 0 if document["all_passed"] else 1


def _info(arguments):
    import amaranth
    import cocotb

    print(f"amaranth {amaranth.__version__}, cocotb {cocotb.__version__}, python {sys.version.split()[0]}")
    for simulator in SIMULATORS:
        try:
            simulator_environment(simulator)
            print(f"{simulator}: {simulator_version(simulator)}")
        except SimulatorNotFound as error:
            print(f"{simulator}: not available ({error})")
    print(f"build cache: {cache_root()} (set NNACCEL_CACHE_DIR to move it)")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="nnaccel", description="Cycle-accurate RTL neural-network accelerators")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a job on the simulated hardware")
    jobs = run.add_subparsers(dest="job", required=True)
    dqn = jobs.add_parser("dqn", help="Atari states through the simulated DQN accelerator, checked bit for bit")
    dqn_job.add_arguments(dqn)
    dqn.set_defaults(handler=dqn_job.run)
    float_job = jobs.add_parser("float", help="Berkeley TestFloat vectors through the RTL float units")
    float_job.add_argument("--simulator", choices=SIMULATORS, default="verilator")
    float_job.add_argument("--suite", action="append", help="TestFloat file (repeatable), e.g. f32_mul_1, f32_add_2")
    float_job.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    float_job.set_defaults(handler=_run_float)

    play = commands.add_parser("play", help="the Atari host loop: the simulated accelerator chooses every action")
    dqn_job.add_play_arguments(play)
    play.set_defaults(handler=dqn_job.play)

    ebp_job = jobs.add_parser("ebp", help="EBP training on the SIMD/SRA PE ring: PWL errors, cycle table, training")
    from cli import pe_ring as ebp_module
    ebp_module.add_arguments(ebp_job)
    ebp_job.set_defaults(handler=ebp_module.run)

    capsnet_job = jobs.add_parser("capsnet", help="MNIST digits through the simulated CapsNet accelerator, checked "
                                  "bit for bit, cycles per step against the paper")
    from cli import capsnet as capsnet_module
    capsnet_module.add_arguments(capsnet_job)
    capsnet_job.set_defaults(handler=capsnet_module.run)

    from cli import fpga as fpga_job
    verilog = commands.add_parser("verilog", help="Verilog and a Quartus project (.qpf/.qsf/.sdc) for a board")
    fpga_job.add_verilog_arguments(verilog)
    verilog.set_defaults(handler=fpga_job.run_verilog)
    synth = commands.add_parser("synth", help="resource estimate by Yosys for Cyclone V (not a Quartus fit)")
    fpga_job.add_synth_arguments(synth)
    synth.set_defaults(handler=fpga_job.run_synth)

    from cli import dse as dse_job
    dse_job.add_arguments(commands.add_parser("dse", help="design-space exploration: the RTL family's cost model "
                                              "(cost) and its check against the simulated RTL (validate)"))

    info = commands.add_parser("info", help="show toolchain versions and the build cache")
    info.set_defaults(handler=_info)
    return parser


def main(argv=None):
    arguments = build_parser().parse_args(argv)
    start = time.perf_counter()
    try:
        status = arguments.handler(arguments)
    except (SimulationError, SimulatorNotFound, ValueError, RuntimeError) as error:
        print(f"nnaccel: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("nnaccel: interrupted", file=sys.stderr)
        return 130
    print(f"nnaccel: wall time {time.perf_counter() - start:.1f} s")
    return status


if __name__ == "__main__":
    sys.exit(main())
