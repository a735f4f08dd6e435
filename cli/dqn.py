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
from models.dqn.golden import golden_forward
from models.dqn.network import check_states, dqn_layers, load_weights, reference_q_values, save_weights, \
    seeded_weights
from models.dqn.plan import SPLIT_MODES, compile_network
from models.shared.input_files import InputError, load_arrays

from cli.report import (EXIT_DONE, EXIT_MISMATCH, ToolError, add_json_argument, add_simulator_argument, json_float,
                        output_file, positive_int, progress, write_json)

__all__ = ["add_arguments", "run", "add_play_arguments", "play", "THESIS_TABLE", "JSON_SCHEMAS"]

JSON_SCHEMAS = {"dqn": "nnaccel.dqn/1", "play": "nnaccel.play/1"}

CLOCK_HZ = 100e6
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
    arrays = load_arrays(path, expected=_STATES_LAYOUT)
    if len(arrays) != 1:
        raise InputError(f"{path}: holds {len(arrays)} arrays ({', '.join(arrays)}) ({_STATES_LAYOUT})")
    try:
        return check_states(next(iter(arrays.values())))
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


# ---- Simulation with progress ---------------------------------------------------------------------------------

def _simulate(arguments, plan, *, states=None, play=None, what="states"):
    from hw.dqn.accelerator import DqnAccelerator
    from testbench.dqn.host import run_on_accelerator

    print(f"nnaccel: building {plan.config.modules} x {plan.config.lanes} MACs on {arguments.simulator} "
          f"(cached after the first run) and simulating ...", flush=True)
    with progress(what, before_first="weight load"):
        return run_on_accelerator(DqnAccelerator(config=plan.config), plan, states, play=play,
                                  simulator=arguments.simulator, waves=arguments.waves or None)


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
    mismatches, goldens, state_exact, worst_abs, worst_rel = [], [], [], 0.0, 0.0
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        goldens.append(golden)
        found = len(mismatches)
        wrong = np.flatnonzero(run.q_values[index] != golden.q_values)
        for output in wrong[:4]:
            mismatches.append(f"state {index}: Q[{output}] = {run.q_values[index][output]:08X}, "
                              f"golden {golden.q_values[output]:08X}")
        if len(wrong) > 4:
            mismatches.append(f"state {index}: ... {len(wrong)} of {len(golden.q_values)} Q-values differ")
        if (run.actions[index], run.action_values[index]) != (golden.action, golden.action_value):
            mismatches.append(f"state {index}: ACTION {run.actions[index]} (value {run.action_values[index]:08X}), "
                              f"golden {golden.action} ({golden.action_value:08X})")
        state_exact.append(len(mismatches) == found)
        reference = reference_q_values(weights, state)
        distance = np.abs(golden.q_values.view(np.float32).astype(np.float64) - reference)
        worst_abs = max(worst_abs, float(distance.max()))
        worst_rel = max(worst_rel, float(distance.max() / max(np.abs(reference).max(), np.finfo(np.float64).tiny)))
    return _Check(bit_exact=not mismatches, mismatches=mismatches, goldens=goldens, state_exact=state_exact,
                  float64_max_abs=worst_abs, float64_max_rel=worst_rel)


def _q_value_fields(prefix, bits):
    """A state's Q-values as floats and as binary32 bit patterns (hex), under ``prefix``."""
    bits = np.asarray(bits, dtype=np.uint32)
    return {f"{prefix}q_values": [json_float(value) for value in bits.view(np.float32)],
            f"{prefix}q_bits": [f"0x{int(word):08X}" for word in bits]}


def _state_rows(run, check):
    """Per state: the verdict, the accelerator's and the golden model's action and Q-values."""
    return [{"state": index, "bit_exact": exact, "action": int(run.actions[index]), "golden_action": golden.action,
             **_q_value_fields("", run.q_values[index]), **_q_value_fields("golden_", golden.q_values)}
            for index, (golden, exact) in enumerate(zip(check.goldens, check.state_exact))]


def _gflops(macs, cycles):
    return 2 * macs * CLOCK_HZ / cycles / 1e9 if cycles else 0.0


def _layer_rows(plan, run):
    """Per network layer: the counters of the first inference summed over its passes, with time, GFLOPS and
    MAC utilisation derived; ``passes`` lists the passes of a layer the compiler split."""
    counters = run.layer_counters[0]
    macs_per_cycle = plan.config.macs
    rows = {}
    for layer, (cycles, products, stalls, drains) in zip(plan.layers, counters):
        row = rows.setdefault(layer.network_layer, {
            "name": layer.network_layer, "cycles": 0, "product_cycles": 0, "ideal_cycles": 0, "stall_cycles": 0,
            "drain_cycles": 0, "macs": 0, "passes": []})
        counted = {"cycles": int(cycles), "product_cycles": int(products), "ideal_cycles": layer.product_cycles,
                   "stall_cycles": int(stalls), "drain_cycles": int(drains)}
        for key, value in counted.items():
            row[key] += value
        row["macs"] += layer.ideal_macs
        row["passes"].append({"name": layer.name, **counted})
    for row in rows.values():
        cycles, thesis = row["cycles"], THESIS_TABLE.get(row["name"], (None, None))
        row.update({"time_ms": cycles / CLOCK_HZ * 1e3, "gflops": _gflops(row["macs"], cycles),
                    "mac_utilisation": row["macs"] / (cycles * macs_per_cycle) if cycles else 0.0,
                    "thesis_ms": thesis[0], "thesis_gflops": thesis[1]})
    return list(rows.values())


