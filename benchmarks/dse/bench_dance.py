"""Timings of DANCE's parts on one core (the machine may be shared: these are wall times).

    python benchmarks/dse/bench_dance.py [--layers N] [--repeats R]

Prints: (layer, hardware) labelling speed (heuristic mappings + the cost model), the hardware
generation tool (exhaustive search over the 4,335 template points) for one network with no cached
layer costs and from a layer table, the frozen generator's and the whole evaluator's inference
for one network (checkpoints in dse/dance/data, if trained), one super-network search step and
one candidate training step on a batch of 128 digits.
"""

import argparse
import time

import numpy as np
import torch

from nnaccel.dse.dance import training
from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.labels import distinct_units
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.supernet import ArchitectureParameters, Candidate, SuperNet
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace


def median_seconds(function, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=16, help="layers labelled on every point")
    parser.add_argument("--repeats", type=int, default=5)
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)

    space = TemplateHardwareSpace()
    layers, _ = distinct_units(space)
    chosen = [layers[i] for i in rng.choice(len(layers), arguments.layers, replace=False)]
    space.unit_table(chosen[:1])        # builds the mapper's tables once
    seconds = median_seconds(lambda: space.unit_table(chosen), 1)
    cases = len(chosen) * len(space)
    print(f"labelling: {cases:,} (layer, point) cases in {seconds:.2f} s = {cases / seconds:,.0f} cases/s "
          f"(the whole space: {len(layers)} layers x {len(space)} points = {len(layers) * len(space):,})")

    network = NETWORK_SPACE.network(NETWORK_SPACE.sample(rng, 1)[0])
    function = CostFunction("edap")
    cold = median_seconds(lambda: TemplateHardwareSpace().best_hardware([network], function), arguments.repeats)
    warm_space = TemplateHardwareSpace()
    warm_space.best_hardware([network], function)
    warm = median_seconds(lambda: warm_space.best_hardware([network], function), arguments.repeats)
    print(f"hardware generation tool (exhaustive, {len(space)} points), one network: {cold:.3f} s with no cached "
          f"layer costs, {1e3 * warm:.2f} ms from cached layer costs (patent: 112 s on 48 threads)")

    encoding = torch.as_tensor(NETWORK_SPACE.encode(NETWORK_SPACE.indices(network)))
    try:
        trained = training.load(space.name, "edap")
    except FileNotFoundError as error:
        print(f"evaluator: not trained ({error})")
    else:
        evaluator = trained.evaluator()
        with torch.no_grad():
            generator_s = median_seconds(lambda: trained.generator.one_hot(encoding), 200)
            evaluator_s = median_seconds(lambda: evaluator(encoding), 200)
        print(f"generator inference, one network: {1e3 * generator_s:.3f} ms; generator + cost network: "
              f"{1e3 * evaluator_s:.3f} ms (patent: 0.5 ms on one GPU)")

    images, labels = torch.rand(128, 1, 28, 28), torch.randint(10, (128,))
    supernet, arch = SuperNet(), ArchitectureParameters(NETWORK_SPACE.sizes)

    def search_step():
        one_hots, indices = arch.sample(1.0)
        gates = [hot[i] for hot, i in zip(one_hots, indices)]
        torch.nn.functional.cross_entropy(supernet(images, indices, gates), labels).backward()

    candidate = Candidate(network)

    def train_step():
        torch.nn.functional.cross_entropy(candidate(images), labels).backward()

    print(f"super-network step (sampled path, forward + backward, 128 digits): "
          f"{1e3 * median_seconds(search_step, 20):.1f} ms; candidate step ({network.describe()}): "
          f"{1e3 * median_seconds(train_step, 20):.1f} ms")


if __name__ == "__main__":
    main()
