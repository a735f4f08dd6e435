"""The thesis network with its weights in external memory: the cycle formula's figures per memory, no simulation.

    python benchmarks/dqn/bench_external_weights.py [--start CYCLE] [--simulate N]

Compiles the thesis network (trained weights) for the default 16 x 16 configuration with ``external_weights`` and
the DE5-Net's 1,024-bit port, and for the same configuration on the DE1-SoC SDRAM's 32-bit port, and prints for each
the cycles of one run STARTed on ``--start`` (``models.dqn.weight_stream.stream_counters``: the counters the RTL
matches with that memory behind its Avalon port), the ratio to the on-chip build's cycles, the weight bytes and the
bandwidth bound (weight bytes / the memory's sustained read bytes per cycle).  The memory's refresh phase moves the
figures by a few tens of cycles with ``--start``.  ``--simulate N`` then runs the DE5-Net build on Verilator (a build
of minutes, cached) on N recorded Breakout states, its weights served by the Python slave with the DDR3 model's
timing, and prints whether every Q-value is bit-exact against the golden model and every counter equal to the
formula for the runs' own START cycles.
"""

import argparse
import dataclasses

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.network import TRAINED_WEIGHTS, dqn_layers, load_weights
from nnaccel.models.dqn.plan import COUNTERS, compile_network
from nnaccel.models.dqn.weight_stream import compile_streamed, stream_counters
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, DE5_NET_DDR3, sustained_read_bytes_per_cycle
from nnaccel.models.shared.tile_port import TilePortModel

MEMORIES = (("DE5-Net DDR3 channel", DE5_NET_DDR3, 1024), ("DE1-SoC SDRAM", DE1_SOC_SDRAM, 32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=100, help="the cycle the run's START is taken on (default 100)")
    parser.add_argument("--simulate", type=int, default=0, metavar="N",
                        help="also run the DE5-Net build on N recorded states (1 to 8) on Verilator")
    arguments = parser.parse_args()
    if not 0 <= arguments.simulate <= 8:
        parser.error(f"--simulate {arguments.simulate}: 1 to 8 recorded states (or 0, no simulation)")
    weights = load_weights(TRAINED_WEIGHTS)
    layers = dqn_layers(weights["fc2_w"].shape[1])
    on_chip = compile_network(DqnConfig(), layers, weights).estimated_cycles
    print(f"{'memory, port':<32} {'cycles':>10} {'x on chip':>10} {'weight bytes':>13} {'bandwidth bound':>16}")
    print(f"{'on chip':<32} {on_chip:>10,} {1:>10} {'-':>13} {'-':>16}")
    for name, timing, port_bits in MEMORIES:
        config = dataclasses.replace(DqnConfig(), external_weights=True, external_bus_bits=port_bits)
        stream = compile_streamed(config, layers, weights)
        counters = stream_counters(stream, arguments.start, TilePortModel(timing=timing, port_bits=port_bits))
        bound = stream.weight_bytes / sustained_read_bytes_per_cycle(timing, port_bits=port_bits)
        print(f"{f'{name}, {port_bits}-bit port':<32} {counters.total:>10,} {counters.total / on_chip:>9.2f}x "
              f"{stream.weight_bytes:>13,} {bound:>16,.0f}")
    if arguments.simulate:
        simulate_de5(layers, weights, arguments.simulate, on_chip)


def simulate_de5(layers, weights, count, on_chip):
    """The DE5-Net row on the RTL: ``count`` recorded states, bit-exact and every counter against the formula."""
    from nnaccel.cli.dqn.accelerator_run import golden_mismatches
    from nnaccel.models.dqn.weight_stream import formula_mismatches
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.models.dqn.atari import recorded_states
    from nnaccel.testbench.dqn.host import run_on_accelerator

    name, timing, port_bits = MEMORIES[0]
    config = dataclasses.replace(DqnConfig(), external_weights=True, external_bus_bits=port_bits)
    stream = compile_streamed(config, layers, weights)
    states = recorded_states()[:count]
    run = run_on_accelerator(DqnAccelerator(config=config), stream, states, sdram_inside=False, sdram_timing=timing,
                             max_cycles=1_000_000)
    wrong, _, _ = golden_mismatches(stream.plan, states, run)
    unequal, _ = formula_mismatches(stream, run, timing)
    counters = len(run.total_cycles) * (1 + len(COUNTERS) * len(stream.plan.layers))
    print(f"simulated ({name}, {port_bits}-bit port, Verilator): {len(states)} states, actions {[int(action) for action in run.actions]}; "
          f"Q-values {'bit-exact against the golden model' if not wrong else 'DIFFER: ' + '; '.join(wrong[:3])}; "
          f"{counters} counters {'all equal to the formula' if not unequal else 'DIFFER: ' + '; '.join(unequal[:3])}")
    print(f"  TOTAL_CYCLES {', '.join(f'{int(c):,}' for c in run.total_cycles)} (START on cycles "
          f"{', '.join(str(int(s)) for s in run.start_cycles)}), {run.total_cycles[0] / on_chip:.2f}x the on-chip "
          f"build's {on_chip:,}; build {run.build_seconds:.0f} s, run {run.run_seconds:.0f} s")


if __name__ == "__main__":
    main()
