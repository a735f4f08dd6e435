"""nnaccel: a cycle-accurate, RTL-level framework for neural-network accelerators.

Installed, the repository's floors are this package's subpackages: ``nnaccel.hw`` (Amaranth components),
``nnaccel.models`` (golden models, compilers), ``nnaccel.sim`` (build and run harness, FPGA flow),
``nnaccel.testbench`` (cocotb test modules), ``nnaccel.dse`` (design-space exploration) and ``nnaccel.cli``
(the ``nnaccel`` command).  In the repository they stay top-level folders; ``setup.py`` maps them here.
"""

from importlib import metadata

try:
    __version__ = metadata.version("nnaccel")
except metadata.PackageNotFoundError:      # a checkout used without installing it
    __version__ = "0+unknown"
