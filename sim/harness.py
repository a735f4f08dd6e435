"""Simulate an Amaranth component under cocotb: Verilog -> cached simulator build -> test module -> results.

:func:`simulate` is the one function tests, benchmarks and the CLI use to put hardware in a
simulator.  Data crosses into the cocotb test module as files in a fresh run directory
(see :mod:`testbench.shared.exchange`): NumPy stimulus arrays and a JSON configuration go in, the
arrays the test module saves come back in :attr:`SimResult.outputs`.

Waveforms are off unless asked for, with ``waves=True`` or the environment variable
``NNACCEL_WAVES=1`` (pytest: ``--waves``): then Verilator builds with FST tracing (VCD when
liblz4's header is missing), Icarus dumps FST, and a GTKWave save file grouping the component's
ports is written next to the dump.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import cocotb
import numpy as np
from cocotb_tools.runner import get_results, get_runner

from nnaccel.models.shared.cache import cache_root

from .build_cache import build_key, cached_build
from .progress import build_progress, report_stage, simulation_progress, with_progress_file
from .toolchain import simulator_environment, simulator_version, verilator_make_environment
from .verilator_options import DEFAULT as DEFAULT_VERILATOR_OPTIONS
from .verilator_options import VerilatorOptions, thread_budget
from .verilog import generate_design
from .waves import write_gtkw

TIMESCALE = ("1ns", "1ps")
WAIVERS = Path(__file__).with_name("verilator_waivers.vlt")
_LOG_TAIL_LINES = 40


class SimulationError(RuntimeError):
    """A build or a cocotb test failed; the message names the cause and ends with the log's tail."""


@dataclass
class SimResult:
    outputs: dict
    run_dir: Path | None
    build_dir: Path
    built_now: bool
    build_seconds: float
    run_seconds: float
    waves_path: Path | None = None
    gtkw_path: Path | None = None
    log_path: Path | None = field(default=None, repr=False)


def waves_requested(waves):
    if waves is not None:
        return bool(waves)
    return os.environ.get("NNACCEL_WAVES", "").strip().lower() not in ("", "0", "false", "no")


_YOSYS_TIME_ZERO_TRIGGER = re.compile(r"^(\s*)reg (\\\$auto\$verilog_backend\S+)\s+= 0;$", re.MULTILINE)


def icarus_time_zero_fix(verilog_text):
    """Make Icarus run every combinational ``always @*`` block once at time 0.

    Yosys gives each module a dummy register, initialised in its declaration and read by every
    ``always @*`` block, so that the blocks run once when simulation starts.  Icarus 11 may do that
    initialisation before the blocks wait on it; a block whose real inputs never change (an FSM's
    output decode while the FSM waits in its initial state) then never runs and its outputs stay X
    (the DQN sequencer's ``busy`` did, so it never started).  Assigning the register in an
    ``initial`` block after ``#0`` orders it after the blocks started waiting.  Applied to the Icarus
    build copy only; ``hw/`` and the Verilog that synthesis sees are unchanged.
    """
    return _YOSYS_TIME_ZERO_TRIGGER.sub(
        lambda match: f"{match.group(1)}reg {match.group(2)} ;\n{match.group(1)}initial #0 {match.group(2)} = 1'b0;",
        verilog_text)


def _verilator_can_write_fst():
    """Verilator's FST writer compiles against liblz4 (Debian: liblz4-dev); without it, dump VCD."""
    return any(Path(include, "lz4.h").exists() for include in ("/usr/include", "/usr/local/include"))


def _waves_file_name(simulator, name):
    if simulator == "icarus":
        return f"{name}.fst"
    return "dump.fst" if _verilator_can_write_fst() else "dump.vcd"


def _log_tail(path):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no log was written)"
    return "\n".join(lines[-_LOG_TAIL_LINES:])


def _check_test_module(test_module):
    try:
        spec = importlib.util.find_spec(test_module)
    except ModuleNotFoundError:
        spec = None
    if spec is None:
        raise SimulationError(
            f"cocotb test module {test_module!r} cannot be imported: check the dotted name "
            f"(e.g. 'nnaccel.testbench.shared.stream_tb') and that the project is installed (`pip install -e .`)")


def verilator_build_arguments(design, options, build_dir):
    """Verilator's arguments for a simulation build of ``design`` (a :class:`sim.verilog.GeneratedDesign`) with
    ``options``, the testbench aside: the waivers, the handling of X and the options (its hierarchical blocks
    ``design.blocks_for(options.hierarchy)``)."""
    # Warnings are reported by the lint check (sim.lint); a simulation build does not stop on them.
    return [str(WAIVERS), "-Wno-fatal", "--x-assign", "fast", "--x-initial", "fast",
            *options.verilator_arguments(top=design.name, ports=design.ports, build_dir=build_dir,
                                         hierarchical_blocks=design.blocks_for(options.hierarchy))]


