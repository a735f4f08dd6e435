"""The DQN jobs: ``nnaccel run dqn`` (Atari states through the simulated accelerator) and ``nnaccel play``.

``run dqn`` compiles the thesis network (:mod:`models.dqn.plan`) for a :class:`hw.dqn.config.DqnConfig`,
builds the accelerator (cached), runs the states in one simulation, checks every Q-value bit for bit
against the golden model (:mod:`models.dqn.golden`) and prints the per-layer table next to the thesis'
Table 5.1.

``play`` scores whole episodes (:mod:`models.dqn.episodes`: one game per seed, epsilon-greedy with seeded
exploration) next to a random policy on the same seeds.  The first ``--rtl-steps`` steps of every episode run
the thesis' host loop in one simulation: the Atari emulator inside the simulation produces each state, the
simulated accelerator picks the action, the emulator steps; every one of those steps is checked bit for bit
against the golden model afterwards.  The golden model, bit-exact with the accelerator and fast, plays the rest
of each episode from where the accelerator left it (the emulator is deterministic: the host replays the
accelerator's actions and checks it sees the same frames).  ``--gif`` draws the first episode.

Weights: by default the network trained for Breakout that ships in ``models/dqn/data/dqn_breakout.npz``
(:mod:`train.dqn`, ``nnaccel train dqn``: imitation of a scripted player that reads the emulator's RAM, with
DAgger; docs/dqn_training.md); ``--weights`` a ``.npz`` in the layout of :mod:`models.dqn.network`;
``--seeded-weights`` the untrained He-uniform initialisation ``seeded_weights(seed=0)``.
"""

import argparse
import json
import time
from dataclasses import dataclass

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.episodes import EVAL_EPSILON, MAX_EPISODE_STEPS
from nnaccel.models.dqn.network import TRAINED_WEIGHTS, check_states, dqn_layers, load_weights, reference_q_values, \
    save_weights, seeded_weights
from nnaccel.models.dqn.plan import SPLIT_MODES, compile_network
from nnaccel.models.shared.float_arith import to_binary32
from nnaccel.models.shared.input_files import InputError, load_single_array

from nnaccel.cli.dqn.board import BOARDS, board_report, compile_config
from nnaccel.cli.dqn.accelerator_run import (DQN_CLOCK_HZ, counter_mismatches, golden_mismatches, layer_rows,
                                             layer_table, q_value_fields, simulate_dqn_plan, timing_notes)
from nnaccel.cli.report import (EXIT_DONE, EXIT_MISMATCH, ToolError, add_json_argument, add_simulator_argument,
                                json_float, non_negative_int, output_file, positive_int, probability, write_json,
                                writing)

__all__ = ["add_arguments", "run", "add_play_arguments", "play", "THESIS_TABLE", "JSON_SCHEMAS"]

JSON_SCHEMAS = {"dqn": "nnaccel.dqn/1", "play": "nnaccel.play/2"}

WEIGHTS_SEED = 0
# Thesis Table 5.1 (SPEC section 1): layer -> (time ms, GFLOPS); 100 MHz, data on chip.
THESIS_TABLE = {"CONV_1": (0.064, 50.0), "CONV_2": (0.039, 33.2), "FC_1": (0.026, 49.8), "FC_2": (0.003, 0.3)}
THESIS_TOTAL = (0.15, 38.6, 15_000)     # ms, GFLOPS, cycles
THESIS_INPUT_CYCLES = 1_800             # 0.018 ms at 100 MHz


# ---- Arguments ------------------------------------------------------------------------------------------------