def _table(plan, run, rows):
    def thesis(value, digits):
        return f"{value:.{digits}f}" if value is not None else "-"

    def counts(name, row):
        return (f"{name:<12}{row['cycles']:>8}{row['ideal_cycles']:>8}{row['stall_cycles']:>8}"
                f"{row['drain_cycles']:>7}")

    header = (f"{'layer':<12}{'cycles':>8}{'ideal':>8}{'stalls':>8}{'drain':>7}{'ms':>8}{'GFLOPS':>8}{'MAC use':>9}  |"
              f"{'thesis ms':>10}{'GFLOPS':>8}")
    lines = [header, "-" * len(header)]
    load = int(run.load_cycles[0])
    lines.append(f"{'INPUT':<12}{load:>8}{'':>8}{'':>8}{'':>7}{load / CLOCK_HZ * 1e3:>8.4f}{'-':>8}{'-':>9}  |"
                 f"{THESIS_INPUT_CYCLES / CLOCK_HZ * 1e3:>10.3f}{'-':>8}")
    for row in rows:
        lines.append(f"{counts(row['name'], row)}{row['time_ms']:>8.4f}"
                     f"{row['gflops']:>8.1f}{row['mac_utilisation']:>9.1%}  |{thesis(row['thesis_ms'], 3):>10}"
                     f"{thesis(row['thesis_gflops'], 1):>8}")
        if len(row["passes"]) > 1:
            for part in row["passes"]:
                lines.append(counts("  " + (part["name"][len(row["name"]):].strip() or "main"), part))
    total = int(run.total_cycles[0])
    macs = sum(layer.ideal_macs for layer in plan.layers)
    lines.append("-" * len(header))
    lines.append(f"{'total':<12}{total:>8}{sum(r['ideal_cycles'] for r in rows):>8}{'':>8}{'':>7}"
                 f"{total / CLOCK_HZ * 1e3:>8.4f}{_gflops(macs, total):>8.1f}"
                 f"{macs / (total * plan.config.macs):>9.1%}  |{THESIS_TOTAL[0]:>10.3f}{THESIS_TOTAL[1]:>8.1f}")
    lines.append(f"(cycles: TOTAL_CYCLES and the per-pass counters of the first inference; a split layer's passes are "
                 f"listed under it (main, tail / partials: partial sums on idle modules, sum: their reduction); "
                 f"ideal = groups x (products + 1); stalls = cycles a product waited for the writer or the taps; "
                 f"drain = cycles at a pass's end waiting for its last writes; thesis total {THESIS_TOTAL[2]:,} "
                 f"cycles; input {load} cycles vs the thesis' {THESIS_INPUT_CYCLES:,})")
    return lines


def _timing_notes(plan, run):
    """Lines about anything data-dependent in the timing (there should be none) or off the analytic count."""
    notes = []
    if len(set(run.total_cycles.tolist())) > 1:
        notes.append(f"note: TOTAL_CYCLES differs between states: {sorted(set(run.total_cycles.tolist()))}")
    for layer, products in zip(plan.layers, run.layer_counters[0][:, 1]):
        if products != layer.product_cycles:
            notes.append(f"note: {layer.name} took products on {products} cycles; the mapping needs "
                         f"{layer.product_cycles}")
    return notes


def _report(arguments, plan, weights, weights_note, states, source, run, start, *, job, extra=None):
    """Check, print the table and the summary, write the JSON; returns the exit status."""
    print("nnaccel: checking every Q-value against the golden model ...", flush=True)
    check = _check(plan, weights, states, run)
    rows = _layer_rows(plan, run)
    print()
    print("\n".join(_table(plan, run, rows)))
    for line in _timing_notes(plan, run):
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
        states, source = _recorded_states(arguments.states), "recorded Breakout states (models/data)"
    weights, weights_note = _weights(arguments)
    if arguments.save_weights:
        save_weights(arguments.save_weights, weights)
        print(f"nnaccel: weights written to {arguments.save_weights}")
    plan = _compile(arguments, weights)
    accelerator_run = _simulate(arguments, plan, states=states)
    return _report(arguments, plan, weights, weights_note, states, source, accelerator_run, start, job="dqn")


def play(arguments):
    """``nnaccel play``: the host loop on the emulator; returns 0 if every step's action and Q-values matched."""
    from models.dqn.atari import frames_to_states

    start = time.perf_counter()
    _check_game(arguments)
    weights, weights_note = _weights(arguments)
    plan = _compile(arguments, weights)
    accelerator_run = _simulate(arguments, plan, play={"game": arguments.game, "seed": arguments.seed,
                                                       "steps": arguments.steps}, what="steps")
    states = frames_to_states(accelerator_run.frames)
    source = f"{arguments.steps} steps of {arguments.game} (seed {arguments.seed}) chosen by the accelerator"
    return _report(arguments, plan, weights, weights_note, states, source, accelerator_run, start, job="play",
                   extra={"game": arguments.game, "seed": arguments.seed, "steps": arguments.steps})