def simulation_sources(component):
    """The Verilog files ``component`` needs besides its own generated Verilog: its ``simulation_sources``
    attribute (paths), if any; e.g. a simulation model a testbench top instantiates."""
    return tuple(Path(path) for path in getattr(component, "simulation_sources", ()))


def _build(simulator, verilog_path, design, waves, build_dir, options, profile=None, sources=()):
    runner = get_runner(simulator)
    name = design.name
    build_args, make_variables = [], []
    if simulator == "verilator":
        build_args = verilator_build_arguments(design, options, build_dir)
        make_variables = options.make_variables(profile=profile)
        if waves:
            build_args += ["--trace-structs"] + (["--trace-fst"] if _verilator_can_write_fst() else [])
    log_path = build_dir / "build.log"
    try:
        with verilator_make_environment(make_variables):
            runner.build(sources=[verilog_path, *sources], hdl_toplevel=name, build_dir=build_dir,
                         build_args=build_args, timescale=TIMESCALE, waves=waves, always=True, log_file=log_path)
    except (Exception, SystemExit) as error:
        raise SimulationError(
            f"building {name!r} with {simulator} failed ({error}); the build log is {log_path}:\n"
            f"{_log_tail(log_path)}") from None


def simulate(component, *, name, test_module, stimulus=None, config=None, simulator="verilator",
             waves=None, testcase=None, seed=1, verilator_options=None):
    """Build ``component`` (cached) and run the cocotb ``test_module`` on it.

    Verilog files the component lists in ``simulation_sources`` (:func:`simulation_sources`) are compiled with
    its generated Verilog and are part of the build's cache key.

    ``verilator_options`` (:class:`sim.verilator_options.VerilatorOptions`) decide how Verilator builds the
    model; by default :data:`sim.verilator_options.DEFAULT` with its threads capped by the cores this process
    may use (:func:`sim.verilator_options.thread_budget`).  Returns a :class:`SimResult`; raises :class:`SimulationError` when the build or any test fails,
    and :class:`sim.toolchain.SimulatorNotFound` when the simulator is missing.  Reports its stages to
    the listener installed with :func:`sim.progress.reporting_to`, if any (see :mod:`sim.progress`).
    """
    if verilator_options is None:
        verilator_options = DEFAULT_VERILATOR_OPTIONS.with_thread_budget()
    if not isinstance(verilator_options, VerilatorOptions):
        raise TypeError(f"verilator_options must be a VerilatorOptions, not {verilator_options!r}")
    report_stage("Verilog generation")
    design = generate_design(component, name)
    verilog_text = design.text
    if simulator == "icarus":
        verilog_text = icarus_time_zero_fix(verilog_text)
    sources = simulation_sources(component)
    _check_test_module(test_module)
    os.environ.update(simulator_environment(simulator))
    waves = waves_requested(waves)
    options_key = verilator_options.cache_key() if simulator == "verilator" else None
    blocks = design.blocks_for(verilator_options.hierarchy) if simulator == "verilator" else ()
    # A Verilator model links cocotb's VPI library by its absolute path: a build made from another
    # installation (another virtual environment sharing the cache) would not load here.
    key = build_key(verilog_text, simulator=simulator, version=simulator_version(simulator),
                    cocotb=cocotb.__version__, cocotb_libraries=str(Path(cocotb.__file__).parent / "libs"),
                    waves=waves, waivers=WAIVERS.read_text(), options=options_key,
                    # only when there are any: the keys of builds without them stay as they were
                    **({"sources": [(path.name, path.read_text()) for path in sources]} if sources else {}),
                    **({"hierarchical_blocks": list(blocks)} if blocks else {}))

    run_dir = _new_run_dir(name)
    stimulus_path, config_path, outputs_path = (run_dir / n for n in ("stimulus.npz", "config.json", "outputs.npz"))
    np.savez(stimulus_path, **(stimulus or {}))
    config = with_progress_file(config or {}, run_dir)
    config_path.write_text(json.dumps(config))
    env = {"NNACCEL_STIMULUS": str(stimulus_path), "NNACCEL_CONFIG": str(config_path),
           "NNACCEL_OUTPUTS": str(outputs_path)}

    waves_path = run_dir / _waves_file_name(simulator, name) if waves else None
    plusargs = [f"+dumpfile_path={waves_path}"] if waves and simulator == "icarus" else []

    def run(build_dir, test_dir):
        test_dir.mkdir(exist_ok=True)
        _run_test(simulator, test_module, name, build_dir, test_dir, testcase=testcase, env=env, waves=waves,
                  seed=seed, plusargs=plusargs)
        return test_dir / "sim.log"

    def build(build_dir):
        verilog_path = build_dir / f"{name}.v"
        verilog_path.write_text(verilog_text)
        with build_progress(simulator, build_dir):
            profile = "generate" if simulator == "verilator" and verilator_options.profile_guided else None
            _build(simulator, verilog_path, design, waves, build_dir, verilator_options, profile=profile,
                   sources=sources)
        if profile:
            run(build_dir, run_dir / "profile")       # this simulation, on the instrumented model, is the profile
            rebuild_with_profile(build_dir, verilator_options)

    report_stage("simulator build")
    build_start = time.perf_counter()
    build_dir, built_now = cached_build(f"{simulator}-{name}", key, build)
    build_seconds = time.perf_counter() - build_start
    run_start = time.perf_counter()
    with simulation_progress(config):
        log_path = run(build_dir, run_dir)
    run_seconds = time.perf_counter() - run_start

    outputs = dict(np.load(outputs_path)) if outputs_path.exists() else {}
    gtkw_path = None
    if waves:
        gtkw_path = write_gtkw(component, waves_path, run_dir / f"{name}.gtkw")
        print(f"nnaccel: waveform {waves_path}\nnnaccel: GTKWave save file {gtkw_path}")
    else:
        shutil.rmtree(run_dir, ignore_errors=True)   # a passing run without waves leaves nothing behind
        run_dir = log_path = None
    return SimResult(outputs=outputs, run_dir=run_dir, build_dir=build_dir, built_now=built_now,
                     build_seconds=build_seconds, run_seconds=run_seconds, waves_path=waves_path,
                     gtkw_path=gtkw_path, log_path=log_path)


