"""FPGA area of the RTL family (the DQN accelerator, Cyclone V cells as Yosys counts them), composed from
per-component estimates kept in ``data/rtl_area_cyclonev.json``.

``nnaccel synth`` (:mod:`sim.fpga.synth`) maps a design hierarchically: each distinct Verilog module once, its
cell counts times its instances, the ALMs estimated from the total.  A configuration of the accelerator is
``modules`` matrix modules and weight-RAM slices, two activation RAMs, the sequencer, feeder, result writer,
argmax, the host control block ("control": descriptor table, counters, host read-back) and the top level's own
logic ("top": RAM port, feeder row and vector multiplexers).  This module composes the same sum from a table
instead of a Yosys run (milliseconds instead of minutes):

* matrix module: measured for every number format and multiplier / adder latency of :data:`FAMILY_LATENCIES`
  at 2 and 4 lanes (:data:`MATRIX_MODULE_LANES`); the cells are linear in the lanes (each lane is a multiplier,
  its adders and its partial sums; the control is shared), so ``fixed + lanes * per_lane``; the max mode
  (``DqnConfig(max_pooling=True)``: a maximum unit beside each adder, a result multiplexer) as what it adds, the
  same way (``matrix_module_max``, measured module by module as ``nnaccel synth`` does);
* sequencer, feeder, writer, argmax, control and top: a linear model per cell kind over features that count
  what the component is made of (:data:`FEATURES`, e.g. the LUTs of the feeder's per-module ``2 x row_elements``
  :1 multiplexer trees), fitted by least squares on relative errors to components measured in
  :data:`MEASURED_CONFIGS` (the accelerator's Verilog with its matrix module as a black box, synthesized
  hierarchically: every other component in its place);
* the RAMs by rule (:func:`ram_cells`): M10K blocks in the cheapest true dual-port mode of
  ``sim/fpga/yosys/m10k_tdp.txt``, the read multiplexers and write enables around them, width x depth memory
  bits (checked against every measured RAM).

``python benchmarks/dse/measure_rtl_area.py`` regenerates the table; ``python benchmarks/dse/bench_rtl_area.py``
compares the composition with whole-design Yosys runs.
"""

import json
from dataclasses import fields
from functools import cache
from importlib import resources

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.descriptor import descriptor_bits
from nnaccel.hw.shared.float_format import float_format
from nnaccel.sim.fpga.block_ram import buffer_cells
from nnaccel.sim.fpga.synth import Resources, cell_resources
from nnaccel.sim.fpga.verilog_modules import VerilogModules

__all__ = ["FAMILY_LATENCIES", "MATRIX_MODULE_LANES", "MATRIX_MODULE_PREFIX", "fit_table", "lane_models", "FEATURES",
           "MEASURED_CONFIGS", "TABLE_FILE", "RESOURCE_FIELDS", "component_cells", "component_of_row",
           "component_features", "compose", "ram_cells", "RAM_CHECKS", "table", "without_matrix_modules",
           "wrapped_matrix_module"]

TABLE_FILE = "rtl_area_cyclonev.json"
# The matrix modules' Verilog names (hw.dqn.matrix_module.MatrixModule.module_name).
MATRIX_MODULE_PREFIX = "matrix_module_"
FAMILY_LATENCIES = (1, 2, 3)
MATRIX_MODULE_LANES = (2, 4)
RESOURCE_FIELDS = ("luts", "lut6", "carry", "flip_flops", "mlab", "m10k", "memory_bits", "mul27", "mul18", "mul9")
# The result writer's crossbars: one per port of the output RAM it writes (hw/dqn/result_writer.py).
WRITE_PORTS = 2


def _bits(limit):
    """Bits of an unsigned value up to ``limit``."""
    return max(1, int(limit).bit_length())


