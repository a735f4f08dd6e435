"""Evaluations per second of the cost models on one core: the template's and the RTL family's.

    python benchmarks/dse/bench_cost_model.py [--cases N] [--batch B ...] [--seed S]

Template: draws N (hardware, mapping, layer) cases (random template points, legal random mappings of
the DQN layers and a few other shapes), then times ``evaluate_batch`` on batches of each size B
(cases repeated to fill a batch; the work per case does not depend on its values), and packing
the case objects into arrays.  RTL family: N (configuration, layer mapping, layer) cases (random
configurations of the family, the DQN layers and a small CNN's where they fit, random legal layer
mappings), timed the same way (``dse.rtl.cost_model.pack`` expands each case into its passes with
the compiler's own expansion; ``evaluate_batch`` evaluates them), and both together.  Prints cases
per second; the best of three repeats.
"""

import argparse
import time

import numpy as np

from nnaccel.dse.rtl import cost_model as rtl_cost
from nnaccel.dse.rtl.sampler import sample_config, sample_layer_mapping
from nnaccel.dse.shared.layer import Layer, LayerType, dqn_layers
from nnaccel.dse.template.cost_model import evaluate_batch, pack
from nnaccel.dse.template.sampler import sample_hardware, sample_mapping
from nnaccel.models.dqn.network import ConvLayer, DenseLayer
from nnaccel.models.dqn.network import dqn_layers as thesis_layers
from nnaccel.models.dqn.plan import layer_shapes

SMALL_CNN = (ConvLayer("conv1", 3, 32, 16, 3, 1), ConvLayer("conv2", 16, 30, 32, 3, 2),
             DenseLayer("fc", 32 * 14 * 14, 10))

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

    template(args, cases)
    rtl_family(args)


def rtl_cases(count, seed):
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        config = sample_config(rng)
        for network in (thesis_layers(18), SMALL_CNN):
            try:
                shapes = layer_shapes(config, network)
            except ValueError:
                continue
            for shape in shapes:
                cases.append((config, sample_layer_mapping(rng, config, shape, max_passes=4), shape))
    return cases[:count]


def rtl_family(args):
    start = time.perf_counter()
    cases = rtl_cases(args.cases, args.seed)
    sampling = time.perf_counter() - start
    print(f"\nRTL family: sampled {len(cases)} (configuration, layer mapping, layer) cases in {sampling:.2f} s")
    rtl_cost.pack(cases)                        # the per-configuration constants (area composition) once
    packing = best_of(3, lambda: rtl_cost.pack(cases))
    print(f"RTL pack (cases -> passes -> arrays): {len(cases) / packing:,.0f} cases/s")
    for size in args.batch:
        batch = rtl_cost.pack([cases[index % len(cases)] for index in range(size)])
        seconds = best_of(3, lambda: rtl_cost.evaluate_batch(batch))
        print(f"RTL evaluate_batch, batch {size:>7,}: {size / seconds:>12,.0f} evaluations/s "
              f"({seconds * 1e3:.2f} ms per batch)")
    size = max(args.batch)
    repeated = [cases[index % len(cases)] for index in range(size)]
    seconds = best_of(3, lambda: rtl_cost.evaluate_batch(rtl_cost.pack(repeated)))
    print(f"RTL pack + evaluate_batch, {size:,} cases: {size / seconds:,.0f} evaluations/s")


def template(args, cases):
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
