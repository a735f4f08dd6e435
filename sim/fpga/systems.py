"""The hardware systems the command line can turn into Verilog, Quartus projects and resource estimates.

Each :class:`System` builds its top component at full size (``build``) and at the small size the default
test run lints (``build_small``; the same code with smaller parameters), and names its Verilog module.  A new
system is one more entry in :data:`SYSTEMS`.
"""

from dataclasses import dataclass
from typing import Callable

from nnaccel.hw.capsnet.config import SMALL_CONFIG
from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.hw.capsnet.stream_config import SMALL_STREAM_CONFIG
from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.dqn.matrix_module import MatrixModule
from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.ring import PERing
from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.shared.float_adder import FloatAdder
from nnaccel.hw.shared.float_format import BINARY16
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.models.pe_ring import pwl

__all__ = ["System", "SYSTEMS", "system"]

RING_FORMAT = QFormat(width=32, frac_bits=16)     # the paper's system: 32-bit fixed point (SPEC section 2)


@dataclass(frozen=True)
class System:
    """``name`` (as typed on the command line), ``description``, ``build()`` / ``build_small()`` -> component
    (which names its Verilog module in ``module_name``), ``reference``: published figures to compare with."""

    name: str
    description: str
    build: Callable
    build_small: Callable
    reference: str = ""


def _ring(pes):
    return PERing(config=RingConfig(table=pwl.sigmoid_table(fmt=RING_FORMAT), pes=pes, registers=8, lm_depth=1024,
                                    program_depth=1024))


SYSTEMS = {system.name: system for system in [
    System("fmul", "binary32 multiplier, 2 pipeline stages", FloatMultiplier, lambda: FloatMultiplier(fmt=BINARY16)),
    System("fadd", "binary32 adder, 2 pipeline stages", FloatAdder, lambda: FloatAdder(fmt=BINARY16)),
    System("matrix_module", "one DQN matrix module: 16 lanes of binary32 multiply-accumulate",
           lambda: MatrixModule(lanes=16), lambda: MatrixModule(lanes=2)),
    System("pe_ring", "SIMD/systolic ring of 16 PEs, 32-bit fixed point (Q15.16), 1 K-word local memories",
           lambda: _ring(16), lambda: _ring(4)),
    System("dqn", "DQN accelerator: 16 matrix modules x 16 binary32 MACs, thesis buffers",
           lambda: DqnAccelerator(config=DqnConfig()), lambda: DqnAccelerator(config=REDUCED_CONFIG),
           reference="thesis, Stratix V 5SGXEA7: 256 DSP blocks, 2,454 block RAMs (M20K), 197,215 LUTs"),
    System("capsnet_conv", "CapsNet convolution engine (step 1): 32 x 6 int8 MACs, no RAMs",
           CapsNetConvEngine, lambda: CapsNetConvEngine(config=SMALL_CONFIG),
           reference="paper (HLS, Cyclone V 5CSEMA5): Convolution 3,190 ALMs, 117 Kbit block RAM, 2 DSP blocks"),
    System("capsnet_matvec", "CapsNet matrix-vector engine (step 2): 16 int8 MACs, no RAMs",
           CapsNetMatvecEngine, lambda: CapsNetMatvecEngine(config=SMALL_CONFIG),
           reference="paper: Matrix Multiplication 3,158 ALMs, 46 Kbit, 1 DSP (both: 6,348 ALMs, 163 Kbit, 3 DSP)"),
    System("capsnet", "CapsNet on the DE1-SoC: the whole image streamed from SDRAM (Avalon-MM master, bursts of 128), "
           "8 x 6 x 6-row int8 conv MACs in logic, 16 int8 matrix-vector MACs and the routing engine in DSP blocks",
           CapsNetStreamingAccelerator, lambda: CapsNetStreamingAccelerator(config=SMALL_STREAM_CONFIG),
           reference="paper (HLS, Cyclone V 5CSEMA5, steps 1 and 2; routing on the ARM): 6,348 ALMs, 163 Kbit, 3 DSP"),
]}


def system(name):
    """The :class:`System` called ``name``; a ValueError lists the known ones otherwise."""
    if name not in SYSTEMS:
        raise ValueError(f"system must be one of {', '.join(SYSTEMS)}, not {name!r}")
    return SYSTEMS[name]
