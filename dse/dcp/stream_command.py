"""``nnaccel dse stream``: DCP on the external-weight mapping space of the thesis network on the DE1-SoC
configuration (``dse.rtl.stream_space``), against random search, TPE and NSGA-II at equal numbers of cost-model
evaluations over several seeds, and against the best mapping of an exhaustive search; ``--simulate`` runs DCP's
latency answer on the simulated accelerator (Verilator, the SDRAM model inside) and checks it bit for bit and every
counter against the cycle formula.

The costs (the exact cycle formula with the SDRAM model in it takes about a second per mapping) are kept in a cache
file per space (``~/.cache/nnaccel/dse/stream_<digest>.json``), so the exhaustive search is paid once; every
searcher still counts each distinct mapping it asks for as one evaluation.
"""

import hashlib
import json
import time

import numpy as np

from nnaccel.models.shared.cache import cache_root
from nnaccel.models.shared.input_files import InputError

__all__ = ["add_stream_parser", "run_stream", "METHODS"]

METHODS = ("DCP", "random", "TPE", "NSGA-II")
SUMMARY = ("The thesis network on the DE1-SoC configuration with its weights in the SDRAM model: the mapping space "
           "(channel tiles, column blocks, position ranges, loop order, K-splits), DCP against random search, TPE "
           "and NSGA-II at equal cost-model evaluations over several seeds, the best mapping of an exhaustive "
           "search, and with --simulate DCP's answer on Verilator.")


def add_stream_parser(commands, *, option_types):
    """The ``stream`` subcommand of ``commands`` (an argparse subparsers object) with its options; returns it.
    ``option_types`` gives the CLI floor's argparse types."""
    parser = commands.add_parser("stream", description=SUMMARY,
                                 help="DCP on the external-weight mapping space (DE1-SoC, the thesis network)")
    parser.add_argument("--objective", choices=("latency", "energy", "both"), default="both",
                        help="what to minimise (default both, one search each)")
    parser.add_argument("--seeds", type=option_types.positive_int, default=5, help="seeds per searcher (default 5)")
    parser.add_argument("--budget", type=option_types.positive_int, default=30,
                        help="cost-model evaluations per search (default 30)")
    parser.add_argument("--samples", type=option_types.positive_int, default=120,
                        help="mappings the predictor is trained on, a quarter of them held out (default 120)")
    parser.add_argument("--simulate", action="store_true",
                        help="run DCP's latency answer (seed 0) on Verilator with the SDRAM model: bit-exact and "
                             "every counter against the formula (a build of minutes, about 15 s per inference)")
    option_types.add_json_argument(parser)
    return parser


def _cache_path(space):
    key = json.dumps([repr(space.config), repr(space.timing), [repr(layer) for layer in space.layers]])
    return cache_root() / "dse" / f"stream_{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _load_known(path):
    if not path.exists():
        return {}
    return {tuple(row[0]): row[1] for row in json.loads(path.read_text())}


def _save_known(path, known):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([[list(indices), cost] for indices, cost in known.items()]))


def _summary(values, best):
    values = np.asarray(values, dtype=np.float64)
    median = float(np.median(values))
    return {"median": median, "min": float(values.min()), "max": float(values.max()),
            "median_above_best_percent": 100 * (median / best - 1), "values": values.tolist()}


def _compare(space, objective, known, predictor, training, arguments, best):
    """Every searcher over the seeds: ``{method: summary}`` and DCP's results."""
    from nnaccel.dse.dcp import stream_search

    rows, dcp_results = {method: [] for method in METHODS}, []
    wide = {method: [] for method in METHODS[1:]}       # the baselines given DCP's training samples too
    budget, extra = arguments.budget, len(training)
    for seed in range(arguments.seeds):
        dcp = stream_search.dcp_search(space, predictor, training, objective, known, budget=budget, seed=seed,
                                       progress=False)
        dcp_results.append(dcp)
        rows["DCP"].append(dcp.objective)
        for method, run in (("random", lambda: stream_search.random_search(space, objective, known,
                                                                          budget=budget + extra, seed=seed)),
                            ("TPE", lambda: stream_search.optuna_search(space, objective, known, sampler="tpe",
                                                                        budget=budget + extra, seed=seed)),
                            ("NSGA-II", lambda: stream_search.optuna_search(space, objective, known,
                                                                            sampler="nsga2", budget=budget + extra,
                                                                            seed=seed))):
            result = run()
            rows[method].append(result.best_within(budget))
            wide[method].append(result.objective)
        print(f"  {objective} seed {seed}: " + ", ".join(f"{method} {_shown(objective, values[-1])}"
                                                      for method, values in rows.items()), flush=True)
    summary = {method: _summary(values, best) for method, values in rows.items()}
    summary.update({f"{method} (+{extra} evaluations)": _summary(values, best) for method, values in wide.items()})
    return summary, dcp_results


def _shown(objective, value):
    return f"{value:,.0f} cycles" if objective == "latency" else f"{value / 1e6:,.3f} uJ"


def _print_table(objective, summary, best, budget):
    print(f"\n{objective}, {budget} cost-model evaluations per search; best known {_shown(objective, best)}:")
    print(f"  {'searcher':<28} {'median':>16} {'min':>16} {'max':>16} {'median vs best':>15}")
    for method, row in summary.items():
        print(f"  {method:<28} {_shown(objective, row['median']):>16} {_shown(objective, row['min']):>16} "
              f"{_shown(objective, row['max']):>16} {row['median_above_best_percent']:>+14.4f}%")


