"""The seeds' template (``dse.template``) as a DCP dataflow space (the protocol ``dse.dcp.space.DataflowSpace``).

M = 3 levels (DRAM, GB, RF), N = 7 dimensions (N K C Y X R S), codes are ``Mapping.to_code``.

Nearest legal template dataflow to a relaxed code (``TemplateDataflowSpace.nearest``):

1. Parallel entries: level by level (DRAM first), the dimension with the lowest slot score not
   already parallel at another level. A dimension the hardware's dataflow does not unroll may
   take the slot only with 1 PE (an idle slot).
2. Loop order: the other dimensions by ascending slot score (outermost first).
3. Sizes: per dimension, the factorization of its loop bound over the three levels nearest the
   relaxed log2 sizes (least squares in log2), idle slots held at 1.
4. Repairs, each moving one prime factor of one dimension from one level to another, choosing
   the move that adds least to the squared log2 distance from the relaxed sizes: while the
   parallel sizes need more PEs than the array has, a factor leaves a parallel slot for a
   temporal one; while the RF tiles overflow the register file, a factor of an RF loop moves out
   (to the GB, or DRAM where the GB unrolls that dimension); while the GB tile overflows the
   buffer, a factor inside the GB tile moves to DRAM (if the GB tile is too big because DRAM's
   parallel dimension cannot be tiled, that dimension becomes a DRAM loop and a dimension with
   no DRAM loop takes the idle parallel slot).
5. Innermost RF loop: if the dataflow does not allow the innermost active RF loop there, the
   last active RF loop it allows moves innermost; if there is none, factors of the innermost
   loop move out until the rule holds.

The result always passes ``Mapping.validate`` (checked; a failure is a bug and raises).
"""

import itertools
from math import factorial, prod

import numpy as np

from nnaccel.dse.shared import energy_table
from nnaccel.dse.shared.dataflow_code import factorizations, nearest_factorization
from nnaccel.dse.shared.layer import DIM_INDEX, DIMS
from nnaccel.dse.template.cost_model import CaseBatch, evaluate_batch
from nnaccel.dse.template.hardware import NUMBER_FORMAT_BITS, Dataflow, TemplateHardware
from nnaccel.dse.template.loopnest import LEVELS, analyse, footprints
from nnaccel.dse.template.mapping import Mapping
from nnaccel.dse.template.sampler import prime_factors, sample_mappings

_DRAM, _GB, _RF = 0, 1, 2
_DATAFLOWS = tuple(Dataflow)