def _hardware_arguments(parser):
    weights = parser.add_mutually_exclusive_group()
    weights.add_argument("--weights", metavar="FILE", help="weights .npz (float32 arrays conv1_w conv1_b ... fc2_b, "
                         "see models/dqn/network.py); default: the network trained for Breakout, "
                         "models/dqn/data/dqn_breakout.npz")
    weights.add_argument("--seeded-weights", action="store_true",
                         help=f"the untrained seeded He-uniform weights (seed {WEIGHTS_SEED}) instead of the "
                              f"trained ones")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large: every cycle of every run)")
    add_json_argument(parser, "the report (with every Q-value, as a float and as bits)")
    parser.add_argument("--modules", type=positive_int, default=DqnConfig.modules, metavar="N",
                        help=f"matrix modules (power of two; default {DqnConfig.modules})")
    parser.add_argument("--lanes", type=positive_int, default=DqnConfig.lanes, metavar="N",
                        help=f"lanes per module (default {DqnConfig.lanes}); modules x lanes must cover FC_1's "
                             f"256 outputs")
    parser.add_argument("--board", choices=sorted(BOARDS), default=None,
                        help="run on the accelerator built for a board: de1soc = 2 x 4 binary16 MACs sized for the "
                             "DE1-SoC's Cyclone V 5CSEMA5, the weights in the SDRAM model behind its Avalon port "
                             "(every counter checked against the cycle formula with the SDRAM in it); replaces "
                             "--modules/--lanes")
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


def _rtl_steps(text):
    """argparse type of --rtl-steps: a non-negative integer, or 'all' (every step: ``None``)."""
    if text == "all":
        return None
    try:
        return non_negative_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer or 'all', not {text!r}") from None


def add_play_arguments(parser):
    """Options of ``nnaccel play``."""
    parser.add_argument("--episodes", type=positive_int, default=1, metavar="N",
                        help="whole episodes (games) to play and score (default 1)")
    parser.add_argument("--rtl-steps", type=_rtl_steps, default=20, metavar="K",
                        help="the first K steps of every episode run on the simulated accelerator, each checked bit "
                             "for bit against the golden model (default 20; 'all': the accelerator plays the whole "
                             "episode, up to --max-steps; 0: the golden model plays everything)")
    parser.add_argument("--epsilon", type=probability, default=EVAL_EPSILON, metavar="E",
                        help=f"probability of a random action on a step (default {EVAL_EPSILON}, the usual Atari "
                             f"evaluation setting)")
    parser.add_argument("--max-steps", type=positive_int, default=MAX_EPISODE_STEPS, metavar="N",
                        help=f"cut an episode after N agent steps (default {MAX_EPISODE_STEPS:,}: 108,000 frames)")
    parser.add_argument("--game", default="breakout", help="Atari game shipped with ale-py (default breakout)")
    parser.add_argument("--seed", type=int, default=0, metavar="N",
                        help="seed of the first episode (emulator and exploration); episode i uses N + i (default 0)")
    parser.add_argument("--gif", metavar="FILE", type=output_file,
                        help="write an animated GIF of the first episode: the screen, the Q-values as bars, the "
                             "chosen action marked")
    parser.add_argument("--gif-steps", type=positive_int, default=400, metavar="N",
                        help="frames of the GIF: the episode's first N steps (default 400)")
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
    """Open the game in the emulator here, so that a wrong --game or a missing ale-py is said before the build;
    returns the game."""
    from nnaccel.models.dqn.atari import AtariGame

    try:
        return AtariGame(arguments.game, seed=arguments.seed)
    except ValueError as error:
        raise InputError(f"--game {arguments.game}: {error}") from None
    except RuntimeError as error:           # ale-py is not installed
        raise ToolError(str(error)) from None


def _weights(arguments):
    """(weights dict, description for the report)."""
    if arguments.weights:
        return load_weights(arguments.weights), f"from {arguments.weights}"
    if arguments.seeded_weights:
        return seeded_weights(seed=WEIGHTS_SEED), f"seeded He-uniform (models.dqn.network.seeded_weights, seed " \
                                                  f"{WEIGHTS_SEED}; not trained)"
    return load_weights(TRAINED_WEIGHTS), _trained_note()


