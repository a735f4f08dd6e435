"""Simulation speed of the DQN accelerator: simulated cycles per wall second on Verilator and Icarus.

    python benchmarks/dqn/bench_dqn.py [--simulator verilator --simulator icarus] [--states N] [--reduced]

Runs the thesis network (default configuration, seeded weights) on N recorded states, or with ``--reduced``
the small network of ``models.dqn.network.reduced_layers`` on ``hw.dqn.config.REDUCED_CONFIG`` (2 modules x
4 lanes, the same controller) on N random states, in one simulation per simulator (builds are cached: the first run of a simulator includes its build) and prints, per simulator,
the build time, the cycles of one inference, the wall time of one inference (START to ``done``, the
hardware running freely) and the simulated cycles per second, with the bit-exact check against the golden
model.
"""

import argparse
import time

import numpy as np

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import dqn_layers, reduced_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network
from nnaccel.testbench.dqn.host import run_on_accelerator


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulator", action="append", choices=("verilator", "icarus"))
    parser.add_argument("--states", type=int, default=2)
    parser.add_argument("--reduced", action="store_true", help="the reduced configuration and network")
    arguments = parser.parse_args()
    if arguments.reduced:
        config, layers = REDUCED_CONFIG, reduced_layers()
        rng = np.random.default_rng(0)
        weights = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                    rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
        plan = compile_network(config, layers, weights, split="always")
        states = rng.uniform(0, 1, (arguments.states,) + plan.input.shape).astype(np.float32)
    else:
        config = DqnConfig()
        plan = compile_network(config, dqn_layers(18), seeded_weights())
        states = recorded_states(arguments.states)
    goldens = np.stack([golden_forward(plan, state).q_values for state in states])
    print(f"{'simulator':<10}{'build s':>9}{'cycles':>8}{'s/inference':>13}{'cycles/s':>10}  bit-exact", flush=True)
    for simulator in arguments.simulator or ("verilator", "icarus"):
        start = time.perf_counter()
        run = run_on_accelerator(DqnAccelerator(config=config), plan, states, simulator=simulator)
        seconds = float(run.run_wall_seconds.mean())
        print(f"{simulator:<10}{run.build_seconds:>9.1f}{int(run.total_cycles[0]):>8}{seconds:>13.2f}"
              f"{run.total_cycles.sum() / run.run_wall_seconds.sum():>10.0f}  "
              f"{np.array_equal(run.q_values, goldens)}  (wall {time.perf_counter() - start:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
