"""The DQN jobs: ``nnaccel run dqn`` (Atari states through the simulated accelerator) and ``nnaccel play``.

``run dqn`` compiles the thesis network (:mod:`models.dqn.plan`) for a :class:`hw.dqn.config.DqnConfig`,
builds the accelerator (cached), runs the states in one simulation, checks every Q-value bit for bit
against the golden model (:mod:`models.dqn.golden`) and prints the per-layer table next to the thesis'
Table 5.1.  ``play`` runs the thesis' host loop: the Atari emulator inside the simulation produces each
state, the simulated accelerator picks the action, the emulator steps; every step is checked against the
golden model afterwards.

Weights: a ``.npz`` in the layout of :mod:`models.dqn.network` (``--weights``), or the seeded
He-uniform initialisation ``seeded_weights(seed=0)`` (no trained weights ship with nnaccel).
"""

import time
from dataclasses import dataclass

import numpy as np

from hw.dqn.config import DqnConfig
from models.dqn.atari import recorded_states
from models.dqn.network import check_states, dqn_layers, load_weights, reference_q_values, save_weights, \
    seeded_weights
from models.dqn.plan import SPLIT_MODES, compile_network
from models.shared.input_files import InputError, load_single_array

from cli.report import (DQN_CLOCK_HZ, EXIT_DONE, EXIT_MISMATCH, ToolError, add_json_argument,
                        add_simulator_argument, golden_mismatches, json_float, layer_rows, layer_table, output_file,
                        positive_int, q_value_fields, simulate_dqn_plan, timing_notes, write_json)

__all__ = ["add_arguments", "run", "add_play_arguments", "play", "THESIS_TABLE", "JSON_SCHEMAS"]

JSON_SCHEMAS = {"dqn": "nnaccel.dqn/1", "play": "nnaccel.play/1"}

WEIGHTS_SEED = 0
# Thesis Table 5.1 (SPEC section 1): layer -> (time ms, GFLOPS); 100 MHz, data on chip.
THESIS_TABLE = {"CONV_1": (0.064, 50.0), "CONV_2": (0.039, 33.2), "FC_1": (0.026, 49.8), "FC_2": (0.003, 0.3)}
THESIS_TOTAL = (0.15, 38.6, 15_000)     # ms, GFLOPS, cycles
THESIS_INPUT_CYCLES = 1_800             # 0.018 ms at 100 MHz


# ---- Arguments ------------------------------------------------------------------------------------------------

def _hardware_arguments(parser):
    parser.add_argument("--weights", metavar="FILE", help="weights .npz (float32 arrays conv1_w conv1_b ... fc2_b, "
                        "see models/dqn/network.py); default: seeded He-uniform weights, seed 0")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large: every cycle of every run)")
    add_json_argument(parser, "the report (with every Q-value, as a float and as bits)")
    parser.add_argument("--modules", type=positive_int, default=DqnConfig.modules, metavar="N",
                        help=f"matrix modules (power of two; default {DqnConfig.modules})")
    parser.add_argument("--lanes", type=positive_int, default=DqnConfig.lanes, metavar="N",
                        help=f"lanes per module (default {DqnConfig.lanes}); modules x lanes must cover FC_1's "
                             f"256 outputs")
    parser.add_argument("--split", choices=SPLIT_MODES, default="auto",
                        help="split accumulations over idle matrix modules: auto (where the compiler's cycle "
                             "estimate says it pays; default), always, never (one pass per layer)")


