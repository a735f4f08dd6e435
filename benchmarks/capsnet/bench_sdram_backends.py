"""Simulated cycles per second of the CapsNet DE1-SoC top (whole images: conv1, PrimaryCaps, step 2, routing) with
the SDRAM model inside the simulator against the Python slave, side by side on the same images in one run.

    python benchmarks/capsnet/bench_sdram_backends.py [--variant reduced|full] [--images N] [--rounds R]
        [--simulator verilator|icarus]

Each round simulates the first ``images`` sample digits twice, once per back end of
:mod:`testbench.capsnet.streaming_tb` (``sdram_inside``: ``testbench/shared/sdram_model.v`` in a
``WithSdramModel`` top, loaded and read through its backdoor; else the Python slave
``testbench.shared.avalon_sdram`` served from cocotb on every cycle), the two alternating so that both see the same
load (a top's build is not part of its run time).  It checks that both give the same outputs and counters, and
that every step is bit-exact against the golden model and every counter equal to the cycle formula.  Rates:
simulated cycles over the simulator process's run time (start-up and SDRAM image load included), and over the
wall time from START to ``done`` alone.
"""

import argparse

import numpy as np

from nnaccel.cli.capsnet import board_plan
from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
from nnaccel.models.capsnet.golden import classify_fixed, load_capsnet, quantize_image
from nnaccel.models.capsnet.image_stream_plan import image_stream_cycles
from nnaccel.models.capsnet.network import capsules_from_channels
from nnaccel.models.shared.mnist import sample_digits
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.testbench.capsnet.stream_host import run_image_stream

BACK_ENDS = {True: "SDRAM model inside the simulator", False: "Python slave (cocotb, every cycle)"}
COMPARED = ("predictions", "sums", "digit_caps", "squared_lengths", "labels", "start_cycles", "total_cycles",
            "layer_counters")


def check_against_golden(net, plan, images, run):
    """Every step bit-exact and every counter equal to the formula, for every image (AssertionError if not)."""
    port = TilePortModel(max_burst=plan.config.max_burst, fifo_depth=plan.config.fifo_depth)
    for index, image in enumerate(images):
        golden = classify_fixed(image, net)
        primary = capsules_from_channels(run.features["primary"][index][None], net.shape.primary_types)[0]
        assert np.array_equal(run.features["conv1_output"][index], golden.features), f"image {index}: conv1"
        assert np.array_equal(primary, golden.primary), f"image {index}: PrimaryCaps"
        assert np.array_equal(run.predictions[index], golden.predictions), f"image {index}: predictions"
        assert np.array_equal(run.digit_caps[index], golden.routing.digit_caps), f"image {index}: v_j"
        assert run.labels[index] == golden.label, f"image {index}: class"
        expected = image_stream_cycles(plan, int(run.start_cycles[index]), port)
        assert run.layer_counters[index].tolist() == [list(step) for step in expected.steps], f"image {index}"
        assert run.total_cycles[index] == expected.total, f"image {index}: total"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("reduced", "full"), default="reduced")
    parser.add_argument("--images", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--simulator", choices=("verilator", "icarus"), default="verilator")
    arguments = parser.parse_args()
    net = load_capsnet(arguments.variant)
    plan = board_plan(net)
    images = sample_digits()[0][:arguments.images]
    inputs = [quantize_image(image) for image in images]
    accelerator = CapsNetStreamingAccelerator(config=plan.config)
    rates = {inside: [] for inside in BACK_ENDS}
    for round_index in range(arguments.rounds):
        runs = {}
        for inside, label in BACK_ENDS.items():
            run = runs[inside] = run_image_stream(accelerator, plan, inputs, simulator=arguments.simulator,
                                                  sdram_inside=inside)
            cycles = int(run.total_cycles.sum())
            process_rate, running_rate = cycles / run.run_seconds, cycles / float(run.run_wall_seconds.sum())
            rates[inside].append(process_rate)
            print(f"round {round_index + 1}, {label}: {len(inputs)} images, {cycles:,} cycles; simulator process "
                  f"{run.run_seconds:.1f} s = {process_rate:,.0f} cycles/s; START to done {running_rate:,.0f} "
                  f"cycles/s", flush=True)
        for name in COMPARED:
            np.testing.assert_array_equal(getattr(runs[True], name), getattr(runs[False], name), err_msg=name)
        for name in ("conv1_output", "primary"):
            np.testing.assert_array_equal(runs[True].features[name], runs[False].features[name], err_msg=name)
        check_against_golden(net, plan, images, runs[True])
        print(f"round {round_index + 1}: both back ends give the same outputs and counters, every step bit-exact "
              f"against the golden model, every counter equal to the formula", flush=True)
    inside, python = (float(np.mean(rates[key])) for key in (True, False))
    print(f"{arguments.variant} CapsNet on the DE1-SoC top, {arguments.simulator}, mean over {arguments.rounds} "
          f"round(s): inside {inside:,.0f} cycles/s, Python slave {python:,.0f} cycles/s: {inside / python:.1f}x")


if __name__ == "__main__":
    main()
