"""Yosys resource estimates (Cyclone V) of every system at full size, next to the published figures, and the
DQN accelerator's fit on the DE1-SoC's Cyclone V 5CSEMA5.

    python benchmarks/shared/bench_synth.py [--json FILE]

The same numbers as ``nnaccel synth`` (shared cache: a second run takes seconds); the first run generates
and synthesizes the full DQN accelerator (tens of minutes on a busy 2-core machine).  Not part of the tests.
"""

import argparse
import json
import time
from pathlib import Path

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.cli.fpga import CYCLONE_V_5CSEMA5, fit_summary
from nnaccel.sim.fpga.synth import ESTIMATE_NOTE, estimate, format_table
from nnaccel.sim.fpga.systems import SYSTEMS

# A DQN accelerator small enough for the 5CSEMA5: 16 MACs, activation and weight RAMs of 512 words (one M10K
# deep).  It runs networks whose layers fit it, not the thesis network (see the fit notes printed below).
SMALL_DQN = DqnConfig(modules=2, lanes=8, activation_depth=512, weight_depth=512)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", help="also write every estimate as JSON")
    arguments = parser.parse_args()
    reports, references = [], {}
    for name, entry in SYSTEMS.items():
        component = entry.build()
        start = time.perf_counter()
        report = estimate(component, component.module_name)
        print(f"{name}: {time.perf_counter() - start:.1f} s", flush=True)
        reports.append(report)
        references[report.name] = entry.reference
    small = estimate(DqnAccelerator(config=SMALL_DQN), SMALL_DQN.module_name)
    reports.append(small)
    print()
    print(format_table(reports))
    print()
    for report in reports:
        if references.get(report.name):
            print(f"{report.name}: published: {references[report.name]}")
        print(fit_summary(report))
    if arguments.json:
        Path(arguments.json).write_text(json.dumps(
            {"note": ESTIMATE_NOTE, "device": CYCLONE_V_5CSEMA5,
             "systems": [{**report.as_dict(), "fit": fit_summary(report)} for report in reports]}, indent=2) + "\n")
        print(f"written {arguments.json}")


if __name__ == "__main__":
    main()
