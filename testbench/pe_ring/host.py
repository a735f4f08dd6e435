"""Host side of :mod:`testbench.pe_ring.ring_tb`: run programs on a simulated :class:`hw.pe_ring.ring.PERing`."""

from dataclasses import dataclass

import numpy as np

from nnaccel.models.shared import fixed_point as fx
from nnaccel.sim.harness import simulate

__all__ = ["RingRun", "run_on_ring"]


@dataclass
class RingRun:
    lm: dict                # (pe, address) -> raw value read back
    results: np.ndarray     # result-port register of each PE (raw)
    cycles: np.ndarray      # TOTAL_CYCLES after each START
    counters: np.ndarray    # (starts, programs, 4): each program's counters (hw.shared.host_control.LayerCounter)
    build_seconds: float
    run_seconds: float


def run_on_ring(ring, words, lm, reads, *, starts=1, entries=(0,), max_cycles=10_000_000, simulator="verilator"):
    """Load ``words``, the program table ``entries`` (entry address of each program) and the (pes, lm_depth) raw
    image ``lm``; START ``len(entries)`` programs ``starts`` times; read the (pe, address) pairs ``reads`` back."""
    config = ring.config
    lm_depth = config.lm_depth
    reads = np.asarray(reads, dtype=np.uint64).reshape(-1, 2)
    result = simulate(ring, name=ring.module_name, test_module="nnaccel.testbench.pe_ring.ring_tb", simulator=simulator,
                      stimulus={"program": np.array(words, dtype=np.uint64), "entries": np.array(entries, dtype=np.uint64),
                                "lm": fx.to_bits(np.asarray(lm), config.fmt).reshape(-1).astype(np.uint64),
                                "lm_reads": reads[:, 0] * lm_depth + reads[:, 1]},
                      config={"max_cycles": max_cycles, "pes": config.pes, "starts": starts, "programs": len(entries)})
    values = fx.from_bits(result.outputs["lm_data"], config.fmt)
    return RingRun(lm={(int(p), int(a)): int(v) for (p, a), v in zip(reads, values)},
                   results=fx.from_bits(result.outputs["results"], config.fmt), cycles=result.outputs["cycles"],
                   counters=result.outputs["counters"], build_seconds=result.build_seconds,
                   run_seconds=result.run_seconds)
