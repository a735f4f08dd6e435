"""Evaluations per second of the template cost model on one core.

    python benchmarks/dse/bench_cost_model.py [--cases N] [--batch B ...] [--seed S]

Draws N (hardware, mapping, layer) cases (random template points, legal random mappings of the
DQN layers and a few other shapes), then times ``evaluate_batch`` on batches of each size B
(cases repeated to fill a batch; the work per case does not depend on its values), and packing
the case objects into arrays. Prints cases per second; the best of three repeats.
"""

import argparse
import time

import numpy as np

from dse.shared.cost_model import evaluate_batch, pack
from dse.shared.layer import Layer, LayerType, dqn_layers
from dse.shared.sampler import sample_hardware, sample_mapping

LAYERS = (*dqn_layers(),
          Layer.conv(in_channels=3, in_size=34, out_channels=64, kernel=3, name="conv3x3"),
          Layer.conv(in_channels=64, in_size=16, out_channels=128, kernel=3, stride=2,
                     name="conv3x3/2"),
          Layer(y=16, x=16, r=3, s=3, k=96, c=96, type=LayerType.DEPTHWISE, name="dw3x3"))


def best_of(repeats, function):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 100, 10_000, 100_000])
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    cases = []
    for index in range(args.cases):
        hardware = sample_hardware(rng)
        layer = LAYERS[index % len(LAYERS)]
        cases.append((hardware, sample_mapping(layer, hardware, rng), layer))
    sampling = time.perf_counter() - start
    print(f"sampled {args.cases} legal cases in {sampling:.2f} s "
          f"({args.cases / sampling:,.0f} mappings/s)")

    packing = best_of(3, lambda: pack(cases))
    print(f"pack (objects -> arrays): {args.cases / packing:,.0f} cases/s")
    packed = pack(cases)
    for size in args.batch:
        batch = packed.take(np.arange(size) % len(packed))
        seconds = best_of(3, lambda: evaluate_batch(batch))
        print(f"evaluate_batch, batch {size:>7,}: {size / seconds:>12,.0f} evaluations/s "
              f"({seconds * 1e3:.2f} ms per batch)")


if __name__ == "__main__":
    main()
