"""``nnaccel verilog`` (Verilog + Quartus project for a board) and ``nnaccel synth`` (Yosys resource estimate)."""

import argparse
from pathlib import Path

from nnaccel.sim.fpga.quartus_project import BOARDS, DEFAULT_CLOCK_MHZ, write_project
from nnaccel.sim.fpga.synth import ESTIMATE_NOTE, estimate, format_table
from nnaccel.sim.fpga.systems import SYSTEMS, system

from nnaccel.cli.report import (EXIT_DONE, add_json_argument, make_output_directory, output_directory, write_json,
                                writing)

__all__ = ["add_verilog_arguments", "add_synth_arguments", "run_verilog", "run_synth", "CYCLONE_V_5CSEMA5",
           "fit_summary", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.synth/1"

# The DE1-SoC's device (Cyclone V SE 5CSEMA5, Cyclone V Device Overview): ALMs, DSP blocks, M10K blocks.
CYCLONE_V_5CSEMA5 = {"name": "Cyclone V 5CSEMA5", "alms": 32_070, "dsp_blocks": 87, "m10k": 397}


def add_verilog_arguments(parser):
    parser.add_argument("system", choices=sorted(SYSTEMS), help="the system or component to generate")
    parser.add_argument("--board", choices=BOARDS, required=True, help="target board")
    parser.add_argument("--out", metavar="DIR", type=output_directory,
                        help="output directory (default build/<module>_<board>)")
    parser.add_argument("--clock-mhz", type=_clock_mhz, default=DEFAULT_CLOCK_MHZ, metavar="MHZ",
                        help=f"clock constraint in the .sdc, 1 to 1000 MHz (default {DEFAULT_CLOCK_MHZ:g})")


def _clock_mhz(text):
    """argparse type: a clock frequency in MHz, 1 to 1000."""
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"must be a number of MHz from 1 to 1000, not {text!r}")
    return value


def _system_name(text):
    """argparse type: a name in :data:`sim.fpga.systems.SYSTEMS` (``choices`` rejects an empty ``nargs="*"``)."""
    if text not in SYSTEMS:
        raise argparse.ArgumentTypeError(f"unknown system {text!r}; choose from {', '.join(SYSTEMS)}")
    return text


def add_synth_arguments(parser):
    parser.add_argument("systems", nargs="*", metavar="SYSTEM", type=_system_name,
                        help=f"one or more of {', '.join(SYSTEMS)} (default: all)")
    add_json_argument(parser, "the estimate")


def run_verilog(arguments):
    chosen = system(arguments.system)
    if arguments.out is not None:
        make_output_directory("--out", arguments.out)      # before the hardware is built: a bad --out builds nothing
    component = chosen.build()
    module_name = component.module_name
    out_dir = arguments.out or Path("build") / f"{module_name}_{arguments.board}"
    make_output_directory("--out", out_dir)
    print(f"nnaccel: generating {module_name} ({chosen.description}) for the {arguments.board} ...", flush=True)
    with writing("--out", out_dir):
        project_name, paths = write_project(component, module_name, board=arguments.board,
                                            clock_mhz=arguments.clock_mhz, out_dir=out_dir)
    directory = paths[0].parent
    print(f"nnaccel: Quartus project {project_name} in {directory}: "
          f"{', '.join(sorted(path.name for path in paths))}")
    print(f"nnaccel: compile with `cd {directory} && sh build_{project_name}.sh` (Quartus on PATH)")
    return EXIT_DONE


def fit_summary(report, device=CYCLONE_V_5CSEMA5):
    """One line: whether ``report``'s total fits ``device``, and by how much each resource is used."""
    total = report.total
    used = {"ALMs": (total.alms, device["alms"]), "DSP blocks": (total.dsp_blocks, device["dsp_blocks"]),
            "M10K": (total.m10k, device["m10k"])}
    over = [kind for kind, (need, have) in used.items() if need > have]
    shares = ", ".join(f"{kind} {need:,.0f}/{have:,} ({100 * need / have:.0f}%)" for kind, (need, have) in used.items())
    verdict = "fits" if not over else f"does NOT fit ({', '.join(over)} exceeded)"
    return f"{report.name} on {device['name']}: {verdict}: {shares}"


def run_synth(arguments):
    names = arguments.systems or list(SYSTEMS)
    chosen = [system(name) for name in names]
    reports = []
    for entry in chosen:
        component = entry.build()
        module_name = component.module_name
        print(f"nnaccel: {entry.name}: Yosys on {module_name} (cached after the first run) ...", flush=True)
        reports.append(estimate(component, module_name))
    print()
    print(format_table(reports))
    print()
    for entry, report in zip(chosen, reports):
        if entry.reference:
            print(f"{entry.name}: published: {entry.reference}")
        print(fit_summary(report))
    if arguments.json:
        document = {"note": ESTIMATE_NOTE, "device": CYCLONE_V_5CSEMA5,
                    "systems": [{"system": entry.name, "description": entry.description, "reference": entry.reference,
                                 "fit": fit_summary(report), **report.as_dict()}
                                for entry, report in zip(chosen, reports)]}
        write_json(arguments.json, document, schema=JSON_SCHEMA)
    return EXIT_DONE
