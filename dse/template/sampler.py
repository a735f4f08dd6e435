"""Seeded random sampling of the template: hardware points and legal mappings.

A mapping is drawn in three steps, then repaired until legal:

1. Spatial: each level picks a parallel dimension among those the dataflow unrolls (different
   dimensions at different levels while there are enough; once none is left, a dimension with
   nothing left to split, on 1 PE, so that it blocks no temporal loop), and a divisor of what is
   left of its bound, within the PEs still free (uniform over the divisors).
2. Temporal: each prime factor of what is left of a dimension's bound goes to a random level
   that does not unroll that dimension; each level's loop order is a random permutation.
3. Repair: while the RF tiles overflow the register file, a prime factor of a random RF loop
   moves out to the GB (or DRAM); the same from the GB to DRAM; the RF's innermost loop is then
   moved to a dimension the dataflow allows innermost (or the RF's other loops move out).

The result always passes ``Mapping.validate``; the sampler checks that before returning it.
"""

import numpy as np

from nnaccel.dse.shared.layer import DIMS
from nnaccel.dse.template.hardware import TEMPLATE_SPACE, TemplateHardware
from nnaccel.dse.template.loopnest import LEVELS, analyse
from nnaccel.dse.template.mapping import Mapping

_RF, _GB, _DRAM = len(LEVELS) - 1, 1, 0


def prime_factors(value):
    factors, divisor = [], 2
    while divisor * divisor <= value:
        while value % divisor == 0:
            factors.append(divisor)
            value //= divisor
        divisor += 1
    if value > 1:
        factors.append(value)
    return factors


def _divisors(value, limit):
    return [d for d in range(1, min(value, limit) + 1) if value % d == 0]


def sample_hardware(rng, *, space=TEMPLATE_SPACE, **fixed):
    """A random template point; keyword arguments fix fields (e.g. ``number_format``)."""
    fields = {
        "pe_x": int(rng.integers(space.pe_min, space.pe_max + 1)),
        "pe_y": int(rng.integers(space.pe_min, space.pe_max + 1)),
        "rf_words": int(rng.choice(space.rf_words_choices)),
        "dataflow": space.dataflows[int(rng.integers(len(space.dataflows)))],
    }
    fields.update(fixed)
    return TemplateHardware(**fields)


class _Draft:
    """A mapping being built: parallel (dim, size) per level, temporal factors, loop orders."""

    def __init__(self, parallel, temporal, orders):
        self.parallel = parallel
        self.temporal = temporal
        self.orders = orders

    def mapping(self):
        return Mapping(tuple(
            (self.parallel[level],) + tuple((d, self.temporal[level][d]) for d in self.orders[level])
            for level in range(len(LEVELS))))

    def movable_to(self, dim, level):
        """The nearest level outside ``level`` that may take a temporal factor of ``dim``."""
        for outer in range(level - 1, -1, -1):
            if self.parallel[outer][0] != dim:
                return outer
        return None

    def move_out(self, rng, level, dims=None):
        """Move one prime factor of a random loop of ``level`` outward; False if none can."""
        candidates = [d for d in (dims or self.orders[level])
                      if self.temporal[level][d] > 1 and self.movable_to(d, level) is not None]
        if not candidates:
            return False
        dim = candidates[int(rng.integers(len(candidates)))]
        factor = prime_factors(self.temporal[level][dim])[0]
        self.temporal[level][dim] //= factor
        self.temporal[self.movable_to(dim, level)][dim] *= factor
        return True

    def tiles(self, layer):
        nest = analyse(self.mapping().to_code()[None], np.array([int(layer.type)]),
                       np.array([layer.stride]))
        return nest["rf_tile"][0].sum(), nest["gb_tile"][0].sum()


def _draw(layer, hardware, rng, fixed_parallel):
    bounds = dict(zip(DIMS, layer.loop_bounds()))
    remaining = dict(bounds)
    allowed = list(hardware.dataflow.parallel_dims)
    free_pes = hardware.pes
    parallel = list(fixed_parallel or [None] * len(LEVELS))
    for dim, size in fixed_parallel or ():
        remaining[dim] //= size
    chosen = []
    for level in ([] if fixed_parallel else rng.permutation(len(LEVELS))):
        fresh = [d for d in allowed if d not in chosen and remaining[d] > 1]
        idle = [d for d in DIMS if d not in chosen and remaining[d] == 1]
        pool = fresh or idle or allowed
        dim = pool[int(rng.integers(len(pool)))]
        options = _divisors(remaining[dim], free_pes)
        size = int(options[int(rng.integers(len(options)))])
        parallel[level] = (dim, size)
        chosen.append(dim)
        remaining[dim] //= size
        free_pes //= size
    temporal = [{d: 1 for d in DIMS if d != parallel[level][0]} for level in range(len(LEVELS))]
    for dim in DIMS:
        levels = [level for level in range(len(LEVELS)) if parallel[level][0] != dim]
        for factor in prime_factors(remaining[dim]):
            temporal[levels[int(rng.integers(len(levels)))]][dim] *= factor
    orders = [[d for d in rng.permutation(DIMS) if d != parallel[level][0]]
              for level in range(len(LEVELS))]
    return _Draft(parallel, temporal, [[str(d) for d in order] for order in orders])


def _fix_rf_innermost(draft, hardware, rng):
    innermost = hardware.dataflow.rf_innermost_dims
    order, factors = draft.orders[_RF], draft.temporal[_RF]
    while True:
        active = [d for d in order if factors[d] > 1]
        if not active or active[-1] in innermost:
            return True
        keep = [d for d in active if d in innermost]
        if keep:
            order.remove(keep[-1])
            order.append(keep[-1])
            return True
        if not draft.move_out(rng, _RF, dims=active):
            return False


def sample_mapping(layer, hardware, rng, *, parallel=None, max_draws=100):
    """One legal mapping of ``layer`` on ``hardware``, drawn with ``rng`` (numpy Generator).

    ``parallel``: optionally the three levels' parallel entries, fixed ((dim, PEs) per level,
    DRAM first); then only the temporal part is drawn.
    """
    for _ in range(max_draws):
        draft = _draw(layer, hardware, rng, parallel)
        rf_words, gb_words = draft.tiles(layer)
        while rf_words > hardware.rf_words and draft.move_out(rng, _RF):
            rf_words, gb_words = draft.tiles(layer)
        while gb_words > hardware.gb_words and draft.move_out(rng, _GB):
            rf_words, gb_words = draft.tiles(layer)
        if not _fix_rf_innermost(draft, hardware, rng):
            continue
        mapping = draft.mapping()
        if not mapping.violations(layer, hardware):
            return mapping
    raise RuntimeError(f"no legal mapping of {layer} on {hardware} in {max_draws} draws")


def sample_mappings(layer, hardware, count, *, seed, parallel=None):
    """``count`` legal mappings, reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    return [sample_mapping(layer, hardware, rng, parallel=parallel) for _ in range(count)]