def _run_test(simulator, test_module, name, build_dir, test_dir, *, testcase, env, waves, seed, plusargs):
    """Run the cocotb ``test_module`` on the model in ``build_dir``, its log and results in ``test_dir``; raises
    :class:`SimulationError` unless every test passed."""
    log_path, results_xml = test_dir / "sim.log", test_dir / "results.xml"
    try:
        get_runner(simulator).test(
            test_module=test_module, hdl_toplevel=name, hdl_toplevel_lang="verilog", testcase=testcase,
            build_dir=build_dir, test_dir=test_dir, extra_env=env, waves=waves, timescale=TIMESCALE, seed=seed,
            plusargs=plusargs, log_file=log_path, results_xml=str(results_xml))
    except (Exception, SystemExit):
        pass  # the results file, or its absence, says what happened
    try:
        tests, failures = get_results(results_xml)
    except RuntimeError:
        raise SimulationError(f"simulating {name!r} on {simulator} did not complete; "
                              f"log {log_path}:\n{_log_tail(log_path)}") from None
    if tests == 0 or failures:
        raise SimulationError(f"{failures} of {tests} cocotb tests in {test_module} failed on {name!r} "
                              f"({simulator}); log {log_path}:\n{_log_tail(log_path)}")


def rebuild_with_profile(build_dir, options):
    """Compile the Verilator model in ``build_dir`` again, optimised with the profile that a simulation on its
    instrumented build (``options.make_variables(profile="generate")``) wrote."""
    for pattern in ("*.o", "*.a", "*.gch"):      # the objects, libraries and precompiled headers: make relinks
        for path in build_dir.rglob(pattern):
            path.unlink()
    log_path = build_dir / "profile-build.log"
    with verilator_make_environment(options.make_variables(profile="use")), open(log_path, "w") as log:
        result = subprocess.run(["make", "-j", str(thread_budget()), "-C", str(build_dir), "-f", "Vtop.mk"],
                                stdout=log, stderr=subprocess.STDOUT, check=False)
    if result.returncode:
        raise SimulationError(f"the profile-guided rebuild in {build_dir} failed; log {log_path}:\n{_log_tail(log_path)}")


def _new_run_dir(name):
    runs = cache_root() / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for attempt in range(1000):
        run_dir = runs / f"{name}-{stamp}-{os.getpid()}-{attempt}"
        try:
            run_dir.mkdir()
            return run_dir
        except FileExistsError:
            continue
    raise SimulationError(f"could not create a run directory under {runs}")
