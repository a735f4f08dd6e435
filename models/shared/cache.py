"""Where nnaccel keeps what it downloads or builds: ``$NNACCEL_CACHE_DIR``, or ``~/.cache/nnaccel``.

Data sets (``mnist/``), simulator builds and generated Verilog (``builds/``, ``verilog/``, see
:mod:`sim.build_cache`) and run directories (``runs/``) live under this one directory.
"""

import os
from pathlib import Path

__all__ = ["cache_root"]


def cache_root():
    return Path(os.environ.get("NNACCEL_CACHE_DIR") or Path.home() / ".cache" / "nnaccel")
