"""cocotb test module for :class:`hw.capsnet.accelerator.CapsNetAccelerator`: load a compiled network, run N inputs.

The host (:class:`~testbench.shared.host_driver.HostDriver`, one access per cycle) writes the conv
weights, biases, matrix-vector weights and descriptors once; then for every input writes its activation words,
writes START and waits on the rising edge of ``done`` (the hardware runs freely), and reads back the prediction
words, the tensors asked for in ``dumps``, TOTAL_CYCLES and the per-layer counters.

Stimulus: ``conv_weights`` (words, conv_modules) uint8, ``biases`` (words, conv_modules) uint32,
``matvec_weights`` (words, matvec_lanes) uint8 (raw two's-complement bits), ``inputs`` (N, words, row_elements)
uint8.  Configuration: ``descriptors`` (ints), ``input`` and each of ``dumps`` as ``{"ram", "base", "words"}``,
``prediction_words``, ``max_cycles`` (timeout of one run), optional ``progress_file`` (rewritten with "done
total" after every input).  Outputs: ``predictions`` (N, words, matvec_lanes) uint8, ``dump<i>`` (N, words,
row_elements) uint8, ``total_cycles`` (N,), ``layer_counters`` (N, layers, 4), ``load_cycles`` (N,),
``run_wall_seconds`` (N,).
"""

import cocotb
import numpy as np

from nnaccel.hw.capsnet.accelerator import CapsNetMemory
from nnaccel.hw.shared.host_control import HostTarget
from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs
from nnaccel.testbench.shared.host_driver import IDLE_HOST, HostDriver, current_cycle, report_progress


def rows_to_ints(rows, dtype):
    """Rows of elements (element 0 at the LSB) as Python ints."""
    return [int.from_bytes(row.astype(dtype).tobytes(), "little") for row in np.asarray(rows)]


def int_to_bytes(value, count):
    return np.frombuffer(value.to_bytes(count, "little"), dtype=np.uint8)


async def _load_network(host, config, stimulus):
    await host.write_block(CapsNetMemory.CONV_WEIGHTS, 0, rows_to_ints(stimulus["conv_weights"], "<u1"))
    await host.write_block(CapsNetMemory.BIASES, 0, rows_to_ints(stimulus["biases"], "<u4"))
    await host.write_block(CapsNetMemory.MATVEC_WEIGHTS, 0, rows_to_ints(stimulus["matvec_weights"], "<u1"))
    await host.write_block(HostTarget.DESCRIPTORS, 0, config["descriptors"])


async def _infer(host, config, input_words, lanes, row_elements):
    """Load one input, run, read everything back: a dict of this input's observations."""
    first = current_cycle()
    tensor = config["input"]
    await host.write_block(CapsNetMemory.ACTIVATIONS0 + tensor["ram"], tensor["base"],
                           rows_to_ints(input_words, "<u1"))
    observed = {"load_cycles": current_cycle() - first}
    observed["run_wall_seconds"] = await host.run(len(config["descriptors"]), config["max_cycles"])
    words = config["prediction_words"]
    observed["predictions"] = ([int_to_bytes(value, lanes) for value in
                                await host.read_block(CapsNetMemory.PREDICTIONS, range(words))] if words else [])
    observed["dumps"] = []
    for dump in config.get("dumps", []):
        values = await host.read_block(CapsNetMemory.ACTIVATIONS0 + dump["ram"],
                                       range(dump["base"], dump["base"] + dump["words"]))
        observed["dumps"].append([int_to_bytes(value, row_elements) for value in values])
    observed["total_cycles"], observed["layer_counters"] = await host.read_counters(len(config["descriptors"]))
    return observed


@cocotb.test()
async def run_inputs(dut):
    config, stimulus = load_config(), load_stimulus()
    await start_clock_and_reset(dut, hold=IDLE_HOST)
    host = HostDriver(dut)
    await _load_network(host, config, stimulus)
    lanes, row_elements = stimulus["matvec_weights"].shape[1], stimulus["inputs"].shape[2]
    report_progress(config, 0, len(stimulus["inputs"]))     # network loaded: the bar shows the inferences
    runs = []
    for input_words in stimulus["inputs"]:
        runs.append(await _infer(host, config, input_words, lanes, row_elements))
        report_progress(config, len(runs), len(stimulus["inputs"]))
    arrays = {name: np.array([run[name] for run in runs], dtype=np.float64 if name == "run_wall_seconds" else np.uint64)
              for name in ("total_cycles", "layer_counters", "load_cycles", "run_wall_seconds")}
    arrays["predictions"] = np.array([run["predictions"] for run in runs], dtype=np.uint8)
    arrays.update({f"dump{index}": np.array([run["dumps"][index] for run in runs], dtype=np.uint8)
                   for index in range(len(config.get("dumps", [])))})
    save_outputs(**arrays)
