"""The ``nnaccel run net MODEL.tflite | MODEL.onnx`` job: a user's model on the simulated DQN accelerator.

The model file is read into the network graph (:mod:`models.dqn.model_files`: TFLite with the ``tflite`` parser,
ONNX with the ``onnx`` package; what cannot be read is one line naming the file, the op and the fault, exit 2,
nothing built), lowered onto the accelerator's layers (:mod:`models.dqn.lowering`: where each op runs), compiled
for ``--modules`` x ``--lanes`` on the smallest RAMs and descriptor table that hold it (:mod:`models.dqn.sizing`),
and its inputs run in one simulation.  Every output is checked bit for bit against the golden model
(:mod:`models.dqn.golden`), every per-pass counter and TOTAL_CYCLES against the compiler's prediction, and the
outputs are compared with the model's own runtime (LiteRT for TFLite, ONNX Runtime for ONNX): a difference that
comes from the order of the float additions (the accelerator's is fixed by its adder tree) and, for a narrower
``--format``, from its rounding, quoted, not checked.

Inputs: ``--inputs FILE``: a ``.npy`` (or one-array ``.npz``) of ``(N, C, H, W)`` float32 for a model input
``(1, C, H, W)`` (NCHW, also for TFLite models), ``(N, F)`` for ``(1, F)``; or one of the MLPerf Tiny benchmark's
sample files (``.bin``: a keyword-spotting sample, 490 int8 MFCCs dequantised with the int8 model's input
quantisation, or anomaly-detection float32 640-value windows); or ``--random N`` seeded standard-normal inputs.
"""

import time
from pathlib import Path

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import PRESETS
from nnaccel.models.dqn.mlperf_tiny import benchmark_inputs
from nnaccel.models.dqn.model_files import reference_is_logits, reference_outputs, runtime_name
from nnaccel.models.dqn.plan import SPLIT_MODES
from nnaccel.models.shared.input_files import InputError, check_batch, load_single_array

from nnaccel.cli.dqn.accelerator_run import (DQN_CLOCK_HZ, base_config, compile_model,
                                             counter_mismatches, describe_config, flat_map_note, golden_mismatches,
                                             grouped_notes,
                                             layer_rows, layer_table, model_macs, q_value_fields, runtime_difference,
                                             simulate_dqn_plan, timing_notes)
from nnaccel.cli.report import (EXIT_DONE, EXIT_MISMATCH, add_flat_argument, add_json_argument,
                                add_simulator_argument, json_float, positive_int, write_json)

__all__ = ["add_arguments", "run", "load_inputs", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.net/2"


def add_arguments(parser):
    """Options of ``nnaccel run net``."""
    parser.add_argument("model", metavar="MODEL",
                        help="a TFLite (.tflite, float32) or ONNX (.onnx) model: convolutions (any padding, "
                             "strides, depthwise), dense layers, max, average and global average pooling, batch norm, "
                             "ReLU, a final softmax (on the host) (docs/models.md)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--inputs", metavar="FILE",
                        help="inputs from a .npy (or one-array .npz): N x C x H x W float32 for a model input "
                             "(1, C, H, W), N x F for (1, F); or an MLPerf Tiny sample file (.bin: KWS int8 MFCCs, "
                             "AD float32 windows)")
    source.add_argument("--random", type=positive_int, default=2, metavar="N",
                        help="run N seeded standard-normal inputs of the model's input shape (default 2)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the --random inputs (default 0)")
    parser.add_argument("--modules", type=positive_int, default=DqnConfig.modules, metavar="N",
                        help=f"matrix modules (power of two; default {DqnConfig.modules})")
    parser.add_argument("--lanes", type=positive_int, default=DqnConfig.lanes, metavar="N",
                        help=f"lanes per module (default {DqnConfig.lanes})")
    parser.add_argument("--format", choices=list(PRESETS), default=DqnConfig.fmt.name, dest="number_format",
                        help=f"number format of the float units (default {DqnConfig.fmt.name}): inputs and weights "
                             f"are rounded to it to nearest even")
    add_flat_argument(parser)
    parser.add_argument("--split", choices=SPLIT_MODES, default="auto",
                        help="split accumulations over idle matrix modules: auto (where the compiler's cycle "
                             "estimate says it pays; default), always, never")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large: every cycle of every run)")
    add_json_argument(parser, "the report (every output as a float and as bits, and the model runtime's)")


def load_inputs(path, shape):
    """``(N, *shape)`` float32 inputs from a ``.npy``, a one-array ``.npz`` or a benchmark sample ``.bin``; raises
    :class:`InputError`."""
    if Path(path).suffix.lower() == ".bin":
        return benchmark_inputs(path, shape)
    inputs = load_single_array(path, expected=f"expected a .npy, or a .npz holding one array, of N x "
                                              f"{' x '.join(map(str, shape))} float32 inputs")
    try:
        return check_batch(inputs, shape, "inputs")
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None


def _inputs(arguments, shape):
    """(inputs, description for the report)."""
    if arguments.inputs:
        return load_inputs(arguments.inputs, shape), f"from {arguments.inputs}"
    rng = np.random.default_rng(arguments.seed)
    return rng.standard_normal((arguments.random, *shape)).astype(np.float32), \
        f"seeded standard-normal (seed {arguments.seed})"


