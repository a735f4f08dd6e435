"""The ``nnaccel run net MODEL.onnx`` job: a user's ONNX model on the simulated DQN accelerator.

The model is mapped onto the accelerator's layers (:mod:`models.dqn.onnx_import`; what cannot be mapped is one
line naming the node, its op and the fault, exit 2, nothing built), compiled for ``--modules`` x ``--lanes``
(:mod:`models.dqn.plan`), and its inputs run in one simulation.  Every output is checked bit for bit against
the golden model (:mod:`models.dqn.golden`), the per-layer cycles are printed, and the outputs are compared with
the model's own float32 outputs from ONNX Runtime: a difference that comes from the order of the float
additions (the accelerator's is fixed by its adder tree), quoted, not checked.

``--format`` picks the number format of the float units (binary32, bfloat16, binary16): inputs and weights are
rounded to it to nearest even by the host, the golden model computes in it, and the outputs are reported widened to
float32 (exactly) beside ONNX Runtime's.

Inputs: ``--inputs X.npy`` (``(N, C, H, W)`` for a model input ``(1, C, H, W)``, ``(N, F)`` for ``(1, F)``;
float32), or ``--random N`` seeded standard-normal inputs of the model's input shape.
"""

import time

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import PRESETS, float_format
from nnaccel.models.dqn.onnx_import import compile_onnx, import_onnx, onnx_runtime_outputs
from nnaccel.models.dqn.plan import SPLIT_MODES
from nnaccel.models.shared.float_arith import to_binary32
from nnaccel.models.shared.input_files import InputError, check_batch, load_single_array

from nnaccel.cli.dqn.accelerator_run import (DQN_CLOCK_HZ, golden_mismatches, layer_rows, layer_table,
                                             q_value_fields, simulate_dqn_plan, timing_notes)
from nnaccel.cli.report import (EXIT_DONE, EXIT_MISMATCH, add_json_argument, add_simulator_argument, json_float,
                                positive_int, write_json)

__all__ = ["add_arguments", "run", "load_inputs", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.net/1"


def add_arguments(parser):
    """Options of ``nnaccel run net``."""
    parser.add_argument("model", metavar="MODEL.onnx",
                        help="an ONNX model of Conv, Gemm, MatMul + Add, Relu and Flatten / Reshape nodes in a chain "
                             "(docs/onnx.md)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--inputs", metavar="FILE",
                        help="inputs from a .npy (or one-array .npz): N x C x H x W float32 for a model input "
                             "(1, C, H, W), N x F for (1, F)")
    source.add_argument("--random", type=positive_int, default=2, metavar="N",
                        help="run N seeded standard-normal inputs of the model's input shape (default 2)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the --random inputs (default 0)")
    parser.add_argument("--modules", type=positive_int, default=DqnConfig.modules, metavar="N",
                        help=f"matrix modules (power of two; default {DqnConfig.modules}); modules x lanes bounds a "
                             f"layer's outputs")
    parser.add_argument("--lanes", type=positive_int, default=DqnConfig.lanes, metavar="N",
                        help=f"lanes per module (default {DqnConfig.lanes})")
    parser.add_argument("--format", choices=list(PRESETS), default=DqnConfig.fmt.name, dest="number_format",
                        help=f"number format of the float units (default {DqnConfig.fmt.name}): inputs and weights "
                             f"are rounded to it to nearest even")
    parser.add_argument("--split", choices=SPLIT_MODES, default="auto",
                        help="split accumulations over idle matrix modules: auto (where the compiler's cycle "
                             "estimate says it pays; default), always, never")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large: every cycle of every run)")
    add_json_argument(parser, "the report (every output as a float and as bits, and ONNX Runtime's)")


def load_inputs(path, shape):
    """``(N, *shape)`` float32 inputs from a ``.npy`` or one-array ``.npz``; raises :class:`InputError`."""
    inputs = load_single_array(path, expected=f"expected a .npy, or a .npz holding one array, of N x "
                                              f"{' x '.join(map(str, shape))} float32 inputs")
    try:
        return check_batch(inputs, shape, "inputs")
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None


def _inputs(arguments, network):
    """(inputs, description for the report)."""
    if arguments.inputs:
        return load_inputs(arguments.inputs, network.input_shape), f"from {arguments.inputs}"
    rng = np.random.default_rng(arguments.seed)
    inputs = rng.standard_normal((arguments.random, *network.input_shape)).astype(np.float32)
    return inputs, f"seeded standard-normal (seed {arguments.seed})"


