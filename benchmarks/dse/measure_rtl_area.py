"""Regenerate the RTL family's area table, dse/rtl/data/rtl_area_cyclonev.json (Yosys estimates, Cyclone V).

    python benchmarks/dse/measure_rtl_area.py [--out FILE] [--cached-only]

1. Every configuration of ``dse.rtl.area.MEASURED_CONFIGS``: the accelerator's Verilog with its matrix
   module as a black box, synthesized hierarchically as ``nnaccel synth`` does; the report's rows give each
   component (sequencer, feeder, writer, argmax, RAMs, the top's own logic) in its place in the hierarchy.
2. The matrix module for every number format and pair of multiplier / adder latencies of
   ``FAMILY_LATENCIES``, at the lane counts of ``MATRIX_MODULE_LANES``, under a pass-through top, plain and in its
   max mode (the table keeps what the max mode adds).
3. The RAMs of ``RAM_CHECKS`` on their own (the rule ``rtl_area.ram_cells`` is checked against them and
   against every RAM of step 1 by tests/dse/test_rtl_area.py).
4. The fit (``rtl_area.fit_table``) and the raw measurements go into the table.

Yosys results are cached (``~/.cache/nnaccel/synth``), so a run interrupted and started again only does what is
missing.  About three hours on a loaded 2-core machine; prints each measurement as it completes.
``--cached-only`` writes the table from what is cached so far, without Yosys: configurations not measured yet stay
out of the fit, and matrix modules not measured yet keep the current table's entries (listed under
``carried_over``, with the configurations left out under ``not_measured``).
"""

import argparse
import json
import time
from pathlib import Path

from nnaccel.dse.rtl import area as rtl_area
from nnaccel.dse.rtl.hardware import config_to_json
from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.matrix_module import MatrixModule
from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.hw.shared.float_format import float_format
from nnaccel.sim.fpga.synth import estimate_verilog, yosys_version
from nnaccel.sim.verilog import generate_verilog

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "dse" / "rtl" / "data" / rtl_area.TABLE_FILE


def measure_config(config, cached_only=False):
    """``{component: cells of one instance}``, or ``None`` if ``cached_only`` and Yosys has not mapped it yet."""
    text = generate_verilog(DqnAccelerator(config=config), config.module_name)
    report = estimate_verilog(rtl_area.without_matrix_modules(text, config.module_name), config.module_name,
                              cached_only=cached_only)
    return None if report is None else rtl_area.component_cells(report)


def measure_matrix_module(fmt, multiplier_latency, adder_latency, lanes, cached_only=False, maximum=False):
    """The matrix module's cells (with ``maximum``, in its max mode), or ``None`` if ``cached_only`` and Yosys has
    not mapped it yet."""
    component = MatrixModule(lanes=lanes, fmt=float_format(fmt), multiplier_latency=multiplier_latency,
                             adder_latency=adder_latency, maximum=maximum)
    name = component.module_name
    top, text = rtl_area.wrapped_matrix_module(generate_verilog(component, name), name)
    report = estimate_verilog(text, top, cached_only=cached_only)
    if report is None:
        return None
    (row,) = [row for row in report.rows if row.module == name]
    return {field: getattr(row.resources, field) for field in rtl_area.RESOURCE_FIELDS}


