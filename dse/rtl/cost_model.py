"""Latency, energy and area of (RTL hardware, layer mapping, layer) cases of nnaccel's RTL family, vectorized.

A case is a :class:`hw.dqn.config.DqnConfig`, a :class:`models.dqn.mapping.LayerMapping` and a
:class:`models.dqn.plan.LayerShape` (the layer as the compiler sees it: ``models.dqn.plan.layer_shapes``).
:func:`pack` expands every case into the passes the compiler would run (``models.dqn.plan.pass_shapes``, the
compiler's own expansion) and lays them out as arrays; :func:`evaluate_batch` evaluates all passes at once:

* **Latency** (cycles): :func:`models.dqn.timing.pass_counters`, the formula the compiler predicts every pass's
  counters with (set-up, products, stalls, drain); the hardware's counters equal it (``nnaccel dse validate``)
  for a network (:func:`evaluate_network`: its passes one run, each setting up while the one before drains); a
  case of a batch costs its passes as runs of their own (no overlap), so costs add up over segments.
* **Energy** (pJ), per action from ``data/energy_45nm.json`` (45 nm figures, the same table as the template's):
  every product cycle every lane of every matrix module multiplies and adds (idle positions and padding
  channels included: the modules run in lock step), plus the ``P - 1`` adds of each lane's partial-sum tree per
  group; weight-RAM reads (one word per product cycle, ``modules`` slices of ``lanes`` elements, and the bias row per
  group on the second port; a reduction reads only its bias rows); activation-RAM reads (both ports once per step ``(c, kh)`` of a group, a reduction one
  word per product, a flat pass its windows' word pairs) and writes (:func:`models.dqn.timing.pass_writes`); the
  feeder's registers (a scalar per
  module per product), the partial-sum registers (a read and a write per lane per product) and the writer's
  staging (a group's results in and out).  Each access costs the SRAM law's energy for the size of the storage
  it hits.  Not modelled: control logic, multiplexers, the clock tree, leakage, host I/O.
* **Area**: FPGA resources of the hardware (ALMs, DSP blocks, M10K), composed by :func:`dse.rtl.area.compose`
  from the per-component Yosys table; a property of the configuration, the same for every layer.
"""

from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np

from nnaccel.dse.rtl import area as rtl_area
from nnaccel.dse.shared import energy_table
from nnaccel.hw.dqn.matrix_module import matrix_module_latency, partial_sum_count
from nnaccel.models.dqn.mapping import DqnMapping
from nnaccel.models.dqn.plan import (assign_rams, check_mapping, default_mapping, group_positions, layer_shapes,
                                      pass_handoffs, pass_shapes, reads_previous, staged, tensor_words,
                                      with_copy_passes)
from nnaccel.models.dqn.timing import FLAT, LAYOUTS, pass_counters, pass_writes

__all__ = ["ENERGY_FORMATS", "PassBatch", "pack", "evaluate_batch", "evaluate", "evaluate_network", "hardware_costs"]

ENERGY_FORMATS = {"binary32": "fp32", "bfloat16": "bf16", "binary16": "fp16"}
_PASS_COLUMNS = ("case", "positions_per_group", "count", "products", "out_channels", "layout", "first_column",
                 "out_width", "in_channels", "kernel_height", "reduce", "reads_previous", "row_elements", "flat_loads",
                 "flat_slots", "flat_stride", "staged")
_HARDWARE_COLUMNS = ("modules", "lanes", "latency", "partial_sums", "multiply_pj", "add_pj", "weight_read_pj",
                     "activation_pj", "feeder_pj", "partial_sum_pj", "staging_pj")


@lru_cache(maxsize=4096)
def hardware_area(config):
    """The configuration's composed area: ALMs, DSP blocks, M10K."""
    _, area = rtl_area.compose(config)
    return {"alms": area.alms, "dsp_blocks": area.dsp_blocks, "m10k": area.m10k}


@lru_cache(maxsize=4096)
def hardware_costs(config):
    """Per-configuration constants of the cost model: energies per action (pJ)."""
    fmt = ENERGY_FORMATS.get(config.fmt.name)
    if fmt is None:
        raise ValueError(f"the energy table has no MAC of {config.fmt.name} (formats: {', '.join(ENERGY_FORMATS)})")
    bits = config.fmt.width
    partials = partial_sum_count(config.adder_latency)
    staging_words = config.modules * config.lanes
    return {
        "modules": config.modules, "lanes": config.lanes,
        "latency": matrix_module_latency(config.multiplier_latency, config.adder_latency),
        "partial_sums": partials,
        "multiply_pj": energy_table.multiply_pj(fmt), "add_pj": energy_table.add_pj(fmt),
        "weight_read_pj": config.modules * float(energy_table.storage_pj_per_word(config.weight_depth,
                                                                                  config.lanes * bits)),
        "activation_pj": float(energy_table.storage_pj_per_word(config.activation_depth, config.row_elements * bits)),
        "feeder_pj": float(energy_table.storage_pj_per_word(2 * config.row_elements, bits)),
        "partial_sum_pj": float(energy_table.storage_pj_per_word(partials, bits)),
        "staging_pj": float(energy_table.storage_pj_per_word(staging_words, bits)),
    }


