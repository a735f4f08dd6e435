"""The ``nnaccel run mlperf-tiny`` job: the MLPerf Tiny reference models on the simulated DQN accelerator.

For each model (``--model ic kws vww ad``; the float32 TFLite files of ``../shared/mlperf_tiny`` or ``--dir``):
read, lowered and compiled as ``nnaccel run net`` does (:func:`cli.dqn.net.compile_model`, the smallest RAMs and
descriptor table of the chosen size that hold it), ``--inputs N`` of the benchmark's own inputs run on the RTL
(keyword spotting: its test samples; anomaly detection: the ToyADMOS windows; image classification and visual
wake words: photos, see :func:`models.dqn.mlperf_tiny.sample_images`), every output checked bit for bit against the
golden model and every counter against the compiler's prediction, the outputs compared with LiteRT running the same
file.  Then, without the simulator, the golden model (the hardware's arithmetic, bit-exact) in each ``--formats``
number format: its largest difference from LiteRT, the keyword-spotting accuracy on all the benchmark samples
with the classes compared with LiteRT's, the anomaly scores.  One table per model: cycles, MAC use (the model's
own multiply-accumulates over cycles x MACs), latency at 100 MHz, beside the hls4ml / FINN MLPerf Tiny figures.
"""

import time
from dataclasses import replace

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import PRESETS, float_format
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.mlperf_tiny import (MODELS, TASKS, ad_windows, anomaly_scores, kws_samples, model_path,
                                            mlperf_tiny_dir, published_figures, sample_images)
from nnaccel.models.dqn.model_files import reference_outputs
from nnaccel.models.dqn.plan import compile_network
from nnaccel.models.shared.float_arith import to_binary32
from nnaccel.models.shared.input_files import InputError
from nnaccel.sim.fpga.devices import DEVICES, fit_summary, over_capacity
from nnaccel.sim.fpga.dqn_configurations import cached_estimate, config_fields, resources_summary

from nnaccel.cli.dqn.board import BOARDS, board_report, board_stream, model_base
from nnaccel.cli.dqn.accelerator_run import (DQN_CLOCK_HZ, base_config, compile_model,
                                             counter_mismatches, describe_config, flat_map_note, golden_mismatches,
                                             grouped_notes,
                                             layer_rows, layer_table, model_macs, runtime_difference, simulate_dqn_plan)
from nnaccel.cli.report import (EXIT_DONE, EXIT_MISMATCH, add_flat_argument, add_json_argument,
                                add_simulator_argument, flat_options, json_float, positive_int, progress, text_table,
                                write_json)

__all__ = ["add_arguments", "run", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.mlperf_tiny/1"


def add_arguments(parser):
    """Options of ``nnaccel run mlperf-tiny``."""
    parser.add_argument("--model", nargs="+", choices=TASKS, default=list(TASKS), metavar="TASK",
                        help=f"the models to run: {', '.join(f'{task} ({MODELS[task].title})' for task in TASKS)} "
                             f"(default: all four)")
    parser.add_argument("--dir", metavar="DIR",
                        help="the MLPerf Tiny folder (models/ and samples/; default: $NNACCEL_MLPERF_TINY_DIR, else "
                             "../shared/mlperf_tiny beside the checkout)")
    parser.add_argument("--inputs", type=positive_int, default=20, metavar="N",
                        help="inputs per model on the simulated RTL (default 20)")
    parser.add_argument("--modules", type=positive_int, default=DqnConfig.modules, metavar="N",
                        help=f"matrix modules (power of two; default {DqnConfig.modules})")
    parser.add_argument("--lanes", type=positive_int, default=DqnConfig.lanes, metavar="N",
                        help=f"lanes per module (default {DqnConfig.lanes})")
    parser.add_argument("--board", choices=sorted(BOARDS), default=None,
                        help="run on the accelerator sized for a board: de1soc = 2 x 4 binary16 MACs, the weights "
                             "in the DE1-SoC's SDRAM model behind the Avalon port, the descriptor table in block RAM, "
                             "rows and activation RAMs grown to the model; every counter checked against the cycle "
                             "formula with the SDRAM model in it")
    parser.add_argument("--format", choices=list(PRESETS), default=DqnConfig.fmt.name, dest="number_format",
                        help=f"number format of the simulated RTL (default {DqnConfig.fmt.name})")
    parser.add_argument("--formats", nargs="+", choices=list(PRESETS), default=list(PRESETS), metavar="FORMAT",
                        help=f"number formats the golden model runs every sample in, for the agreement with LiteRT "
                             f"and the KWS accuracy (default: {' '.join(PRESETS)})")
    add_flat_argument(parser)
    parser.add_argument("--no-rtl", action="store_true",
                        help="skip the simulation: compile, the golden model and LiteRT only")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large: every cycle of every run)")
    add_json_argument(parser, "the report (per model: the counters, the checks, the comparisons)")