class TemplateDataflowSpace:
    """The seeds' template (``dse.template.hardware``) as a ``DataflowSpace``."""

    name = "template"
    levels = LEVELS
    dims = DIMS
    hardware_feature_count = 8 + len(_DATAFLOWS)
    predictor_defaults = {}

    # ---- hardware ---------------------------------------------------------------------------

    def hardware_features(self, hardware):
        """log2 of PE_x, PE_y, RF words, GB words, GB and DRAM words per cycle, MAC pJ; word
        bits / 32; the dataflow one-hot."""
        values = [hardware.pe_x, hardware.pe_y, hardware.rf_words, hardware.gb_words,
                  hardware.gb_words_per_cycle, hardware.dram_words_per_cycle,
                  energy_table.mac_pj(hardware.number_format)]
        return np.array([*np.log2(values), hardware.word_bits / 32,
                         *(float(hardware.dataflow == d) for d in _DATAFLOWS)], dtype=np.float32)

    def hardware_to_dict(self, hardware):
        return hardware.to_dict()

    def hardware_from_dict(self, data):
        return TemplateHardware.from_dict(data)

    # ---- codes ------------------------------------------------------------------------------

    def sample_codes(self, layer, hardware, count, *, seed):
        mappings = sample_mappings(layer, hardware, count, seed=seed)
        return np.stack([mapping.to_code() for mapping in mappings])

    def evaluate(self, layer, hardware, codes):
        costs = evaluate_batch(_case_batch(layer, hardware, np.asarray(codes)))
        return {"latency": costs["latency_cycles"], "energy": costs["energy_pj"]}

    def violations(self, code, layer, hardware):
        return Mapping.from_code(code).violations(layer, hardware)

    def describe(self, code):
        """The mapping in words, one line per level of the nest, outermost first."""
        mapping = Mapping.from_code(code)

        def loops(level):
            return " ".join(f"{d}{s}" for d, s in mapping.loops(level) if s > 1) or "none"

        spatial = [f"{d}{s}" for d, s in (mapping.parallel(level) for level in range(3)) if s > 1]
        return "\n".join([
            f"DRAM loops (tiles DRAM -> GB), outermost first: {loops(_DRAM)}",
            f"GB loops (tiles GB -> array): {loops(_GB)}",
            f"unrolled over the PEs: {' x '.join(spatial) or 'nothing'} = {mapping.pes_used} PEs",
            f"RF loops (per PE, innermost last): {loops(_RF)}"])

    def network_violations(self, codes, layers, hardware):
        """None: the template's layers share no budget (each runs on the whole array in turn)."""
        return []

    def fit_network(self, codes, layers, hardware):
        """The codes as they are (no shared budget)."""
        return list(codes)

    # ---- the command's hardware options ---------------------------------------------------------

    number_formats = tuple(sorted(NUMBER_FORMAT_BITS))
    default_hardware = TemplateHardware(pe_x=16, pe_y=16, rf_words=64, dataflow="RS")

    def hardware_from_options(self, *, array, rf_words, style, number_format):
        """The template point of ``array`` = (PE rows, PE columns), ``rf_words``, dataflow ``style`` and
        ``number_format`` (default fp16).  ValueError naming the fault."""
        rows, columns = array
        return TemplateHardware(pe_y=rows, pe_x=columns, rf_words=rf_words, dataflow=style,
                                number_format=number_format or self.default_hardware.number_format)

    def describe_hardware(self, hardware):
        return (f"template {hardware.pe_y}x{hardware.pe_x} PEs, RF {hardware.rf_words} words, "
                f"{hardware.dataflow.value}, {hardware.number_format}, GB {hardware.gb_kib} KiB, "
                f"{hardware.dram_gbps:g} GB/s")

    # ---- search support -----------------------------------------------------------------------

    def log2_limits(self, layer, hardware):
        """(3, 7): a tile size is at most the dimension's loop bound at every level."""
        return np.broadcast_to(np.log2(layer.loop_bounds()), (len(LEVELS), len(DIMS))).copy()

    def penalty(self, code, layers, hardware, temperature):
        """Per restart (``code``: restarts x layers x 3 x 7 x 2 tensor), in log2 units: the squared
        gap between each dimension's summed log2 sizes and its log2 bound (tiles multiply to the
        bound), and the squared excess of the soft PEs used (the parallel entries weighted by a
        softmax of the slot scores) over the array."""
        import torch

        log_bounds = torch.tensor(np.log2([layer.loop_bounds() for layer in layers]),
                                  dtype=torch.float32)
        sizes = code[..., 1]
        bound_gap = ((sizes.sum(dim=2) - log_bounds) ** 2).sum(dim=(1, 2))
        weights = torch.softmax(-code[..., 0] / temperature, dim=-1)
        soft_pes = (weights * sizes).sum(dim=(-1, -2))
        pe_excess = (torch.relu(soft_pes - np.log2(hardware.pes)) ** 2).sum(dim=1)
        return bound_gap + pe_excess

    # ---- the decoder ------------------------------------------------------------------------

    def nearest(self, relaxed, layer, hardware):
        relaxed = np.asarray(relaxed, dtype=np.float64)
        decoder = _Decoder(relaxed[..., 0], relaxed[..., 1], layer, hardware)
        code = decoder.code()
        found = self.violations(code, layer, hardware)
        if found:
            raise RuntimeError(f"decoder produced an illegal mapping ({'; '.join(found)}) from "
                               f"{relaxed.tolist()}")
        return code

    # ---- exhaustive enumeration ---------------------------------------------------------------

    def enumerate_codes(self, layer, hardware, *, limit):
        """Every legal mapping up to cost-equivalence, in chunks of codes; None if more than
        ``limit``.

        Cost-equivalent mappings are listed once (or a few times): loops of size 1 are
        transparent (their place does not matter), a parallel entry on 1 PE is an idle slot
        (kept on a dimension whose bound is 1 where there is one), and a dimension unrolled at
        two levels costs what it costs unrolled at one with the product of the PEs (every
        parallel entry unrolls over the same array), so parallel dimensions differ between
        levels. Every cost a legal mapping can have is reached (tested against sampled ones).
        """
        plan = _enumeration_plan(layer, hardware, limit)
        if plan is None:
            return None
        return _enumerate_chunks(plan, layer, hardware)