@dataclass(frozen=True)
class PassBatch:
    """The passes of a batch of cases as arrays (one entry per pass; ``case`` says whose), with the hardware
    constants of each pass's case, and per case the hardware's area."""

    cases: int
    passes: dict      # column -> (passes,) array: _PASS_COLUMNS and _HARDWARE_COLUMNS
    area: dict        # "alms", "dsp_blocks", "m10k" -> (cases,) array (empty if packed without area)

    def __len__(self):
        return self.cases


def pack(cases, *, area=True, one_run=False):
    """``cases``: iterable of ``(DqnConfig, LayerMapping, LayerShape)``, mappings assumed legal; ``area``: also
    the configurations' area (needs the area table).  ``one_run``: the cases are the layers of one network, run in
    order (each pass sets up while the one before drains: the counters the hardware reads back); otherwise every
    pass is costed as a run of its own (no overlap), so that a layer's cost is the sum of its segments'.  In one run
    (the cases a network's layers, its copy passes included) whether a pass reads the RAM the pass before writes is
    decided by the RAMs the compiler assigns (``models.dqn.plan.assign_rams``: an add's later segments may read the
    RAM its earlier ones write), and the compiler's handoffs and start delays (``models.dqn.plan.pass_handoffs``) on
    a chain's tensor-relative words."""
    rows, case_hardware, known, expanded, run = [], [], {}, {}, []
    for index, (config, layer_mapping, shape) in enumerate(cases):
        constants = known.get(id(config))      # the config is kept in the entry, so its id stays its own
        if constants is None:
            hardware = hardware_costs(config)
            constants = known[id(config)] = (config, tuple(hardware[column] for column in _HARDWARE_COLUMNS)
                                             + (tuple(hardware_area(config).values()) if area else ()))
        case_hardware.append(constants[1])
        # Cases that differ only in constants of the hardware (format, latencies, depths) share their passes; the
        # entry keeps the shape and mapping, so their ids stay their own.
        key = (config.modules, config.lanes, config.row_elements, config.flat_loads, config.flat_slots, id(shape),
               id(layer_mapping))
        entry = expanded.get(key)
        if entry is None:
            layer_passes = pass_shapes(config, shape, layer_mapping)
            entry = expanded[key] = (shape, layer_mapping, [
                (group_positions(config, work), work.count, work.products, work.out_channels, LAYOUTS[work.layout],
                 work.first[1], (work.write_grid or work.grid)[1], work.in_channels, work.kernel[0], work.reduce, reads,
                 config.row_elements, config.flat_loads, config.flat_slots,
                 work.stride[0] if work.kind == "flat" else 1, staged(config, work))
                for work, reads in zip(layer_passes, reads_previous(layer_passes))])
        rows.extend((index, *row) for row in entry[2])
        if one_run:
            run.extend((config, work, tensor_words(work, shape), shape)
                       for work in pass_shapes(config, shape, layer_mapping))
    passes = dict(zip(_PASS_COLUMNS, np.array(rows, dtype=np.int64).T))
    passes["handoff"], passes["start_delay"] = np.zeros_like(passes["case"]), np.zeros_like(passes["case"])
    if run:
        passes["reads_previous"][:] = _run_reads(run)
        passes["handoff"][:], passes["start_delay"][:] = pass_handoffs(
            run[0][0], [work for _, work, _, _ in run], passes["reads_previous"], [words for _, _, words, _ in run])
    per_case = np.array(case_hardware, dtype=np.float64).reshape(len(case_hardware), -1)
    passes.update(zip(_HARDWARE_COLUMNS, per_case[passes["case"]].T))
    areas = dict(zip(("alms", "dsp_blocks", "m10k"), per_case[:, len(_HARDWARE_COLUMNS):].T)) if area else {}
    passes["run"] = np.zeros_like(passes["case"]) if one_run else np.arange(len(passes["case"]))
    return PassBatch(cases=len(case_hardware), passes=passes, area=areas)


def _run_reads(run):
    """Per pass of ``run`` (``(config, PassShape, words, LayerShape)`` in the order they run): whether it reads the
    activation RAM the pass before writes, as the compiler's RAMs decide (a sum reads its partial sums, in its
    layer's output RAM; every other pass its layer's source)."""
    rams = assign_rams(list({shape.name: shape for *_, shape in run}.values()))[0]
    reads, previous = [], None
    for _, work, _, shape in run:
        source = rams[work.layer] if work.kind == "sum" else rams[shape.source]
        reads.append(previous is None or source == previous)
        previous = rams[work.layer]
    return reads


def _per_case(batch, values):
    return np.bincount(batch.passes["case"], weights=values, minlength=batch.cases)