def _inputs(task, folder, count):
    """The task's inputs ``(N, *input shape)`` and, for KWS, the labels."""
    if task == "kws":
        samples = kws_samples(folder, count)
        return samples.inputs, samples.labels, f"the benchmark's test samples {samples.names[0]} .."
    if task == "ad":
        windows = ad_windows(folder)
        if count > len(windows):
            raise InputError(f"--inputs {count}: the anomaly-detection sample holds {len(windows)} windows")
        return windows[:count], None, "ToyADMOS windows (ad01)"
    samples = sample_images(task, count)
    return samples.inputs, None, f"photos ({', '.join(dict.fromkeys(name.split(' ')[0] for name in samples.names))})"


def _golden_outputs(plan, states):
    """The golden model's outputs ``(N, outputs)`` as float32 values."""
    with progress("inputs") as display:
        display.stage(f"golden model, {plan.config.fmt.name}", len(states))
        outputs = []
        for done, state in enumerate(states, 1):
            outputs.append(to_binary32(plan.config.fmt, golden_forward(plan, state).q_values))
            display.update(done, len(states))
    return np.stack(outputs)


def _published(task):
    return [row for row in published_figures() if row["task"] == task]


def _formats_check(task, path, graph, lowered, plan, folder, formats, count):
    """The golden model in each format against LiteRT: per format the max |difference| (logits), and for KWS the
    accuracy on every sample and the classes against LiteRT's, for AD the anomaly scores."""
    if task == "kws":
        samples = kws_samples(folder)
        inputs, labels = samples.inputs, samples.labels
    elif task == "ad":
        inputs, labels = ad_windows(folder), None
    else:
        inputs, labels = sample_images(task, count).inputs, None
    reference = reference_outputs(path, graph, inputs, logits=lowered.softmax_on_host)
    rows = []
    for name in formats:
        fmt = float_format(name)
        formatted = plan if fmt == plan.config.fmt else compile_network(replace(plan.config, fmt=fmt), lowered.layers,
                                                                        lowered.weights)
        states = inputs.reshape(len(inputs), *lowered.input_shape)
        outputs = _golden_outputs(formatted, states)
        largest = float(np.abs(outputs.astype(np.float64) - reference).max())
        row = {"format": name, "inputs": len(inputs), "max_abs_vs_litert": largest,
               "max_rel_vs_litert": largest / float(np.abs(reference).max())}
        if labels is not None:
            classes, litert_classes = outputs.argmax(1), reference.argmax(1)
            row |= {"correct": int((classes == labels).sum()), "litert_correct": int((litert_classes == labels).sum()),
                    "classes_equal_litert": int((classes == litert_classes).sum())}
        if task == "ad":
            scores, litert_scores = anomaly_scores(inputs, outputs), anomaly_scores(inputs, reference)
            row |= {"mean_score": float(scores.mean()), "litert_mean_score": float(litert_scores.mean()),
                    "max_score_difference": float(np.abs(scores - litert_scores).max())}
        rows.append(row)
    return rows


def _formats_table(rows):
    """The golden model per number format against LiteRT, one line each."""
    header = ["golden model", "inputs", "max |diff| vs LiteRT", "relative"]
    if "correct" in rows[0]:
        header += ["accuracy", "LiteRT", "classes = LiteRT's"]
    if "mean_score" in rows[0]:
        header += ["mean anomaly score", "LiteRT", "largest score diff"]
    lines = []
    for row in rows:
        cells = [row["format"], str(row["inputs"]), f"{row['max_abs_vs_litert']:.3g}",
                 f"{row['max_rel_vs_litert']:.3g}"]
        if "correct" in row:
            cells += [f"{row['correct']} / {row['inputs']} = {row['correct'] / row['inputs']:.1%}",
                      f"{row['litert_correct']} / {row['inputs']}", f"{row['classes_equal_litert']} / {row['inputs']}"]
        if "mean_score" in row:
            cells += [f"{row['mean_score']:.6f}", f"{row['litert_mean_score']:.6f}",
                      f"{row['max_score_difference']:.3g}"]
        lines.append(cells)
    return text_table(header, lines)


