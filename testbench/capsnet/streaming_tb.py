"""cocotb test module for :class:`hw.capsnet.streaming_accelerator.CapsNetStreamingAccelerator`: the SDRAM model
behind its Avalon port, one run per input.

The SDRAM is the model inside the simulator (``sdram_inside``: the top is the accelerator in a
:class:`testbench.shared.sdram_model.WithSdramModel`, its memory loaded and read through the backdoor, and no
Python runs while the accelerator does) or the Python slave (:mod:`testbench.shared.avalon_sdram`, served from
cocotb on every cycle, checking the master's protocol); both through :mod:`testbench.shared.sdram_memory`.  The
SDRAM image's regions are written into the memory before the first run; for every input its region
(``input_region``: the image, or the PrimaryCaps output when step 1 is not run) is replaced, the host writes the
descriptors once and START per input, waits for ``done``, reads the routing words and the counters, and the
``readback`` regions (features, predictions) are read from the memory.

Configuration: ``descriptors`` (ints, one per step), ``regions`` ({name: [base, bytes]}), ``input_region``,
``readback`` (region names), ``routing_words``, ``routing_bytes``, ``max_cycles`` (timeout of one run),
``sdram_inside``, ``word_bytes`` (the Avalon port's width).  Stimulus:
``region_<name>`` (uint8, the image), ``inputs`` (N, bytes) uint8.  Outputs: ``region_<name>`` (N, bytes) for every
``readback`` region, ``routing`` (N, words, bytes) uint8, ``start_cycles`` (the START cycle of each run, counted like
the SDRAM slave's cycles from the first after reset), ``total_cycles`` (N,), ``layer_counters`` (N, steps, 4),
``run_wall_seconds`` (N,).
"""

import cocotb
import numpy as np

from nnaccel.hw.capsnet.stream_descriptor import StreamStep
from nnaccel.hw.capsnet.streaming_accelerator import StreamMemory
from nnaccel.hw.shared.host_control import HostTarget
from nnaccel.testbench.capsnet.accelerator_tb import int_to_bytes
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs
from nnaccel.testbench.shared.host_driver import IDLE_HOST, HostDriver, current_cycle, report_progress
from nnaccel.testbench.shared.sdram_memory import start_sdram


@cocotb.test()
async def stream_inputs(dut):
    config, stimulus = load_config(), load_stimulus()
    regions = {base: stimulus[f"region_{name}"] for name, (base, _) in config["regions"].items()}
    _, memory = await start_sdram(dut, regions, inside=config["sdram_inside"], word_bytes=config["word_bytes"],
                                  hold=IDLE_HOST)
    first_cycle = current_cycle()
    host = HostDriver(dut)
    await host.write_block(HostTarget.DESCRIPTORS, 0, config["descriptors"])
    input_base, _ = config["regions"][config["input_region"]]
    readback = {name: config["regions"][name] for name in config["readback"]}
    observed = {name: [] for name in ("routing", "start_cycles", "total_cycles", "layer_counters", "run_wall_seconds")}
    observed |= {f"region_{name}": [] for name in readback}
    for index, values in enumerate(stimulus["inputs"]):
        await memory.write(input_base, values)
        observed["start_cycles"].append(current_cycle() - first_cycle)
        observed["run_wall_seconds"].append(await host.run(len(StreamStep), config["max_cycles"]))
        words = await host.read_block(StreamMemory.ROUTING, range(config["routing_words"]))
        observed["routing"].append([int_to_bytes(word, config["routing_bytes"]) for word in words])
        total, counters = await host.read_counters(len(StreamStep))
        observed["total_cycles"].append(total)
        observed["layer_counters"].append(counters)
        for name, (base, size) in readback.items():
            observed[f"region_{name}"].append(await memory.read(base, size))
        report_progress(config, index + 1, len(stimulus["inputs"]))
    save_outputs(**{name: np.array(values, dtype=np.float64 if name == "run_wall_seconds" else
                                   np.uint8 if name == "routing" or name.startswith("region_") else np.int64)
                    for name, values in observed.items()})
