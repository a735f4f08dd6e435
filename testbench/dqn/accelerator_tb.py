"""cocotb test module for :class:`hw.dqn.accelerator.DqnAccelerator`: load a compiled network, run N states.

The host driver makes one access per cycle through the host port (docs/dqn_accelerator.md, "Host interface"):
it writes the weight image and the descriptors once, then for every state writes the state's activation words,
writes START and waits on the rising edge of ``done`` (the hardware runs freely, no per-cycle polling), and
reads back the output words, ACTION, ACTION_VALUE, TOTAL_CYCLES, the per-layer counters and any tensors asked
for in ``dumps``.

With ``play`` in the configuration the states come from the Atari emulator instead (``nnaccel play``): the
host loop of the thesis, each step's frame stack goes to the accelerator and its ACTION steps the game, except on
the steps where the episode's exploration gives a random action instead.  An episode stops after its steps or
when its game ends.

Stimulus: ``weight_image`` (words, modules*lanes) raw bits; ``states`` (N, words, row_elements) raw bits.
Configuration: ``descriptors`` (ints), ``input`` and ``output`` and each of ``dumps`` as ``{"ram", "base",
"words"}``, ``max_cycles`` (timeout of one run), ``element_bits``, ``row_elements``; optional ``sdram`` (external
weights: ``{"inside": the SDRAM model inside the simulator (a ``WithSdramModel`` top) or the Python slave,
"weight_loads": the load table (ints), "timing": the ``SdramTiming``'s fields, "word_bytes": the Avalon port's,
optional "delays": random stalls and late reads of the Python slave, ``RandomDelaySdram``'s fields}``, with the
stimulus ``sdram_image`` (uint8, the external memory from byte 0) instead of ``weight_image``), ``play``
(``{"game", "episodes": [{"seed", "explore"}], "format"}``: per episode the emulator's seed and, per step, the
random action that replaces the accelerator's, or -1 to play ACTION; the name of the number format the frames are
packed in) and ``progress_file`` (rewritten with "done total" after every inference).
Outputs: ``outputs`` (N, words, row_elements), ``action``, ``action_value``, ``total_cycles`` (N,),
``layer_counters`` (N, layers, 4), ``load_cycles`` (N,) cycles the host took to write the state,
``start_cycles`` (N,) the cycle of each START write, counted from the first cycle after reset (the SDRAM
model's cycle 0), ``run_wall_seconds`` (N,) wall time from START to ``done``, ``run_cpu_seconds`` (N,) the simulator process'
CPU time over the same span (the speed of the simulation whatever else the machine runs), ``dump<i>`` (N, words,
row_elements); with ``play``, ``frames`` (N, 4, 84, 84) uint8, the frame stacks the accelerator saw, and
``episode_steps`` (episodes,), the steps each episode ran (N in all).
"""

import time

import cocotb
import numpy as np

from nnaccel.hw.dqn.accelerator import DqnMemory, DqnRegister
from nnaccel.hw.shared.float_format import float_format
from nnaccel.hw.shared.host_control import HostTarget
from nnaccel.models.dqn.plan import pack_image
from nnaccel.models.shared.sdram import SdramTiming
from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, save_outputs
from nnaccel.testbench.shared.host_driver import IDLE_HOST, HostDriver, current_cycle, report_progress
from nnaccel.testbench.shared.sdram_memory import start_sdram


def words_to_ints(words, element_bits):
    """Rows of raw elements (element 0 at the LSB) as Python ints."""
    dtype = {32: "<u4", 16: "<u2"}[element_bits]
    return [int.from_bytes(row.astype(dtype).tobytes(), "little") for row in np.asarray(words)]


