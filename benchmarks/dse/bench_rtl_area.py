"""The RTL family's composed area (dse/rtl/area.py) against whole-design Yosys runs.

    python benchmarks/dse/bench_rtl_area.py [--full]

For three configurations outside those the table was fitted on (``rtl_area.MEASURED_CONFIGS``), each with
another number format and pair of latencies, ``nnaccel synth``'s estimate of the whole accelerator (Yosys,
hierarchical, minutes each) beside the composition from the table (milliseconds): ALMs, DSP blocks, M10K and
the relative difference, then per component.  ``--full`` adds the thesis' 16 x 16 configuration (the
whole-design run takes the better part of an hour).  Yosys results are cached, so a second run is quick.
"""

import argparse
import time

from nnaccel.dse.rtl.area import component_of_row, compose
from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.sim.fpga.synth import estimate

CHECK_CONFIGS = (
    DqnConfig(modules=4, lanes=4, fmt=BFLOAT16, multiplier_latency=1, adder_latency=3, row_elements=16,
              activation_depth=256, weight_depth=512, max_layers=8),
    DqnConfig(modules=2, lanes=8, fmt=BINARY16, multiplier_latency=3, adder_latency=1, row_elements=24,
              activation_depth=512, weight_depth=1024, max_layers=6),
    DqnConfig(modules=8, lanes=2, fmt=BINARY32, multiplier_latency=2, adder_latency=3, row_elements=12,
              activation_depth=128, weight_depth=256, max_layers=8),
)


def relative(composed, measured):
    return (composed - measured) / measured if measured else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="also the thesis' 16 x 16 binary32 configuration")
    args = parser.parse_args()
    configs = CHECK_CONFIGS + ((DqnConfig(),) if args.full else ())
    worst = 0.0
    for config in configs:
        start = time.perf_counter()
        report = estimate(DqnAccelerator(config=config), config.module_name)
        parts, composed = compose(config)
        measured = report.total
        print(f"\n{config.module_name} (whole-design Yosys {report.seconds:.0f} s, this run "
              f"{time.perf_counter() - start:.0f} s)")
        print(f"  {'':<16}{'ALMs':>9}{'DSP':>8}{'M10K':>7}")
        print(f"  {'Yosys':<16}{measured.alms:>9,}{measured.dsp_blocks:>8.1f}{measured.m10k:>7,}")
        print(f"  {'composed':<16}{composed.alms:>9,}{composed.dsp_blocks:>8.1f}{composed.m10k:>7,}")
        differences = [relative(composed.alms, measured.alms), relative(composed.dsp_blocks, measured.dsp_blocks),
                       relative(composed.m10k, measured.m10k)]
        print(f"  {'difference':<16}{differences[0]:>+9.1%}{differences[1]:>+8.1%}{differences[2]:>+7.1%}")
        worst = max(worst, *map(abs, differences))
        for component, (_, cells) in parts.items():
            rows = [row.resources for row in report.rows if component_of_row(row.label) == component]
            luts, flip_flops, carry = (sum(getattr(row, field) for row in rows)
                                       for field in ("luts", "flip_flops", "carry"))
            print(f"    {component:<16} LUTs {luts:>7,} composed {cells['luts']:>7,}   FFs {flip_flops:>6,} composed "
                  f"{cells['flip_flops']:>6,}   carry {carry:>6,} composed {cells['carry']:>6,}")
    print(f"\nlargest difference over {len(configs)} configurations (ALMs, DSP blocks, M10K): {worst:.1%}")


if __name__ == "__main__":
    main()