def _compile(arguments, weights):
    if arguments.board and (arguments.modules, arguments.lanes) != (DqnConfig.modules, DqnConfig.lanes):
        raise InputError(f"--board {arguments.board}: the board's configuration is fixed; leave out --modules and "
                         f"--lanes")
    try:
        config = compile_config(arguments.board) if arguments.board else \
            DqnConfig(modules=arguments.modules, lanes=arguments.lanes)
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
        distance = np.abs(to_binary32(plan.config.fmt, golden.q_values).astype(np.float64) - reference)
        worst_abs = max(worst_abs, float(distance.max()))
        worst_rel = max(worst_rel, float(distance.max() / max(np.abs(reference).max(), np.finfo(np.float64).tiny)))
    return _Check(bit_exact=not mismatches, mismatches=mismatches, goldens=goldens, state_exact=state_exact,
                  float64_max_abs=worst_abs, float64_max_rel=worst_rel)


def _state_rows(run, check, fmt):
    """Per state: the verdict, the accelerator's and the golden model's action and Q-values (bits of ``fmt``)."""
    return [{"state": index, "bit_exact": exact, "action": int(run.actions[index]), "golden_action": golden.action,
             **q_value_fields("", run.q_values[index], fmt), **q_value_fields("golden_", golden.q_values, fmt)}
            for index, (golden, exact) in enumerate(zip(check.goldens, check.state_exact))]


_THESIS = {"name": "thesis", "input": THESIS_INPUT_CYCLES, "total": THESIS_TOTAL}


def _layer_rows(plan, run):
    """:func:`cli.dqn.accelerator_run.layer_rows` with the thesis' time and GFLOPS of each layer."""
    rows = layer_rows(plan, run, DQN_CLOCK_HZ)
    for row in rows:
        row["thesis_ms"], row["thesis_gflops"] = THESIS_TABLE.get(row["name"], (None, None))
    return rows


def _report(arguments, plan, weights, weights_note, states, source, run, start, *, job):
    """Check, print the table and the summary, write the JSON; returns the exit status."""
    status, fields = _check_and_print(arguments, plan, weights, weights_note, states, source, run)
    if arguments.json:
        write_json(arguments.json, {"job": job, **fields, "wall_seconds": time.perf_counter() - start},
                   schema=JSON_SCHEMAS[job])
    return status


def _check_and_print(arguments, plan, weights, weights_note, states, source, run):
    """Check the run against the golden model, print the table and the summary; returns (exit status, the
    report's fields)."""
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
    actions = run.actions.tolist()
    shown = f"actions {actions}" if len(actions) <= 40 else \
        f"actions {str(actions[:40])[:-1]}, ... ({len(actions) - 40} more: --json lists all)]"
    print(f"\n{len(states)} states ({source}): {verdict} against the golden model "
          f"({len(states) * plan.actions} Q-values, {shown})")
    for line in check.mismatches[:20]:
        print(f"    {line}")
    # With weights in external memory the counters are checked against the formula with the memory in it
    # (board_report below); the plan's own prediction leaves the memory out.
    counters = [] if arguments.board else counter_mismatches(plan, run)
    if not arguments.board:
        print(f"counters: {'every pass and TOTAL_CYCLES as the compiler predicted' if not counters else 'MISMATCH'} "
              f"({plan.estimated_cycles:,} cycles predicted)")
    for line in counters[:20]:
        print(f"    {line}")
    print(f"weights: {weights_note}")
    print(f"golden model vs float64 reference: max |dQ| = {check.float64_max_abs:.3g} "
          f"(relative to max |Q|: {check.float64_max_rel:.3g})")
    print(f"simulation: {cycles_per_second:,.0f} simulated cycles per wall second while running "
          f"({float(run.run_wall_seconds.mean()):.2f} s per inference); build {run.build_seconds:.1f} s, "
          f"simulator process {run.run_seconds:.1f} s")
    fields = {
        "simulator": arguments.simulator, "config": {"modules": plan.config.modules, "lanes": plan.config.lanes},
        "states": len(states), "states_source": source, "weights": weights_note,
        "total_cycles": int(run.total_cycles[0]), "total_cycles_per_state": run.total_cycles.tolist(),
        "ideal_cycles": sum(layer.product_cycles for layer in plan.layers),
        "load_cycles": int(run.load_cycles[0]), "bit_exact": check.bit_exact, "counters_as_predicted": not counters,
        "mismatches": check.mismatches + counters,
        "actions": run.actions.tolist(), "golden_actions": check.golden_actions,
        "per_state": _state_rows(run, check, plan.config.fmt), "layers": rows,
        "float64_max_abs": json_float(check.float64_max_abs), "float64_max_rel": json_float(check.float64_max_rel),
        "simulated_cycles_per_second": cycles_per_second, "build_seconds": run.build_seconds,
        "simulation_seconds": run.run_seconds}
    counters_equal = not counters
    if arguments.board:
        counters_equal, fields["board"] = board_report(arguments.board, plan, run, DQN_CLOCK_HZ)
    return (EXIT_DONE if check.bit_exact and counters_equal else EXIT_MISMATCH), fields


