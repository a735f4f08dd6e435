"""The ``nnaccel`` command line.

    nnaccel run dqn [--states N | --states-file F] [--weights F] ...    Atari states through the DQN accelerator
    nnaccel run net MODEL.tflite|.onnx [--inputs X] [--modules M ...]  your TFLite / ONNX model on the DQN accelerator
    nnaccel run mlperf-tiny [--model ic kws vww ad] [--inputs N] ...    the MLPerf Tiny reference models on it
    nnaccel play [--episodes N] [--rtl-steps K] [--gif F] ...          scored Atari episodes, the accelerator at the controls
    nnaccel run float [--simulator S] [--suite NAME ...] [--json FILE]   TestFloat conformance of the float units
    nnaccel run ebp [--epochs N] [--data F] [--rtl] [--only PART]      EBP training on the PE ring
    nnaccel run capsnet [--variant reduced|full] [--images N] ...      MNIST digits through the CapsNet accelerator
    nnaccel run capsnet --board de1soc [--variant V] [--images N]      ... on the DE1-SoC design: SDRAM, routing on chip
    nnaccel verilog SYSTEM --board B [--out DIR] [--clock-mhz F]       Verilog + Quartus project for a board
    nnaccel synth [SYSTEM ...] [--json FILE]                           Yosys resource estimate (Cyclone V)
    nnaccel synth dqn --model ic kws vww ad | all | --dqn-config F.json  ... of other DQN configurations
    nnaccel dse dataflow [--layer L | --network dqn] [--space rtl --simulate] ...  DCP dataflow search
    nnaccel dse predictor [--epochs N] [--out F]                       DCP's predictor: label, train, accuracy
    nnaccel dse cosearch --cost edap|latency|energy|balanced [--json F]  DANCE's co-search on MNIST
    nnaccel dse cost --modules M --lanes L [--format F] ...            the RTL family's cost of the DQN per layer
    nnaccel dse validate [--cases N] [--scheduler ADDR] [--json F]     the RTL family's cost model against the RTL
    nnaccel train dqn --out DIR [--smoke | --export FILE]              train the DQN for Breakout (PyTorch)
    nnaccel train capsnet [--variant V] [--epochs N] --out FILE        train and quantize the CapsNet (PyTorch)
    nnaccel info                                                       toolchain, simulators and cache

:func:`main` maps what a job raises to the exit status (:mod:`cli.report`): bad input
(:class:`models.shared.input_files.InputError`) 2, a failed tool or simulator 3 (the message names
its log), anything else 4 with the traceback written to a file; a job returns 0 or 1 itself.
"""

import argparse
import contextlib
import functools
import os
import sys
import time
import traceback
from importlib import metadata

from nnaccel.cli import capsnet as capsnet_job
from nnaccel.cli import dse as dse_job
from nnaccel.cli import float_units as float_job
from nnaccel.cli import fpga as fpga_job
from nnaccel.cli import pe_ring as ebp_job
from nnaccel.cli import train as train_job
from nnaccel.cli.dqn import atari as dqn_job
from nnaccel.cli.dqn import mlperf_tiny as mlperf_tiny_job
from nnaccel.cli.dqn import net as net_job
from nnaccel.cli.report import (EXIT_BAD_INPUT, EXIT_DONE, EXIT_INTERNAL_ERROR, EXIT_MISMATCH, EXIT_TOOL_FAILED, ToolError,
                        human_output_to_stderr)
from nnaccel.models.shared.cache import cache_root
from nnaccel.models.shared.input_files import InputError
from nnaccel.models.shared.mnist import MnistError
from nnaccel.sim.fpga.synth import YosysError
from nnaccel.sim.harness import SimulationError
from nnaccel.sim.toolchain import SIMULATORS, SimulatorNotFound, simulator_environment, simulator_version
from nnaccel.testbench.shared.testfloat import TestFloatError

__all__ = ["main", "build_parser", "TOOL_FAILURES"]

# A tool, the simulator or a data source the job needs failed or is missing: exit 3, the message names its log.
TOOL_FAILURES = (SimulationError, SimulatorNotFound, YosysError, TestFloatError, MnistError, ToolError)
EXIT_BROKEN_PIPE = 128 + 13         # as a process killed by SIGPIPE
# Packages of the optional extras (pyproject.toml) a job imports when it needs them: extra -> packages.
OPTIONAL_PACKAGES = {"ebp": ("sklearn", "matplotlib"), "atari": ("ale_py",), "train": ("torch",),
                     "import": ("onnx", "onnxruntime", "tflite", "ai_edge_litert"),
                     "dse": ("torch", "optuna", "matplotlib")}

EXIT_STATUSES = """exit status: 0 done and checked; 1 the check failed (a mismatch); 2 bad usage or bad input \
(one line: the file, the fault, what was expected); 3 a tool or the simulator failed (the message names its log); \
4 internal error (the traceback is written to a file)"""


def _version():
    try:
        return metadata.version("nnaccel")
    except metadata.PackageNotFoundError:
        return "(not installed: run `pip install -e .`)"