def _case_batch(layer, hardware, codes):
    count = len(codes)

    def full(value):
        return np.full(count, float(value))

    return CaseBatch(
        codes=codes, layer_type=np.full(count, int(layer.type), dtype=np.intp),
        stride=full(layer.stride), pes=full(hardware.pes), rf_words=full(hardware.rf_words),
        gb_words=full(hardware.gb_words), gb_kib=full(hardware.gb_kib),
        gb_words_per_cycle=full(hardware.gb_words_per_cycle),
        dram_words_per_cycle=full(hardware.dram_words_per_cycle),
        word_bits=full(hardware.word_bits), mac_pj=full(energy_table.mac_pj(hardware.number_format)),
        mac_um2=full(energy_table.mac_um2(hardware.number_format)))


class _Decoder:
    """Steps 1-5 of the module docstring on one relaxed code."""

    def __init__(self, position, target, layer, hardware):
        self.target, self.layer, self.hardware = target, layer, hardware
        self.bounds = layer.loop_bounds()
        self.unrollable = {DIM_INDEX[d] for d in hardware.dataflow.parallel_dims}
        self.parallel = []
        for level in range(len(LEVELS)):
            ranked = np.argsort(position[level], kind="stable")
            self.parallel.append(int(next(d for d in ranked if d not in self.parallel)))
        self.orders = [[int(d) for d in np.argsort(position[level], kind="stable")
                        if d != self.parallel[level]] for level in range(len(LEVELS))]
        self.sizes = np.ones((len(LEVELS), len(DIMS)), dtype=np.int64)
        for dim in range(len(DIMS)):
            idle = tuple(level for level in range(len(LEVELS))
                         if self.parallel[level] == dim and dim not in self.unrollable)
            self.sizes[:, dim] = nearest_factorization(self.bounds[dim], target[:, dim],
                                                       forced_one=idle)
        self._repair_pes()
        self._repair_capacity(self._rf_words, self.hardware.rf_words, self._rf_moves)
        self._repair_capacity(self._gb_words, self.hardware.gb_words, self._gb_moves)
        self._repair_rf_innermost()

    def code(self):
        return np.array([[(self.parallel[level], self.sizes[level, self.parallel[level]])]
                         + [(d, self.sizes[level, d]) for d in self.orders[level]]
                         for level in range(len(LEVELS))], dtype=np.int64)

    # moves: (dim, from level, to level); the cost is the increase of the squared log2 distance
    def _move_cost(self, dim, source, dest):
        factor = prime_factors(int(self.sizes[source, dim]))[0]
        before = np.log2(self.sizes[[source, dest], dim])
        after = before + np.log2(factor) * np.array([-1, 1])
        goal = self.target[[source, dest], dim]
        return ((after - goal) ** 2).sum() - ((before - goal) ** 2).sum()

    def _apply_cheapest(self, moves):
        moves = [m for m in moves if self.sizes[m[1], m[0]] > 1]
        if not moves:
            return False
        dim, source, dest = min(moves, key=lambda move: self._move_cost(*move))
        factor = prime_factors(int(self.sizes[source, dim]))[0]
        self.sizes[source, dim] //= factor
        self.sizes[dest, dim] *= factor
        return True

    def _temporal_at(self, level, dim):
        return self.parallel[level] != dim

    def _pes_used(self):
        return prod(int(self.sizes[level, self.parallel[level]]) for level in range(len(LEVELS)))

    def _repair_pes(self):
        while self._pes_used() > self.hardware.pes:
            moves = [(self.parallel[level], level, dest) for level in range(len(LEVELS))
                     for dest in range(len(LEVELS))
                     if dest != level and self._temporal_at(dest, self.parallel[level])]
            if not self._apply_cheapest(moves):
                raise RuntimeError("no move reduces the PEs used")

    def _extents(self, level):
        return np.where(np.arange(len(DIMS)) == self.parallel[level], 1, self.sizes[level])

    def _tile_words(self, extents):
        return float(footprints(extents[None].astype(np.float64),
                                np.array([int(self.layer.type)]),
                                np.array([self.layer.stride])).sum())

    def _rf_words(self):
        return self._tile_words(self._extents(_RF))

    def _gb_words(self):
        spatial = np.ones(len(DIMS), dtype=np.int64)
        for level in range(len(LEVELS)):
            spatial[self.parallel[level]] *= self.sizes[level, self.parallel[level]]
        return self._tile_words(self._extents(_GB) * spatial * self._extents(_RF))

    def _outward(self, dim, level):
        return next((outer for outer in range(level - 1, -1, -1)
                     if self._temporal_at(outer, dim)), None)

    def _rf_moves(self, dims=None):
        return [(d, _RF, self._outward(d, _RF)) for d in (dims or range(len(DIMS)))
                if self._temporal_at(_RF, d) and self._outward(d, _RF) is not None]

    def _gb_moves(self):
        return [(d, level, _DRAM) for level in (_GB, _RF) for d in range(len(DIMS))
                if self._temporal_at(_DRAM, d)]

    def _repair_capacity(self, words, capacity, moves):
        while words() > capacity:
            if not self._apply_cheapest(moves()) and not self._free_dram_parallel():
                raise RuntimeError("no move shrinks the tile")

    def _free_dram_parallel(self):
        """Make DRAM's parallel dimension a DRAM loop (its PEs become iterations), so that it
        can be tiled; a dimension with no DRAM loop takes the idle parallel slot, one whose
        bound is 1 if there is one. False if DRAM's parallel dimension has nothing to tile or
        no dimension can take its place."""
        dim = self.parallel[_DRAM]
        order = self.orders[_DRAM]
        spares = [d for d in order if self.sizes[_DRAM, d] == 1 and d not in self.parallel]
        if self.bounds[dim] == 1 or not spares:
            return False
        spare = min(spares, key=lambda d: self.bounds[d] > 1)
        order[order.index(spare)] = dim
        self.parallel[_DRAM] = spare
        return True

    def _repair_rf_innermost(self):
        allowed = {DIM_INDEX[d] for d in self.hardware.dataflow.rf_innermost_dims}
        order = self.orders[_RF]
        while True:
            active = [d for d in order if self.sizes[_RF, d] > 1]
            if not active or active[-1] in allowed:
                return
            keep = [d for d in active if d in allowed]
            if keep:
                order.remove(keep[-1])
                order.append(keep[-1])
                return
            if not self._apply_cheapest(self._rf_moves([active[-1]])):
                raise RuntimeError("no move fixes the innermost RF loop")


