"""nnaccel's RTL family (the DQN accelerator, ``hw.dqn``) as a ``DataflowSpace``: what DCP searches through to map
a layer onto the hardware it runs on.

What a mapping decides on this hardware (``models.dqn.mapping``): the layer's output positions cut into segments
(one pass each), per segment its column blocks ``C`` (positions per group ``P = modules / C``) and, for a
single-position segment, a K-split ``S`` (the kernel in ``S`` chunks on ``S`` position slots: its columns, or its row
halves times its columns, :func:`models.dqn.plan.split_chunk`; then a
reduction pass).  The hardware fixes the rest: the loop order inside a group (``c, kh, kw``), channel blocks over
the modules, output channels over the lanes.

**The code** (fixed shape, as DCP needs): at most three segments in position order, *head*, *body* and *tail*, each
the (3, 7, 2) segment code of ``dse.rtl.code`` (levels groups, modules, lanes; dimensions N K C Y X R S),
stacked into an (M = 9, N = 7, 2) code (levels ``head groups .. tail lanes``, ``LEVELS``).  A present segment's
groups level has the parallel entry ``X`` x ``P`` (``S`` x ``split`` for a K-split) and the loop ``Y`` x its position
count; its modules level ``K`` x ``C``; its lanes level ``K`` x lanes and the loops ``C, R, S`` x ``Cin, Kh, Kw /
split``.  The body is always present and takes the positions head and tail leave; an absent head or tail is the
*idle segment* (``IDLE_SEGMENT``: parallel ``N`` x 1 at the groups level, every size 1).  A mapping with two
segments is coded as body and tail.  Every level lists every dimension once, so DCP's ``relax`` applies.

What the code covers: every mapping of one to three segments with any column blocks and any legal K-split of a
single-position segment (the mappings ``dse.rtl.sampler`` samples).  What it leaves out: four or more
segments (``mapping_table`` and ``best_network_mapping`` search those too, by dynamic programming, for "best
there is") and the order of the passes (it changes neither cycles nor results).

**Nearest legal mapping** (``nearest``): (1) per segment slot the groups level's lowest slot score among ``X``,
``S`` and ``N`` says unsplit, K-split or absent (the body cannot be absent: ``N`` there counts as ``X``); (2) the
tail's count is the integer nearest ``2 ** Y`` in log2 within ``1 .. positions - 1``, then the head's within what the
tail leaves (absent if nothing is left), the body the rest; (3) per segment the legal (column blocks, split) pair
nearest the relaxed ``log2 C`` (modules level, ``K``) and ``log2 split`` (groups level, ``S``; 0 for an unsplit
segment) in squared log2 distance, a K-split only where the slot asked for one (``C = modules``, one position per
group, always runs); (4) if the layer then needs more descriptor-table entries or weight-RAM rows than the
hardware has, its K-splits are dropped, and if that is not enough the layer runs as one segment.  The entries the
hardware derives (``P``, the lanes level) are not read.  A legal code decodes to itself; every relaxed code decodes
to a legal one (tested).

**Layers**: DCP's ``dse.shared.layer.Layer`` (square convolutions and dense layers; no depthwise) as the compiler
sees it (``models.dqn.plan.layer_shapes``): a dense layer that follows a convolution in one of ``NETWORKS`` reads
that convolution's image (the DQN's FC_1 reads CONV_2's 32 x 9 x 9 output as a 9 x 9 kernel), every other dense
layer a packed vector.

**Costs**: ``dse.rtl.cost_model`` (latency = the hardware's cycle counters exactly, energy from the 45 nm
table); **hardware**: a ``hw.dqn.config.DqnConfig``.  Legality per layer (``violations``): the compiler's
``check_mapping``, the descriptor table (passes <= ``max_layers``) and the weight RAM (the compiler's rows);
per network (``network_violations``) the same two budgets summed over the layers, and ``fit_network`` simplifies a
network's codes until they fit them.  ``default_codes`` gives the compiler's own mapping as codes (a starting
point for the search).
"""

import time
from functools import lru_cache
from itertools import product
from math import log2

import numpy as np

