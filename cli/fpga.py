"""``nnaccel verilog`` (Verilog + Quartus project for a board) and ``nnaccel synth`` (Yosys resource estimate)."""

import argparse
from dataclasses import replace
from pathlib import Path

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.mlperf_tiny import MODELS, TASKS, mlperf_tiny_dir
from nnaccel.models.shared.input_files import InputError
from nnaccel.sim.fpga.devices import CYCLONE_V_5CSEMA5, DEVICES, fit_summary, over_capacity
from nnaccel.sim.fpga.dqn_configurations import config_fields, describe, mlperf_config, read_config_file
from nnaccel.sim.fpga.quartus_project import BOARDS, DEFAULT_CLOCK_MHZ, write_project
from nnaccel.sim.fpga.synth import ESTIMATE_NOTE, estimate, format_table
from nnaccel.sim.fpga.systems import SYSTEMS, system

from nnaccel.cli.report import (EXIT_DONE, add_flat_argument, add_json_argument, flat_map_fields, flat_options,
                                make_output_directory, output_directory, positive_int, progress, text_table, write_json,
                                writing)

__all__ = ["add_verilog_arguments", "add_synth_arguments", "run_verilog", "run_synth", "CYCLONE_V_5CSEMA5",
           "fit_summary", "JSON_SCHEMA"]

ALL_MODELS = "all"

JSON_SCHEMA = "nnaccel.synth/1"


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
    parser.add_argument("--model", nargs="+", choices=[*TASKS, ALL_MODELS], metavar="TASK",
                        help=f"with dqn: the configuration each MLPerf Tiny model runs on (16 x 16 binary32 grown to "
                             f"the smallest RAMs that hold it, as `nnaccel run mlperf-tiny` sizes it): "
                             f"{', '.join(f'{task} ({MODELS[task].title})' for task in TASKS)}, or {ALL_MODELS}")
    add_flat_argument(parser)
    parser.add_argument("--dir", metavar="DIR",
                        help="with --model: the MLPerf Tiny folder (default: $NNACCEL_MLPERF_TINY_DIR, else "
                             "../shared/mlperf_tiny beside the checkout)")
    parser.add_argument("--dqn-config", metavar="FILE.json",
                        help="with dqn: the configuration in a JSON object of DqnConfig fields (modules, lanes, fmt, "
                             "row_elements, activation_depth, weight_depth, max_layers, ...; others as the thesis')")
    parser.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                        help="Yosys runs at a time (each module of a design is synthesized and cached on its own; "
                             "default 1)")
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


def _dqn_configurations(arguments):
    """``[(label, DqnConfig)]`` that ``--model`` and ``--dqn-config`` ask for (empty: the thesis' only)."""
    chosen = []
    if arguments.dqn_config is not None:
        chosen.append((arguments.dqn_config, read_config_file(arguments.dqn_config)))
    if arguments.model:
        tasks = TASKS if ALL_MODELS in arguments.model else dict.fromkeys(arguments.model)
        folder = mlperf_tiny_dir(arguments.dir)
        base, flat = _model_base(arguments)
        chosen += [(f"MLPerf Tiny {task} ({MODELS[task].title})" + (f", {flat}" if flat else ""),
                    mlperf_config(task, folder, base)) for task in tasks]
    return chosen


def _model_base(arguments):
    """The configuration ``--model``'s models are sized from (16 x 16 binary32, with the flat map that
    ``--flat-window`` / ``--flat-slots`` ask for, as ``run mlperf-tiny`` sizes them) and those options as typed."""
    flat = flat_map_fields(arguments)
    try:
        return replace(DqnConfig(), **flat), flat_options(flat)
    except ValueError as error:
        raise InputError(f"{flat_options(flat)}: {error}") from None


def _configurations_table(documents, reports):
    """Lines of one table of the DQN configurations: totals, and whether each fits the devices."""
    header = ["configuration", "RAMs (row elements / activation / weight words / descriptors)", "ALMs (est.)",
              "DSP", "M10K", "memory bits", "M20K", *(f"fits {device['name'].split(' ')[-1]}" for device in DEVICES)]
    rows = []
    for document, report in zip(documents, reports):
        config, total = document["config"], report.total
        rows.append([document["label"].removeprefix("dqn, "),
                     f"{config['row_elements']} / {config['activation_depth']:,} / {config['weight_depth']:,} / "
                     f"{config['max_layers']}", f"{total.alms:,}", f"{total.dsp_blocks:g}", f"{total.m10k:,}",
                     f"{total.memory_bits:,}", f"{report.m20k:,}",
                     *("yes" if not over_capacity(report, device) else f"no ({', '.join(over_capacity(report, device))})"
                       for device in DEVICES)])
    return text_table(header, rows)


def _check_synth_options(arguments):
    """InputError for options that do not go together."""
    if arguments.dir is not None and not arguments.model:
        raise InputError("--dir: names the MLPerf Tiny folder of --model, which is not given")
    if flat_map_fields(arguments) and not arguments.model:
        raise InputError(f"{flat_options(flat_map_fields(arguments))}: sizes the configurations of --model, which is "
                         f"not given (a --dqn-config file names flat_slots and flat_window_words itself)")
    if (arguments.model or arguments.dqn_config) and arguments.systems not in ([], ["dqn"]):
        raise InputError(f"--model / --dqn-config: configurations of the dqn system, not of "
                         f"{', '.join(name for name in arguments.systems if name != 'dqn')}")


def run_synth(arguments):
    _check_synth_options(arguments)
    configurations = _dqn_configurations(arguments)
    if configurations:
        designs = [(f"dqn, {label}", SYSTEMS["dqn"], DqnAccelerator(config=config)) for label, config in configurations]
    else:
        designs = [(name, system(name), None) for name in arguments.systems or list(SYSTEMS)]
    reports, documents = [], []
    for label, entry, component in designs:
        component = component if component is not None else entry.build()
        module_name = component.module_name
        print(f"nnaccel: {label}: Yosys on {module_name}, module by module (each cached) ...", flush=True)
        with progress("modules"):
            report = estimate(component, module_name, jobs=arguments.jobs)
        print(f"nnaccel: {label}: {len(report.synthesized)} modules synthesized now, the others from the cache",
              flush=True)
        reports.append(report)
        config = getattr(component, "config", None)
        documents.append({"system": entry.name, "label": label, "description": entry.description,
                          "reference": entry.reference, "fit": fit_summary(report),
                          "fits": {device["name"]: fit_summary(report, device) for device in DEVICES},
                          **({"configuration": describe(config), "config": config_fields(config)}
                             if configurations else {}),
                          **report.as_dict()})
    print()
    print(format_table(reports))
    print()
    for document, report in zip(documents, reports):
        if "configuration" in document:
            print(f"{document['label']}: {report.name}: {document['configuration']}")
        elif document["reference"]:
            print(f"{document['system']}: published: {document['reference']}")
        for device in DEVICES if configurations or document["system"] == "dqn" else (CYCLONE_V_5CSEMA5,):
            print(f"    {fit_summary(report, device)}")
    if configurations:
        print()
        print("\n".join(_configurations_table(documents, reports)))
    if arguments.json:
        write_json(arguments.json, {"note": ESTIMATE_NOTE, "device": CYCLONE_V_5CSEMA5, "devices": list(DEVICES),
                                    "systems": documents}, schema=JSON_SCHEMA)
    return EXIT_DONE
