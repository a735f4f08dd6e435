"""Host side of :mod:`testbench.pe_ring.ring_tb`: run a program on a simulated :class:`hw.pe_ring.ring.PERing`."""

from dataclasses import dataclass

import numpy as np

from nnaccel.models.shared import fixed_point as fx
from nnaccel.sim.harness import simulate


@dataclass
class RingRun:
    lm: dict            # (pe, address) -> raw value read back
    results: np.ndarray # result-port register of each PE (raw)
    cycles: np.ndarray  # cycle counter after each run
    build_seconds: float
    run_seconds: float


def run_on_ring(ring, words, lm, reads, *, runs=1, max_cycles=10_000_000, simulator="verilator"):
    """Load ``words`` and the non-zero words of the (pes, depth) raw image ``lm``, start the program
    ``runs`` times, read the (pe, address) pairs ``reads`` back."""
    fmt = ring.fmt
    pes, addresses = np.nonzero(lm)
    writes = np.stack([pes, addresses, fx.to_bits(lm[pes, addresses], fmt)], axis=1).astype(np.uint64)
    reads = np.asarray(reads, dtype=np.uint64).reshape(-1, 2)
    result = simulate(ring, name=ring.module_name, test_module="nnaccel.testbench.pe_ring.ring_tb", simulator=simulator,
                      stimulus={"program": np.array(words, dtype=np.uint64), "lm_writes": writes, "lm_reads": reads},
                      config={"max_cycles": max_cycles, "pes": ring.pes, "runs": runs})
    values = fx.from_bits(result.outputs["lm_data"], fmt)
    return RingRun(lm={(int(p), int(a)): int(v) for (p, a), v in zip(reads, values)},
                   results=fx.from_bits(result.outputs["results"], fmt), cycles=result.outputs["cycles"],
                   build_seconds=result.build_seconds, run_seconds=result.run_seconds)