from nnaccel.dse.rtl import cost_model as rtl_cost
from nnaccel.dse.rtl.code import RTL_LEVELS, layer_mapping_from_code, segment_code
from nnaccel.dse.rtl.hardware import FORMATS, config_from_json, config_to_json, network_to_json
from nnaccel.dse.rtl.sampler import block_choices, sample_layer_mapping
from nnaccel.dse.rtl.validate import code_digest
from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.dse.shared.layer import DIM_INDEX, DIMS, LayerType, dqn_layers
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import ConvLayer, DenseLayer
from nnaccel.models.dqn.network import dqn_layers as network_dqn_layers
from nnaccel.models.dqn.plan import check_mapping, check_segment, default_mapping, layer_shapes, pass_shapes, split_chunk

__all__ = ["SEGMENT_SLOTS", "LEVELS", "IDLE_SEGMENT", "NETWORKS", "RtlDataflowSpace", "rtl_network", "layer_shape",
           "mapping_code", "code_mapping", "weight_rows", "mapping_table", "best_network_mapping"]

SEGMENT_SLOTS = ("head", "body", "tail")
LEVELS = tuple(f"{slot} {level}" for slot in SEGMENT_SLOTS for level in RTL_LEVELS)
_HEAD, _BODY, _TAIL = range(3)
_GROUPS, _MODULES, _LANES = range(3)
_N, _K, _C, _Y, _X, _R, _S = (DIM_INDEX[d] for d in DIMS)
NETWORKS = (dqn_layers(),)


def _idle_level(parallel):
    return [(DIM_INDEX[parallel], 1)] + [(DIM_INDEX[d], 1) for d in DIMS if d != parallel]


IDLE_SEGMENT = np.array([_idle_level("N"), _idle_level("K"), _idle_level("K")], dtype=np.int64)


# ---- layers as the compiler sees them --------------------------------------------------------------------------

def _rtl_layer(layer):
    if layer.type == LayerType.DEPTHWISE or layer.batch != 1:
        raise ValueError(f"{layer.name}: the RTL family runs convolutions and dense layers of batch 1, not a "
                         f"{layer.type.name.lower()} layer of batch {layer.batch}")
    if layer.type == LayerType.DENSE:
        return DenseLayer(layer.name, layer.c, layer.k)
    if layer.y != layer.x or layer.r != layer.s:
        raise ValueError(f"{layer.name}: the RTL family runs square convolutions, not {layer.y}x{layer.x} inputs "
                         f"with {layer.r}x{layer.s} filters")
    return ConvLayer(layer.name, layer.c, layer.y, layer.k, layer.r, layer.stride)


def rtl_network(layer):
    """(RTL layers, index of ``layer``): the layer with the convolution that feeds it where it is a dense layer
    after a convolution in one of ``NETWORKS``, else the layer alone."""
    for network in NETWORKS:
        for index, member in enumerate(network[1:], start=1):
            if member == layer and layer.type == LayerType.DENSE and network[index - 1].type != LayerType.DENSE:
                return (_rtl_layer(network[index - 1]), _rtl_layer(layer)), 1
    return (_rtl_layer(layer),), 0


@lru_cache(maxsize=1024)
def layer_shape(layer, config):
    """The ``models.dqn.plan.LayerShape`` of a DCP layer on ``config`` (ValueError if the hardware cannot run it)."""
    network, index = rtl_network(layer)
    return layer_shapes(config, network)[index]


# ---- codes <-> layer mappings ------------------------------------------------------------------------------------

def mapping_code(config, shape, layer_mapping):
    """The (9, 7, 2) code of a layer mapping of at most three segments (two: body and tail)."""
    segments = layer_mapping.in_position_order()
    if len(segments) > len(SEGMENT_SLOTS):
        raise ValueError(f"{shape.name}: the RTL code holds at most {len(SEGMENT_SLOTS)} segments, not "
                         f"{len(segments)} ({layer_mapping.describe()})")
    slots = {1: (None, segments[0], None), 2: (None, *segments), 3: segments}[len(segments)]
    return np.concatenate([IDLE_SEGMENT if segment is None else _segment_block(config, shape, segment)
                           for segment in slots])


def _present(code):
    """Slots (0..2) whose segment is present: the groups level's parallel entry is not ``N``."""
    return [slot for slot in range(len(SEGMENT_SLOTS)) if code[3 * slot + _GROUPS, 0, 0] != _N]


