"""The CapsNet on a DE1-SoC (Cyclone V 5CSEMA5, 64 MB SDRAM): the configuration sweep, by the numbers.

    python benchmarks/capsnet/bench_de1soc.py [--variant full|reduced] [--sizes 4 8 12 16] [--styles logic dsp]

For every conv-engine size (``M`` modules x 6 lanes x 6 rows) and multiplier kind: every step's cycles from the
exact cycle formula of the streaming accelerator (:func:`models.capsnet.image_stream_plan.image_stream_cycles`:
the port programs on the SDRAM model; the counters of the RTL equal it, tests/capsnet/test_image_stream.py),
milliseconds at 100 MHz next to the paper's 137 / 119 / 133 / 395 ms, the SDRAM traffic, and the resources: the
Yosys estimate (``sim.fpga.synth``) of the whole accelerator built for the default configuration (``nnaccel synth
capsnet``) with its convolution engine replaced by the estimate of the engine of each configuration, and its
memory bits with its tile RAMs replaced by each configuration's (``CapsNetStreamConfig.tile_rams``: the slabs,
biases, input and staging RAMs grow with M).  Then GOP/s (the paper's counting, step 1), GOP/s per DSP block and
per thousand ALMs, against 7.06 GOP/s, 2.35 GOP/s/DSP, 1.11 GOP/s per thousand ALMs and 163 Kbit.
Slow the first time (Yosys: about an hour for the whole accelerator, minutes per engine; results are cached).
"""

import argparse
import dataclasses

from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.stream_config import CapsNetStreamConfig
from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
from nnaccel.models.capsnet.golden import COUPLING_SHIFT, load_capsnet
from nnaccel.models.capsnet.image_stream_plan import compile_image_stream, image_stream_cycles
from nnaccel.models.capsnet.network import IMAGE_SIZE, OPS_PER_ADD, OPS_PER_MUL, PRIMARY_STRIDE
from nnaccel.models.capsnet.plan import ConvSpec
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, sustained_read_bytes_per_cycle
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.sim.fpga.synth import ESTIMATE_NOTE, estimate

CLOCK_HZ = 100e6
PAPER_MS = {"step 1": 137, "step 2": 119, "steps 3-6": 133, "image": 395}
PAPER_GOPS, PAPER_GOPS_PER_DSP, PAPER_ALMS, PAPER_MEMORY_KBIT = 7.06, 2.35, 6_348, 163
DEVICE_ALMS = 32_070
START = 100                   # the START cycle of the timed run (an idle SDRAM before it)


def cycles(net, config):
    conv1 = ConvSpec("conv1", net.conv1_weights, net.conv1_bias, stride=1, shift=net.conv1_shift, relu=True)
    primary = ConvSpec("primary", net.primary_weights, net.primary_bias, stride=PRIMARY_STRIDE,
                       shift=net.primary_shift, relu=False)
    plan = compile_image_stream(config, conv1, primary, net.digit_weights, image_shape=(1, IMAGE_SIZE, IMAGE_SIZE),
                                digit_shift=net.digit_shift, routing_shift=net.squash_shift + COUPLING_SHIFT)
    return image_stream_cycles(plan, START, TilePortModel(max_burst=config.max_burst, fifo_depth=config.fifo_depth))


def conv_engine(config):
    engine = CapsNetConvEngine(config=config.conv_config)
    return estimate(engine, engine.module_name).total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("full", "reduced"), default="full")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 12, 16])
    parser.add_argument("--styles", nargs="+", choices=("logic", "dsp"), default=["logic", "dsp"])
    arguments = parser.parse_args()
    net = load_capsnet(arguments.variant)
    shape = net.shape
    sustained = sustained_read_bytes_per_cycle()
    print(f"SDRAM model: {DE1_SOC_SDRAM.peak_bytes_per_second / 1e6:.0f} MB/s peak, {sustained * 100:.1f} MB/s "
          f"sustained by a sequential read stream")
    chosen = CapsNetStreamConfig()
    whole = CapsNetStreamingAccelerator(config=chosen)
    print(f"Yosys: the whole accelerator at M = {chosen.conv_modules} ({chosen.conv_multipliers}) ...", flush=True)
    top = estimate(whole, whole.module_name).total
    chosen_engine = conv_engine(chosen)
    rest_alms, rest_dsp = top.alms - chosen_engine.alms, top.dsp_blocks - chosen_engine.dsp_blocks
    other_memory_bits = top.memory_bits - chosen.tile_ram_bits
    print(f"  {top.alms:,} ALMs, {top.dsp_blocks:.1f} DSP blocks, {top.m10k} M10K, {top.memory_bits:,} memory bits; "
          f"without its conv engine "
          f"({chosen_engine.alms:,} ALMs): {rest_alms:,} ALMs, {rest_dsp:.1f} DSP blocks")
    step1_operations = shape.step1_macs * (OPS_PER_MUL + OPS_PER_ADD)
    print(f"\n{arguments.variant} CapsNet; ms at 100 MHz (paper {PAPER_MS['step 1']} / {PAPER_MS['step 2']} / "
          f"{PAPER_MS['steps 3-6']} / {PAPER_MS['image']})")
    header = (f"{'conv engine':<16}{'ALMs':>8}{'DSP':>5}{'step 1 ms':>11}{'step 2 ms':>11}{'3-6 ms':>8}"
              f"{'image ms':>10}{'GOP/s':>7}{'/DSP':>6}{'/kALM':>7}{'Kbit':>6}")
    print(header)
    print("-" * len(header))
    for modules in arguments.sizes:
        timing = None
        for style in arguments.styles:
            blocks = -(-max(shape.conv_channels, shape.primary_channels) // modules)    # biases held on chip
            config = dataclasses.replace(chosen, conv_modules=modules, conv_multipliers=style, max_blocks=blocks)
            timing = timing or cycles(net, config)
            engine = conv_engine(config)
            alms = rest_alms + engine.alms
            dsp = -(-(rest_dsp + engine.dsp_blocks) // 1)
            kbit = (other_memory_bits + config.tile_ram_bits) / 1024
            step1 = timing.steps[0][0] + timing.steps[1][0]
            gops = step1_operations / (step1 / CLOCK_HZ) / 1e9
            print(f"{modules:>3} x 6 x 6 {style:<5}{alms:>8,}{dsp:>5.0f}{step1 / CLOCK_HZ * 1e3:>11.2f}"
                  f"{timing.steps[2][0] / CLOCK_HZ * 1e3:>11.2f}{timing.steps[3][0] / CLOCK_HZ * 1e3:>8.3f}"
                  f"{timing.total / CLOCK_HZ * 1e3:>10.2f}{gops:>7.1f}{gops / dsp if dsp else 0:>6.2f}"
                  f"{gops / alms * 1e3:>7.2f}{kbit:>6.0f}  ({alms / DEVICE_ALMS:.0%} of the ALMs)", flush=True)
        print(f"{'':<16}SDRAM traffic {timing.bytes_read:,} B read, {timing.bytes_written:,} B written per image")
    print(f"{'paper':<16}{PAPER_ALMS:>8,}{3:>5}{PAPER_MS['step 1']:>11.2f}{PAPER_MS['step 2']:>11.2f}"
          f"{PAPER_MS['steps 3-6']:>8.3f}{PAPER_MS['image']:>10.2f}{PAPER_GOPS:>7.2f}{PAPER_GOPS_PER_DSP:>6.2f}"
          f"{PAPER_GOPS / PAPER_ALMS * 1e3:>7.2f}{PAPER_MEMORY_KBIT:>6}")
    print(ESTIMATE_NOTE)


if __name__ == "__main__":
    main()