# ---- The jobs -------------------------------------------------------------------------------------------------

def run(arguments):
    """``nnaccel run dqn``; returns the exit status (0: every Q-value bit-exact and every counter as predicted, 1: a
    mismatch)."""
    start = time.perf_counter()
    if arguments.states_file:
        states, source = load_states_file(arguments.states_file), f"from {arguments.states_file}"
    else:
        states, source = _recorded_states(arguments.states), "recorded Breakout states (models/dqn/data)"
    weights, weights_note = _weights(arguments)
    if arguments.save_weights:
        with writing("--save-weights", arguments.save_weights):
            save_weights(arguments.save_weights, weights)
        print(f"nnaccel: weights written to {arguments.save_weights}")
    if arguments.save_onnx:
        from nnaccel.models.dqn.onnx_export import save_onnx

        with writing("--save-onnx", arguments.save_onnx):
            save_onnx(arguments.save_onnx, dqn_layers(weights["fc2_w"].shape[1]), weights, name="dqn")
        print(f"nnaccel: the network written as ONNX to {arguments.save_onnx}")
    plan = _compile(arguments, weights)
    accelerator_run = simulate_dqn_plan(arguments, plan, states=states)
    return _report(arguments, plan, weights, weights_note, states, source, accelerator_run, start, job="dqn")


def _trained_note():
    """How the shipped weights were made, from their provenance file (the run's phase when they were selected)."""
    provenance = json.loads(TRAINED_WEIGHTS.with_suffix(".json").read_text())
    selected, settings = provenance["selected"], provenance["settings"]
    method = {"pretrain": "imitation of a scripted player that reads the ball and paddle from the emulator's RAM",
              "dagger": "imitation of a scripted player that reads the ball and paddle from the emulator's RAM, "
                        "then DAgger",
              "finetune": "imitation of a scripted player that reads the ball and paddle from the emulator's RAM, "
                          "DAgger, then DQN fine-tuning"}[selected["phase"]]
    if settings.get("loss") == "cross_entropy":
        method += " (behaviour cloning: cross-entropy on its actions)"
    if settings.get("initial_weights"):
        method += ", starting from an earlier run's weights"
    return (f"trained for Breakout (models/dqn/data/{TRAINED_WEIGHTS.name}): {method}; selected by validation after "
            f"{selected['steps']:,} agent steps; docs/dqn_training.md")