def _comparison_table(task, config, cycles, use):
    """nnaccel's cycles, MAC use and latency beside the published hls4ml / FINN MLPerf Tiny figures."""
    rows = [[f"nnaccel {config.modules} x {config.lanes} {config.fmt.name} (simulated RTL)" if cycles[1] else
             f"nnaccel {config.modules} x {config.lanes} {config.fmt.name} (predicted)", f"{cycles[0]:,}", f"{use:.1%}",
             f"{cycles[0] / DQN_CLOCK_HZ * 1e6:,.1f}", "float32 model"]]
    rows += [[f"{row['flow']} {row['model']}, {row['board'].split(' (')[0]}", "-", "-", f"{row['latency_us']:,}",
              row["quality"]] for row in _published(task)]
    return text_table(["design", "cycles", "MAC use", "latency us @ 100 MHz", "quality"], rows)


def _resources(task, config, base):
    """The cached synthesis estimate of ``config`` as a JSON object: the totals and fits, or how to make them."""
    report = cached_estimate(config)
    if report is None:
        sized_as_synth = replace(base, flat_slots=0, flat_window_words=DqnConfig.flat_window_words) == DqnConfig()
        how = (" ".join(filter(None, [f"nnaccel synth dqn --model {task}", flat_options(config_fields(base))]))
               if sized_as_synth else
               f"nnaccel synth dqn --dqn-config FILE.json, FILE.json holding {config_fields(config)}")
        return {"synthesized": False, "hint": f"not synthesized: run {how}"}
    return {"synthesized": True, "module": report.name, "summary": resources_summary(report),
            "total": report.as_dict()["total"], "fits": {device["name"]: not over_capacity(report, device)
                                                         for device in DEVICES},
            "fit_lines": [fit_summary(report, device) for device in DEVICES]}


def _run_model(arguments, task, folder, base):
    path = model_path(task, folder)
    graph, lowered, plan = compile_model(path, base)
    config = plan.config
    macs = model_macs(graph)
    notes = grouped_notes([*lowered.notes, *plan.notes]) + flat_map_note(config, lowered.layers)
    print(f"\n=== {task}: {MODELS[task].title} ({path.name}) ===")
    print(f"{len(graph.ops)} ops -> {len(lowered.layers)} layers, {len(plan.layers)} passes on "
          f"{describe_config(config)}")
    print("where each op runs (a layer on the accelerator, or the host):")
    for line in lowered.describe():
        print(f"    {line}")
    for note in notes:
        print(f"    note: {note}")
    report = {"task": task, "model": str(path), "config": config.module_name, "passes": len(plan.layers),
              "ops": lowered.describe(), "macs": macs, "predicted_cycles": plan.estimated_cycles, "notes": notes}
    failures = 0
    if not arguments.no_rtl:
        inputs, _, source = _inputs(task, folder, arguments.inputs)
        states = inputs.reshape(len(inputs), *lowered.input_shape)
        accelerator_run = simulate_dqn_plan(arguments, plan, states=states, what="inputs")
        mismatches, _, _ = golden_mismatches(plan, states, accelerator_run)
        # On a board the cycle formula with the memory model in it (board_report below) checks the counters.
        counters = [] if arguments.board else counter_mismatches(plan, accelerator_run)
        rows = layer_rows(plan, accelerator_run, DQN_CLOCK_HZ)
        print("\n".join(layer_table(plan, accelerator_run, rows, DQN_CLOCK_HZ)))
        reference = reference_outputs(path, graph, inputs, logits=lowered.softmax_on_host)
        largest, relative = runtime_difference(accelerator_run.q_values, config.fmt, reference)
        cycles = int(accelerator_run.total_cycles[0])
        checked = (f"counters against the formula below ({cycles:,} cycles; {plan.estimated_cycles:,} with every "
                   f"weight on chip)" if arguments.board else
                   f"counters {'as predicted' if not counters else 'MISMATCH'} ({cycles:,} cycles, predicted "
                   f"{plan.estimated_cycles:,})")
        print(f"{len(inputs)} inputs ({source}): {'bit-exact' if not mismatches else 'MISMATCH'} against the golden "
              f"model; {checked}; vs LiteRT: max |difference| {largest:.3g} (relative {relative:.3g})")
        for line in (mismatches + counters)[:10]:
            print(f"    {line}")
        if arguments.board:
            formula_equal, report["board"] = board_report(arguments.board, plan, accelerator_run, DQN_CLOCK_HZ,
                                                          thesis=False)
            counters = counters if formula_equal else report["board"]["formula_mismatches"]
        failures += bool(mismatches or counters)
        report |= {"inputs": len(inputs), "inputs_source": source, "bit_exact": not mismatches,
                   "counters_as_predicted": not counters, "mismatches": mismatches + counters, "total_cycles": cycles,
                   "litert_max_abs": json_float(largest), "litert_max_rel": json_float(relative), "layers": rows,
                   "simulation_seconds": accelerator_run.run_seconds, "build_seconds": accelerator_run.build_seconds}
    cycles = report.get("total_cycles", plan.estimated_cycles)
    use = macs / (cycles * config.macs)
    latency_us = cycles / DQN_CLOCK_HZ * 1e6
    print(f"\n{task}: {macs:,} MACs of the model on {config.macs} MACs")
    print("\n".join(_comparison_table(task, config, (cycles, not arguments.no_rtl), use)))
    built = board_stream(arguments.board, plan).config if arguments.board else config
    resources = _resources(task, built, base)
    print(f"resources of {built.module_name}: {resources.get('summary', resources.get('hint'))}")
    formats = _formats_check(task, path, graph, lowered, plan, folder, arguments.formats, arguments.inputs)
    print()
    print("\n".join(_formats_table(formats)))
    report |= {"cycles": cycles, "mac_use": use, "latency_us_100mhz": latency_us, "published": _published(task),
               "formats": formats, "resources": resources}
    return report, failures


