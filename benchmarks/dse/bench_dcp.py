"""DCP's costs on one core: predictor training time, search time per layer, and evaluations per
second of the predictor against the cost model.

    python benchmarks/dse/bench_dcp.py [--space template|rtl] [--epochs N] [--kind mlp|transformer]
                                       [--width W] [--predictor F] [--store F] [--restarts R]
                                       [--steps S]

1. Training: the labelled data set from the result store (the labelling sweep runs first for
   whatever the store lacks; ``nnaccel dse predictor`` fills the same store), ``--epochs`` of
   training a fresh predictor of ``--kind``; prints seconds per epoch and samples per second.
2. Evaluations per second on 10,000 (layer, code) cases of the DQN layers: the cost model
   (``DataflowSpace.evaluate``), the predictor's forward pass, and forward + backward (what a
   DCP step does); best of three.
3. Search time per DQN layer (latency) and for the whole network (EDP): DCP with the shipped
   predictor (or ``--predictor``), seconds and cost-model evaluations used.
"""

import argparse
import timeit

import numpy as np
import torch

from nnaccel.dse.dcp import predictor as predictor_module
from nnaccel.dse.dcp.command import default_store
from nnaccel.dse.dcp.dataset import Plan, collect
from nnaccel.dse.dcp.encoding import layer_features
from nnaccel.dse.dcp.search import dcp_search
from nnaccel.dse.dcp.space import space_named
from nnaccel.dse.dcp.workloads import DEFAULT_HARDWARE, RTL_DEFAULT_HARDWARE
from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.dse.shared.layer import dqn_layers


def best_of(repeats, function):
    return min(timeit.repeat(function, number=1, repeat=repeats))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--space", choices=["template", "rtl"], default="template")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--kind", default="mlp")
    parser.add_argument("--width", type=int, default=256, help="the MLP's width")
    parser.add_argument("--predictor", help="checkpoint for the searches (default: shipped)")
    parser.add_argument("--store", help="result store (default: nnaccel dse predictor's)")
    parser.add_argument("--restarts", type=int, default=8)
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args()
    torch.set_num_threads(1)
    space = space_named(args.space)
    hardware = RTL_DEFAULT_HARDWARE if args.space == "rtl" else DEFAULT_HARDWARE

    plan = Plan.for_space(args.space)
    data = collect(space, plan, args.store or default_store(args.space))
    parts = data.split(plan)
    model = predictor_module.new_predictor(space, args.kind,
                                           **({"width": args.width} if args.kind == "mlp" else {}))
    report = predictor_module.train(model, parts["train"], space, epochs=args.epochs)
    per_epoch = report.seconds / args.epochs
    print(f"training ({args.kind}, {report.parameters:,} parameters): {len(parts['train']):,} "
          f"samples, {per_epoch:.1f} s per epoch ({len(parts['train']) / per_epoch:,.0f} "
          f"samples/s), {args.epochs} epochs in {report.seconds:.1f} s")

    trained = predictor_module.load(args.predictor, space=args.space)
    layers = dqn_layers()
    cases = 10_000
    per_layer = cases // len(layers)
    codes = [space.sample_codes(layer, hardware, 200, seed=11) for layer in layers]
    batches = [np.resize(c, (per_layer, *c.shape[1:])) for c in codes]
    def cost_model():
        evaluator = space_named(args.space)     # a new one per repeat: no costs kept from the last
        return [evaluator.evaluate(l, hardware, b) for l, b in zip(layers, batches)]

    cost_seconds = best_of(3, cost_model)
    layer_rows = torch.as_tensor(np.repeat(layer_features(layers), per_layer, axis=0))
    hardware_rows = torch.as_tensor(space.hardware_features(hardware))[None].expand(
        len(layer_rows), -1)
    relaxed = torch.as_tensor(relax(np.concatenate(batches)), dtype=torch.float32)

    def forward():
        with torch.no_grad():
            trained(layer_rows, hardware_rows, relaxed)

    def forward_backward():
        code = relaxed.clone().requires_grad_(True)
        trained(layer_rows, hardware_rows, code).sum().backward()

    total = per_layer * len(layers)
    print(f"cost model (NumPy):            {total / cost_seconds:>12,.0f} evaluations/s")
    print(f"predictor forward:             {total / best_of(3, forward):>12,.0f} evaluations/s")
    print(f"predictor forward + backward:  {total / best_of(3, forward_backward):>12,.0f} "
          f"evaluations/s")

    for layer in layers:
        result = dcp_search(space, trained, [layer], hardware, "latency",
                            restarts=args.restarts, steps=args.steps, progress=False)
        print(f"DCP search {layer.name:<7} latency: {result.seconds:6.1f} s, "
              f"{result.evaluations:4d} cost-model evaluations, best {result.objective:,.0f} "
              f"cycles")
    result = dcp_search(space, trained, list(layers), hardware, "edp",
                        restarts=args.restarts, steps=args.steps, progress=False)
    print(f"DCP search DQN network EDP: {result.seconds:6.1f} s, {result.evaluations:4d} "
          f"cost-model evaluations, {result.latency:,.0f} cycles, {result.energy / 1e6:,.1f} uJ")


if __name__ == "__main__":
    main()
