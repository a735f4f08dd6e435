"""nnaccel: a cycle-accurate, RTL-level framework for neural-network accelerators.

Installed, the repository's floors are this package's subpackages: ``nnaccel.hw`` (Amaranth components),
``nnaccel.models`` (golden models, compilers), ``nnaccel.train`` (how the shipped weights were made),
``nnaccel.sim`` (build and run harness, FPGA flow), ``nnaccel.testbench`` (cocotb test modules), ``nnaccel.dse``
(design-space exploration) and ``nnaccel.cli`` (the ``nnaccel`` command).  In the repository they stay top-level folders; ``setup.py`` maps them here.
"""

from importlib import metadata
from pathlib import Path

try:
    __version__ = metadata.version("nnaccel")
except metadata.PackageNotFoundError:      # a checkout used without installing it
    __version__ = "0+unknown"

# Run from a checkout (this folder beside the floors, pyproject.toml above it), the floors are found beside it:
# another clone or worktree of the repository runs with PYTHONPATH=<checkout> in any environment that has the
# dependencies, without installing it.  Installed, the floors are this package's own subfolders.
_checkout = Path(__file__).resolve().parent.parent
if (_checkout / "pyproject.toml").is_file() and (_checkout / "hw" / "__init__.py").is_file():
    __path__.append(str(_checkout))
del _checkout