def measure_rams(start, cached_only=False):
    """The RAMs of ``rtl_area.RAM_CHECKS`` on their own: ``[{"width", "depth", "granularity", "cells"}]`` (with
    ``cached_only``, those Yosys has mapped)."""
    rams = []
    for width, depth, granularity in rtl_area.RAM_CHECKS:
        name = f"buf_w{width}_d{depth}_g{granularity or 0}"
        report = estimate_verilog(generate_verilog(DualPortBuffer(width=width, depth=depth, granularity=granularity),
                                                   name), name, cached_only=cached_only)
        if report is None:
            print(f"{time.perf_counter() - start:7.0f} s  RAM {width} x {depth}: not measured yet", flush=True)
            continue
        rams.append({"width": width, "depth": depth, "granularity": granularity,
                     "cells": {field: getattr(report.total, field) for field in rtl_area.RESOURCE_FIELDS}})
        print(f"{time.perf_counter() - start:7.0f} s  RAM {width} x {depth} (granularity {granularity}): "
              f"{report.total.m10k} M10K, {report.total.luts} LUTs", flush=True)
    return rams


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cached-only", action="store_true",
                        help="no Yosys runs: the table from the results cached so far (see above)")
    args = parser.parse_args()
    start = time.perf_counter()
    config_cells, not_measured = [], []
    for config in rtl_area.MEASURED_CONFIGS:
        cells = measure_config(config, args.cached_only)
        if cells is None:
            not_measured.append(config_to_json(config))
            print(f"{time.perf_counter() - start:7.0f} s  {config.module_name}: not measured yet", flush=True)
            continue
        config_cells.append((config, cells))
        print(f"{time.perf_counter() - start:7.0f} s  {config.module_name}: "
              + ", ".join(f"{name} {cells['luts']} LUTs" for name, cells in cells.items()), flush=True)
    matrix_cells, missing_matrix_modules = {}, set()
    for fmt in ("binary32", "bfloat16", "binary16"):
        for multiplier_latency in rtl_area.FAMILY_LATENCIES:
            for adder_latency in rtl_area.FAMILY_LATENCIES:
                key = (fmt, multiplier_latency, adder_latency)
                for lanes in rtl_area.MATRIX_MODULE_LANES:
                    cells = measure_matrix_module(fmt, multiplier_latency, adder_latency, lanes, args.cached_only)
                    if cells is None:
                        missing_matrix_modules.add(key)
                        print(f"{time.perf_counter() - start:7.0f} s  matrix module {fmt} Lm {multiplier_latency} "
                              f"La {adder_latency} x{lanes}: not measured yet", flush=True)
                        continue
                    matrix_cells.setdefault(key, {})[lanes] = cells
                    print(f"{time.perf_counter() - start:7.0f} s  matrix module {fmt} Lm {multiplier_latency} "
                          f"La {adder_latency} x{lanes}: {cells['luts']} LUTs {cells['flip_flops']} FFs", flush=True)
    for key in missing_matrix_modules:
        matrix_cells.pop(key, None)
    max_mode_cells = {}         # what the max mode adds to each module measured above
    for (fmt, multiplier_latency, adder_latency), by_lanes in matrix_cells.items():
        for lanes, plain in by_lanes.items():
            cells = measure_matrix_module(fmt, multiplier_latency, adder_latency, lanes, args.cached_only, maximum=True)
            if cells is not None:
                max_mode_cells.setdefault((fmt, multiplier_latency, adder_latency), {})[lanes] = {
                    field: cells[field] - plain[field] for field in rtl_area.RESOURCE_FIELDS}
    max_mode_cells = {key: by_lanes for key, by_lanes in max_mode_cells.items() if len(by_lanes) == 2}
    rams = measure_rams(start, args.cached_only)
    fitted = rtl_area.fit_table(config_cells, matrix_cells)
    fitted["matrix_module_max"] = rtl_area.lane_models(max_mode_cells)
    carried_over = sorted(f"{fmt}/{multiplier_latency}/{adder_latency}"
                          for fmt, multiplier_latency, adder_latency in missing_matrix_modules)
    if carried_over:
        previous = json.loads(args.out.read_text())["matrix_module"]
        fitted["matrix_module"].update({key: previous[key] for key in carried_over})
    if args.cached_only and args.out.exists():     # max modes not measured yet keep the current table's entries
        previous = json.loads(args.out.read_text()).get("matrix_module_max", {})
        fitted["matrix_module_max"] = {**previous, **fitted["matrix_module_max"]}
    table = {
        "note": "Yosys estimates (synth_intel_alm -family cyclonev, hierarchical) of the DQN accelerator's components; "
                "see dse/rtl/area.py for how they compose",
        "command": "python benchmarks/dse/measure_rtl_area.py" + (" --cached-only" if args.cached_only else ""),
        "yosys": yosys_version(),
        "fields": list(rtl_area.RESOURCE_FIELDS),
        **fitted,
        "measurements": {
            "configs": [{"config": config_to_json(config), "cells": cells} for config, cells in config_cells],
            "matrix_module": [{"fmt": fmt, "multiplier_latency": ml, "adder_latency": al, "lanes": lanes,
                               "cells": cells}
                              for (fmt, ml, al), by_lanes in sorted(matrix_cells.items())
                              for lanes, cells in sorted(by_lanes.items())],
            "matrix_module_max": [{"fmt": fmt, "multiplier_latency": ml, "adder_latency": al, "lanes": lanes,
                                   "added_cells": cells}
                                  for (fmt, ml, al), by_lanes in sorted(max_mode_cells.items())
                                  for lanes, cells in sorted(by_lanes.items())],
            "rams": rams},
        **({"not_measured": not_measured} if not_measured else {}),
        **({"carried_over": carried_over} if carried_over else {}),
    }
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"table written to {args.out} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