def _info(arguments):
    import amaranth
    import cocotb

    print(f"nnaccel {_version()}, amaranth {amaranth.__version__}, cocotb {cocotb.__version__}, "
          f"python {sys.version.split()[0]}")
    for simulator in SIMULATORS:
        try:
            simulator_environment(simulator)
            print(f"{simulator}: {simulator_version(simulator)}")
        except SimulatorNotFound as error:
            print(f"{simulator}: not available ({error})")
    print(f"build cache: {cache_root()} (set NNACCEL_CACHE_DIR to move it)")
    return 0


# (name, one line for the command list, description for its --help, function adding its options, handler)
_JOBS = (
    ("dqn", "Atari states through the simulated DQN accelerator, checked bit for bit",
     "Compile the thesis' Atari DQN for the accelerator, simulate it on recorded Breakout states (or yours), check "
     "every Q-value bit for bit against the golden model and print cycles per layer next to the thesis' Table 5.1.",
     dqn_job.add_arguments, dqn_job.run),
    ("net", "your TFLite or ONNX model on the simulated DQN accelerator, checked bit for bit",
     "Read a TFLite or ONNX model (convolutions with any padding and strides, depthwise convolutions, dense layers, "
     "average pooling, residual adds, ReLU, a final softmax on the host), lower it onto the DQN accelerator, compile "
     "it for the chosen size on the smallest RAMs that hold it, simulate its inputs, check every output bit for bit "
     "against the golden model and every counter against the compiler's prediction, print cycles per layer and the "
     "difference from the model's own runtime (LiteRT, ONNX Runtime).",
     net_job.add_arguments, net_job.run),
    ("mlperf-tiny", "the MLPerf Tiny reference models on the simulated DQN accelerator, beside hls4ml and FINN",
     "Run the MLPerf Tiny reference models (ResNet-8, DS-CNN, MobileNetV1-0.25, the anomaly-detection autoencoder) "
     "on the simulated DQN accelerator with the benchmark's inputs: bit-exact against the golden model, counters "
     "as predicted, outputs against LiteRT; the golden model in every number format (KWS accuracy on the samples, "
     "AD anomaly scores); cycles, MAC use and latency beside the published hls4ml / FINN figures.",
     mlperf_tiny_job.add_arguments, mlperf_tiny_job.run),
    ("float", "Berkeley TestFloat vectors through the RTL float units",
     "Stream Berkeley TestFloat vectors through the RTL float multiplier and adder and compare every result bit "
     "for bit with TestFloat's.",
     float_job.add_arguments, float_job.run),
    ("ebp", "EBP training on the SIMD/SRA PE ring: PWL errors, cycle table, training",
     "Error back-propagation on the PE ring: the PWL activation's error table and plot, cycles against the "
     "paper's, and training (the ring's instruction-set model, optionally the simulated RTL) checked bit for bit "
     "against the fixed-point golden model, on the built-in digit tasks or your data set (--data).",
     ebp_job.add_arguments, ebp_job.run),
    ("capsnet", "MNIST digits through the simulated CapsNet accelerator, checked bit for bit",
     "Run MNIST test digits through the simulated 8-bit CapsNet accelerator, check every step-1 and step-2 output "
     "and class bit for bit against the golden model, and print cycles per step against the paper's Table 5 and "
     "GOP/s per DSP block.",
     capsnet_job.add_arguments, capsnet_job.run),
)
_COMMANDS = (
    ("play", "scored Atari episodes: the trained network plays, its first steps on the simulated accelerator",
     "Play whole Atari episodes (Breakout by default) with the trained DQN and print the score of each and the "
     "mean next to a random policy's on the same seeds. The first --rtl-steps steps of every episode run the "
     "thesis' host loop: the emulator inside the simulation produces each state, the simulated accelerator chooses "
     "the action, and every Q-value is checked bit for bit against the golden model; the golden model, bit-exact "
     "and fast, plays the rest. --gif draws the first episode with its Q-values.",
     dqn_job.add_play_arguments, dqn_job.play),
    ("verilog", "Verilog and a Quartus project (.qpf/.qsf/.sdc) for a board",
     "Generate a system's Verilog and a Quartus project (.qpf, .qsf, .sdc and a build script) for an Intel FPGA "
     "board.",
     fpga_job.add_verilog_arguments, fpga_job.run_verilog),
    ("synth", "resource estimate by Yosys for Cyclone V (not a Quartus fit)",
     "Estimate ALMs, DSP blocks and M10K blocks of each system with Yosys' Cyclone V flow (an estimate, not a "
     "Quartus fit; each Verilog module synthesized and cached on its own) and whether it fits a DE1-SoC's 5CSEMA5 "
     "(the DQN accelerator also the DE5-Net's 5SGXEA7). With dqn, --model and --dqn-config choose other "
     "configurations: the ones the MLPerf Tiny models run on, or one from a JSON file.",
     fpga_job.add_synth_arguments, fpga_job.run_synth),
    ("dse", "design-space exploration: DCP, DANCE, the RTL family's cost model and its check against the RTL",
     "Design-space exploration. dataflow: DCP, a layer's dataflow by back-propagation through a learned "
     "predictor; predictor: label dataflows and train that predictor; cosearch: DANCE, a network and its "
     "accelerator searched together, against its baselines; cost: the RTL family's cost of a network on one "
     "configuration of the DQN accelerator; validate: that cost model against the simulated RTL.",
     dse_job.add_arguments, None),
    ("train", "how the shipped weights were made: the DQN for Breakout, the CapsNet on MNIST (PyTorch)",
     "Train a network whose weights ship with nnaccel, as they were made. dqn: the thesis' DQN for Breakout "
     "(imitation of a scripted player, DAgger, DQN fine-tuning; hours, resumable); capsnet: the CapsNet on MNIST, "
     "quantized to the 8-bit golden model. Needs the [train] extra (PyTorch).",
     train_job.add_arguments, None),
    ("info", "show toolchain versions and the build cache",
     "Show the versions of nnaccel, Amaranth, cocotb and the simulators, and where the build cache is.",
     lambda parser: None, _info),
)