def _rtl_openings(arguments, plan, explorations):
    """The first ``--rtl-steps`` steps of every episode in one simulation, with the episodes' first exploration
    draws: (AcceleratorRun, per episode its slice of the run's steps, per episode the draws); the run is None and
    the slices empty with --rtl-steps 0."""
    steps = arguments.rtl_steps
    explore = [[exploration.next() for _ in range(steps)] for exploration in explorations]
    if steps == 0:
        return None, [slice(0, 0)] * len(explorations), explore
    episodes = [{"seed": arguments.seed + index, "explore": [-1 if action is None else action for action in draws]}
                for index, draws in enumerate(explore)]
    run = simulate_dqn_plan(arguments, plan, play={"game": arguments.game, "episodes": episodes}, what="steps")
    ends = np.cumsum(run.episode_steps).tolist()
    return run, [slice(end - count, end) for end, count in zip(ends, run.episode_steps.tolist())], explore


def _play_episodes(arguments, plan, minimal_actions, action_names):
    """Every episode: the accelerator's opening, then the golden model; and the random policy on the same seed.
    Returns (AcceleratorRun or None, per episode (Episode, random Episode, opening slice), EpisodeGif or None)."""
    from nnaccel.models.dqn.atari import AtariGame
    from nnaccel.models.dqn.episode_gif import EpisodeGif
    from nnaccel.models.dqn.episodes import Exploration, GoldenPolicy, play_episode

    seeds = [arguments.seed + index for index in range(arguments.episodes)]
    explorations = [Exploration(seed, arguments.epsilon, minimal_actions) for seed in seeds]
    run, openings, explore = _rtl_openings(arguments, plan, explorations)
    gif = EpisodeGif(arguments.game, action_names) if arguments.gif else None
    played = []
    for index, (seed, exploration, steps) in enumerate(zip(seeds, explorations, openings)):
        opening = [(int(run.actions[step]) if draw is None else draw, draw is not None)
                   for step, draw in zip(range(steps.start, steps.stop), explore[index])]
        policy = GoldenPolicy(plan)
        gif_steps = []

        def record(game, action, explored, *, policy=policy, steps=steps, gif_steps=gif_steps):
            step = len(gif_steps)
            if step < arguments.gif_steps:
                on_rtl = step < steps.stop - steps.start
                q_bits = run.q_values[steps.start + step] if on_rtl else policy.q_values[-1]
                q_bits = to_binary32(plan.config.fmt, q_bits).view(np.uint32)     # the GIF shows binary32
                gif_steps.append((game.screen(), q_bits, action, explored, "RTL" if on_rtl else "golden"))

        episode = play_episode(AtariGame(arguments.game, seed=seed), policy, exploration, seed=seed,
                               max_steps=arguments.max_steps, opening=opening,
                               opening_frames=run.frames[steps] if run is not None else None,
                               on_step=record if gif is not None and index == 0 else None)
        random = play_episode(AtariGame(arguments.game, seed=seed), None, Exploration(seed, 1.0, minimal_actions),
                              seed=seed, max_steps=arguments.max_steps)
        for step, (screen, q_bits, action, explored, source) in enumerate(gif_steps):
            gif.add(screen, q_bits, action, explored=explored, source=source, score=sum(episode.rewards[:step]))
        played.append((episode, random, steps))
        print(f"episode {index + 1} of {arguments.episodes} (seed {seed}): score {episode.score:g} in "
              f"{episode.steps} steps ({steps.stop - steps.start} on the accelerator"
              f"{'' if episode.over else f'; cut at --max-steps {arguments.max_steps}'}); random policy "
              f"{random.score:g} in {random.steps} steps", flush=True)
    return run, played, gif


def _episode_rows(played):
    """Per episode: seed, score, steps, whether the game ended, steps on the accelerator, steps the exploration
    chose, every action; and the random policy's episode on the same seed."""
    return [{"seed": episode.seed, "score": episode.score, "steps": episode.steps, "game_over": episode.over,
             "rtl_steps": steps.stop - steps.start, "explored_steps": sum(episode.explored),
             "actions": episode.actions,
             "random_policy": {"score": random.score, "steps": random.steps, "game_over": random.over}}
            for episode, random, steps in played]