# ---- exhaustive enumeration of the template -------------------------------------------------

def _enumeration_plan(layer, hardware, limit):
    """[(parallel dims per level, size combinations (n, 3, 7), active loops per level)]: the
    pieces ``_enumerate_chunks`` multiplies out with the loop orders; None as soon as the count
    of codes passes ``limit``."""
    bounds = layer.loop_bounds()
    idle = [d for d in range(len(DIMS)) if bounds[d] == 1]
    unrollable = [DIM_INDEX[d] for d in hardware.dataflow.parallel_dims if bounds[DIM_INDEX[d]] > 1]
    candidates = []
    for choice in itertools.product([*unrollable, None], repeat=len(LEVELS)):
        unrolled = [d for d in choice if d is not None]
        if len(set(unrolled)) != len(unrolled):
            continue
        for parallel in _idle_placements(choice, idle, bounds):
            per_dim = []
            for dim in range(len(DIMS)):
                options = factorizations(bounds[dim], len(LEVELS))
                for level in range(len(LEVELS)):
                    if parallel[level] == dim:
                        options = options[options[:, level] >= 2 if choice[level] == dim
                                          else options[:, level] == 1]
                per_dim.append(options)
            candidates.append((parallel, per_dim))
    if sum(prod(len(options) for options in per_dim) for _, per_dim in candidates) > limit:
        return None
    plan, codes = [], 0
    for parallel, per_dim in candidates:
        counts = [len(options) for options in per_dim]
        if 0 in counts:
            continue
        index = np.stack(np.meshgrid(*[np.arange(c) for c in counts], indexing="ij"),
                         axis=-1).reshape(-1, len(DIMS))
        sizes = np.stack([per_dim[d][index[:, d]] for d in range(len(DIMS))], axis=2)
        pes = np.prod([sizes[:, level, parallel[level]] for level in range(len(LEVELS))], axis=0)
        for active, group in _group_by_activity(sizes[pes <= hardware.pes], parallel):
            codes += len(group) * _order_count(active, hardware)
            if codes > limit:
                return None
            plan.append((parallel, group, active))
    return plan


