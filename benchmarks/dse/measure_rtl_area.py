"""Regenerate the RTL family's area table, dse/shared/data/rtl_area_cyclonev.json (Yosys estimates, Cyclone V).

    python benchmarks/dse/measure_rtl_area.py [--out FILE]

1. Every configuration of ``dse.shared.rtl_area.MEASURED_CONFIGS``: the accelerator's Verilog with its matrix
   module as a black box, synthesized hierarchically as ``nnaccel synth`` does; the report's rows give each
   component (sequencer, feeder, writer, argmax, RAMs, the top's own logic) in its place in the hierarchy.
2. The matrix module for every number format and pair of multiplier / adder latencies of
   ``FAMILY_LATENCIES``, at the lane counts of ``MATRIX_MODULE_LANES``, under a pass-through top.
3. The RAMs of ``RAM_CHECKS`` on their own (the rule ``rtl_area.ram_cells`` is checked against them and
   against every RAM of step 1 by tests/dse/test_rtl_area.py).
4. The fit (``rtl_area.fit_table``) and the raw measurements go into the table.

Yosys results are cached (``~/.cache/nnaccel/synth``), so a run interrupted and started again only does what is
missing.  About three hours on a loaded 2-core machine; prints each measurement as it completes.
"""

import argparse
import json
import time
from pathlib import Path

from dse.shared import rtl_area
from dse.shared.rtl_family import config_to_json
from hw.dqn.accelerator import DqnAccelerator
from hw.dqn.matrix_module import MatrixModule
from hw.shared.dual_port_buffer import DualPortBuffer
from hw.shared.float_format import float_format
from sim.fpga.synth import estimate, estimate_verilog, yosys_version
from sim.verilog import generate_verilog

DEFAULT_OUT = Path(__file__).resolve().parents[2] / "dse" / "shared" / "data" / rtl_area.TABLE_FILE


def measure_config(config):
    text = generate_verilog(DqnAccelerator(config=config), config.module_name)
    report = estimate_verilog(rtl_area.without_matrix_modules(text, config), config.module_name)
    return rtl_area.component_cells(report)


def measure_matrix_module(fmt, multiplier_latency, adder_latency, lanes):
    name = f"mm_{fmt}_l{lanes}_ml{multiplier_latency}_al{adder_latency}"
    component = MatrixModule(lanes=lanes, fmt=float_format(fmt), multiplier_latency=multiplier_latency,
                             adder_latency=adder_latency)
    top, text = rtl_area.wrapped_matrix_module(generate_verilog(component, name), name)
    (row,) = [row for row in estimate_verilog(text, top).rows if row.module == name]
    return {field: getattr(row.resources, field) for field in rtl_area.RESOURCE_FIELDS}


def measure_rams(start):
    """The RAMs of ``rtl_area.RAM_CHECKS`` on their own: ``[{"width", "depth", "granularity", "cells"}]``."""
    rams = []
    for width, depth, granularity in rtl_area.RAM_CHECKS:
        report = estimate(DualPortBuffer(width=width, depth=depth, granularity=granularity),
                          f"buf_w{width}_d{depth}_g{granularity or 0}")
        rams.append({"width": width, "depth": depth, "granularity": granularity,
                     "cells": {field: getattr(report.total, field) for field in rtl_area.RESOURCE_FIELDS}})
        print(f"{time.perf_counter() - start:7.0f} s  RAM {width} x {depth} (granularity {granularity}): "
              f"{report.total.m10k} M10K, {report.total.luts} LUTs", flush=True)
    return rams


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    start = time.perf_counter()
    config_cells = []
    for config in rtl_area.MEASURED_CONFIGS:
        config_cells.append((config, measure_config(config)))
        print(f"{time.perf_counter() - start:7.0f} s  {config.module_name}: "
              + ", ".join(f"{name} {cells['luts']} LUTs" for name, cells in config_cells[-1][1].items()), flush=True)
    matrix_cells = {}
    for fmt in ("binary32", "bfloat16", "binary16"):
        for multiplier_latency in rtl_area.FAMILY_LATENCIES:
            for adder_latency in rtl_area.FAMILY_LATENCIES:
                for lanes in rtl_area.MATRIX_MODULE_LANES:
                    cells = measure_matrix_module(fmt, multiplier_latency, adder_latency, lanes)
                    matrix_cells.setdefault((fmt, multiplier_latency, adder_latency), {})[lanes] = cells
                    print(f"{time.perf_counter() - start:7.0f} s  matrix module {fmt} Lm {multiplier_latency} "
                          f"La {adder_latency} x{lanes}: {cells['luts']} LUTs {cells['flip_flops']} FFs", flush=True)
    rams = measure_rams(start)
    table = {
        "note": "Yosys estimates (synth_intel_alm -family cyclonev, hierarchical) of the DQN accelerator's components; "
                "see dse/shared/rtl_area.py for how they compose",
        "command": "python benchmarks/dse/measure_rtl_area.py",
        "yosys": yosys_version(),
        "fields": list(rtl_area.RESOURCE_FIELDS),
        **rtl_area.fit_table(config_cells, matrix_cells),
        "measurements": {
            "configs": [{"config": config_to_json(config), "cells": cells} for config, cells in config_cells],
            "matrix_module": [{"fmt": fmt, "multiplier_latency": ml, "adder_latency": al, "lanes": lanes,
                               "cells": cells}
                              for (fmt, ml, al), by_lanes in sorted(matrix_cells.items())
                              for lanes, cells in sorted(by_lanes.items())],
            "rams": rams},
    }
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"table written to {args.out} ({time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
