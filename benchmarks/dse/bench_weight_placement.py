"""Where the exhaustive optima of a weight-placement space put the weights, from its labels.

    python benchmarks/dse/bench_weight_placement.py [--space rtl-stream|rtl-stream-1k] [--workers W]

Prints how many networks fit no point, only external points, an on-chip point; per cost function how many optima
are external and, where a network fits both, the best external point's cost over the best on-chip one's; and over
the networks that fit, Spearman's rank correlation of the optimum's cost with the MAC count (what the FLOPs penalty
reads) and with the weight count, for all of them, those on chip and those streaming; and why the networks that fit
no point do not fit the largest external point (the compiler's or the tile cutter's fault). With the space's labels in
the cache (``python -m nnaccel.dse.dance.train_evaluator --space ...`` makes them) it only reads them.
"""

import argparse
import re
from collections import Counter

import numpy as np

from nnaccel.dse.dance.cost_functions import COST_FUNCTIONS
from nnaccel.dse.dance.hardware_space import make_hardware_space
from nnaccel.dse.dance.labels import label
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.training import cost_function_for, rank_correlation
from nnaccel.dse.rtl.stream_space import zero_weights
from nnaccel.models.dqn.plan import compile_network
from nnaccel.models.dqn.weight_stream import on_chip_twin, stream_plan

CHUNK = 256     # networks a step of the all-points table


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--space", choices=("rtl-stream", "rtl-stream-1k"), default="rtl-stream-1k")
    parser.add_argument("--workers", type=int, default=1, help="labelling workers if labels are missing")
    arguments = parser.parse_args()
    space = make_hardware_space(arguments.space)
    table, _, _ = label(space, workers=arguments.workers, progress=False)
    networks = np.arange(len(NETWORK_SPACE))
    costs = np.concatenate([table.all_points(networks[start:start + CHUNK])
                            for start in range(0, len(networks), CHUNK)])
    external = space.all_points()[:, space.names.index("weights")] == dict(space.parameters)["weights"].index("ddr3")
    fits = np.isfinite(costs[..., 0])
    on_chip, streaming = fits[:, ~external].any(axis=1), fits[:, external].any(axis=1)
    print(f"{arguments.space}: {len(networks)} networks x {len(space)} points; fit no point "
          f"{(~fits.any(axis=1)).sum()}, only external points {(streaming & ~on_chip).sum()}, "
          f"an on-chip point {on_chip.sum()}")
    fitting = fits.any(axis=1)
    candidates = [NETWORK_SPACE.network(indices) for indices in NETWORK_SPACE.all_points()[fitting]]
    macs = np.array([network.macs for network in candidates], dtype=np.float64)
    weights = np.array([sum(int(np.prod(layer.weight_shape)) for layer in network.dqn_layers())
                        for network in candidates], dtype=np.float64)
    both = on_chip & streaming
    for name in COST_FUNCTIONS:
        function = cost_function_for(table, name)
        values = function(costs[..., 0], costs[..., 1], costs[..., 2])
        best = np.argmin(values, axis=1)
        optimum_external = fitting & external[best]
        ratio = (np.min(np.where(external, values, np.inf), axis=1)[both]
                 / np.min(np.where(external, np.inf, values), axis=1)[both])
        optimum, streams = values[fitting].min(axis=1), optimum_external[fitting]
        print(f"{name}: optimum external for {optimum_external.sum()} (of them fitting no on-chip point "
              f"{(optimum_external & ~on_chip).sum()}); where both fit ({both.sum()}), best external over best "
              f"on chip {ratio.min():.3f} .. {ratio.max():.3f}, median {np.median(ratio):.3f}")
        for what, chosen in (("all", np.ones_like(streams)), ("on chip", ~streams), ("streaming", streams)):
            if chosen.sum() > 1:
                print(f"  Spearman of the optimum's cost, {what} ({chosen.sum()}): with MACs "
                      f"{rank_correlation(optimum[chosen], macs[chosen]):.3f}, with weights "
                      f"{rank_correlation(optimum[chosen], weights[chosen]):.3f}")
    print_unfit_faults(space, external, NETWORK_SPACE.all_points()[~fitting])


def print_unfit_faults(space, external, unfit):
    """Each ``unfit`` network's fault on the space's last buildable external point (the most modules and lanes), by
    kind (numbers left out) with an example."""
    points = space.all_points()
    point = next(point for point in points[external][::-1] if space.config(point))
    config = space.config(point)
    faults, examples = Counter(), {}
    for indices in unfit:
        network = NETWORK_SPACE.network(indices)
        layers = network.dqn_layers()
        try:
            stream_plan(config, compile_network(on_chip_twin(config), layers, zero_weights(layers)))
            fault = "fits there"
        except ValueError as error:
            fault = re.sub(r"\d+", "N", str(error))
        faults[fault] += 1
        examples.setdefault(fault, network.describe())
    print(f"the {len(unfit)} networks that fit no point, on {space.describe(point)}:")
    for fault, count in faults.most_common():
        print(f"  {count:>5}  {fault} (e.g. {examples[fault]})")


if __name__ == "__main__":
    main()