def _segment_table(codes):
    """(codes, 3, 4): per segment slot of each code (assumed legal) ``(first, count, column_blocks, split)``,
    all 0 for an absent segment (no checks: ``code_mapping`` checks)."""
    groups = codes[:, 0::3]                                                   # (codes, slots, 7, 2)
    present = groups[:, :, 0, 0] != _N
    split = np.where(groups[:, :, 0, 0] == _S, groups[:, :, 0, 1], 1)
    count = np.where(split > 1, 1, (groups[..., 1] * (groups[..., 0] == _Y)).sum(axis=-1)) * present
    first = np.cumsum(count, axis=1) - count
    blocks = codes[:, 1::3, 0, 1]
    return np.stack([first, count, blocks * present, split * present], axis=-1)


def code_mapping(config, shape, code):
    """The ``LayerMapping`` of a (9, 7, 2) code (ValueError naming the fault if it is not an RTL code)."""
    code = np.asarray(code)
    if code.shape != (len(LEVELS), len(DIMS), 2):
        raise ValueError(f"{shape.name}: an RTL layer code has shape ({len(LEVELS)}, {len(DIMS)}, 2), not "
                         f"{code.shape}")
    present = _present(code)
    if _BODY not in present:
        raise ValueError(f"{shape.name}: the body segment of an RTL code cannot be absent")
    for slot in set(range(len(SEGMENT_SLOTS))) - set(present):
        if not np.array_equal(code[3 * slot:3 * slot + 3], IDLE_SEGMENT):
            raise ValueError(f"{shape.name}: an absent {SEGMENT_SLOTS[slot]} segment is coded "
                             f"{IDLE_SEGMENT.tolist()}, not {code[3 * slot:3 * slot + 3].tolist()}")
    return layer_mapping_from_code(config, shape, code.reshape(3, 3, len(DIMS), 2)[present])


@lru_cache(maxsize=100_000)
def _segment_rows(config, shape, segment):
    return sum(work.products + 1 for work in pass_shapes(config, shape, LayerMapping((segment,))))


@lru_cache(maxsize=100_000)
def _segment_block(config, shape, segment):
    return segment_code(config, shape, segment)


def weight_rows(config, shape, layer_mapping):
    """Weight-RAM words the compiler gives the layer's passes: products + 1 each, the position passes of one
    column-block count and channel tile sharing theirs (``models.dqn.plan.compile_network``)."""
    shared, rows = {}, 0
    for segment in layer_mapping.segments:
        if segment.split == 1:
            shared[segment.column_blocks, segment.tile] = _segment_rows(config, shape, segment)
        else:
            rows += _segment_rows(config, shape, segment)
    return rows + sum(shared.values())


def _budget_violations(config, name, passes, rows):
    found = []
    if passes > config.max_layers:
        found.append(f"{name} takes {passes} passes; the descriptor table holds {config.max_layers}")
    if rows > config.weight_depth:
        found.append(f"{name} needs {rows} weight-RAM words; the RAM has {config.weight_depth}")
    return found


# ---- legal segments ----------------------------------------------------------------------------------------------

@lru_cache(maxsize=200_000)
def _segment_options(config, shape, first, count):
    """Every legal Segment over positions ``first .. first + count - 1``: each column-block count, and for a single
    position each K-split the hardware runs."""
    splits = [1] + ([s for s in range(2, 2 * shape.kernel_width + 1) if split_chunk(shape, s)] if count == 1
                    else [])
    options = []
    for blocks, split in product(block_choices(config, shape), splits):
        segment = Segment(first, count, blocks, split)
        try:
            check_segment(config, shape, segment)
        except ValueError:
            continue
        options.append(segment)
    return tuple(options)


def _nearest_count(log_target, high):
    """The integer in ``1 .. high`` nearest ``2 ** log_target`` in log2."""
    value = 2.0 ** float(log_target)
    candidates = {min(max(int(np.floor(value)), 1), high), min(max(int(np.ceil(value)), 1), high)}
    return min(sorted(candidates), key=lambda c: (log2(c) - log_target) ** 2)


