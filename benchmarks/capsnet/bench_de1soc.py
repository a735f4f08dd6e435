"""The CapsNet on a DE1-SoC (Cyclone V 5CSEMA5, 64 MB SDRAM): configuration sweep by the numbers.

    python benchmarks/capsnet/bench_de1soc.py [--variant full|reduced] [--sizes 4 8 16] [--matvec dsp|logic]

For every conv-engine size (``M`` modules x 6 lanes) and multiplier kind: the steps' cycles from the streaming
schedule (:mod:`models.capsnet.streaming`: double-buffered tiles through the SDRAM model), milliseconds at 100 MHz
next to the paper's 137 / 119 / 133 ms, the bandwidth each step needs against what the SDRAM gives, and the
resources: Yosys estimates (``sim.fpga.synth``) of the conv and matvec engines, the routing engine and the
Avalon master, plus the conv engine's extra accumulators for the row rotation (``M * 6 * 5`` of 32 bits, counted
as flip-flops at four per ALM: the engines as built have one per lane).  Then GOP/s (the paper's counting, step 1),
GOP/s per DSP block and per thousand ALMs, against 7.06 GOP/s and 2.35 GOP/s/DSP.  Slow the first time (Yosys,
minutes per engine; results are cached) and the full variant's schedule takes about a minute per size.
"""

import argparse

from hw.capsnet.config import CapsNetConfig
from hw.capsnet.conv_engine import CapsNetConvEngine
from hw.capsnet.matvec_engine import CapsNetMatvecEngine
from hw.capsnet.routing_engine import CapsNetRoutingEngine, routing_finish_cycles
from hw.shared.avalon_master import AvalonBurstMaster
from models.capsnet.network import CLASSES, DIGIT_DIM, OPS_PER_ADD, OPS_PER_MUL, VARIANTS
from models.capsnet.streaming import ROTATIONS, memory_map, schedule, step1_tiles, step2_tiles
from models.shared.sdram import DE1_SOC_SDRAM, sustained_read_bytes_per_cycle
from sim.fpga.synth import ESTIMATE_NOTE, estimate

CLOCK_HZ = 100e6
PAPER_MS = {"step 1": 137, "step 2": 119, "steps 3-6": 133, "total": 395}
PAPER_GOPS, PAPER_GOPS_PER_DSP = 7.06, 2.35
DEVICE_ALMS, DEVICE_DSP = 32_070, 87
LANES = 6
ACCUMULATOR_BITS = 32


def resources(component, name=None):
    total = estimate(component, name or component.module_name).total
    return total.alms, total.dsp_blocks


def engine_resources(engine_class, label, modules, style):
    """An engine's estimate under the configuration and name ``bench_synth.py`` uses (both engines in ``style``),
    so the two benchmarks share Yosys' cached results."""
    config = CapsNetConfig(conv_modules=modules, conv_lanes=LANES, conv_multipliers=style, matvec_multipliers=style)
    return resources(engine_class(config=config), f"capsnet_{label}_engine_{config.name}")


def step_table(shape, modules):
    regions = memory_map(shape, modules)
    conv1, primary = step1_tiles(shape, regions, conv_modules=modules, conv_lanes=LANES)
    return {"conv1": schedule(conv1), "primary": schedule(primary), "step 2": schedule(step2_tiles(shape, regions)),
            "routing": routing_finish_cycles(CLASSES, DIGIT_DIM)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="full")
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--matvec", choices=("dsp", "logic"), default="dsp")
    arguments = parser.parse_args()
    shape = VARIANTS[arguments.variant]
    sustained = sustained_read_bytes_per_cycle()
    print(f"SDRAM model: {DE1_SOC_SDRAM.peak_bytes_per_second / 1e6:.0f} MB/s peak, {sustained * 100:.1f} MB/s "
          f"sustained by a sequential read stream ({sustained:.3f} bytes/cycle)")
    fixed = {"matvec": engine_resources(CapsNetMatvecEngine, "matvec", 8, arguments.matvec),
             "routing": resources(CapsNetRoutingEngine(multipliers=arguments.matvec)),
             "avalon master": resources(AvalonBurstMaster())}
    for name, (alms, dsp) in fixed.items():
        print(f"  {name}: {alms:,} ALMs, {dsp:.1f} DSP blocks (Yosys estimate)")
    step1_operations = shape.step1_macs * (OPS_PER_MUL + OPS_PER_ADD)
    print(f"\n{arguments.variant} CapsNet, conv engine M x {LANES}, {ROTATIONS} rows per pass, matvec "
          f"{arguments.matvec}: cycles (ms at 100 MHz; paper {PAPER_MS['step 1']} / {PAPER_MS['step 2']} / "
          f"{PAPER_MS['steps 3-6']} / {PAPER_MS['total']} ms)")
    for modules in arguments.sizes:
        steps = step_table(shape, modules)
        step1 = steps["conv1"].cycles + steps["primary"].cycles
        total = step1 + steps["step 2"].cycles + steps["routing"]
        print(f"M={modules:>2}: conv1 {steps['conv1'].cycles:,} + PrimaryCaps {steps['primary'].cycles:,} = step 1 "
              f"{step1:,} ({step1 / CLOCK_HZ * 1e3:.1f} ms), step 2 {steps['step 2'].cycles:,} "
              f"({steps['step 2'].cycles / CLOCK_HZ * 1e3:.2f} ms), routing {steps['routing']} after step 2 "
              f"({steps['routing'] / CLOCK_HZ * 1e6:.1f} us), image {total / CLOCK_HZ * 1e3:.1f} ms")
        for name in ("conv1", "primary", "step 2"):
            step = steps[name]
            print(f"      {name:<8} compute {step.compute:>9,}  stall {step.stall:>9,}  traffic "
                  f"{(step.bytes_read + step.bytes_written) / 1e6:6.2f} MB  needs "
                  f"{step.needed_bytes_per_cycle() * 100:7.1f} MB/s to never wait (SDRAM {sustained * 100:.0f})")
        gops = step1_operations / (step1 / CLOCK_HZ) / 1e9
        accumulator_alms = modules * LANES * (ROTATIONS - 1) * ACCUMULATOR_BITS // 4
        for style in ("dsp", "logic"):
            conv_alms, conv_dsp = engine_resources(CapsNetConvEngine, "conv", modules, style)
            alms = conv_alms + accumulator_alms + sum(alms for alms, _ in fixed.values())
            dsp = -(-(conv_dsp + sum(dsp for _, dsp in fixed.values())) // 1)
            per_dsp = f"{gops / dsp:.2f}" if dsp else "no DSP"
            print(f"      conv {style:<5}: {alms:>6,} ALMs ({alms / DEVICE_ALMS:.0%} of {DEVICE_ALMS:,}), {dsp:>3.0f} DSP "
                  f"blocks; step 1 {gops:.1f} GOP/s (paper {PAPER_GOPS}), {per_dsp} GOP/s/DSP (paper "
                  f"{PAPER_GOPS_PER_DSP}), {gops / alms * 1e3:.2f} GOP/s per kALM", flush=True)
    print(ESTIMATE_NOTE)


if __name__ == "__main__":
    main()