def int_to_words(value, elements, element_bits):
    dtype = {32: "<u4", 16: "<u2"}[element_bits]
    return np.frombuffer(value.to_bytes(elements * element_bits // 8, "little"), dtype=dtype).astype(np.uint32)


def frame_words(config, frame_stack):
    """The activation words of one emulator frame stack (uint8, 4 x 84 x 84) in the ``play`` format."""
    from nnaccel.models.dqn.atari import frames_to_states

    return pack_image(frames_to_states(frame_stack), config["row_elements"], float_format(config["play"]["format"]))


async def _infer(host, config, state_words, tensors, first_cycle):
    """Load one state, run the network, read everything back: a dict of this inference's observations
    (``first_cycle``: the first cycle after reset)."""
    bits, elements = config["element_bits"], config["row_elements"]
    layers = len(config["descriptors"])
    first = current_cycle()
    await host.write_block(DqnMemory.ACTIVATIONS0 + config["input"]["ram"], config["input"]["base"],
                           words_to_ints(state_words, bits))
    observed = {"load_cycles": current_cycle() - first, "start_cycles": current_cycle() - first_cycle}
    cpu_start = time.process_time()
    observed["run_wall_seconds"] = await host.run(layers, config["max_cycles"])
    observed["run_cpu_seconds"] = time.process_time() - cpu_start
    observed["tensors"] = []
    for tensor in tensors:
        addresses = range(tensor["base"], tensor["base"] + tensor["words"])
        values = await host.read_block(DqnMemory.ACTIVATIONS0 + tensor["ram"], addresses)
        observed["tensors"].append([int_to_words(value, elements, bits) for value in values])
    observed["action"], observed["action_value"] = await host.read_block(
        HostTarget.CONTROL, [DqnRegister.ACTION, DqnRegister.ACTION_VALUE])
    observed["total_cycles"], observed["layer_counters"] = await host.read_counters(layers)
    return observed


@cocotb.test()
async def run_states(dut):
    config, stimulus = load_config(), load_stimulus()
    if "sdram" in config:     # external weights: the image in the SDRAM, the load table through the host port
        await start_sdram(dut, {0: stimulus["sdram_image"]}, inside=config["sdram"]["inside"],
                          word_bytes=config["sdram"]["word_bytes"],
                          hold=IDLE_HOST, timing=SdramTiming(**config["sdram"]["timing"]),
                          delays=config["sdram"].get("delays"))
    else:
        await start_clock_and_reset(dut, hold=IDLE_HOST)
    host = HostDriver(dut)
    first_cycle = current_cycle()
    if "sdram" in config:
        await host.write_block(DqnMemory.WEIGHT_LOADS, 0, config["sdram"]["weight_loads"])
    else:
        await host.write_block(DqnMemory.WEIGHTS, 0, words_to_ints(stimulus["weight_image"], config["element_bits"]))
    await host.write_block(HostTarget.DESCRIPTORS, 0, config["descriptors"])

    if "play" in config:
        inferences = sum(len(episode["explore"]) for episode in config["play"]["episodes"])
    else:
        inferences = len(stimulus["states"])
    report_progress(config, 0, inferences)     # weights loaded: the bar shows the inferences from here

    tensors = [config["output"]] + config.get("dumps", [])
    frames, runs, episode_steps = [], [], []
    if "play" in config:        # the host loop: emulator frame -> accelerator -> action -> emulator step
        from nnaccel.models.dqn.atari import AtariGame

        for episode in config["play"]["episodes"]:
            game = AtariGame(config["play"]["game"], seed=episode["seed"])
            for random_action in episode["explore"]:
                frames.append(game.state())
                runs.append(await _infer(host, config, frame_words(config, frames[-1]), tensors, first_cycle))
                report_progress(config, len(runs), inferences)
                game.step(int(runs[-1]["action"]) if random_action < 0 else random_action)
                if game.episode_over:
                    break
            episode_steps.append(len(runs) - sum(episode_steps))
    else:
        for state_words in stimulus["states"]:
            runs.append(await _infer(host, config, state_words, tensors, first_cycle))
            report_progress(config, len(runs), inferences)

    seconds = ("run_wall_seconds", "run_cpu_seconds")
    arrays = {name: np.array([run[name] for run in runs], dtype=np.float64 if name in seconds else np.uint64)
              for name in ("action", "action_value", "total_cycles", "layer_counters", "load_cycles", "start_cycles",
                           *seconds)}
    arrays["outputs"] = np.array([run["tensors"][0] for run in runs], dtype=np.uint32)
    arrays.update({f"dump{index}": np.array([run["tensors"][index + 1] for run in runs], dtype=np.uint32)
                   for index in range(len(tensors) - 1)})
    if frames:
        arrays["frames"] = np.stack(frames)
        arrays["episode_steps"] = np.array(episode_steps, np.uint64)
    save_outputs(**arrays)
