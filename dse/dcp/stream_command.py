"""``nnaccel dse stream``: DCP on the external-weight mapping space (``dse.rtl.stream_space``) of the thesis
network on the DE1-SoC configuration or of an MLPerf Tiny model (``--model kws|ad``) on the configuration ``run
mlperf-tiny --board de1soc`` sizes for it (in binary32), against random search, TPE and NSGA-II at equal numbers
of cost-model evaluations over several seeds (``--dcp transfer``, the default: DCP with the predictor trained once on
the other networks, ``dse.dcp.stream_transfer``, its whole budget searching, the predictor's own training
evaluations reported apart; ``--dcp counted``: its predictor trained on ``--samples`` of the network's own mappings
inside its budget; ``--from-compiler``: every searcher's first evaluation is the compiler's mapping), and against
the best known mapping (an exhaustive search where the space has at most :data:`EXHAUSTIVE_LIMIT` mappings, else
coordinate descent from the compiler's mapping and DCP's best answer; the best of that and every searcher's
answer); ``--simulate`` runs DCP's latency answer on the simulated accelerator (Verilator, the SDRAM model inside)
and checks it bit for bit and every counter against the cycle formula.

The costs (the exact cycle formula with the SDRAM model in it takes about a second per mapping) are kept in a cache
file per space (``~/.cache/nnaccel/dse/stream_<digest>.json``), so the best-known search is paid once; every
searcher still counts each distinct mapping it asks for as one evaluation.
"""

import hashlib
import json
import time

import numpy as np

from nnaccel.models.shared.cache import cache_root
from nnaccel.models.shared.input_files import InputError

__all__ = ["add_stream_parser", "check_arguments", "stream_network", "run_stream", "cache_path", "load_known",
           "save_known", "METHODS", "MODELS", "STREAM_TABLE_ROOM"]

METHODS = ("DCP", "random", "TPE", "NSGA-II")
MODELS = ("thesis", "kws", "ad")
EXHAUSTIVE_LIMIT = 5_000    # network mappings: above it the best known is coordinate descent's
STREAM_TABLE_ROOM = 4       # an MLPerf Tiny model's space: descriptor and load tables 4 x what its default needs
SUMMARY = ("A network on the DE1-SoC configuration with its weights in the SDRAM model (the thesis network or an "
           "MLPerf Tiny model): the mapping space (channel tiles, column blocks, position ranges, loop order, "
           "K-splits), DCP (its predictor trained once on other networks, or on mappings counted in its budget) "
           "against random search, TPE and NSGA-II at equal cost-model evaluations over several seeds, the best "
           "known mapping (exhaustive where the space is small, else coordinate descent), and with --simulate DCP's "
           "answer on Verilator.")


def add_stream_parser(commands, *, option_types):
    """The ``stream`` subcommand of ``commands`` (an argparse subparsers object) with its options; returns it.
    ``option_types`` gives the CLI floor's argparse types."""
    parser = commands.add_parser("stream", description=SUMMARY,
                                 help="DCP on the external-weight mapping space (DE1-SoC: the thesis network or an "
                                      "MLPerf Tiny model)")
    parser.add_argument("--model", choices=MODELS, default="thesis",
                        help="the network: the thesis' (default) or an MLPerf Tiny model on the configuration "
                             "'nnaccel run mlperf-tiny --board de1soc' builds for it")
    parser.add_argument("--dir", metavar="DIR",
                        help="the MLPerf Tiny folder (default $NNACCEL_MLPERF_TINY_DIR or ../shared/mlperf_tiny)")
    parser.add_argument("--objective", choices=("latency", "energy", "both"), default="both",
                        help="what to minimise (default both, one search each)")
    parser.add_argument("--seeds", type=option_types.positive_int, default=5, help="seeds per searcher (default 5)")
    parser.add_argument("--budget", type=option_types.positive_int, default=40,
                        help="cost-model evaluations per search, DCP's training mappings included (default 40)")
    parser.add_argument("--dcp", choices=("transfer", "counted"), default=None,
                        help="DCP's predictor: trained once on the other networks and shipped (its training "
                             "evaluations reported apart), or trained on --samples of this network's mappings "
                             "inside DCP's budget (default: transfer where a predictor trained without --model "
                             "ships, else counted)")
    parser.add_argument("--samples", type=option_types.positive_int, default=16,
                        help="with --dcp counted: of DCP's budget, the mappings its predictor is trained on "
                             "(default 16)")
    parser.add_argument("--from-compiler", action="store_true",
                        help="every searcher (DCP and the baselines) costs the compiler's mapping first")
    parser.add_argument("--held-out", type=option_types.non_negative_int, default=40, metavar="N",
                        help="with --dcp transfer: N mappings of the network (costed apart from every search) "
                             "on which the predictor's error is measured before any search (default 40)")
    parser.add_argument("--simulate", action="store_true",
                        help="run DCP's latency answer (seed 0) on Verilator with the SDRAM model: bit-exact and "
                             "every counter against the formula (a build of minutes, about 15 s per inference)")
    option_types.add_json_argument(parser)
    return parser


