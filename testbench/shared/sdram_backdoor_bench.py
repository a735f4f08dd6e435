"""cocotb test module timing the SDRAM model's backdoor (benchmarks/shared/bench_sdram_model.py): load
``image_bytes`` random bytes at address 0, read back ``region_bytes`` from the middle of them, and check them.
Output: ``seconds`` (load, read back), wall-clock."""

import time

import cocotb
import numpy as np

from nnaccel.testbench.shared.exchange import load_config, save_outputs
from nnaccel.testbench.shared.sdram_backdoor import SdramBackdoor


@cocotb.test()
async def backdoor_speed(dut):
    config = load_config()
    backdoor = SdramBackdoor(dut, word_bytes=4)
    image = np.random.default_rng(5).integers(0, 256, size=config["image_bytes"] // 4 * 4, dtype=np.uint8)
    start = time.perf_counter()
    await backdoor.write(0, image)
    loaded = time.perf_counter()
    middle = len(image) // 2 // 4 * 4
    region = await backdoor.read(middle, config["region_bytes"])
    read_back = time.perf_counter()
    np.testing.assert_array_equal(region, image[middle:middle + config["region_bytes"]])
    save_outputs(seconds=np.array([loaded - start, read_back - loaded]))
