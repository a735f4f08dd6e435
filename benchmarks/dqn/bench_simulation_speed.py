"""Simulation speed of the DQN accelerator per Verilator build variant: build time, cycles per second, bits.

    python benchmarks/dqn/bench_simulation_speed.py [--reduced] [--states N] [--rounds R]
        [--variant NAME ...] [--anchor NAME ...] [--baseline NAME] [--cache-dir DIR]

Builds the accelerator (the full-size default configuration on recorded Atari states, or with ``--reduced``
the reduced configuration on random states) once per variant of :class:`sim.verilator_options.VerilatorOptions`
(:func:`variants`; ``old`` is the harness' build before those options, ``PREVIOUS_DEFAULT``), each in an empty build cache
so that the build time is a fresh build's, then runs the cocotb harness on every variant in turn, ``--rounds``
times, and prints per variant: the build seconds; the median simulated cycles per wall second (cycles from START
to ``done`` over that wall time, summed over the states of a run) and per CPU second of the simulator process
(the same span; on a machine that other jobs load, the measure that does not depend on them, except for a
multi-threaded model, which needs its cores at once); each median and the range of the per-round values as
ratios to the baseline (``old``, or with ``--baseline NAME`` another variant) in the same round; and whether the
Q-values, the output words and every cycle counter are bit-identical to the baseline's and to the golden model's.

``--anchor NAME`` also builds variant NAME under the C++ testbench ``testbench/shared/host_program.cpp`` (the same
Verilog and Verilator options, no cocotb) and runs it in the same rounds: the harness' share of the raw speed is
the median over the rounds of the cocotb rate over the raw rate of the same round.  Every build takes both cores for minutes at full size.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import dqn_layers, reduced_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network
from nnaccel.sim.verilator_options import DEFAULT, PREVIOUS_DEFAULT, thread_budget
from nnaccel.testbench.dqn.host import run_on_accelerator
from nnaccel.testbench.dqn.raw_verilator import run_raw

_OLD = PREVIOUS_DEFAULT


def variants():
    """``{name: VerilatorOptions}``: the old build, each change alone on it, the default and changes on that."""
    table = {
        "old": _OLD,
        "old-O3": replace(_OLD, verilator_optimization="-O3"),
        "old-cxxO2": replace(_OLD, cxx_optimization="-O2"),
        "old-pgo": replace(_OLD, profile_guided=True),
        "old-ports": replace(_OLD, public="ports"),
        "old-marked": replace(_OLD, hierarchy="marked", verilator_build=False),
        "default": DEFAULT,
        "default-O3": replace(DEFAULT, verilator_optimization="-O3"),
        "default-pgo": replace(DEFAULT, profile_guided=True),
        "default-flat": replace(DEFAULT, hierarchy="none"),
        "default-separate": replace(DEFAULT, hierarchy="separate"),
        "default-cxxOs": replace(DEFAULT, cxx_optimization=None),
    }
    for threads in range(2, thread_budget() + 1):
        table[f"old-threads{threads}"] = replace(_OLD, threads=threads)
        table[f"default-threads{threads}"] = replace(DEFAULT, threads=threads)
    return table


def workload(reduced, count):
    """``(config, plan, states)``: the network compiled for the configuration, and ``count`` input states."""
    if reduced:
        layers, rng = reduced_layers(), np.random.default_rng(0)
        weights = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                    rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
        plan = compile_network(REDUCED_CONFIG, layers, weights, split="always")
        return REDUCED_CONFIG, plan, rng.uniform(0, 1, (count,) + plan.input.shape).astype(np.float32)
    config = DqnConfig()
    return config, compile_network(config, dqn_layers(18), seeded_weights()), recorded_states(count)


class Measurement:
    """Build time, per-round cycles per wall and per CPU second and the observed bits of one variant (cocotb or
    the C++ anchor).

    The build time is the fresh build's; a build found in the cache (``--cache-dir`` of an earlier run) reports
    the time recorded in ``build_seconds.json`` there when it was made.
    """

    def __init__(self, key, records):
        self.key, self.records = key, records
        self.rates = {"wall": [], "cpu": []}
        self.bits = None

    @property
    def build_seconds(self):
        return self.records.get(self.key, float("nan"))

    def record(self, run, words):
        if run.built_now:
            self.records[self.key] = run.build_seconds
        self.rates["wall"].append(run.total_cycles.sum() / run.run_wall_seconds.sum())
        self.rates["cpu"].append(run.total_cycles.sum() / run.run_cpu_seconds.sum())
        observed = (words, run.actions, run.action_values, run.total_cycles, run.layer_counters)
        self.bits = observed if self.bits is None else self.bits
        return all(np.array_equal(a, b) for a, b in zip(observed, self.bits))


def same_bits(first, second):
    return all(np.array_equal(a, b) for a, b in zip(first, second))


def main():
    table = variants()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reduced", action="store_true", help="the reduced configuration and network")
    parser.add_argument("--states", type=int, default=1, help="inferences per run")
    parser.add_argument("--rounds", type=int, default=3, help="timed runs per variant")
    parser.add_argument("--variant", action="append", choices=sorted(table), help="variants to build (default: all)")
    parser.add_argument("--anchor", action="append", default=[], choices=sorted(table),
                        help="also run this variant under the C++ testbench")
    parser.add_argument("--baseline", default="old", choices=sorted(table),
                        help="the variant ratios and bits are taken against (default: old, the build before the options)")
    parser.add_argument("--cache-dir", type=Path, help="build cache to use (default: a new temporary directory)")
    arguments = parser.parse_args()
    names = [arguments.baseline] + [name for name in arguments.variant or table if name != arguments.baseline]
    cache_dir = arguments.cache_dir or Path(tempfile.mkdtemp(prefix="nnaccel-bench-simspeed-"))
    os.environ["NNACCEL_CACHE_DIR"] = str(cache_dir)
    print(f"build cache {cache_dir}; {len(os.sched_getaffinity(0))} cores; load average "
          f"{' '.join(f'{value:.1f}' for value in os.getloadavg())}", flush=True)

    config, plan, states = workload(arguments.reduced, arguments.states)
    golden = np.stack([golden_forward(plan, state).q_values for state in states])
    records_path = cache_dir / "build_seconds.json"
    records = json.loads(records_path.read_text()) if records_path.exists() else {}
    cocotb = {name: Measurement(f"{name} {arguments.reduced}", records) for name in names}
    raw = {name: Measurement(f"{name} (C++) {arguments.reduced}", records) for name in arguments.anchor}
    stable = {name: True for name in [*names, *(f"{name} (C++)" for name in arguments.anchor)]}
    for round_index in range(arguments.rounds):
        for name in names:
            run = run_on_accelerator(DqnAccelerator(config=config), plan, states, verilator_options=table[name])
            stable[name] &= cocotb[name].record(run, run.output_words)
            records_path.write_text(json.dumps(records, indent=1))
            print(f"round {round_index + 1} {name}: build {run.build_seconds:.0f} s, {cocotb[name].rates['wall'][-1]:.0f} "
                  f"cycles/s, {cocotb[name].rates['cpu'][-1]:.0f} cycles/CPU s", flush=True)
            if round_index == 0 and not np.array_equal(run.q_values, golden):
                print(f"  {name}: Q-values differ from the golden model", flush=True)
        for name in arguments.anchor:
            run = run_raw(DqnAccelerator(config=config), plan, states, options=table[name])
            stable[f"{name} (C++)"] &= raw[name].record(run, run.output_words)
            records_path.write_text(json.dumps(records, indent=1))
            print(f"round {round_index + 1} {name} (C++): build {run.build_seconds:.0f} s, {raw[name].rates['wall'][-1]:.0f} "
                  f"cycles/s, {raw[name].rates['cpu'][-1]:.0f} cycles/CPU s", flush=True)
    print_table(names, cocotb, raw, golden, plan, stable, cycles=int(cocotb[names[0]].bits[3][0]))


def print_table(names, cocotb, raw, golden, plan, stable, cycles):
    baseline = cocotb[names[0]]
    print(f"\n{cycles} cycles per inference; load average {' '.join(f'{value:.1f}' for value in os.getloadavg())}; "
          f"cycles/s, cycles/CPU s: medians of the rounds; ratio: to {names[0]} in the same round (median, range); "
          f"same bits: Q-values, output words, ACTION, ACTION_VALUE, TOTAL_CYCLES and the per-layer counters equal "
          f"to {names[0]}'s (and, for the Q-values, the golden model's) in every round")
    print(f"{'variant':<20}{'build s':>8}{'cycles/s':>10}{'ratio':>6} {'(range)':<12}{'cycles/CPU s':>13}{'ratio':>6} "
          f"{'(range)':<12} same bits")
    rows = [(name, cocotb[name]) for name in names] + [(f"{name} (C++)", raw[name]) for name in raw]
    for name, measurement in rows:
        q_values = np.stack([plan.output_values(words) for words in measurement.bits[0]])
        identical = stable[name] and same_bits(measurement.bits, baseline.bits) and np.array_equal(q_values, golden)
        columns = []
        for kind in ("wall", "cpu"):
            ratios = [rate / base for rate, base in zip(measurement.rates[kind], baseline.rates[kind])]
            columns.append(f"{statistics.median(measurement.rates[kind]):>{10 if kind == 'wall' else 13}.0f}"
                           f"{statistics.median(ratios):>6.2f} ({min(ratios):.2f}-{max(ratios):.2f}){'':<1}")
        print(f"{name:<20}{measurement.build_seconds:>8.0f}{''.join(columns)} {identical}")
    for name, measurement in raw.items():
        if name in cocotb:
            shares = [statistics.median(harness / anchor for harness, anchor
                                        in zip(cocotb[name].rates[kind], measurement.rates[kind]))
                      for kind in ("wall", "cpu")]
            print(f"the cocotb harness keeps {100 * shares[0]:.0f} % (per wall second) and {100 * shares[1]:.0f} % "
                  f"(per CPU second) of the raw Verilator speed with {name!r}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
