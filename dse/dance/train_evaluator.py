"""Label a hardware space through a Dask sweep, train DANCE's evaluators, print Table 1 and write
the checkpoints that ship in ``dse/dance/data/``:

    python -m nnaccel.dse.dance.train_evaluator [--space template|rtl|rtl-stream|rtl-stream-1k] [--costs edap,...]
        [--cost-cases N] [--cost-epochs E] [--generator-epochs E] [--without-forwarding-epochs E]
        [--near-optimal-points K] [--scheduler tcp://HOST:PORT]
        [--generator-members M] [--cost-targets units|networks] [--workers W] [--out DIR] [--json F]
        [--checkpoint-dir DIR]
        [--measure [--generator mlp|argmin] | --generators-only
         | --refiner [--refiner-candidates K] [--refiner-epochs E] [--refiner-members M] [--generator mlp|argmin]]

The labelling sweep keeps its results in ``$NNACCEL_CACHE_DIR/dse/dance-<space>-labels.sqlite``
(a rerun labels only what is missing). ``--scheduler`` sends the labelling tasks to a running Dask
cluster (e.g. one that dask-jobqueue started on Slurm); the training itself runs here, one thread.
``--measure`` trains nothing: it prints the shipped checkpoints' (or ``--out``'s) Table 1 on the labels as they are
now, with the trained generator or (``--generator argmin``) the search over the cost network.
``--checkpoint-dir DIR`` keeps the cost network's training state in DIR after every epoch: a long run killed or
stopped at a deadline resumes where it was when the same command runs again. ``--generators-only`` keeps the
shipped cost network (give the settings it was trained with) and trains the generators and the networks without
forwarding again. ``--refiner`` trains only the cost network's refiner (``cost_refiner``: a learned correction on
the training networks' cheapest points as the cost network ranks them) over the shipped (or ``--out``'s) cost network,
writes it beside it, and prints Table 1 measured with it.
"""

import argparse
import json
import time

import torch

from nnaccel.dse.dance import cost_refiner, training
from nnaccel.dse.dance.cost_functions import COST_FUNCTIONS
from nnaccel.dse.dance.hardware_space import SPACES, make_hardware_space
from nnaccel.dse.dance.labels import label
from nnaccel.dse.dance.settings import GENERATORS
from nnaccel.sim.progress import counting


def exhaustive_search_seconds(table, cost_function, network_index=0):
    """Seconds of the hardware generation tool for one network: on a space with no cached layer
    costs, and from the labelled table."""
    network = table.network_space.network(table.network_space.all_points()[network_index])
    fresh = type(table.hardware_space)()
    start = time.perf_counter()
    fresh.best_hardware([network], cost_function)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    table.hardware_space.best_hardware([network], cost_function)
    return cold, time.perf_counter() - start


