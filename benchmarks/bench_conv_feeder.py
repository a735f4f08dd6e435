"""Cycle counts of the convolution feeder for the DQN's two convolution layers, measured in RTL simulation
(Verilator) and compared with the analytical count and the thesis.

    python benchmarks/bench_conv_feeder.py

For each layer: the analytical count ``groups * channels * kernel_size**2`` (``ConvGeometry.cycles``), the cycles
from the ``start`` cycle to the last beat as simulated (first beat after ``FEEDER_LATENCY`` cycles, then one beat
per cycle), the thesis' claimed cycle count and the implied multiply-add throughput at 100 MHz when every beat
drives the 16 matrix modules (CONV_2: each of the 8 scalars drives 2 modules).
"""

import numpy as np

from hw.conv_feeder import ConvGeometry
from models.conv_feeder import feeder_schedule
from testbench.conv_feeder_top import geometry_kwargs, run_feeder

CLOCK_HZ = 100e6
LAYERS = {  # name: ((channels, image_size, kernel_size, stride, positions), filters, thesis cycles)
    "CONV_1": ((4, 84, 8, 4, 16), 16, 6400),
    "CONV_2": ((16, 20, 4, 2, 8), 32, 11 * 256),
}


def main():
    print(f"{'layer':7} {'groups':>6} {'cycles':>7} {'simulated':>9} {'thesis':>7} {'GFLOPS@100MHz':>13} "
          f"{'sim s':>6}")
    for name, (geometry, filters, thesis_cycles) in LAYERS.items():
        shape = ConvGeometry(**geometry_kwargs(geometry))
        schedule = feeder_schedule(*geometry)
        image = np.random.default_rng(1).standard_normal((geometry[0], geometry[1], geometry[1]))
        result = run_feeder(geometry, image.astype(np.float32).view(np.uint32), beats=len(schedule.cycle))
        simulated = int(result.outputs["cycle"][-1]) - int(result.outputs["cycle"][0]) + 1
        flops = 2 * shape.output_size ** 2 * filters * shape.products
        print(f"{name:7} {shape.groups:6d} {shape.cycles:7d} {simulated:9d} {thesis_cycles:7d} "
              f"{flops / (shape.cycles / CLOCK_HZ) / 1e9:13.1f} {result.run_seconds:6.1f}")


if __name__ == "__main__":
    main()