def _simulate(space, indices):
    """Compile the mapping with the trained Breakout weights, run one recorded state on Verilator with the SDRAM
    model inside, check Q-values and counters: a dict for the report."""
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.models.dqn.atari import recorded_states
    from nnaccel.models.dqn.golden import golden_forward
    from nnaccel.models.dqn.network import TRAINED_WEIGHTS, load_weights
    from nnaccel.models.dqn.plan import COUNTERS
    from nnaccel.models.shared.tile_port import TilePortModel
    from nnaccel.testbench.dqn.host import run_on_accelerator

    choices = [layer_choices[index] for layer_choices, index in zip(space.choices, indices)]
    stream, _, plan = space.compile(choices, load_weights(TRAINED_WEIGHTS))
    states = recorded_states(1)
    started = time.perf_counter()
    run = run_on_accelerator(DqnAccelerator(config=space.config), stream, states, simulator="verilator",
                             max_cycles=50_000_000, sdram_timing=space.timing)
    golden = golden_forward(plan, states[0])
    exact = bool(np.array_equal(run.q_values[0], golden.q_values))
    predicted = space.latency(stream, int(run.start_cycles[0]),
                              TilePortModel(timing=space.timing, port_bits=space.config.external_bus_bits))
    mismatches = [] if int(run.total_cycles[0]) == predicted.total else \
        [f"TOTAL_CYCLES {int(run.total_cycles[0])}, formula {predicted.total}"]
    for layer, measured, expected in zip(stream.plan.layers, run.layer_counters[0], predicted.passes):
        mismatches += [f"{layer.name} {name} {int(value)}, formula {expected[name]}"
                       for name, value in zip(COUNTERS, measured) if int(value) != expected[name]]
    return {"mapping": space.describe(choices), "bit_exact": exact, "q_values": len(golden.q_values),
            "start_cycle": int(run.start_cycles[0]), "total_cycles": int(run.total_cycles[0]),
            "formula_total_cycles": predicted.total, "counters": 1 + len(COUNTERS) * len(stream.plan.layers),
            "counter_mismatches": mismatches, "passes": len(stream.plan.layers), "loads": len(stream.loads),
            "build_seconds": run.build_seconds, "seconds": time.perf_counter() - started}


def run_stream(arguments):
    from nnaccel.dse.dcp import stream_search
    from nnaccel.dse.rtl.stream_space import StreamSpace

    import torch

    if arguments.simulate and arguments.objective == "energy":
        raise InputError("--simulate: runs DCP's latency answer; give --objective latency or both")
    torch.set_num_threads(1)
    started = time.perf_counter()
    space = StreamSpace()
    counts, total = space.size()
    print(f"space: {space.config.module_name} (external weights, DE1-SoC SDRAM model), the thesis network; choices "
          f"per layer " + ", ".join(f"{layer.name} {count}" for layer, count in zip(space.layers, counts))
          + f": {total:,} network mappings before the shared limits")
    path = _cache_path(space)
    known = _load_known(path)
    objectives = ("latency", "energy") if arguments.objective == "both" else (arguments.objective,)
    best = {objective: stream_search.exhaustive_search(space, objective, known) for objective in objectives}
    _save_known(path, known)
    legal = sum(cost is not None for cost in known.values())
    default = known[tuple(0 for _ in counts)]
    print(f"legal: {legal:,} of {total:,} (the descriptor table's {space.config.max_layers} passes and the load "
          f"table's {space.config.weight_loads} loads); the compiler's default: {default['latency']:,} cycles, "
          f"{default['energy'] / 1e6:,.2f} uJ")
    for objective, result in best.items():
        print(f"exhaustive best {objective}: {_shown(objective, result.objective)} "
              f"({space.describe([c[i] for c, i in zip(space.choices, result.indices)])})")
    predictor, accuracy, training = stream_search.train_predictor(space, known, samples=arguments.samples)
    print(f"predictor: {accuracy['train']} training mappings, {accuracy['held_out']} held out: mean relative error "
          f"latency {100 * accuracy['latency_mre']:.3f} %, energy {100 * accuracy['energy_mre']:.3f} %")
    report = {"job": "dse stream", "space": {"config": space.config.module_name, "choices_per_layer": counts,
                                             "network_mappings": total, "legal": legal},
              "default": default, "predictor": accuracy, "budget": arguments.budget, "seeds": arguments.seeds,
              "objectives": {}}
    answers = {}
    for objective in objectives:
        summary, dcp_results = _compare(space, objective, known, predictor, training, arguments,
                                        best[objective].objective)
        _print_table(objective, summary, best[objective].objective, arguments.budget)
        answers[objective] = dcp_results[0]
        report["objectives"][objective] = {
            "best_known": best[objective].objective, "best_known_mapping": [
                space.choices[layer][index].to_list() for layer, index in enumerate(best[objective].indices)],
            "searchers": summary, "dcp_answers": [[space.choices[layer][index].to_list()
                                                   for layer, index in enumerate(result.indices)]
                                                  for result in dcp_results]}
    _save_known(path, known)
    if arguments.simulate and "latency" in answers:
        print("\nsimulating DCP's latency answer (seed 0) on Verilator with the SDRAM model ...", flush=True)
        simulation = _simulate(space, answers["latency"].indices)
        verdict = "bit-exact" if simulation["bit_exact"] else "MISMATCH"
        print(f"simulation: {simulation['mapping']}: {verdict} ({simulation['q_values']} Q-values); counters: "
              f"{'all' if not simulation['counter_mismatches'] else 'NOT all'} {simulation['counters']} equal to "
              f"the formula; TOTAL_CYCLES {simulation['total_cycles']:,} (START on cycle "
              f"{simulation['start_cycle']:,}); {simulation['passes']} passes, {simulation['loads']} loads")
        for line in simulation["counter_mismatches"][:20]:
            print(f"    {line}")
        report["simulation"] = simulation
    report["seconds"] = time.perf_counter() - started
    return report
