"""Step 2 and steps 3-6 of the CapsNet streamed from the SDRAM model on the streaming accelerator, in simulation.

    python benchmarks/capsnet/bench_stream.py [--variant reduced|full] [--images N] [--multipliers dsp|logic]
        [--simulator verilator|icarus]

Step 1 runs in the fixed-point golden model (its output, the PrimaryCaps maps, goes into the SDRAM image as step 1
would leave it); the accelerator (:class:`hw.capsnet.streaming_accelerator.CapsNetStreamingAccelerator`, the
DE1-SoC configuration) streams the DigitCaps weights and the maps in, writes the prediction vectors to SDRAM and
routes on chip.  Prints, per image, whether the predictions, s_j, v_j, |v_j|^2 and the class equal
``models.capsnet.golden.classify_fixed``'s, the counters against the compiler's cycle formula
(:func:`models.capsnet.stream_plan.stream_cycles`), and milliseconds at 100 MHz next to the paper's.
"""

import argparse

import numpy as np

from nnaccel.hw.capsnet.stream_config import CapsNetStreamConfig
from nnaccel.hw.capsnet.stream_descriptor import StreamStep
from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
from nnaccel.models.capsnet.golden import COUPLING_SHIFT, classify_fixed, load_capsnet
from nnaccel.models.capsnet.network import PRIMARY_DIM
from nnaccel.models.capsnet.stream_plan import compile_stream, stream_cycles
from nnaccel.models.shared.mnist import sample_digits
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.testbench.capsnet.stream_host import run_on_stream

CLOCK_HZ = 100e6
PAPER_MS = {"step 2": 119, "steps 3-6": 133}


def primary_maps(primary, types, grid):
    """Capsules u_i (capsules, 8) back to the PrimaryCaps maps (types*8, grid, grid): capsule (t, y, x), element d
    = channel t*8 + d."""
    return primary.reshape(types, grid, grid, PRIMARY_DIM).transpose(0, 3, 1, 2).reshape(types * PRIMARY_DIM, grid, grid)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("reduced", "full"), default="reduced")
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--multipliers", choices=("dsp", "logic"), default="dsp")
    parser.add_argument("--simulator", choices=("verilator", "icarus"), default="verilator")
    arguments = parser.parse_args()
    net = load_capsnet(arguments.variant)
    config = CapsNetStreamConfig(multipliers=arguments.multipliers)
    images, _ = sample_digits()
    golden = [classify_fixed(image, net) for image in images[:arguments.images]]
    types, grid = net.shape.primary_types, net.shape.primary_size
    maps = np.stack([primary_maps(inference.primary, types, grid) for inference in golden])
    plan = compile_stream(config, maps[0], net.digit_weights, shift=net.digit_shift,
                          routing_shift=net.squash_shift + COUPLING_SHIFT)
    run = run_on_stream(CapsNetStreamingAccelerator(config=config), plan, maps, simulator=arguments.simulator)
    print(f"{arguments.variant} CapsNet, {plan.capsules} capsules, {plan.tiles} tiles; simulator build "
          f"{run.build_seconds:.0f} s, run {run.run_seconds:.0f} s for {len(maps)} images")
    port = TilePortModel(max_burst=config.max_burst, fifo_depth=config.fifo_depth)
    for index, inference in enumerate(golden):
        routing = inference.routing
        exact = {"predictions": np.array_equal(run.predictions[index], inference.predictions),
                 "s_j": np.array_equal(run.sums[index], routing.sums),
                 "v_j": np.array_equal(run.digit_caps[index], routing.digit_caps),
                 "|v_j|^2": np.array_equal(run.squared_lengths[index], routing.squared_lengths),
                 "class": run.labels[index] == inference.label}
        expected = stream_cycles(plan, int(run.start_cycles[index]), port)
        counters = run.layer_counters[index]
        matches = run.total_cycles[index] == expected.total and \
            counters.tolist() == [list(step) for step in expected.steps]
        step2, routing_tail = counters[StreamStep.PREDICTIONS], counters[StreamStep.ROUTING]
        print(f"image {index}: class {run.labels[index]} (golden {inference.label}); bit-exact "
              f"{', '.join(f'{name} {ok}' for name, ok in exact.items())}; counters == formula: {matches}")
        print(f"   step 2 {step2[0]:,} cycles ({step2[0] / CLOCK_HZ * 1e3:.3f} ms, paper {PAPER_MS['step 2']} ms): "
              f"{step2[1]:,} product, {step2[2]:,} waiting for SDRAM, {step2[3]:,} drain; then {routing_tail[0]} "
              f"cycles to the end of the run (routing {routing_tail[0] / CLOCK_HZ * 1e6:.2f} us, paper "
              f"{PAPER_MS['steps 3-6']} ms); SDRAM traffic {expected.bytes_read:,} B read, "
              f"{expected.bytes_written:,} B written: {(expected.bytes_read + expected.bytes_written) / run.total_cycles[index] * 100:.1f} MB/s")


if __name__ == "__main__":
    main()