def _config(arguments):
    try:
        return DqnConfig(modules=arguments.modules, lanes=arguments.lanes, fmt=float_format(arguments.number_format))
    except ValueError as error:
        raise InputError(f"--modules {arguments.modules} --lanes {arguments.lanes}: {error}") from None


def _runtime_difference(outputs, fmt, reference):
    """Largest |accelerator - ONNX Runtime| (the outputs: bits of ``fmt``) and that relative to the largest
    |ONNX Runtime output|."""
    distance = np.abs(to_binary32(fmt, outputs).astype(np.float64) - reference.astype(np.float64))
    largest = float(distance.max())
    return largest, largest / max(float(np.abs(reference).max()), np.finfo(np.float64).tiny)


def run(arguments):
    """``nnaccel run net``; returns the exit status (0: every output bit-exact, 1: a mismatch)."""
    start = time.perf_counter()
    network = import_onnx(arguments.model)
    plan = compile_onnx(network, _config(arguments), split=arguments.split)
    inputs, source = _inputs(arguments, network)
    print(f"nnaccel: {arguments.model}: {len(network.layers)} layers, {len(plan.layers)} passes on "
          f"{plan.config.modules} x {plan.config.lanes} {plan.config.fmt.name} MACs"
          + (f"; the first Conv's zero padding {network.padding} is written by the host" if network.padding else ""))
    for line in network.describe():
        print(f"    {line}")
    reference = onnx_runtime_outputs(network, inputs)
    states = np.stack([network.accelerator_input(sample) for sample in inputs])
    accelerator_run = simulate_dqn_plan(arguments, plan, states=states, what="inputs")

    print("nnaccel: checking every output against the golden model ...", flush=True)
    mismatches, goldens, exact = golden_mismatches(plan, states, accelerator_run)
    rows = layer_rows(plan, accelerator_run, DQN_CLOCK_HZ)
    print()
    print("\n".join(layer_table(plan, accelerator_run, rows, DQN_CLOCK_HZ)))
    for line in timing_notes(plan, accelerator_run):
        print(line)
    verdict = "bit-exact" if not mismatches else "MISMATCH"
    print(f"\n{len(inputs)} inputs ({source}): {verdict} against the golden model "
          f"({len(inputs) * plan.actions} outputs)")
    for line in mismatches[:20]:
        print(f"    {line}")
    fmt = plan.config.fmt
    largest, relative = _runtime_difference(accelerator_run.q_values, fmt, reference)
    why = ("the order of the float additions differs" if fmt.name == "binary32"
           else f"the accelerator rounds every input, weight, product and sum to {fmt.name}")
    print(f"accelerator ({fmt.name}) vs ONNX Runtime (float32): max |difference| = {largest:.3g} (relative to the "
          f"largest |output|: {relative:.3g}; {why})")
    print(f"simulation: build {accelerator_run.build_seconds:.1f} s, simulator process "
          f"{accelerator_run.run_seconds:.1f} s")
    if arguments.json:
        per_input = [{"input": index, "bit_exact": same, **q_value_fields("", accelerator_run.q_values[index], fmt),
                      **q_value_fields("golden_", golden.q_values, fmt),
                      "onnxruntime_values": [json_float(value) for value in reference[index]]}
                     for index, (golden, same) in enumerate(zip(goldens, exact))]
        write_json(arguments.json, {
            "job": "net", "model": arguments.model, "simulator": arguments.simulator,
            "config": {"modules": plan.config.modules, "lanes": plan.config.lanes, "format": fmt.name},
            "split": arguments.split,
            "inputs": len(inputs), "inputs_source": source, "padding": network.padding,
            "total_cycles": int(accelerator_run.total_cycles[0]),
            "total_cycles_per_input": accelerator_run.total_cycles.tolist(),
            "ideal_cycles": sum(layer.product_cycles for layer in plan.layers),
            "load_cycles": int(accelerator_run.load_cycles[0]), "bit_exact": not mismatches,
            "mismatches": mismatches, "onnxruntime_max_abs": json_float(largest),
            "onnxruntime_max_rel": json_float(relative), "per_input": per_input, "layers": rows,
            "build_seconds": accelerator_run.build_seconds, "simulation_seconds": accelerator_run.run_seconds,
            "wall_seconds": time.perf_counter() - start}, schema=JSON_SCHEMA)
    return EXIT_DONE if not mismatches else EXIT_MISMATCH
