"""Yosys resource estimate (Cyclone V) of the CapsNet accelerator's two engines, DSP vs logic multipliers.

    python benchmarks/capsnet/bench_synth.py [--conv-modules M] [--conv-lanes L] [--matvec-lanes E]

Synthesizes :class:`hw.capsnet.conv_engine.CapsNetConvEngine` and :class:`hw.capsnet.matvec_engine.CapsNetMatvecEngine`
(without their RAMs) with ``sim.fpga.synth.estimate`` (``synth_intel_alm -family cyclonev``, hierarchical; an
estimate, not a Quartus fit) for both multiplier styles and prints ALMs and DSP blocks; the RAMs are counted
separately by the ``nnaccel synth`` of the whole system.  Then prints the full CapsNet's step-1 cycles at this
size and its GOP/s/DSP per multiplier choice (the paper's 2.35).  Slow: minutes per engine.
"""

import argparse
import dataclasses

from nnaccel.hw.capsnet.config import CapsNetConfig
from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.sim.fpga.synth import ESTIMATE_NOTE, estimate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conv-modules", type=int, default=CapsNetConfig.conv_modules)
    parser.add_argument("--conv-lanes", type=int, default=CapsNetConfig.conv_lanes)
    parser.add_argument("--matvec-lanes", type=int, default=CapsNetConfig.matvec_lanes)
    arguments = parser.parse_args()
    print(f"{'engine':<8}{'multipliers':>12}{'ALMs (est.)':>13}{'DSP blocks':>12}{'LUTs':>8}{'carry':>8}{'FFs':>8}")
    for style in ("dsp", "logic"):
        config = CapsNetConfig(conv_modules=arguments.conv_modules, conv_lanes=arguments.conv_lanes,
                               matvec_lanes=arguments.matvec_lanes, conv_multipliers=style, matvec_multipliers=style)
        engines = (("conv", CapsNetConvEngine(config=config)), ("matvec", CapsNetMatvecEngine(config=config)))
        for label, engine in engines:
            total = estimate(engine, f"capsnet_{label}_engine_{config.name}").total
            print(f"{label:<8}{style:>12}{total.alms:>13,}{total.dsp_blocks:>12.1f}{total.luts:>8,}{total.carry:>8,}"
                  f"{total.flip_flops:>8,}", flush=True)
    print(ESTIMATE_NOTE)
    _print_step1_rates(arguments)


def _print_step1_rates(arguments):
    """Step 1 of the full CapsNet at this size: cycles from the compiler's formula (the hardware's counters
    match it on every configuration simulated), and GOP/s/DSP for each multiplier choice (paper: 2.35)."""
    from nnaccel.models.capsnet.network import OPS_PER_ADD, OPS_PER_MUL
    from nnaccel.models.capsnet.golden import load_capsnet
    from nnaccel.models.capsnet.plan import compile_capsnet

    net = load_capsnet("full")
    base = CapsNetConfig(conv_modules=arguments.conv_modules, conv_lanes=arguments.conv_lanes,
                         matvec_lanes=arguments.matvec_lanes, conv_weight_depth=1 << 20)
    layers = [layer for layer in compile_capsnet(base, net).layers if layer.name in ("conv1", "primary")]
    cycles = sum(layer.expected_cycles for layer in layers)        # the same for every multiplier style
    gops = sum(layer.macs for layer in layers) * (OPS_PER_ADD + OPS_PER_MUL) / (cycles / 100e6) / 1e9
    for conv_style, matvec_style in (("dsp", "dsp"), ("logic", "dsp"), ("logic", "logic")):
        config = dataclasses.replace(base, conv_multipliers=conv_style, matvec_multipliers=matvec_style)
        per_dsp = f"{gops / config.dsp_blocks:.2f} GOP/s/DSP" if config.dsp_blocks else "no DSP block"
        print(f"full CapsNet step 1, conv {conv_style} / matvec {matvec_style}: {cycles:,} cycles = "
              f"{cycles / 1e5:.1f} ms at 100 MHz, {gops:.1f} GOP/s, {config.dsp_blocks} DSP blocks, {per_dsp}")

if __name__ == "__main__":
    main()
