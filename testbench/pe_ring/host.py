"""Host side of :mod:`testbench.pe_ring.ring_tb`: run programs on a simulated :class:`hw.pe_ring.ring.PERing`."""

from dataclasses import dataclass

import numpy as np

from nnaccel.models.shared import fixed_point as fx
from nnaccel.sim.harness import simulate

__all__ = ["RingRun", "run_on_ring"]


@dataclass
class RingRun:
    lm_after: list          # per START: (pe, address) -> raw value read back after it
    results: np.ndarray     # result-port register of each PE (raw)
    cycles: np.ndarray      # TOTAL_CYCLES after each START
    counters: np.ndarray    # (starts, programs, 4): each program's counters (hw.shared.host_control.LayerCounter)
    build_seconds: float
    run_seconds: float

    @property
    def lm(self):
        """(pe, address) -> raw value read back after the last START."""
        return self.lm_after[-1]

    def lm_image(self, start, shape):
        """The (pes, lm_depth) raw LM image after START ``start``: the words read back, zeros elsewhere."""
        image = np.zeros(shape, dtype=np.int64)
        for (pe, address), value in self.lm_after[start].items():
            image[pe, address] = value
        return image


def run_on_ring(ring, words, lm, reads, *, starts=1, entries=(0,), max_cycles=10_000_000, simulator="verilator"):
    """Load ``words``, the program table ``entries`` (entry address of each program) and the (pes, lm_depth) raw
    image ``lm``; START ``len(entries)`` programs ``starts`` times; read the (pe, address) pairs ``reads`` back after
    each START."""
    config = ring.config
    lm_depth = config.lm_depth
    reads = np.asarray(reads, dtype=np.uint64).reshape(-1, 2)
    result = simulate(ring, name=ring.module_name, test_module="nnaccel.testbench.pe_ring.ring_tb", simulator=simulator,
                      stimulus={"program": np.array(words, dtype=np.uint64), "entries": np.array(entries, dtype=np.uint64),
                                "lm": fx.to_bits(np.asarray(lm), config.fmt).reshape(-1).astype(np.uint64),
                                "lm_reads": reads[:, 0] * lm_depth + reads[:, 1]},
                      config={"max_cycles": max_cycles, "pes": config.pes, "starts": starts, "programs": len(entries)})
    keys = [(int(p), int(a)) for p, a in reads]
    lm_after = [dict(zip(keys, (int(value) for value in fx.from_bits(read_words, config.fmt))))
                for read_words in result.outputs["lm_data"].reshape(starts, len(keys))]
    return RingRun(lm_after=lm_after,
                   results=fx.from_bits(result.outputs["results"], config.fmt), cycles=result.outputs["cycles"],
                   counters=result.outputs["counters"], build_seconds=result.build_seconds,
                   run_seconds=result.run_seconds)
