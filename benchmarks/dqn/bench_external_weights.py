"""The thesis network with its weights in external memory: the cycle formula's figures per memory, no simulation.

    python benchmarks/dqn/bench_external_weights.py [--start CYCLE]

Compiles the thesis network (trained weights) for the default 16 x 16 configuration with ``external_weights`` and
the DE5-Net's 1,024-bit port, and for the same configuration on the DE1-SoC SDRAM's 32-bit port, and prints for each
the cycles of one run STARTed on ``--start`` (``models.dqn.weight_stream.stream_counters``: the counters the RTL
matches with that memory behind its Avalon port), the ratio to the on-chip build's cycles, the weight bytes and the
bandwidth bound (weight bytes / the memory's sustained read bytes per cycle).  The memory's refresh phase moves the
figures by a few tens of cycles with ``--start``.
"""

import argparse
import dataclasses

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.network import TRAINED_WEIGHTS, dqn_layers, load_weights
from nnaccel.models.dqn.plan import compile_network
from nnaccel.models.dqn.weight_stream import compile_streamed, stream_counters
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, DE5_NET_DDR3, sustained_read_bytes_per_cycle
from nnaccel.models.shared.tile_port import TilePortModel

MEMORIES = (("DE5-Net DDR3 channel", DE5_NET_DDR3, 1024), ("DE1-SoC SDRAM", DE1_SOC_SDRAM, 32))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=100, help="the cycle the run's START is taken on (default 100)")
    arguments = parser.parse_args()
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


if __name__ == "__main__":
    main()