def play(arguments):
    """``nnaccel play``: scored episodes, their openings on the simulated accelerator; returns 0 if every simulated
    step's Q-values and action matched the golden model (1 otherwise)."""
    from nnaccel.models.dqn.atari import frames_to_states

    start = time.perf_counter()
    game = _check_game(arguments)
    whole_episodes = arguments.rtl_steps is None or arguments.rtl_steps >= arguments.max_steps
    arguments.rtl_steps = arguments.max_steps if whole_episodes else arguments.rtl_steps
    weights, weights_note = _weights(arguments)
    plan = _compile(arguments, weights)
    last = plan.layers[-1]
    if last.out_channels != plan.actions and not plan.config.argmax_tiles:
        # Without argmax_tiles the accelerator's ACTION is the argmax over the last pass's outputs: a tile's only.
        where = f"--board {arguments.board}" if arguments.board else \
            f"--modules {arguments.modules} --lanes {arguments.lanes}"
        raise InputError(f"{where}: FC_2 runs in channel tiles here ({last.name} is the last pass), and the "
                         f"accelerator's ACTION covers the last tile only: play needs a configuration whose last "
                         f"pass holds all {plan.actions} actions")
    run, played, gif = _play_episodes(arguments, plan, game.minimal_actions, game.action_names)
    scores = [episode.score for episode, _, _ in played]
    random_scores = [random.score for _, random, _ in played]
    mean, random_mean = float(np.mean(scores)), float(np.mean(random_scores))
    seeds = f"seed {arguments.seed}" if arguments.episodes == 1 else \
        f"seeds {arguments.seed}..{arguments.seed + arguments.episodes - 1}"
    play_fields = {
        "game": arguments.game, "episodes": arguments.episodes, "first_seed": arguments.seed,
        "epsilon": arguments.epsilon, "max_steps": arguments.max_steps, "rtl_steps": arguments.rtl_steps,
        "weights": weights_note, "scores": scores, "mean_score": mean, "random_scores": random_scores,
        "random_mean_score": random_mean, "per_episode": _episode_rows(played)}
    status, accelerator = EXIT_DONE, None
    if run is not None:
        simulated = sum(steps.stop - steps.start for _, _, steps in played)
        source = f"the first {simulated} steps of {arguments.episodes} {arguments.game} episode(s) ({seeds}), " \
                 f"actions chosen by the accelerator"
        status, accelerator = _check_and_print(arguments, plan, weights, weights_note,
                                               frames_to_states(run.frames), source, run)
    else:
        print(f"weights: {weights_note}")
    if gif is not None:
        with writing("--gif", arguments.gif):
            gif.save(arguments.gif)
        print(f"nnaccel: GIF of episode 1 ({len(gif)} steps) written to {arguments.gif}")
    ratio = f" ({mean / random_mean:.1f} times the random policy's)" if random_mean > 0 else ""
    chooser = ("every step on the accelerator" if whole_episodes else
               f"the first {arguments.rtl_steps} steps of each on the accelerator, the rest chosen by the golden "
               f"model" if arguments.rtl_steps else "every step chosen by the golden model")
    print(f"\n{arguments.game}, {arguments.episodes} episode(s) ({seeds}, epsilon {arguments.epsilon:g}, at most "
          f"{arguments.max_steps:,} steps each; {chooser}):")
    print(f"  network:       scores {' '.join(f'{score:g}' for score in scores)}, mean {mean:.2f}{ratio}")
    print(f"  random policy: scores {' '.join(f'{score:g}' for score in random_scores)}, mean {random_mean:.2f}")
    if arguments.json:
        write_json(arguments.json, {"job": "play", **play_fields,
                                    "bit_exact": accelerator["bit_exact"] if accelerator else None,
                                    "accelerator": accelerator, "wall_seconds": time.perf_counter() - start},
                   schema=JSON_SCHEMAS["play"])
    return status