def run(arguments):
    """``nnaccel run net``; returns the exit status (0: every output bit-exact and every counter as predicted, 1:
    a mismatch)."""
    start = time.perf_counter()
    graph, lowered, plan = compile_model(arguments.model, base_config(arguments), split=arguments.split)
    config = plan.config
    runtime = runtime_name(arguments.model)
    print(f"nnaccel: {arguments.model}: {len(graph.ops)} ops -> {len(lowered.layers)} layers, {len(plan.layers)} "
          f"passes on {describe_config(config)}")
    for line in lowered.describe():
        print(f"    {line}")
    for note in grouped_notes([*lowered.notes, *plan.notes]) + flat_map_note(config, lowered.layers):
        print(f"    note: {note}")
    inputs, source = _inputs(arguments, lowered.input_shape)
    logits = reference_is_logits(arguments.model, lowered.softmax_on_host)
    reference = reference_outputs(arguments.model, graph, inputs, logits=lowered.softmax_on_host)
    states = inputs.reshape(len(inputs), *lowered.input_shape)
    accelerator_run = simulate_dqn_plan(arguments, plan, states=states, what="inputs")

    print("nnaccel: checking every output against the golden model ...", flush=True)
    mismatches, goldens, exact = golden_mismatches(plan, states, accelerator_run)
    counters = counter_mismatches(plan, accelerator_run)
    rows = layer_rows(plan, accelerator_run, DQN_CLOCK_HZ)
    print()
    print("\n".join(layer_table(plan, accelerator_run, rows, DQN_CLOCK_HZ)))
    for line in timing_notes(plan, accelerator_run):
        print(line)
    verdict = "bit-exact" if not mismatches else "MISMATCH"
    total = int(accelerator_run.total_cycles[0])
    macs = model_macs(graph)
    print(f"the model's own MACs: {macs:,}, {macs / (total * config.macs):.1%} of {total:,} cycles x {config.macs} "
          f"MACs (the table's MAC use counts every product a layer does, the zero weights of a block-diagonal "
          f"depthwise layer too)")
    print(f"\n{len(inputs)} input{'s' if len(inputs) != 1 else ''} ({source}): {verdict} against the golden model "
          f"({accelerator_run.q_values.size:,} outputs)")
    for line in mismatches[:20]:
        print(f"    {line}")
    print(f"counters: {'every pass and TOTAL_CYCLES as the compiler predicted' if not counters else 'MISMATCH'} "
          f"({plan.estimated_cycles:,} cycles predicted)")
    for line in counters[:20]:
        print(f"    {line}")
    fmt = config.fmt
    largest, relative = runtime_difference(accelerator_run.q_values, fmt, reference, softmax_first=not logits)
    why = ("the order of the float additions differs; of a model stored with int8 weights, LiteRT also quantises "
           "the activations" if fmt.name == "binary32" and runtime == "LiteRT" else
           "the order of the float additions differs" if fmt.name == "binary32"
           else f"the accelerator rounds every input, weight, product and sum to {fmt.name}")
    compared = "logits" if logits else "softmax outputs (the host's softmax of the accelerator's logits)"
    print(f"accelerator ({fmt.name}) vs {runtime} (float32), {compared}: max |difference| = {largest:.3g} "
          f"(relative to the largest |output|: {relative:.3g}; {why})")
    print(f"simulation: build {accelerator_run.build_seconds:.1f} s, simulator process "
          f"{accelerator_run.run_seconds:.1f} s")
    if arguments.json:
        per_input = [{"input": index, "bit_exact": same, **q_value_fields("", accelerator_run.q_values[index], fmt),
                      **q_value_fields("golden_", golden.q_values, fmt),
                      "reference_values": [json_float(value) for value in reference[index]]}
                     for index, (golden, same) in enumerate(zip(goldens, exact))]
        write_json(arguments.json, {
            "job": "net", "model": arguments.model, "runtime": runtime, "simulator": arguments.simulator,
            "config": {"modules": config.modules, "lanes": config.lanes, "format": fmt.name,
                       "row_elements": config.row_elements, "activation_depth": config.activation_depth,
                       "weight_depth": config.weight_depth, "max_layers": config.max_layers,
                       "max_pooling": config.max_pooling},
            "split": arguments.split, "ops": lowered.describe(), "notes": [*lowered.notes, *plan.notes],
            "inputs": len(inputs), "inputs_source": source,
            "total_cycles": total, "model_macs": macs, "model_mac_use": macs / (total * config.macs),
            "total_cycles_per_input": accelerator_run.total_cycles.tolist(),
            "predicted_cycles": plan.estimated_cycles,
            "ideal_cycles": sum(layer.product_cycles for layer in plan.layers),
            "load_cycles": int(accelerator_run.load_cycles[0]), "bit_exact": not mismatches,
            "counters_as_predicted": not counters, "mismatches": mismatches + counters,
            "reference_compared": "logits" if logits else "softmax",
            "reference_max_abs": json_float(largest), "reference_max_rel": json_float(relative),
            "per_input": per_input, "layers": rows,
            "build_seconds": accelerator_run.build_seconds, "simulation_seconds": accelerator_run.run_seconds,
            "wall_seconds": time.perf_counter() - start}, schema=JSON_SCHEMA)
    return EXIT_DONE if not mismatches and not counters else EXIT_MISMATCH
