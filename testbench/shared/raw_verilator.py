"""An accelerator on Verilator without cocotb: the anchor for the cocotb harness' own cost.

:class:`HostProgram` records the host operations a cocotb test module makes through
:class:`testbench.shared.host_driver.HostDriver` (block writes, block reads, START and the wait for ``done``,
the counter reads) as the text the C++ testbench ``host_program.cpp`` beside this file runs.
:func:`build_raw_model` builds a component's Verilog under that testbench with the harness' Verilator options
(:func:`sim.harness.verilator_build_arguments`, so the model is the one a cocotb run gets, less cocotb's VPI
layer), and :func:`run_program` runs a program on it and returns what it read.  A system's raw runner
(``testbench.dqn.raw_verilator``) turns those reads into the shapes its cocotb run returns.
"""

import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from nnaccel.hw.shared.host_control import ControlRegister, HostTarget, LayerCounter, layer_counter_address
from nnaccel.sim.build_cache import build_key, cached_build
from nnaccel.sim.harness import SimulationError, rebuild_with_profile, verilator_build_arguments
from nnaccel.sim.toolchain import simulator_version, verilator_command, verilator_make_environment
from nnaccel.sim.verilator_options import DEFAULT, thread_budget
from nnaccel.sim.verilog import generate_design

__all__ = ["HostProgram", "ProgramOutput", "build_raw_model", "run_program"]

TESTBENCH = Path(__file__).with_name("host_program.cpp")
_EXECUTABLE = "host_program"


class HostProgram:
    """Host operations for the C++ testbench, named after :class:`~testbench.shared.host_driver.HostDriver`'s."""

    def __init__(self):
        self._lines = []

    def write_block(self, target, base, values):
        """``values[i]`` (ints) to ``base + i`` of ``target``, back to back."""
        self._lines.extend(f"w {int(target)} {base + offset} {int(value):x}" for offset, value in enumerate(values))

    def read_block(self, target, addresses):
        """Read ``addresses`` of ``target``, one per cycle (consecutive reads run as one block)."""
        self._lines.extend(f"r {int(target)} {int(address)}" for address in addresses)

    def run(self, layers, max_cycles):
        """START ``layers`` layers and wait for the rising edge of ``done`` (at most ``max_cycles`` cycles)."""
        self._lines.append(f"s {int(HostTarget.CONTROL)} {int(ControlRegister.START)} {max_cycles} {layers:x}")

    def read_counters(self, layers):
        """Read TOTAL_CYCLES and the counters of layers ``0 .. layers-1``, in HostDriver.read_counters' order."""
        self.read_block(HostTarget.CONTROL, [ControlRegister.TOTAL_CYCLES] + [
            layer_counter_address(layer, counter) for layer in range(layers) for counter in LayerCounter])

    def text(self):
        return "".join(f"{line}\n" for line in self._lines)


@dataclass
class ProgramOutput:
    reads: list             # every read's value (int), in program order
    run_cycles: list        # per run: cycles from START to done, counted by the testbench
    run_wall_seconds: list  # per run: wall seconds from START to the cycle after done
    run_cpu_seconds: list   # per run: the testbench process' CPU seconds over the same span


def build_raw_model(component, name, program_text, options=DEFAULT):
    """``(build_dir, built_now, seconds)``: ``component`` (top module ``name``) under the C++ testbench, built
    with the Verilator ``options`` (cached like the harness' builds).  A profile-guided build
    (``options.profile_guided``) takes its profile from a run of ``program_text``."""
    design = generate_design(component, name)
    verilog_text = design.text
    blocks = design.blocks_for(options.hierarchy)
    key = build_key(verilog_text, simulator="verilator", version=simulator_version("verilator"),
                    testbench=TESTBENCH.read_text(), options=options.cache_key(),
                    **({"hierarchical_blocks": list(blocks)} if blocks else {}))

    def make(build_dir, arguments, profile):
        with open(build_dir / "build.log", "a") as log, verilator_make_environment(options.make_variables(profile)):
            for command in (arguments, ["make", "-j", str(thread_budget()), "-C", str(build_dir), "-f", "Vtop.mk"]):
                if subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=False).returncode:
                    raise SimulationError(f"building the C++ testbench of {name!r} failed; log {build_dir / 'build.log'}")

    def build(build_dir):
        verilog_path = build_dir / f"{name}.v"
        verilog_path.write_text(verilog_text)
        make(build_dir, [*verilator_command(), "--cc", "--exe", "-Mdir", str(build_dir), "--top-module", name,
                         "--prefix", "Vtop", "-o", _EXECUTABLE,
                         *verilator_build_arguments(design, options, build_dir), str(TESTBENCH),
                         str(verilog_path)],
             "generate" if options.profile_guided else None)
        if options.profile_guided:
            run_program(build_dir, program_text)
            rebuild_with_profile(build_dir, options)

    start = time.perf_counter()
    build_dir, built_now = cached_build(f"raw-{name}", key, build)
    return build_dir, built_now, time.perf_counter() - start


def run_program(build_dir, program_text):
    """Run the host program ``program_text`` (:meth:`HostProgram.text`) on the model in ``build_dir``."""
    with tempfile.TemporaryDirectory(prefix="nnaccel-raw-") as workdir:
        program_path, output_path = Path(workdir, "program.txt"), Path(workdir, "output.txt")
        program_path.write_text(program_text)
        result = subprocess.run([str(Path(build_dir) / _EXECUTABLE), str(program_path), str(output_path)],
                                capture_output=True, text=True, check=False)
        if result.returncode:
            raise SimulationError(f"the C++ testbench failed ({result.returncode}): {result.stderr.strip()}")
        lines = output_path.read_text().split()
    output = ProgramOutput(reads=[], run_cycles=[], run_wall_seconds=[], run_cpu_seconds=[])
    words = iter(lines)
    for kind in words:
        if kind == "r":
            output.reads.append(int(next(words), 16))
        else:
            output.run_cycles.append(int(next(words)))
            output.run_wall_seconds.append(float(next(words)))
            output.run_cpu_seconds.append(float(next(words)))
    return output