class RtlDataflowSpace:
    """nnaccel's RTL family as a ``DataflowSpace`` (see the module docstring)."""

    name = "rtl"
    levels = LEVELS
    dims = DIMS
    hardware_feature_count = 9 + len(FORMATS)
    predictor_defaults = {"derived": False}     # the template's derived features assume its nest

    def __init__(self):
        self._segment_costs = {}                # (hardware, layer shape) -> {segment: (latency, energy)}

    # ---- hardware ---------------------------------------------------------------------------------------------

    def hardware_features(self, hardware):
        """log2 of modules, lanes, row elements, activation- and weight-RAM depths, descriptor entries; the
        multiplier and adder latencies; the element bits / 32; the format one-hot."""
        values = [hardware.modules, hardware.lanes, hardware.row_elements, hardware.activation_depth,
                  hardware.weight_depth, hardware.max_layers]
        return np.array([*np.log2(values), hardware.multiplier_latency, hardware.adder_latency,
                         hardware.fmt.width / 32, *(float(hardware.fmt.name == f) for f in FORMATS)],
                        dtype=np.float32)

    def hardware_to_dict(self, hardware):
        return config_to_json(hardware)

    def hardware_from_dict(self, data):
        return config_from_json(data)

    # ---- codes ------------------------------------------------------------------------------------------------

    def sample_codes(self, layer, hardware, count, *, seed, tries=100):
        """Legal mappings drawn by ``dse.rtl.sampler.sample_layer_mapping`` (1..3 segments, random column
        blocks and K-splits), redrawn where they overflow the weight RAM."""
        shape = layer_shape(layer, hardware)
        rng = np.random.default_rng(seed)
        codes = []
        while len(codes) < count:
            for _ in range(tries):
                mapping = sample_layer_mapping(rng, hardware, shape, max_passes=hardware.max_layers)
                if weight_rows(hardware, shape, mapping) <= hardware.weight_depth:
                    break
            else:
                raise RuntimeError(f"{shape.name}: no sampled mapping fits the weight RAM of "
                                   f"{hardware.module_name} in {tries} draws")
            codes.append(mapping_code(hardware, shape, mapping))
        return np.stack(codes)

    def evaluate(self, layer, hardware, codes):
        """``rtl_cost`` on each code (assumed legal), as the sum of its segments' passes (their costs add up;
        each distinct segment is costed once per layer and hardware)."""
        shape = layer_shape(layer, hardware)
        segments = _segment_table(np.asarray(codes).reshape(-1, len(LEVELS), len(DIMS), 2))   # (codes, 3, 4)
        keys, inverse = np.unique(segments.reshape(-1, 4), axis=0, return_inverse=True)
        known = self._known(hardware, shape)
        missing = [Segment(*map(int, key)) for key in keys if key[1] and tuple(key) not in known]
        if missing:
            costs = rtl_cost.evaluate_batch(rtl_cost.pack([(hardware, LayerMapping((s,)), shape) for s in missing],
                                                          area=False))
            known.update((tuple(s.to_list()), pair) for s, pair in zip(
                missing, zip(costs["latency_cycles"], costs["energy_pj"])))
        table = np.array([known[tuple(key)] if key[1] else (0.0, 0.0) for key in keys], dtype=np.float64)
        totals = table[inverse.ravel()].reshape(len(segments), len(SEGMENT_SLOTS), 2).sum(axis=1)
        return {"latency": totals[:, 0], "energy": totals[:, 1]}

    def _known(self, hardware, shape):
        """Costs of the segments of a (hardware, layer) costed so far."""
        return self._segment_costs.setdefault((hardware, shape), {})

    def violations(self, code, layer, hardware):
        try:
            shape = layer_shape(layer, hardware)
            mapping = code_mapping(hardware, shape, code)
            check_mapping(hardware, (shape,), DqnMapping((mapping,)))
        except ValueError as error:
            return [str(error)]
        return _budget_violations(hardware, shape.name, mapping.passes, weight_rows(hardware, shape, mapping))

    def network_violations(self, codes, layers, hardware):
        """What one code per layer breaks together: the descriptor table and the weight RAM."""
        mappings = [code_mapping(hardware, layer_shape(layer, hardware), code) for layer, code in zip(layers, codes)]
        rows = sum(weight_rows(hardware, layer_shape(layer, hardware), mapping)
                   for layer, mapping in zip(layers, mappings))
        return _budget_violations(hardware, "the network", sum(m.passes for m in mappings), rows)

    def fit_network(self, codes, layers, hardware):
        """One code per layer, simplified until the layers fit the descriptor table and the weight RAM together:
        the layer with the most passes drops its K-splits, or else runs as one segment, until they fit."""
        codes = [np.asarray(code) for code in codes]
        while self.network_violations(codes, layers, hardware):
            mappings = [self.mapping(code, layer, hardware) for code, layer in zip(codes, layers)]
            passes, index = max((mapping.passes, index) for index, mapping in enumerate(mappings))
            if passes == 1:
                break
            shape = layer_shape(layers[index], hardware)
            relaxed = relax(codes[index][None])[0].reshape(len(SEGMENT_SLOTS), 3, len(DIMS), 2)
            segments = list(mappings[index].segments)
            simpler = self._fit_budgets(hardware, shape, segments, relaxed, force=passes - 1)
            codes[index] = mapping_code(hardware, shape, simpler)
        return codes

    def default_codes(self, layers, hardware):
        """The codes of the compiler's default mapping (``models.dqn.plan.default_mapping``) of each layer in its
        network (``rtl_network``)."""
        codes = []
        for layer in layers:
            network, index = rtl_network(layer)
            shapes = layer_shapes(hardware, network)
            codes.append(mapping_code(hardware, shapes[index], default_mapping(hardware, shapes).layers[index]))
        return codes

    def mapping(self, code, layer, hardware):
        """The ``models.dqn.mapping.LayerMapping`` a code stands for."""
        return code_mapping(hardware, layer_shape(layer, hardware), code)

    # ---- the command's hardware options and what only this family offers ---------------------------------------

    number_formats = FORMATS
    default_hardware = DqnConfig()

    def hardware_from_options(self, *, array, rf_words, style, number_format):
        """The configuration of ``array`` = (modules, lanes) in ``number_format`` (default binary32); the register
        file and the dataflow style are the template's and not read.  ValueError naming the fault."""
        fmt = number_format or self.default_hardware.fmt.name
        if fmt not in FORMATS:
            raise ValueError(f"the RTL family's number formats are {', '.join(FORMATS)}, not {fmt}")
        modules, lanes = array
        return DqnConfig(modules=modules, lanes=lanes, fmt=float_format(fmt))

    def describe_hardware(self, hardware):
        return (f"RTL {hardware.modules} modules x {hardware.lanes} lanes, {hardware.fmt.name}, float-unit latencies "
                f"{hardware.multiplier_latency}/{hardware.adder_latency}, {hardware.max_layers} descriptors, weight "
                f"RAM {hardware.weight_depth} words")

    def best_over_every_mapping(self, layers, hardware, objective):
        """The least latency or energy over every mapping the hardware runs (``best_network_mapping``):
        ``{"best", "mappings" (in words), "seconds"}``; None for another objective."""
        if objective not in ("latency", "energy"):
            return None
        start = time.perf_counter()
        cost, mappings = best_network_mapping(layers, hardware, objective)
        return {"best": cost, "mappings": [mapping.describe() for mapping in mappings],
                "seconds": time.perf_counter() - start}

    def simulation_case(self, layers, hardware, codes):
        """The ``dse.rtl.validate`` case that runs ``codes`` (one per layer of ``layers``) on the simulated
        accelerator: the DQN when the layers are DQN layers (the others with the compiler's mapping), else the
        layer alone; returns (case, names of the searched layers)."""
        if all(layer in dqn_layers() for layer in layers):
            network, indices = network_dqn_layers(18), [dqn_layers().index(layer) for layer in layers]
        else:
            network, index = rtl_network(layers[0])
            indices = [index]
        mapping = list(default_mapping(hardware, layer_shapes(hardware, network)).layers)
        for index, layer, code in zip(indices, layers, codes):
            mapping[index] = self.mapping(code, layer, hardware)
        case = {"kind": "random", "config": config_to_json(hardware), "network": network_to_json(network),
                "mapping": DqnMapping(tuple(mapping)).to_json(), "weights_seed": 1, "inputs_seed": 2, "states": 1,
                "code": code_digest()}
        return case, sorted({network[index].name for index in indices})

    def describe(self, code):
        """The mapping in words, one line per segment in position order."""
        code = np.asarray(code)
        lines, first = [], 0
        for slot in _present(code):
            groups, modules, lanes = code[3 * slot:3 * slot + 3]
            blocks, lane_count = int(modules[0, 1]), int(lanes[0, 1])
            steps = dict(map(tuple, lanes[1:].tolist()))
            kernel = f"{steps[_C]} x {steps[_R]} x {steps[_S]}"
            if groups[0, 0] == _S:
                split = int(groups[0, 1])
                lines.append(f"{SEGMENT_SLOTS[slot]}: position {first}, K-split: its kernel columns in {split} "
                             f"chunks on {split} position slots ({blocks} column blocks x {lane_count} lanes, "
                             f"c x kh x kw = {kernel} per chunk), then a reduction pass")
                first += 1
                continue
            count, per_group = dict(map(tuple, groups[1:].tolist()))[_Y], int(groups[0, 1])
            lines.append(f"{SEGMENT_SLOTS[slot]}: positions {first}..{first + count - 1} ({count}), {blocks} column "
                         f"blocks x {lane_count} lanes, {per_group} positions per group, {-(-count // per_group)} "
                         f"groups of c x kh x kw = {kernel} steps")
            first += count
        return "\n".join(lines)

    # ---- search support -----------------------------------------------------------------------------------------

    def log2_limits(self, layer, hardware):
        """(9, 7) largest log2 size of each entry (0: fixed at 1 or derived)."""
        shape = layer_shape(layer, hardware)
        limits = np.zeros((len(LEVELS), len(DIMS)))
        for slot in range(len(SEGMENT_SLOTS)):
            base = 3 * slot
            limits[base + _GROUPS, [_X, _Y, _S]] = [log2(hardware.modules), log2(shape.positions),
                                                    log2(shape.kernel_width)]
            limits[base + _MODULES, _K] = log2(hardware.modules)
            limits[base + _LANES, [_K, _C, _R, _S]] = [log2(hardware.lanes), log2(shape.in_shape[0]),
                                                       log2(shape.kernel_height), log2(shape.kernel_width)]
        return limits

    def penalty(self, code, layers, hardware, temperature):
        """Per restart (``code``: restarts x layers x 9 x 7 x 2 tensor): the squared log2 excess of the head's and
        tail's positions (plus one for the body) over the layer's positions."""
        import torch

        positions = torch.tensor([log2(layer_shape(layer, hardware).positions) for layer in layers])
        counts = code[..., [_HEAD * 3 + _GROUPS, _TAIL * 3 + _GROUPS], _Y, 1]
        used = torch.log2(torch.exp2(counts).sum(dim=-1) + 1)
        return (torch.relu(used - positions) ** 2).sum(dim=1)

    # ---- the decoder ------------------------------------------------------------------------------------------

    def nearest(self, relaxed, layer, hardware):
        shape = layer_shape(layer, hardware)
        relaxed = np.asarray(relaxed, dtype=np.float64).reshape(len(SEGMENT_SLOTS), 3, len(DIMS), 2)
        kinds = []
        for slot in range(len(SEGMENT_SLOTS)):
            score = relaxed[slot, _GROUPS, :, 0]
            choices = (_X, _S) if slot == _BODY else (_X, _S, _N)
            kinds.append(min(choices, key=lambda d: (score[d], choices.index(d))))
        positions = shape.positions
        tail = _nearest_count(relaxed[_TAIL, _GROUPS, _Y, 1], positions - 1) \
            if kinds[_TAIL] != _N and positions > 1 else 0
        head = _nearest_count(relaxed[_HEAD, _GROUPS, _Y, 1], positions - 1 - tail) \
            if kinds[_HEAD] != _N and positions - 1 - tail >= 1 else 0
        ranges = {_HEAD: (0, head), _BODY: (head, positions - head - tail), _TAIL: (positions - tail, tail)}
        chosen = []
        for slot in range(len(SEGMENT_SLOTS)):
            first, count = ranges[slot]
            if not count:
                continue
            log_blocks = relaxed[slot, _MODULES, _K, 1]
            log_split = relaxed[slot, _GROUPS, _S, 1] if kinds[slot] == _S else 0.0
            options = [s for s in _segment_options(hardware, shape, first, count)
                       if kinds[slot] == _S or s.split == 1]
            chosen.append(min(options, key=lambda s: (log2(s.column_blocks) - log_blocks) ** 2
                              + (log2(s.split) - log_split) ** 2))
        mapping = self._fit_budgets(hardware, shape, chosen, relaxed)
        if mapping is None:
            raise ValueError(f"{shape.name}: even one segment overflows the weight RAM or the descriptor table of "
                             f"{hardware.module_name}")
        code = mapping_code(hardware, shape, mapping)
        if len(mapping.segments) == 2:
            code = self._as_slots(code, [slot for slot in range(len(SEGMENT_SLOTS)) if ranges[slot][1]])
        found = self.violations(code, layer, hardware)
        if found:
            raise RuntimeError(f"decoder produced an illegal mapping ({'; '.join(found)}) from {relaxed.tolist()}")
        return code

    @staticmethod
    def _as_slots(code, slots):
        """A two-segment code moved to the slots the relaxed code asked for (head and body)."""
        segments = [code[3 * s:3 * s + 3] for s in _present(code)]
        parts = [IDLE_SEGMENT] * len(SEGMENT_SLOTS)
        for slot, segment in zip(slots, segments):
            parts[slot] = segment
        return np.concatenate(parts)

    @staticmethod
    def _fit_budgets(config, shape, segments, relaxed, force=None):
        """Step 4 of the decoder: the segments, without K-splits, or as one segment, whichever first fits the
        descriptor table and the weight RAM (None if even one segment does not); with ``force``, the first that
        also takes at most ``force`` passes."""
        def fits(chosen):
            mapping = LayerMapping(tuple(chosen))
            return not _budget_violations(config, shape.name, mapping.passes, weight_rows(config, shape, mapping)) \
                and (force is None or mapping.passes <= force)

        if fits(segments):
            return LayerMapping(tuple(segments))
        unsplit = [s if s.split == 1 else min(
            (o for o in _segment_options(config, shape, s.first, 1) if o.split == 1),
            key=lambda o: abs(log2(o.column_blocks) - log2(s.column_blocks))) for s in segments]
        if fits(unsplit):
            return LayerMapping(tuple(unsplit))
        log_blocks = relaxed[_BODY, _MODULES, _K, 1]
        whole = min((o for o in _segment_options(config, shape, 0, shape.positions) if o.split == 1),
                    key=lambda o: (log2(o.column_blocks) - log_blocks) ** 2)
        return LayerMapping((whole,)) if fits([whole]) else None

    # ---- exhaustive enumeration ---------------------------------------------------------------------------------

    def enumerate_codes(self, layer, hardware, *, limit):
        """Every legal code (every head / tail cut, column blocks and K-split per segment, within the table and the
        weight RAM) in chunks; None if there are more than ``limit``."""
        shape = layer_shape(layer, hardware)
        triples = list(_segment_triples(hardware, shape, limit))
        if triples and triples[-1] is None:
            return None
        return _enumerate_chunks(hardware, shape, triples)