def _costs(text):
    names = tuple(text.split(","))
    unknown = [name for name in names if name not in COST_FUNCTIONS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown cost function {', '.join(unknown)} (choose from {', '.join(COST_FUNCTIONS)})")
    return names


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    defaults = training.EvaluatorSettings()
    parser.add_argument("--space", choices=tuple(SPACES), default="template", help="hardware space (default template)")
    parser.add_argument("--costs", type=_costs, default=COST_FUNCTIONS,
                        help=f"cost functions to train a generator for, comma-separated (default {','.join(COST_FUNCTIONS)})")
    parser.add_argument("--cost-cases", type=int, default=defaults.cost_cases)
    parser.add_argument("--validation-cases", type=int, default=defaults.validation_cases)
    parser.add_argument("--cost-epochs", type=int, default=defaults.cost_epochs)
    parser.add_argument("--generator-epochs", type=int, default=defaults.generator_epochs)
    parser.add_argument("--without-forwarding-epochs", type=_positive, default=defaults.without_forwarding_epochs,
                        help="epochs of the cost network without forwarding, Table 1's first cost row (default "
                             f"{defaults.without_forwarding_epochs})")
    parser.add_argument("--near-optimal-points", type=int, default=defaults.near_optimal_points,
                        help="cost cases per training network and cost function on its best points (default "
                             f"{defaults.near_optimal_points})")
    parser.add_argument("--cost-targets", choices=("units", "networks"),
                        help="train the cost network on what each cost unit adds on every point, or on network "
                             "totals (default: units where the space's costs add up over its units, else networks)")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--generator-members", type=_positive, default=defaults.generator_members,
                        help="generators per cost function, trained from consecutive seeds and read as one "
                             f"(default {defaults.generator_members})")
    parser.add_argument("--cost-members", type=_positive, default=defaults.cost_members,
                        help="cost networks with forwarding, trained from consecutive seeds and read as one (their "
                             f"geometric mean; default {defaults.cost_members})")
    parser.add_argument("--scheduler", help="a running Dask scheduler for the labelling sweep")
    parser.add_argument("--workers", type=int, help="local Dask workers (default: one per core)")
    parser.add_argument("--out", help="checkpoint directory (default: the package's data/)")
    parser.add_argument("--json", help="write the reports as JSON")
    parser.add_argument("--checkpoint-dir",
                        help="keep the cost network's training state there after every epoch; the same command "
                             "again resumes it (default: no checkpoints)")
    parser.add_argument("--generator", choices=GENERATORS, default="mlp",
                        help="with --measure: the trained generator (mlp, default) or the search over the cost "
                             "network (argmin)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--measure", action="store_true",
                      help="train nothing: Table 1 of the shipped evaluators on the labels as they are now")
    mode.add_argument("--generators-only", action="store_true",
                      help="keep the shipped cost network (trained with the settings given) and train the rest")
    mode.add_argument("--refiner", action="store_true",
                      help="train only the cost network's refiner (on the training networks of --seed), write it "
                           "beside the cost network and measure Table 1 with it")
    parser.add_argument("--refiner-candidates", type=_positive, default=cost_refiner.CANDIDATES,
                        help="with --refiner: cheapest points per network and cost function it learns and ranks "
                             f"(default {cost_refiner.CANDIDATES})")
    parser.add_argument("--refiner-epochs", type=_positive, default=cost_refiner.EPOCHS,
                        help=f"with --refiner: its epochs (default {cost_refiner.EPOCHS})")
    parser.add_argument("--refiner-members", type=_positive, default=cost_refiner.MEMBERS,
                        help="with --refiner: MLPs trained alone and read as one, the mean of their corrections "
                             f"(default {cost_refiner.MEMBERS})")
    arguments = parser.parse_args(argv)
    torch.set_num_threads(1)

    space = make_hardware_space(arguments.space)
    cost_targets = arguments.cost_targets or ("units" if space.costs_add_up_over_units else "networks")
    if cost_targets == "units" and not space.costs_add_up_over_units:
        parser.error(f"--cost-targets units: the {arguments.space} space's costs do not add up over its units")
    table, sweep, label_seconds = label(space, scheduler=arguments.scheduler, workers=arguments.workers)
    print(f"labels: {table.cost_cases:,} (network, hardware) cost cases from {table.unit_ids.max() + 1} cost units x "
          f"{len(table.area)} points; {sweep.new} tasks run, {sweep.skipped} stored already, {label_seconds:.1f} s")
    print(f"  of them {table.fitting_cases():,} cases where the network fits the point")
    if arguments.measure or arguments.refiner:
        try:        # a checkpoint missing, or a refiner over another cost network: one line
            if arguments.refiner:
                _train_refiner(table, arguments)
            reports = {}
            with counting("Table 1 measured: cost functions", total=len(arguments.costs)) as shown:
                for name in arguments.costs:
                    reports[name] = training.remeasure(table, training.load(
                        arguments.space, name, directory=arguments.out, generator=arguments.generator,
                        hardware_space=space))
                    shown.update()
        except (FileNotFoundError, ValueError) as error:
            parser.exit(1, f"{parser.prog}: {error}\n")
        _print_reports(reports)
        _write_json(arguments.json, reports)
        return
    settings = training.EvaluatorSettings(cost_cases=arguments.cost_cases, validation_cases=arguments.validation_cases,
                                          cost_epochs=arguments.cost_epochs,
                                          generator_epochs=arguments.generator_epochs,
                                          without_forwarding_epochs=arguments.without_forwarding_epochs,
                                          near_optimal_points=arguments.near_optimal_points, seed=arguments.seed,
                                          generator_members=arguments.generator_members,
                                          cost_members=arguments.cost_members, cost_targets=cost_targets)
    start = time.perf_counter()
    epochs = [0]

    def progress():
        epochs[0] += 1
        print(f"  epoch {epochs[0]} done at {time.perf_counter() - start:.0f} s", flush=True)

    trained = training.train_evaluators(table, settings, arguments.costs, progress=progress,
                                        checkpoint_dir=arguments.checkpoint_dir,
                                        cost=training.load_cost(arguments.space) if arguments.generators_only else None)
    print(f"training: {time.perf_counter() - start:.1f} s")
    _print_reports({name: evaluator.report for name, evaluator in trained.items()})
    cold, warm = exhaustive_search_seconds(table, next(iter(trained.values())).cost_function)
    print(f"exhaustive search for one network over {len(table.area)} points: {cold:.3f} s from scratch "
          f"(heuristic mappings + cost model), {1e3 * warm:.3f} ms from the labelled layer table")
    training.save(trained, table.hardware_space.name, directory=arguments.out)
    _write_json(arguments.json, {name: evaluator.report for name, evaluator in trained.items()})


def _train_refiner(table, arguments):
    """``--refiner``: the cost network's refiner on the training networks of ``--seed``, written beside it."""
    start = time.perf_counter()
    base = training.load_cost(arguments.space, directory=arguments.out)
    train, _, _ = training.fitting_split(table, arguments.seed)
    functions = [training.cost_function_for(table, name, arguments.seed) for name in COST_FUNCTIONS]
    chunks = -(-len(train) // cost_refiner.NETWORKS_PER_CHUNK)
    with counting("refiner: training networks costed on every point", total=chunks) as costed:
        pair_networks, pair_points = cost_refiner.training_points(table, base, train, functions,
                                                                  arguments.refiner_candidates,
                                                                  progress=costed.update)
    with counting("refiner: epochs", total=arguments.refiner_epochs * arguments.refiner_members) as epochs:
        refiner = cost_refiner.train_refiner(table, base, pair_networks, pair_points,
                                             candidates=arguments.refiner_candidates,
                                             epochs=arguments.refiner_epochs, members=arguments.refiner_members,
                                             seed=arguments.seed, progress=epochs.update)
    training.save_refiner(refiner, arguments.space, directory=arguments.out)
    print(f"refiner: {len(pair_networks):,} (network, point) cases of {len(train)} training networks, "
          f"{arguments.refiner_candidates} cheapest points per cost function, {arguments.refiner_members} "
          f"members; {time.perf_counter() - start:.1f} s")


def _print_reports(reports):
    for name, report in reports.items():
        print(f"--- cost function {name} ---")
        for line in training.format_table_1(report):
            print(line)
        print(f"generator inference {1e3 * report['generator_inference_s']:.3f} ms")


def _write_json(path, reports):
    if path:
        with open(path, "w") as handle:
            json.dump(reports, handle, indent=1)


if __name__ == "__main__":
    main()