def evaluate_batch(batch):
    """Costs of every case of a :class:`PassBatch`: a dict of float64 arrays of shape (cases,).

    Keys: ``latency_cycles`` (= the cycle counters' sum over the case's passes), ``product_cycles``,
    ``stall_cycles``, ``drain_cycles``, ``passes``, ``energy_pj`` and its parts ``mac_pj``, ``weight_ram_pj``,
    ``activation_ram_pj``, ``register_pj``; ``macs`` (lane operations the hardware does); ``alms``,
    ``dsp_blocks``, ``m10k`` if the batch was packed with the area."""
    p = batch.passes
    modules, lanes = p["modules"].astype(np.int64), p["lanes"].astype(np.int64)
    counters = pass_counters(positions_per_group=p["positions_per_group"], count=p["count"], products=p["products"],
                             latency=p["latency"].astype(np.int64), out_channels=p["out_channels"], lanes=lanes,
                             layout=p["layout"], reduce=p["reduce"], first_column=p["first_column"],
                             out_width=p["out_width"], run=p["run"], reads_previous=p["reads_previous"],
                             handoff=p["handoff"], start_delay=p["start_delay"], row_elements=p["row_elements"],
                             flat_loads=p["flat_loads"], flat_slots=p["flat_slots"], flat_strides=p["flat_stride"],
                             staged=p["staged"])
    writes = pass_writes(positions_per_group=p["positions_per_group"], count=p["count"],
                         out_channels=p["out_channels"], lanes=lanes, layout=p["layout"],
                         first_column=p["first_column"], out_width=p["out_width"], row_elements=p["row_elements"],
                         flat_strides=p["flat_stride"])
    groups = counters["product_cycles"] // p["products"]
    product_cycles = counters["product_cycles"]
    lane_operations = product_cycles * modules * lanes
    tree_adds = groups * modules * lanes * (p["partial_sums"] - 1)
    mac = lane_operations * (p["multiply_pj"] + p["add_pj"]) + tree_adds * p["add_pj"]
    reduce = p["reduce"].astype(bool)
    weight_reads = np.where(reduce, 0, product_cycles) + groups        # the products' rows, a bias row per group
    activation_reads = np.where(reduce, groups * p["products"] + 1, 2 * (1 + groups * p["in_channels"] * p["kernel_height"]))
    # A flat pass reads its groups' windows in pairs of words (the window feeder's row registers stay idle).
    activation_reads = np.where(p["layout"] == FLAT, 2 * p["flat_loads"] * groups, activation_reads)
    registers = (product_cycles * modules * p["feeder_pj"] + 2 * lane_operations * p["partial_sum_pj"]
                 + 2 * groups * modules * lanes * p["staging_pj"])
    parts = {"mac_pj": mac, "weight_ram_pj": weight_reads * p["weight_read_pj"],
             "activation_ram_pj": (activation_reads + writes) * p["activation_pj"], "register_pj": registers}
    result = {name: _per_case(batch, counters[key]) for name, key in (
        ("latency_cycles", "cycles"), ("product_cycles", "product_cycles"), ("stall_cycles", "stall_cycles"),
        ("drain_cycles", "drain_cycles"))}
    result["passes"] = _per_case(batch, np.ones_like(product_cycles, dtype=np.float64))
    result.update({name: _per_case(batch, values) for name, values in parts.items()})
    result["energy_pj"] = sum(result[name] for name in parts)
    result["macs"] = _per_case(batch, lane_operations)
    result.update(batch.area)
    return result


def evaluate(config, layer_mapping, shape):
    """Costs of one case as a dict of floats; the layer mapping is checked first (``check_mapping``)."""
    check_mapping(config, (shape,), DqnMapping((layer_mapping,)))
    costs = evaluate_batch(pack([(config, layer_mapping, shape)]))
    return {name: float(values[0]) for name, values in costs.items()}


def evaluate_network(config, layers, mapping=None, *, split="auto", area=True):
    """Per-layer costs of a network (``ConvLayer`` / ``DenseLayer`` / ``AddLayer``) under ``mapping`` (default: the compiler's,
    with ``split``) and the totals: latency and energy add up, the area is the hardware's; the copy passes the
    compiler inserts before adds are layers here too (``models.dqn.plan.with_copy_passes``).  Returns ``(mapping,
    [per-layer dicts with "name"], totals)``."""
    shapes = layer_shapes(config, with_copy_passes(config, layers)[0])
    if mapping is None:
        mapping = default_mapping(config, shapes, split=split)
    check_mapping(config, shapes, mapping)
    costs = evaluate_batch(pack(zip([config] * len(shapes), mapping.layers, shapes), area=area, one_run=True))
    per_layer = [{"name": shape.name, **{name: float(values[index]) for name, values in costs.items()}}
                 for index, shape in enumerate(shapes)]
    area_keys = ("alms", "dsp_blocks", "m10k")
    totals = {name: sum(row[name] for row in per_layer) for name in costs if name not in area_keys}
    totals.update({name: per_layer[0][name] for name in area_keys if name in costs})
    return mapping, per_layer, totals


def area_breakdown(config):
    """``[(component, instances, Resources of all instances)]`` and the total (``rtl_area.compose``)."""
    from nnaccel.sim.fpga.synth import Resources

    parts, total = rtl_area.compose(config)
    return [(name, count, Resources(**{f.name: cells.get(f.name, 0) for f in fields(Resources)}))
            for name, (count, cells) in parts.items()], total