def _option_arrays(config, shape, options):
    """Per option of a segment slot: its code block, passes, weight rows if split (else 0) and column blocks if
    unsplit (else 0: unsplit segments with the same column blocks share their rows)."""
    if not options:
        return IDLE_SEGMENT[None], np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.int64)
    return (np.stack([_segment_block(config, shape, s) for s in options]),
            np.array([s.passes for s in options]),
            np.array([_segment_rows(config, shape, s) if s.split > 1 else 0 for s in options]),
            np.array([s.column_blocks if s.split == 1 else 0 for s in options]))


def _enumerate_chunks(config, shape, triples, chunk=50_000):
    unsplit_rows = shape.products + 1
    codes, size = [], 0
    for options in triples:
        arrays = [_option_arrays(config, shape, slot_options) for slot_options in options]
        index = np.stack(np.meshgrid(*[np.arange(len(a[1])) for a in arrays], indexing="ij"), -1).reshape(-1, 3)
        part = [[a[field][index[:, slot]] for slot, a in enumerate(arrays)] for field in range(4)]
        passes = sum(part[1])
        blocks = np.sort(np.stack(part[3], axis=1), axis=1)
        distinct = (np.diff(blocks, axis=1, prepend=0) != 0).sum(axis=1)
        rows = sum(part[2]) + distinct * unsplit_rows
        legal = (passes <= config.max_layers) & (rows <= config.weight_depth)
        if legal.any():
            codes.append(np.concatenate(part[0], axis=1)[legal])
            size += int(legal.sum())
        if size >= chunk:
            yield np.concatenate(codes)
            codes, size = [], 0
    if codes:
        yield np.concatenate(codes)