def _extra_of(package):
    return next((extra for extra, packages in OPTIONAL_PACKAGES.items() if package in packages), None)


def _command(commands, name, summary, description, arguments, handler):
    parser = commands.add_parser(name, help=summary, description=description, epilog=EXIT_STATUSES)
    try:
        arguments(parser)
    except ModuleNotFoundError as error:
        # The command's options come from an optional extra that is not installed: the other commands still run,
        # and this one says what to install (exit 3) whatever follows it.
        extra = name if error.name in OPTIONAL_PACKAGES.get(name, ()) else _extra_of(error.name)
        if extra is None:
            raise
        parser.add_argument("options", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        message = (f"nnaccel {name} needs the Python package {error.name}, which is not installed: "
                   f"pip install -e '.[{extra}]'")
        handler = functools.partial(_raise_tool_error, message)
    if handler is not None:             # None: the command's subcommands set their own handlers
        parser.set_defaults(handler=handler)


def _raise_tool_error(message, arguments):
    raise ToolError(message)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="nnaccel", description="Cycle-accurate RTL neural-network accelerators: Amaranth hardware simulated "
                                    "cycle by cycle, checked bit for bit against golden models.",
        epilog=EXIT_STATUSES)
    parser.add_argument("--version", action="version", version=f"nnaccel {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run a job on the simulated hardware",
                              description="Run a job on the simulated hardware and check it bit for bit.")
    jobs = run.add_subparsers(dest="job", required=True, metavar="JOB")
    for name, summary, description, arguments, handler in _JOBS:
        _command(jobs, name, summary, description, arguments, handler)
    for name, summary, description, arguments, handler in _COMMANDS:
        _command(commands, name, summary, description, arguments, handler)
    return parser


def _internal_error(error):
    """Write the traceback to a file; return the one line that names it."""
    text = "".join(traceback.format_exception(error))
    try:
        directory = cache_root() / "errors"
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"traceback-{time.strftime('%Y%m%d-%H%M%S')}-{id(error):x}.txt"
        path.write_text(text)
        where = f"the traceback is in {path}"
    except OSError:
        where = "the traceback could not be written to a file"
    summary = " ".join(str(error).split())
    return f"nnaccel: internal error: {type(error).__name__}: {summary} (a bug in nnaccel; {where})"


def _run(arguments):
    try:
        return arguments.handler(arguments)
    except InputError as error:
        print(f"nnaccel: error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except TOOL_FAILURES as error:
        print(f"nnaccel: error: {error}", file=sys.stderr)
        return EXIT_TOOL_FAILED
    except ModuleNotFoundError as error:
        extra = _extra_of(error.name)
        if extra is None:
            print(_internal_error(error), file=sys.stderr)
            return EXIT_INTERNAL_ERROR
        print(f"nnaccel: error: this job needs the Python package {error.name}, which is not installed: "
              f"pip install -e '.[{extra}]'", file=sys.stderr)
        return EXIT_TOOL_FAILED
    except BrokenPipeError:             # the reader went away (`nnaccel ... | head`): stop quietly, as `cat` does
        sys.stdout = open(os.devnull, "w")
        return EXIT_BROKEN_PIPE
    except Exception as error:          # anything else is a bug: one line, the traceback in a file
        print(_internal_error(error), file=sys.stderr)
        return EXIT_INTERNAL_ERROR


def main(argv=None):
    """Run the ``nnaccel`` command with ``argv`` (default: the process's arguments); returns the exit status."""
    try:
        arguments = build_parser().parse_args(argv)
    except SystemExit as done:          # --help, --version, or a usage error argparse already explained
        return done.code
    start = time.perf_counter()
    json_to_stdout = getattr(arguments, "json", None) == "-"
    try:
        with human_output_to_stderr() if json_to_stdout else contextlib.nullcontext():
            status = _run(arguments)
            if status in (EXIT_DONE, EXIT_MISMATCH):
                print(f"nnaccel: wall time {time.perf_counter() - start:.1f} s")
    except KeyboardInterrupt:
        print("nnaccel: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
