"""Simulated cycles per second of a DUT streaming through the DE1-SoC SDRAM: the model inside the simulator
(testbench/shared/sdram_model.v) against the Python slave served from cocotb on every cycle
(testbench.shared.avalon_sdram), and the time the backdoor takes to load and read the model's memory.

    python benchmarks/shared/bench_sdram_model.py [--words N] [--python-words N] [--image-bytes N]

The DUT is the full-size Avalon burst master (32-bit words, bursts of 128, a 256-word read FIFO) on Verilator,
reading ``words`` words sequentially while it writes half as many elsewhere (avalon_master_tb's ``streaming``
test: the testbench looks at the master every 1,024 cycles only).  Cycles per second are the simulated cycles
over the simulation's run time (start-up included, builds excluded: each top is built once before it is timed).
The backdoor figures are from a cocotb test that loads ``image-bytes`` and reads back a 184 KB region.
"""

import argparse

import numpy as np

from nnaccel.hw.shared.avalon_master import AvalonBurstMaster
from nnaccel.sim.harness import simulate
from nnaccel.testbench.shared.sdram_model import WithSdramModel

IMAGE_BYTES = 1 << 16


def streaming_rate(words, *, sdram_inside):
    master = AvalonBurstMaster()
    top, name = master, master.module_name
    if sdram_inside:
        top, name = WithSdramModel(master, memory_bytes=1 << 24), f"{master.module_name}_sdram"
    config = {"commands": [["read", 0, words], ["write", 1 << 23, words // 2]], "image_base": 0,
              "max_burst": master.max_burst, "max_cycles": 40 * words, "address_bits": 26,
              "sdram_inside": sdram_inside}
    stimulus = {"image": np.arange(IMAGE_BYTES // 4, dtype=np.uint32).view(np.uint8)}
    simulate(top, name=name, test_module="nnaccel.testbench.shared.avalon_master_tb", testcase="streaming",
             stimulus=stimulus, config={**config, "commands": [["read", 0, 16]]})           # build (not timed)
    result = simulate(top, name=name, test_module="nnaccel.testbench.shared.avalon_master_tb", testcase="streaming",
                      stimulus=stimulus, config=config)
    cycles = int(result.outputs["cycles"])
    return cycles, result.run_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", type=int, default=1_000_000, help="words read with the model inside")
    parser.add_argument("--python-words", type=int, default=50_000, help="words read with the Python slave")
    parser.add_argument("--image-bytes", type=int, default=7_100_000, help="bytes the backdoor loads")
    args = parser.parse_args()
    for label, words, inside in (("SDRAM model inside the simulator", args.words, True),
                                 ("Python slave (cocotb, every cycle)", args.python_words, False)):
        cycles, seconds = streaming_rate(words, sdram_inside=inside)
        print(f"{label}: {words:,} words read + {words // 2:,} written, {cycles:,} cycles in {seconds:.1f} s "
              f"= {cycles / seconds:,.0f} cycles/s")
    backdoor = simulate(WithSdramModel(AvalonBurstMaster(), memory_bytes=1 << 23),
                        name="avalon_master_d32_a26_b128_w20_f256_sdram8m",
                        test_module="nnaccel.testbench.shared.sdram_backdoor_bench",
                        config={"image_bytes": args.image_bytes, "region_bytes": 184 * 1024})
    load, readback = backdoor.outputs["seconds"]
    print(f"backdoor: {args.image_bytes:,} bytes loaded in {load:.2f} s, 184 KB read back in {readback:.2f} s")


if __name__ == "__main__":
    main()