def _segment_triples(config, shape, limit):
    """Per (head, tail) cut the legal options of each present segment; a final None once the codes pass
    ``limit``."""
    positions, total = shape.positions, 0
    for tail in range(positions):
        for head in range(positions - tail):
            ranges = [(0, head), (head, positions - head - tail), (positions - tail, tail)]
            options = [_segment_options(config, shape, first, count) if count else () for first, count in ranges]
            total += int(np.prod([len(o) for o in options if o]))
            if total > limit:
                yield None
                return
            yield options


# ---- the best mapping over any number of segments --------------------------------------------------------------

def mapping_table(layer, config, objective, *, max_passes=None):
    """Per number of passes ``p`` (0 .. ``max_passes``, default the descriptor table), the least-cost legal mapping
    of ``layer`` in exactly ``p`` passes over *every* mapping the hardware runs (any number of segments, each with
    any column blocks and K-split): a list of ``(cost, LayerMapping)``, ``(inf, None)`` where there is none.  By
    dynamic programming over the cut positions (a mapping's latency and energy are sums over its passes, each
    segment's passes costed alone).  Entries that overflow the weight RAM are dropped (``(inf, None)``)."""
    if objective not in ("latency", "energy"):
        raise ValueError(f"the best mapping is found for latency or energy (they add up over passes), not "
                         f"{objective!r}")
    shape = layer_shape(layer, config)
    positions = shape.positions
    max_passes = config.max_layers if max_passes is None else max_passes
    segments = [option for end in range(1, positions + 1) for first in range(end)
                for option in _segment_options(config, shape, first, end - first)]
    costs = rtl_cost.evaluate_batch(rtl_cost.pack([(config, LayerMapping((s,)), shape) for s in segments],
                                                  area=False))["latency_cycles" if objective == "latency"
                                                                   else "energy_pj"]
    ending = [{} for _ in range(positions + 1)]     # end -> (first, passes) -> (cost, segment)
    for segment, cost in zip(segments, costs):
        key = (segment.first, segment.passes)
        if cost < ending[segment.first + segment.count].get(key, (np.inf,))[0]:
            ending[segment.first + segment.count][key] = (float(cost), segment)
    table = np.full((max_passes + 1, positions + 1), np.inf)     # [passes, end]: least cost of 0..end-1
    choice = {}
    table[0, 0] = 0.0
    for end in range(1, positions + 1):
        for (first, passes), (cost, segment) in ending[end].items():
            for used in range(passes, max_passes + 1):
                value = table[used - passes, first] + cost
                if value < table[used, end]:
                    table[used, end] = value
                    choice[used, end] = segment
    result = []
    for passes in range(max_passes + 1):
        if not np.isfinite(table[passes, positions]):
            result.append((np.inf, None))
            continue
        chosen, used, end = [], passes, positions
        while end:
            segment = choice[used, end]
            chosen.append(segment)
            used, end = used - segment.passes, segment.first
        mapping = LayerMapping(tuple(reversed(chosen)))
        fits = weight_rows(config, shape, mapping) <= config.weight_depth
        result.append((float(table[passes, positions]), mapping) if fits else (np.inf, None))
    return result


def best_network_mapping(layers, config, objective):
    """The least-cost mapping of every layer together within the descriptor table (the layers' passes share it):
    ``(total cost, [LayerMapping per layer])`` from each layer's ``mapping_table``, combined by passes.  The
    shared weight RAM is checked on the answer (ValueError if it does not fit)."""
    tables = [mapping_table(layer, config, objective) for layer in layers]
    best = {0: (0.0, [])}           # passes used -> (cost, mappings so far)
    for table in tables:
        extended = {}
        for used, (cost, mappings) in best.items():
            for passes, (entry_cost, mapping) in enumerate(table):
                total = cost + entry_cost
                if mapping is not None and used + passes <= config.max_layers and \
                        total < extended.get(used + passes, (np.inf,))[0]:
                    extended[used + passes] = (total, [*mappings, mapping])
        best = extended
    cost, mappings = min(best.values(), key=lambda item: item[0])
    rows = sum(weight_rows(config, layer_shape(layer, config), mapping) for layer, mapping in zip(layers, mappings))
    if rows > config.weight_depth:
        raise ValueError(f"the best network mapping by passes needs {rows} weight-RAM words; the RAM has "
                         f"{config.weight_depth}")
    return cost, mappings