def _mux_luts(inputs):
    """6-input LUTs of one bit of an ``inputs``:1 multiplexer built as a tree of 4:1 multiplexers (a LUT each)."""
    return -(-(inputs - 1) // 3)


def _reduction_modules(config):
    """Matrix modules whose lanes lie inside an activation word (they can take a reduction's vector)."""
    return min(config.modules, config.row_elements // config.lanes)


# Per component: feature name -> function of the DqnConfig, each counting a part of what the component is made of
# (hw/dqn/*.py, hw/shared/host_control.py).  The table stores one coefficient per feature and cell kind.
FEATURES = {
    # layer / group / step / column counters and address adders; per module a tap column register
    "sequencer": {"one": lambda c: 1, "tap_bits": lambda c: c.modules * _bits(c.row_elements - 1),
                  "addresses": lambda c: _bits(c.activation_depth - 1) + _bits(c.weight_depth - 1),
                  "layer_index_bits": lambda c: _bits(c.max_layers - 1)},
    # two row registers with a load / shift multiplexer; per module a 2 x row_elements:1 multiplexer of width bits
    # (the tree's LUTs, and its select logic, which grows with the select's bits)
    "feeder": {"one": lambda c: 1, "row_bits": lambda c: c.row_elements * c.fmt.width,
               "tap_mux_luts": lambda c: c.modules * c.fmt.width * _mux_luts(2 * c.row_elements),
               "tap_select_bits": lambda c: c.modules * c.fmt.width * _bits(c.row_elements - 1)},
    # per write port and row element a position adder, compares and write enable; per lane a packed-layout
    # enable; the modules x lanes x width staging register with a lanes:1 multiplexer per module and port; per
    # port and row element a modules:1 crossbar multiplexer of width bits (LUTs growing with its inputs and with
    # its levels); the packed layouts' modules:1 multiplexer of lanes x width bits.  The coefficients were fitted
    # to a writer with one port (per port and element they hold); the lanes:1 multiplexers of the second port are
    # not counted until benchmarks/dse/measure_rtl_area.py runs again (4 x 4 bfloat16, 32-element rows: 4,385
    # LUTs composed, 5,248 measured).
    "writer": {"one": lambda c: 1, "row_elements": lambda c: WRITE_PORTS * c.row_elements, "lanes": lambda c: c.lanes,
               "staging_bits": lambda c: c.modules * c.lanes * c.fmt.width,
               "crossbar_bits": lambda c: WRITE_PORTS * c.row_elements * c.fmt.width * (c.modules - 1),
               "crossbar_level_bits": lambda c: WRITE_PORTS * c.row_elements * c.fmt.width * (c.modules.bit_length() - 1),
               "packed_mux_bits": lambda c: c.lanes * c.fmt.width * (c.modules - 1)},
    # a tree of lanes - 1 comparators with their value multiplexers, and the comparison with the running best
    "argmax": {"one": lambda c: 1, "width": lambda c: c.fmt.width, "tree_bits": lambda c: (c.lanes - 1) * c.fmt.width},
    # four 40-bit counters per layer, the descriptor table and its read multiplexer, the host read-back
    # multiplexer over the memories' words
    "control": {"one": lambda c: 1, "max_layers": lambda c: c.max_layers,
                "descriptor_bits": lambda c: c.max_layers * descriptor_bits(c),
                "host_bits": lambda c: c.host_data_bits},
    # the RAM ports' write-data and feeder-row multiplexers, the reduction's vector multiplexers, the write enables
    "top": {"one": lambda c: 1, "row_bits": lambda c: c.row_elements * c.fmt.width,
            "vector_mux_bits": lambda c: _reduction_modules(c) * c.lanes * c.fmt.width,
            "row_elements": lambda c: c.row_elements},
}
# Instances of each component in one accelerator.
_COUNTS = {"sequencer": lambda c: 1, "feeder": lambda c: 1, "writer": lambda c: 1, "argmax": lambda c: 1,
           "control": lambda c: 1, "top": lambda c: 1, "weight_slice": lambda c: c.modules,
           "activation_ram": lambda c: 2, "matrix_module": lambda c: c.modules}

# Small configurations whose components the table is fitted to (each a quick Verilog generation; every
# component measured in its place).  The whole-design check uses others (benchmarks/dse/bench_rtl_area.py).
MEASURED_CONFIGS = tuple(DqnConfig(modules=m, lanes=l, fmt=float_format(f), row_elements=r, activation_depth=a,
                                   weight_depth=w, max_layers=d)
                         for m, l, f, r, a, w, d in (
    (1, 2, "binary32", 8, 128, 256, 4), (2, 4, "binary32", 12, 128, 256, 8), (4, 2, "binary16", 16, 256, 512, 8),
    (2, 8, "bfloat16", 24, 512, 256, 6), (8, 2, "binary32", 12, 256, 1024, 8), (4, 4, "bfloat16", 32, 128, 2048, 4),
    (1, 16, "binary16", 20, 1024, 256, 8), (8, 4, "binary16", 8, 128, 512, 12), (2, 2, "bfloat16", 48, 256, 128, 8),
    (16, 2, "binary32", 16, 512, 256, 6), (4, 8, "binary32", 40, 1024, 512, 8), (16, 1, "bfloat16", 12, 128, 4096, 8),
))


# RAMs synthesized on their own to check :func:`ram_cells` beyond the small ones in the measured configurations:
# (width, depth, granularity), the thesis' weight slice and activation RAM among them.
RAM_CHECKS = ((512, 4096, None), (2688, 1024, 32), (64, 256, None), (256, 1024, 16), (48, 2048, None),
              (160, 4096, 16))


def ram_cells(width, depth, granularity=None):
    """Cells of a :class:`hw.shared.dual_port_buffer.DualPortBuffer` as Yosys maps it, by the rule ``nnaccel synth``
    counts it with (:func:`sim.fpga.block_ram.buffer_cells`: the M10K blocks, per port the write enables and a read
    multiplexer over the blocks in depth with its registered select), and its memory bits."""
    resources = cell_resources(buffer_cells(width, depth, width // granularity if granularity else 1))
    return {**{field: getattr(resources, field) for field in RESOURCE_FIELDS}, "memory_bits": width * depth}


@cache
def table():
    """The parsed data file."""
    return json.loads(resources.files("nnaccel.dse.rtl").joinpath("data", TABLE_FILE).read_text())


def component_features(component, config):
    return np.array([feature(config) for feature in FEATURES[component].values()], dtype=np.float64)


def _fitted(component, config):
    coefficients = table()["components"][component]["coefficients"]
    features = component_features(component, config)
    return {field: max(0, int(round(float(features @ np.array(coefficients[field]))))) for field in coefficients}


def _lane_model(config, table_key, what):
    """Cells ``fixed + lanes * per_lane`` of the table's ``table_key`` entry for ``config``'s format and latencies;
    a ValueError naming ``what`` and the entries measured if it has none."""
    key = f"{config.fmt.name}/{config.multiplier_latency}/{config.adder_latency}"
    entries = table().get(table_key, {})
    if key not in entries:
        raise ValueError(f"the area table has no {what} for {config.fmt.name} with multiplier latency "
                         f"{config.multiplier_latency} and adder latency {config.adder_latency} (measured: "
                         f"{', '.join(sorted(entries)) or 'none'})")
    entry = entries[key]
    return {field: max(0, int(round(entry["fixed"][field] + config.lanes * entry["per_lane"][field])))
            for field in RESOURCE_FIELDS}


def _matrix_module(config):
    """One matrix module's cells; with the max mode (``config.max_pooling``) its maximum units and result
    multiplexers on top (``matrix_module_max``: the max-mode module less the plain one, both measured per module)."""
    cells = _lane_model(config, "matrix_module", "matrix module")
    if config.max_pooling:
        extra = _lane_model(config, "matrix_module_max", "matrix module's max mode")
        cells = {field: cells[field] + extra[field] for field in RESOURCE_FIELDS}
    return cells


def _memory(config, component):
    if component == "weight_slice":
        return ram_cells(config.lanes * config.fmt.width, config.weight_depth)
    return ram_cells(config.row_elements * config.fmt.width, config.activation_depth, config.fmt.width)


def compose(config):
    """``{component: (instances, {field: cells of all instances})}`` and the total, for a :class:`DqnConfig`; the
    total as :class:`sim.fpga.synth.Resources` gives ALMs and DSP blocks the way ``nnaccel synth`` does."""
    parts = {}
    for component, count in _COUNTS.items():
        if component == "matrix_module":
            cells = _matrix_module(config)
        elif component in ("weight_slice", "activation_ram"):
            cells = _memory(config, component)
        else:
            cells = dict.fromkeys(RESOURCE_FIELDS, 0)
            cells.update(_fitted(component, config))
        instances = count(config)
        parts[component] = (instances, {field: value * instances for field, value in cells.items()})
    total = Resources(**{f.name: sum(cells[f.name] for _, cells in parts.values()) for f in fields(Resources)})
    return parts, total


# ---- Measuring: components in the accelerator's hierarchy ------------------------------------------------------

def without_matrix_modules(verilog_text, top):
    """The accelerator's Verilog (top module ``top``) with its matrix modules as black boxes (ports only): Yosys
    then maps every other component in its place in the hierarchy, in a fraction of the time (the matrix modules
    are measured on their own, :func:`wrapped_matrix_module`)."""
    modules = VerilogModules(verilog_text, top)
    return "\n".join(modules.black_box(module) if module.startswith(MATRIX_MODULE_PREFIX) else text
                     for module, text in modules.texts.items())


def wrapped_matrix_module(verilog_text, name):
    """``(top name, Verilog)``: the matrix module ``name`` under a top that only passes its ports through
    (:meth:`sim.fpga.verilog_modules.VerilogModules.wrapped`), so that Yosys maps it as a module of a hierarchy, as
    in the accelerator, rather than as the top; the modules it instantiates follow."""
    modules = VerilogModules(verilog_text, name)
    top = f"{name}_wrapper"
    return top, modules.wrapped(name, top) + "\n" + "\n".join(
        text for module, text in modules.texts.items() if module != name)


# The rows of a synthesis report of the accelerator (``sim.fpga.synth``: a row per kind of the top's submodules and
# one for the top's own logic) by the component they belong to.
_ROW_SUFFIXES = {".sequencer": "sequencer", ".feeder": "feeder", ".writer": "writer", ".argmax": "argmax",
                 ".control": "control", " (own logic)": "top", "_weight_slice": "weight_slice",
                 "_activation_ram": "activation_ram", "_matrix_module": "matrix_module"}


def component_of_row(label):
    """The component a row of the accelerator's synthesis report belongs to (see :data:`_ROW_SUFFIXES`)."""
    for suffix, component in _ROW_SUFFIXES.items():
        if label.endswith(suffix):
            return component
    raise ValueError(f"no component of the DQN accelerator matches the synthesis report's row {label!r}")


def component_cells(report):
    """``{component: {field: cells of one instance}}`` from the rows of an accelerator's synthesis report."""
    cells = {}
    for row in report.rows:
        component = cells.setdefault(component_of_row(row.label), dict.fromkeys(RESOURCE_FIELDS, 0))
        for field in RESOURCE_FIELDS:
            component[field] += getattr(row.resources, field) // row.count
    return cells


def lane_models(matrix_cells):
    """``{"format/multiplier latency/adder latency": {"fixed", "per_lane"}}``: the line through the cells measured
    at the two lane counts of :data:`MATRIX_MODULE_LANES`, ``matrix_cells`` ``{(format name, multiplier latency,
    adder latency): {lanes: cells}}``."""
    models = {}
    for (fmt, multiplier_latency, adder_latency), by_lanes in sorted(matrix_cells.items()):
        (low, low_cells), (high, high_cells) = sorted(by_lanes.items())
        per_lane = {field: (high_cells[field] - low_cells[field]) / (high - low) for field in RESOURCE_FIELDS}
        models[f"{fmt}/{multiplier_latency}/{adder_latency}"] = {
            "per_lane": per_lane,
            "fixed": {field: low_cells[field] - low * per_lane[field] for field in RESOURCE_FIELDS}}
    return models


def fit_table(config_cells, matrix_cells):
    """The table's fitted part from measurements: ``config_cells`` a list of ``(DqnConfig, {component: cells of
    one instance})``, ``matrix_cells`` the matrix modules' cells as :func:`lane_models` takes them."""
    components = {}
    for component in FEATURES:
        features = np.stack([component_features(component, config) for config, _ in config_cells])
        coefficients = {}
        for field in RESOURCE_FIELDS:
            cells = np.array([measured[component][field] for _, measured in config_cells], dtype=np.float64)
            # least squares on relative errors (cells span 30x between configurations), a floor of 40 cells
            weights = 1 / np.maximum(cells, 40)
            coefficients[field] = [round(float(value), 6) for value in
                                   np.linalg.lstsq(features * weights[:, None], cells * weights, rcond=None)[0]]
        components[component] = {"features": list(FEATURES[component]), "coefficients": coefficients}
    return {"components": components, "matrix_module": lane_models(matrix_cells)}