def _resource_cells(resources):
    """The summary table's resource cells: ALMs, DSP blocks, M10K, M20K, the devices it fits ("-": not synthesized)."""
    if not resources["synthesized"]:
        return ["-", "-", "-", "-", "not synthesized"]
    total = resources["total"]
    fitting = [name.split(" ")[-1] for name, fits in resources["fits"].items() if fits]
    return [f"{total['alms']:,}", f"{total['dsp_blocks']:g}", f"{total['m10k']:,}", f"{total['m20k_stratix_v']:,}",
            ", ".join(fitting) or "neither"]


def run(arguments):
    """``nnaccel run mlperf-tiny``; returns the exit status (0: every model bit-exact, counters as predicted)."""
    start = time.perf_counter()
    folder = mlperf_tiny_dir(arguments.dir)
    if arguments.board and (arguments.modules, arguments.lanes, arguments.number_format) != (
            DqnConfig.modules, DqnConfig.lanes, DqnConfig.fmt.name):
        raise InputError(f"--board {arguments.board}: the board's configuration is fixed; leave out --modules, "
                         f"--lanes and --format")
    base = model_base(arguments.board) if arguments.board else base_config(arguments)
    models, failures = [], 0
    for task in dict.fromkeys(arguments.model):
        report, failed = _run_model(arguments, task, folder, base)
        models.append(report)
        failures += failed
    print("\nsummary (latency at 100 MHz; hls4ml / FINN: MLPerf Tiny v0.7 open division, Pynq-Z2)")
    rows = []
    for report in models:
        published = "; ".join(f"{row['flow']} {row['model']} {row['latency_us']:,} us" for row in report["published"]
                              if row["board"].startswith("Pynq")) or "-"
        verdict = ("-" if "bit_exact" not in report else
                   "bit-exact" if report["bit_exact"] and report["counters_as_predicted"] else "MISMATCH")
        rows.append([report["task"], f"{report['cycles']:,}", f"{report['mac_use']:.1%}",
                     f"{report['latency_us_100mhz']:,.1f} us", verdict, *_resource_cells(report["resources"]),
                     published])
    print("\n".join(text_table(["model", "cycles", "MAC use", "latency", "RTL", "ALMs (est.)", "DSP", "M10K", "M20K",
                                 "fits", "published"], rows)))
    if arguments.json:
        write_json(arguments.json, {"job": "mlperf-tiny", "folder": str(folder), "simulator": arguments.simulator,
                                    "rtl": not arguments.no_rtl, "models": models,
                                    "wall_seconds": time.perf_counter() - start}, schema=JSON_SCHEMA)
    return EXIT_DONE if not failures else EXIT_MISMATCH