def _idle_placements(choice, idle, bounds):
    """The dimensions that hold the idle parallel slots (``None`` in ``choice``): dimensions
    whose bound is 1 when there are enough (they block nothing); otherwise every idle dimension
    and, in turn, each assignment of the remaining slots to other dimensions, which then have
    no loop at that level."""
    slots = [level for level, dim in enumerate(choice) if dim is None]
    if len(slots) <= len(idle):
        spare = iter(idle)
        yield [dim if dim is not None else next(spare) for dim in choice]
        return
    others = [d for d in range(len(bounds)) if d not in idle and d not in choice]
    extra = len(slots) - len(idle)
    for blockers in itertools.permutations(others, extra):
        for placed in set(itertools.permutations([*idle, *blockers])):
            parallel = list(choice)
            for level, dim in zip(slots, placed):
                parallel[level] = dim
            yield parallel


def _group_by_activity(sizes, parallel):
    """Split size combinations by which temporal loops are active (> 1) at each level."""
    temporal = sizes > 1
    for level, dim in enumerate(parallel):
        temporal[:, level, dim] = False
    if not len(sizes):
        return
    keys = np.packbits(temporal.reshape(len(sizes), -1), axis=1)
    _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[order], np.arange(len(first) + 1))
    for group, representative in enumerate(first):
        active = [tuple(int(d) for d in np.flatnonzero(temporal[representative, level]))
                  for level in range(len(LEVELS))]
        yield active, sizes[order[bounds[group]:bounds[group + 1]]]


def _rf_innermost_ok(order, hardware):
    return not order or order[-1] in {DIM_INDEX[d] for d in hardware.dataflow.rf_innermost_dims}


def _order_count(active, hardware):
    """How many combinations of loop orders ``_orders`` gives, without listing them."""
    allowed = {DIM_INDEX[d] for d in hardware.dataflow.rf_innermost_dims}
    count = prod(factorial(len(dims)) for dims in active[:_RF])
    rf = active[_RF]
    return count * (factorial(len(rf) - 1) * len(allowed.intersection(rf)) if rf else 1)


def _orders(active, hardware):
    """Every combination of loop orders of the active loops, level by level, that keeps the
    innermost RF loop to what the dataflow allows."""
    per_level = [itertools.permutations(dims) for dims in active[:_RF]]
    rf_orders = [p for p in itertools.permutations(active[_RF]) if _rf_innermost_ok(p, hardware)]
    return itertools.product(*per_level, rf_orders)


def _enumerate_chunks(plan, layer, hardware, chunk=50_000):
    for parallel, sizes, active in plan:
        for order in _orders(active, hardware):
            codes = np.empty((len(sizes), len(LEVELS), len(DIMS), 2), dtype=np.int64)
            for level in range(len(LEVELS)):
                rest = [d for d in range(len(DIMS))
                        if d != parallel[level] and d not in order[level]]
                slots = [parallel[level], *rest, *order[level]]
                codes[:, level, :, 0] = slots
                codes[:, level, :, 1] = sizes[:, level, slots]
            for start in range(0, len(codes), chunk):
                part = codes[start:start + chunk]
                nest = analyse(part, np.full(len(part), int(layer.type)),
                               np.full(len(part), layer.stride))
                legal = ((nest["rf_tile"].sum(axis=1) <= hardware.rf_words)
                         & (nest["gb_tile"].sum(axis=1) <= hardware.gb_words))
                if legal.any():
                    yield part[legal]
