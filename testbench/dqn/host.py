"""Host side of :mod:`testbench.dqn.accelerator_tb`: a compiled network on a simulated ``hw.dqn.accelerator.DqnAccelerator``."""

from dataclasses import asdict, dataclass

import numpy as np

from nnaccel.models.shared.sdram import DE1_SOC_SDRAM
from nnaccel.sim.harness import simulate
from nnaccel.testbench.shared.sdram_model import WithSdramModel

__all__ = ["AcceleratorRun", "run_on_accelerator", "COUNTER_NAMES"]

COUNTER_NAMES = ("cycles", "product_cycles", "stall_cycles", "drain_cycles")


@dataclass
class AcceleratorRun:
    q_values: np.ndarray        # (N, actions) raw bits read back from the output tensor
    output_words: np.ndarray    # (N, words, row_elements) the output tensor's words
    actions: np.ndarray         # (N,) ACTION register
    action_values: np.ndarray   # (N,) ACTION_VALUE register
    total_cycles: np.ndarray    # (N,) TOTAL_CYCLES register
    layer_counters: np.ndarray  # (N, layers, 4) per-layer counters, in COUNTER_NAMES order
    load_cycles: np.ndarray     # (N,) cycles the host took to write each state
    run_wall_seconds: np.ndarray  # (N,) wall time of each run (START to done)
    run_cpu_seconds: np.ndarray   # (N,) the simulator process' CPU time over the same span
    layer_words: list           # per layer (N, words, row_elements) output tensors, if asked for (else [])
    frames: np.ndarray | None   # play: (N, 4, 84, 84) uint8 frame stacks the accelerator saw
    build_seconds: float
    run_seconds: float
    waves_path: object = None
    built_now: bool = False     # the simulator build was made for this run (not taken from the cache)
    episode_steps: np.ndarray | None = None  # play: (episodes,) steps each episode ran on the accelerator
    start_cycles: np.ndarray | None = None   # (N,) each START write's cycle from the first after reset


def _tensor_config(tensor):
    return {"ram": tensor.ram, "base": tensor.base, "words": tensor.words}


def run_on_accelerator(accelerator, plan, states=None, *, play=None, read_layers=False, simulator="verilator",
                       waves=None, max_cycles=1_000_000, verilator_options=None, sdram_inside=True,
                       sdram_timing=DE1_SOC_SDRAM, sdram_delays=None):
    """Load ``plan`` into ``accelerator`` and run every state of ``states`` (float32, the network input's shape),
    or, with ``play = {"game", "episodes": [{"seed", "explore"}]}``, the host loop on the Atari emulator inside the
    simulation (``explore``: per step the random action replacing the accelerator's, or -1; see
    :mod:`testbench.dqn.accelerator_tb`).

    ``read_layers``: also read back every layer's output tensor after each run (for locating a mismatch).
    ``verilator_options``: how Verilator builds the model (:func:`sim.harness.simulate`'s default if None).
    With external weights (``accelerator.config.external_weights``) ``plan`` is a
    :class:`~models.dqn.weight_stream.WeightStream`, its image in the SDRAM model (``sdram_inside``: inside the
    simulator, else the Python slave on the ``avalon`` port), a memory of ``sdram_timing``; ``sdram_delays``: the
    Python slave's random stalls and late reads (``RandomDelaySdram``'s ``seed``, ``stall_percent``, ``max_delay``).
    """
    stream = None
    if accelerator.config.external_weights:
        stream, plan = plan, plan.plan
    if accelerator.config != plan.config:
        raise ValueError(f"the plan was compiled for {plan.config}, the accelerator is built for {accelerator.config}")
    if (states is None) == (play is None):
        raise ValueError("give either states or play")
    config = plan.config
    words = np.stack([plan.input_words(state) for state in states]) if play is None else np.zeros((0,), np.uint32)
    dumps = [_tensor_config(layer.output) for layer in plan.layers] if read_layers else []
    tb_config = {"descriptors": plan.descriptors, "input": _tensor_config(plan.input),
                 "output": _tensor_config(plan.output), "dumps": dumps, "max_cycles": max_cycles,
                 "element_bits": config.element_bits, "row_elements": config.row_elements}
    if play is not None:        # the testbench packs the emulator's frames into words of the format itself
        tb_config["play"] = dict(play, format=config.fmt.name)
    top, name, stimulus = accelerator, accelerator.module_name, {"weight_image": plan.weight_image, "states": words}
    if stream is not None:
        tb_config["sdram"] = {"inside": sdram_inside, "weight_loads": stream.table, "timing": asdict(sdram_timing),
                              "word_bytes": config.external_bus_bits // 8}
        if sdram_delays is not None:
            if sdram_inside:
                raise ValueError("random delays are the Python slave's: give sdram_inside=False with sdram_delays")
            tb_config["sdram"]["delays"] = dict(sdram_delays)
        stimulus = {"sdram_image": stream.image, "states": words}
        if sdram_inside:
            top = WithSdramModel(accelerator, timing=sdram_timing)
            name = f"{accelerator.module_name}_sdram" + ("" if sdram_timing == DE1_SOC_SDRAM else
                                                         f"_{abs(hash(sdram_timing)):x}")
    result = simulate(top, name=name, test_module="nnaccel.testbench.dqn.accelerator_tb",
                      simulator=simulator, waves=waves, config=tb_config, verilator_options=verilator_options,
                      stimulus=stimulus)
    outputs = result.outputs
    return AcceleratorRun(
        q_values=np.stack([plan.output_values(run_words) for run_words in outputs["outputs"]]),
        output_words=outputs["outputs"], actions=outputs["action"].astype(np.int64),
        action_values=outputs["action_value"].astype(np.uint32), total_cycles=outputs["total_cycles"].astype(np.int64),
        layer_counters=outputs["layer_counters"].astype(np.int64), load_cycles=outputs["load_cycles"].astype(np.int64),
        run_wall_seconds=outputs["run_wall_seconds"], run_cpu_seconds=outputs["run_cpu_seconds"],
        layer_words=[outputs[f"dump{index}"] for index in range(len(dumps))], frames=outputs.get("frames"),
        episode_steps=outputs["episode_steps"].astype(np.int64) if "episode_steps" in outputs else None,
        build_seconds=result.build_seconds, run_seconds=result.run_seconds, waves_path=result.waves_path,
        built_now=result.built_now, start_cycles=outputs["start_cycles"].astype(np.int64))