def add_arguments(parser):
    """Options of ``nnaccel run dqn``."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--states", type=positive_int, default=5, metavar="N",
                        help="run the first N recorded Breakout states (default 5, at most 8)")
    source.add_argument("--states-file", metavar="FILE",
                        help="states from a .npy or .npz file: N x 4 x 84 x 84 float32 (an .npz holds one array)")
    parser.add_argument("--save-weights", metavar="FILE", type=output_file,
                        help="write the weights used to this .npz")
    parser.add_argument("--save-onnx", metavar="FILE", type=output_file,
                        help="write the network with the weights used as an ONNX model (for `nnaccel run net` or "
                             "other tools; needs the onnx extra)")
    _hardware_arguments(parser)


def add_play_arguments(parser):
    """Options of ``nnaccel play``."""
    parser.add_argument("--steps", type=positive_int, default=20, metavar="N", help="agent steps (default 20)")
    parser.add_argument("--game", default="breakout", help="Atari game shipped with ale-py (default breakout)")
    parser.add_argument("--seed", type=int, default=0, metavar="N", help="emulator seed (default 0)")
    _hardware_arguments(parser)


# ---- Inputs ---------------------------------------------------------------------------------------------------

_STATES_LAYOUT = "expected a .npy, or a .npz holding one array, of N x 4 x 84 x 84 float32 states"


def load_states_file(path):
    """``(N, 4, 84, 84)`` float32 states from a ``.npy`` or single-array ``.npz`` file, checked; raises
    :class:`InputError`."""
    states = load_single_array(path, expected=_STATES_LAYOUT)
    try:
        return check_states(states)
    except ValueError as error:
        raise InputError(f"{path}: {error}") from None


def _recorded_states(count):
    try:
        return recorded_states(count)
    except ValueError as error:
        raise InputError(f"--states {count}: {error}") from None


def _check_game(arguments):
    """Open the game in the emulator here, so that a wrong --game or a missing ale-py is said before the build."""
    from models.dqn.atari import AtariGame

    try:
        AtariGame(arguments.game, seed=arguments.seed)
    except ValueError as error:
        raise InputError(f"--game {arguments.game}: {error}") from None
    except RuntimeError as error:           # ale-py is not installed
        raise ToolError(str(error)) from None


def _weights(arguments):
    """(weights dict, description for the report)."""
    if arguments.weights:
        return load_weights(arguments.weights), f"from {arguments.weights}"
    return seeded_weights(seed=WEIGHTS_SEED), f"seeded He-uniform (models.dqn.network.seeded_weights, seed " \
                                              f"{WEIGHTS_SEED}; not trained)"


def _compile(arguments, weights):
    try:
        config = DqnConfig(modules=arguments.modules, lanes=arguments.lanes)
    except ValueError as error:
        raise InputError(f"--modules {arguments.modules} --lanes {arguments.lanes}: {error}") from None
    actions = weights["fc2_w"].shape[1]
    try:
        return compile_network(config, dqn_layers(actions), weights, split=arguments.split)
    except ValueError as error:
        raise InputError(f"--modules {arguments.modules} --lanes {arguments.lanes}: the network does not map onto "
                         f"this accelerator: {error}") from None


# ---- Checking and reporting -----------------------------------------------------------------------------------

@dataclass
class _Check:
    bit_exact: bool
    mismatches: list      # human-readable lines
    goldens: list         # per state the golden model's GoldenRun
    state_exact: list     # per state: Q-values, action and its value all equal the golden model's
    float64_max_abs: float
    float64_max_rel: float

    @property
    def golden_actions(self):
        return [golden.action for golden in self.goldens]


def _check(plan, weights, states, run):
    mismatches, goldens, state_exact = golden_mismatches(plan, states, run)
    worst_abs, worst_rel = 0.0, 0.0
    for state, golden in zip(states, goldens):
        reference = reference_q_values(weights, state)
        distance = np.abs(golden.q_values.view(np.float32).astype(np.float64) - reference)
        worst_abs = max(worst_abs, float(distance.max()))
        worst_rel = max(worst_rel, float(distance.max() / max(np.abs(reference).max(), np.finfo(np.float64).tiny)))
    return _Check(bit_exact=not mismatches, mismatches=mismatches, goldens=goldens, state_exact=state_exact,
                  float64_max_abs=worst_abs, float64_max_rel=worst_rel)


def _state_rows(run, check):
    """Per state: the verdict, the accelerator's and the golden model's action and Q-values."""
    return [{"state": index, "bit_exact": exact, "action": int(run.actions[index]), "golden_action": golden.action,
             **q_value_fields("", run.q_values[index]), **q_value_fields("golden_", golden.q_values)}
            for index, (golden, exact) in enumerate(zip(check.goldens, check.state_exact))]


_THESIS = {"name": "thesis", "input": THESIS_INPUT_CYCLES, "total": THESIS_TOTAL}


def _layer_rows(plan, run):
    """:func:`cli.report.layer_rows` with the thesis' time and GFLOPS of each layer."""
    rows = layer_rows(plan, run, DQN_CLOCK_HZ)
    for row in rows:
        row["thesis_ms"], row["thesis_gflops"] = THESIS_TABLE.get(row["name"], (None, None))
    return rows