def cache_path(space):
    """The cost cache file of ``space`` (keyed by its configuration, memory, layers and choices)."""
    key = json.dumps([repr(space.config), repr(space.timing), [repr(layer) for layer in space.layers],
                      [[choice.to_list() for choice in choices] for choices in space.choices]])
    return cache_root() / "dse" / f"stream_{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def load_known(path):
    """The costs kept in ``path``: index tuples -> cost dicts (None: illegal)."""
    if not path.exists():
        return {}
    return {tuple(row[0]): row[1] for row in json.loads(path.read_text())}


def save_known(path, known):
    """``known`` into ``path`` with what the file holds already (another process costing the same space may have
    added to it; the folder made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    merged = load_known(path)
    for indices, cost in known.items():     # a cost with the latency beats one without
        if indices not in merged or len(cost or {}) >= len(merged[indices] or {}):
            merged[indices] = cost
    path.write_text(json.dumps([[list(indices), cost] for indices, cost in merged.items()]))


def _summary(values, best):
    values = np.asarray(values, dtype=np.float64)
    median = float(np.median(values))
    return {"median": median, "min": float(values.min()), "max": float(values.max()),
            "median_above_best_percent": 100 * (median / best - 1), "values": values.tolist()}


def _compare(space, objective, known, arguments, path, predictor):
    """Every searcher over the seeds at ``arguments.budget`` evaluations each (with ``--dcp counted`` DCP's
    predictor-training mappings among them; else DCP searches with ``predictor``, trained on other networks), the
    cost cache saved to ``path`` after each seed: ``({method: [objective per seed]}, DCP's results)``."""
    from nnaccel.dse.dcp import stream_search, stream_transfer

    rows, dcp_results, budget = {method: [] for method in METHODS}, [], arguments.budget
    start = tuple(0 for _ in space.choices) if arguments.from_compiler else None
    for seed in range(arguments.seeds):
        if predictor is None:
            dcp = stream_search.dcp_counted(space, objective, known, budget=budget, samples=arguments.samples,
                                            seed=seed)
        else:
            dcp = stream_transfer.dcp_transfer(space, predictor, objective, known, budget=budget, seed=seed,
                                               start_default=arguments.from_compiler)
        dcp_results.append(dcp)
        rows["DCP"].append(dcp.objective)
        for method, sampler in (("TPE", "tpe"), ("NSGA-II", "nsga2")):
            rows[method].append(stream_search.optuna_search(space, objective, known, sampler=sampler, budget=budget,
                                                            seed=seed, start=start).objective)
        rows["random"].append(stream_search.random_search(space, objective, known, budget=budget, seed=seed,
                                                          start=start).objective)
        save_known(path, known)
        print(f"  {objective} seed {seed}: " + ", ".join(f"{method} {_shown(objective, values[-1])}"
                                                      for method, values in rows.items()), flush=True)
    return rows, dcp_results


def _shown(objective, value):
    return f"{value:,.0f} cycles" if objective == "latency" else f"{value / 1e6:,.3f} uJ"


def _print_table(objective, summary, best, arguments, transfer):
    """The comparison; ``transfer``: the transfer predictor's training evaluations (network -> mappings) or None."""
    dcp = (f"DCP's all searching, its predictor trained once on {sum(transfer.values()):,} mappings of other networks"
           if transfer else f"DCP's: {arguments.samples} to train its predictor + "
                            f"{arguments.budget - arguments.samples} searching")
    starts = "every searcher from the compiler's mapping" if arguments.from_compiler else "no searcher from the " \
        "compiler's mapping"
    print(f"\n{objective}, {arguments.budget} cost-model evaluations per search ({dcp}; {starts}); best known "
          f"{_shown(objective, best)}:")
    print(f"  {'searcher':<28} {'median':>16} {'min':>16} {'max':>16} {'median vs best':>15} {'transfer evals':>15}")
    for method, row in summary.items():
        trained = sum(transfer.values()) if transfer and method == "DCP" else 0
        print(f"  {method:<28} {_shown(objective, row['median']):>16} {_shown(objective, row['min']):>16} "
              f"{_shown(objective, row['max']):>16} {row['median_above_best_percent']:>+14.4f}% {trained:>15,}")


def _simulate(space, indices, weights, states):
    """Compile the mapping with ``weights``, run ``states`` (one input) on Verilator with the SDRAM model inside,
    check the outputs and counters: a dict for the report."""
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.models.dqn.golden import golden_forward
    from nnaccel.models.dqn.plan import COUNTERS
    from nnaccel.models.shared.tile_port import TilePortModel
    from nnaccel.testbench.dqn.host import run_on_accelerator

    choices = [layer_choices[index] for layer_choices, index in zip(space.choices, indices)]
    stream, _, plan = space.compile(choices, weights)
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


def _best_known(space, objective, known, starts):
    """The exhaustive search's best where the space has at most :data:`EXHAUSTIVE_LIMIT` mappings, else coordinate
    descent's from ``starts``: ``(result, how)``."""
    from nnaccel.dse.dcp import stream_search

    if space.size()[1] <= EXHAUSTIVE_LIMIT:
        result = stream_search.exhaustive_search(space, objective, known)
        return result, f"exhaustive, {result.evaluations:,} legal mappings"
    return (stream_search.coordinate_search(space, objective, known, starts=starts),
            "coordinate descent from the compiler's mapping and DCP's best answer")


def _power_of_two(count):
    return 1 << max(0, count - 1).bit_length()


def stream_network(model, folder=None):
    """The stream space of ``--model`` (or of ``"vww"``, one of the networks the transfer predictor is trained on),
    the weights its answer is simulated with and one input: the thesis network
    on ``DE1_SOC_CONFIG`` (the trained Breakout weights, a recorded state), or an MLPerf Tiny model (``folder``: the
    MLPerf Tiny folder) on the configuration ``nnaccel run mlperf-tiny --board de1soc`` sizes for it, from the
    binary32 ``DE1_SOC_CONFIG`` (the board itself builds binary16: ``DE1_SOC_BINARY16_CONFIG``): the MACs and weight
    halves, rows, activation RAMs and descriptor table grown to hold the model, with its descriptor
    and load tables :data:`STREAM_TABLE_ROOM` times as deep (a mapping of more passes and loads than the compiler's
    has room; at most the block RAM's 1,024 descriptors and 4,096 loads)."""
    from dataclasses import replace

    from nnaccel.dse.rtl.stream_space import StreamSpace
    from nnaccel.hw.dqn.config import DE1_SOC_CONFIG
    from nnaccel.models.dqn.weight_stream import model_base, on_chip_twin, stream_plan

    if model == "thesis":
        from nnaccel.models.dqn.atari import recorded_states
        from nnaccel.models.dqn.network import TRAINED_WEIGHTS, load_weights

        return StreamSpace(), load_weights(TRAINED_WEIGHTS), recorded_states(1)
    from nnaccel.models.dqn.lowering import lower_graph
    from nnaccel.models.dqn.mlperf_tiny import ad_windows, kws_samples, mlperf_tiny_dir, model_path, sample_images
    from nnaccel.models.dqn.model_files import read_model
    from nnaccel.models.dqn.sizing import fitting_config

    folder = mlperf_tiny_dir(folder)
    path = model_path(model, folder)
    lowered = lower_graph(read_model(path))
    base = model_base(DE1_SOC_CONFIG)
    try:
        grown, plan = fitting_config(base, lowered.layers, lowered.weights)
    except ValueError as error:
        raise InputError(f"{path}: does not fit the DE1-SoC configuration: {error}") from None
    external = replace(grown, external_weights=True, weight_depth=DE1_SOC_CONFIG.weight_depth,
                       max_layers=min(1024, STREAM_TABLE_ROOM * _power_of_two(len(plan.layers))), weight_loads=1 << 12)
    loads = len(stream_plan(external, replace(plan, config=on_chip_twin(external))).loads)
    external = replace(external, weight_loads=min(1 << 12, STREAM_TABLE_ROOM * max(DE1_SOC_CONFIG.weight_loads,
                                                                                   _power_of_two(loads))))
    inputs = {"kws": lambda: kws_samples(folder, 1).inputs, "ad": lambda: ad_windows(folder)[:1],
              "vww": lambda: sample_images("vww", 1).inputs}[model]()
    return (StreamSpace(external, lowered.layers, name=f"MLPerf Tiny {model}"), lowered.weights,
            inputs.reshape(len(inputs), *lowered.input_shape))


def check_arguments(arguments):
    """The options' faults no argparse type sees: an InputError naming the option.  Sets ``--dcp``'s default: the
    shipped transfer predictor where there is one for ``--model``, else the predictor trained inside DCP's budget."""
    from nnaccel.dse.dcp.stream_transfer import transfer_path

    if arguments.simulate and arguments.objective == "energy":
        raise InputError("--simulate: runs DCP's latency answer; give --objective latency or both")
    if arguments.dcp is None:
        arguments.dcp = "transfer" if transfer_path(arguments.model).exists() else "counted"
    if arguments.dcp == "transfer":
        if not transfer_path(arguments.model).exists():
            raise InputError(f"--model {arguments.model}: no transfer predictor trained without it "
                             f"({transfer_path(arguments.model).name}); give --dcp counted or train one "
                             f"(benchmarks/dse/train_stream_predictor.py)")
    if arguments.from_compiler and arguments.dcp == "counted":
        raise InputError("--from-compiler: DCP starts from the compiler's mapping with --dcp transfer only")
    if arguments.dcp == "counted" and arguments.samples >= arguments.budget:
        raise InputError(f"--samples {arguments.samples}: DCP's training mappings count in its budget; give fewer "
                         f"than --budget ({arguments.budget})")


def _transfer_predictor(arguments, space, known, path):
    """With ``--dcp transfer``: the shipped predictor for ``--model`` (trained without it), its training evaluations
    and its error on ``--held-out`` mappings of the network (costed into ``known``, saved to ``path``), printed;
    else ``(None, None, None)``."""
    from nnaccel.dse.dcp import stream_transfer

    if arguments.dcp != "transfer":
        return None, None, None
    file = stream_transfer.transfer_path(arguments.model)
    predictor, evaluations = stream_transfer.load_transfer(file)
    print(f"DCP's predictor: {file.name}, trained once on " + ", ".join(
        f"{network} {count}" for network, count in evaluations.items()) + " costed mappings (none of this network)")
    held_out = None
    if arguments.held_out:
        rows = stream_transfer.transfer_rows(space, known, arguments.held_out, seed=1_000)
        save_known(path, known)
        held_out = stream_transfer.held_out_error(predictor, space, rows)
        print(f"its error on {held_out['mappings']} mappings of {space.name} before any search: latency "
              f"{100 * held_out['latency_mre']:.2f} % (rank correlation {held_out['latency_spearman']:.3f}), energy "
              f"{100 * held_out['energy_mre']:.2f} % ({held_out['energy_spearman']:.3f})")
    return predictor, evaluations, held_out


def run_stream(arguments, space, weights, states):
    """``nnaccel dse stream`` on ``space`` (a ``StreamSpace``); ``weights`` and ``states`` (one input): what
    ``--simulate`` runs DCP's latency answer with.  Returns the report."""
    from nnaccel.dse.dcp import stream_search

    import torch

    check_arguments(arguments)
    torch.set_num_threads(1)
    started = time.perf_counter()
    counts, total = space.size()
    print(f"space: {space.name} on {space.config.module_name} (external weights, the DE1-SoC SDRAM model); choices "
          f"per layer " + ", ".join(f"{layer.name} {count}" for layer, count in zip(space.layers, counts))
          + f": {total:,} network mappings before the shared limits")
    path = cache_path(space)
    known = load_known(path)
    default = stream_search.StreamEvaluator(space, "latency", known).cost(tuple(0 for _ in counts))
    bound = space.bandwidth_bound()
    print(f"the compiler's mapping: {default['latency']:,} cycles, {default['energy'] / 1e6:,.2f} uJ; the SDRAM's "
          f"bandwidth bound for its {default['bytes']:,} weight bytes: {bound:,.0f} cycles")
    report = {"job": "dse stream", "network": space.name,
              "space": {"config": space.config.module_name, "choices_per_layer": counts, "network_mappings": total},
              "default": default, "bandwidth_bound_cycles": bound, "budget": arguments.budget,
              "dcp": arguments.dcp, "seeds": arguments.seeds, "from_compiler": arguments.from_compiler,
              "objectives": {}}
    predictor, transfer, held_out = _transfer_predictor(arguments, space, known, path)
    if transfer:
        report["dcp_transfer"] = {"evaluations": transfer, "held_out": held_out}
    else:
        report["dcp_training_samples"] = arguments.samples
    objectives = ("latency", "energy") if arguments.objective == "both" else (arguments.objective,)
    answers = {}
    for objective in objectives:
        rows, dcp_results = _compare(space, objective, known, arguments, path, predictor)
        starts = [tuple(0 for _ in counts), min(dcp_results, key=lambda result: result.objective).indices]
        best, how = _best_known(space, objective, known, starts)
        save_known(path, known)
        best_value = min(best.objective, *(min(values) for values in rows.values()))
        print(f"best known {objective} ({how}): {_shown(objective, best_value)} "
              f"({space.describe([c[i] for c, i in zip(space.choices, best.indices)])})")
        summary = {method: _summary(values, best_value) for method, values in rows.items()}
        _print_table(objective, summary, best_value, arguments, transfer)
        answers[objective] = dcp_results[0]
        report["objectives"][objective] = {
            "best_known": best_value, "best_known_by": how, "best_known_mapping": [
                space.choices[layer][index].to_list() for layer, index in enumerate(best.indices)],
            "searchers": summary, "dcp_answers": [[space.choices[layer][index].to_list()
                                                   for layer, index in enumerate(result.indices)]
                                                  for result in dcp_results]}
    if arguments.simulate and "latency" in answers:
        print("\nsimulating DCP's latency answer (seed 0) on Verilator with the SDRAM model ...", flush=True)
        simulation = _simulate(space, answers["latency"].indices, weights, states)
        verdict = "bit-exact" if simulation["bit_exact"] else "MISMATCH"
        print(f"simulation: {simulation['mapping']}: {verdict} ({simulation['q_values']} outputs); counters: "
              f"{'all' if not simulation['counter_mismatches'] else 'NOT all'} {simulation['counters']} equal to "
              f"the formula; TOTAL_CYCLES {simulation['total_cycles']:,} (START on cycle "
              f"{simulation['start_cycle']:,}); {simulation['passes']} passes, {simulation['loads']} loads")
        for line in simulation["counter_mismatches"][:20]:
            print(f"    {line}")
        report["simulation"] = simulation
    report["seconds"] = time.perf_counter() - started
    return report