def _report(arguments, plan, weights, weights_note, states, source, run, start, *, job, extra=None):
    """Check, print the table and the summary, write the JSON; returns the exit status."""
    print("nnaccel: checking every Q-value against the golden model ...", flush=True)
    check = _check(plan, weights, states, run)
    rows = _layer_rows(plan, run)
    print()
    print("\n".join(layer_table(plan, run, rows, DQN_CLOCK_HZ, reference=_THESIS)))
    for line in timing_notes(plan, run):
        print(line)
    simulated = int(run.total_cycles.sum())
    cycles_per_second = simulated / float(run.run_wall_seconds.sum())
    verdict = "bit-exact" if check.bit_exact else "MISMATCH"
    print(f"\n{len(states)} states ({source}): {verdict} against the golden model "
          f"({len(states) * plan.actions} Q-values, actions {run.actions.tolist()})")
    for line in check.mismatches[:20]:
        print(f"    {line}")
    print(f"weights: {weights_note}")
    print(f"golden model vs float64 reference: max |dQ| = {check.float64_max_abs:.3g} "
          f"(relative to max |Q|: {check.float64_max_rel:.3g})")
    print(f"simulation: {cycles_per_second:,.0f} simulated cycles per wall second while running "
          f"({float(run.run_wall_seconds.mean()):.2f} s per inference); build {run.build_seconds:.1f} s, "
          f"simulator process {run.run_seconds:.1f} s")
    if arguments.json:
        document = {
            "job": job, "simulator": arguments.simulator, "config": {"modules": plan.config.modules,
                                                                     "lanes": plan.config.lanes},
            "states": len(states), "states_source": source, "weights": weights_note,
            "total_cycles": int(run.total_cycles[0]), "total_cycles_per_state": run.total_cycles.tolist(),
            "ideal_cycles": sum(layer.product_cycles for layer in plan.layers),
            "load_cycles": int(run.load_cycles[0]), "bit_exact": check.bit_exact, "mismatches": check.mismatches,
            "actions": run.actions.tolist(), "golden_actions": check.golden_actions,
            "per_state": _state_rows(run, check), "layers": rows,
            "float64_max_abs": json_float(check.float64_max_abs), "float64_max_rel": json_float(check.float64_max_rel),
            "simulated_cycles_per_second": cycles_per_second, "build_seconds": run.build_seconds,
            "simulation_seconds": run.run_seconds, "wall_seconds": time.perf_counter() - start,
            **(extra or {})}
        write_json(arguments.json, document, schema=JSON_SCHEMAS[job])
    return EXIT_DONE if check.bit_exact else EXIT_MISMATCH


# ---- The jobs -------------------------------------------------------------------------------------------------

def run(arguments):
    """``nnaccel run dqn``; returns the exit status (0: every Q-value bit-exact, 1: a mismatch)."""
    start = time.perf_counter()
    if arguments.states_file:
        states, source = load_states_file(arguments.states_file), f"from {arguments.states_file}"
    else:
        states, source = _recorded_states(arguments.states), "recorded Breakout states (models/dqn/data)"
    weights, weights_note = _weights(arguments)
    if arguments.save_weights:
        save_weights(arguments.save_weights, weights)
        print(f"nnaccel: weights written to {arguments.save_weights}")
    if arguments.save_onnx:
        from models.dqn.onnx_export import save_onnx

        save_onnx(arguments.save_onnx, dqn_layers(weights["fc2_w"].shape[1]), weights, name="dqn")
        print(f"nnaccel: the network written as ONNX to {arguments.save_onnx}")
    plan = _compile(arguments, weights)
    accelerator_run = simulate_dqn_plan(arguments, plan, states=states)
    return _report(arguments, plan, weights, weights_note, states, source, accelerator_run, start, job="dqn")


def play(arguments):
    """``nnaccel play``: the host loop on the emulator; returns 0 if every step's action and Q-values matched."""
    from models.dqn.atari import frames_to_states

    start = time.perf_counter()
    _check_game(arguments)
    weights, weights_note = _weights(arguments)
    plan = _compile(arguments, weights)
    accelerator_run = simulate_dqn_plan(arguments, plan, play={"game": arguments.game, "seed": arguments.seed,
                                                       "steps": arguments.steps}, what="steps")
    states = frames_to_states(accelerator_run.frames)
    source = f"{arguments.steps} steps of {arguments.game} (seed {arguments.seed}) chosen by the accelerator"
    return _report(arguments, plan, weights, weights_note, states, source, accelerator_run, start, job="play",
                   extra={"game": arguments.game, "seed": arguments.seed, "steps": arguments.steps})
