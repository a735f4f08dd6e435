"""Host side of :mod:`testbench.capsnet.streaming_tb`: compiled runs on a simulated streaming accelerator, either
step 2 and routing alone (:func:`run_on_stream`, the PrimaryCaps output given) or the whole image
(:func:`run_image_stream`).

``sdram_inside`` chooses the SDRAM behind the Avalon port: True (the default), the Verilog model inside the
simulator (:class:`testbench.shared.sdram_model.WithSdramModel` around the accelerator, built once per machine like
any top); False, the Python slave served from cocotb on every cycle, which also checks the master's Avalon
protocol.  The two are cycle-identical: every output and counter is the same."""

from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Shape

from nnaccel.sim.harness import simulate
from nnaccel.testbench.shared.sdram_model import WithSdramModel

__all__ = ["StreamRun", "run_on_stream", "run_image_stream"]


@dataclass
class StreamRun:
    predictions: np.ndarray       # (N, capsules, J, D) int8, read from the SDRAM after each run
    sums: np.ndarray              # (N, J, D) s_j
    digit_caps: np.ndarray        # (N, J, D) int8 v_j
    squared_lengths: np.ndarray   # (N, J)
    labels: np.ndarray            # (N,) the class (the last routing word's label)
    start_cycles: np.ndarray      # (N,) the START cycle of each run
    total_cycles: np.ndarray      # (N,)
    layer_counters: np.ndarray    # (N, steps, 4): hw.capsnet.streaming_accelerator.StreamStep x LayerCounter
    run_wall_seconds: np.ndarray  # (N,) wall time from START to done
    build_seconds: float
    run_seconds: float
    features: dict | None = None  # whole-image runs: {"conv1_output", "primary"}: (N, K, Ho, Wo) int8


def _field(words, field, lanes=1):
    """A routing-word field from (..., bytes) uint8 words: (..., lanes) signed values, or unsigned with lanes=1."""
    values = [int.from_bytes(word.tobytes(), "little") >> field.offset for word in words.reshape(-1, words.shape[-1])]
    bits = field.width // lanes
    out = np.array([[(value >> (lane * bits)) & ((1 << bits) - 1) for lane in range(lanes)] for value in values],
                   dtype=np.int64)
    if lanes > 1:
        out = np.where(out >= 1 << (bits - 1), out - (1 << bits), out)
    return out.reshape(*words.shape[:-1], lanes)


def _simulate(accelerator, step2, *, descriptors, regions, image, input_region, inputs, readback, simulator, waves,
              max_cycles, sdram_inside):
    config = accelerator.config
    if step2.config != config:
        raise ValueError(f"the plan was compiled for {step2.config}, the accelerator is built for {config}")
    layout = accelerator.routing_word
    routing_bytes = -(-layout.size // 8)
    top, name = accelerator, accelerator.module_name
    if sdram_inside:
        top, name = WithSdramModel(accelerator), f"{accelerator.module_name}_sdram"
    word_bytes = Shape.cast(accelerator.signature.members["avalon"].signature.members["writedata"].shape).width // 8
    result = simulate(top, name=name, test_module="nnaccel.testbench.capsnet.streaming_tb",
                      simulator=simulator, waves=waves,
                      config={"descriptors": list(descriptors), "regions": regions, "max_cycles": max_cycles,
                              "input_region": input_region, "readback": list(readback),
                              "routing_words": config.classes, "routing_bytes": routing_bytes,
                              "sdram_inside": sdram_inside, "word_bytes": word_bytes},
                      stimulus={"inputs": inputs, **{f"region_{name}": values for name, values in image.items()}})
    outputs = result.outputs
    words, fields = outputs["routing"], dict(layout)
    dims = config.digit_dims
    return StreamRun(
        predictions=np.stack([step2.predictions(memory) for memory in outputs["region_predictions"]]),
        sums=_field(words, fields["sums"], dims), digit_caps=_field(words, fields["caps"], dims).astype(np.int8),
        squared_lengths=_field(words, fields["squared_length"])[..., 0],
        labels=_field(words, fields["label"])[:, -1, 0],
        start_cycles=outputs["start_cycles"], total_cycles=outputs["total_cycles"],
        layer_counters=outputs["layer_counters"], run_wall_seconds=outputs["run_wall_seconds"],
        build_seconds=result.build_seconds, run_seconds=result.run_seconds), \
        outputs


def run_on_stream(accelerator, plan, inputs, *, simulator="verilator", waves=None, max_cycles=50_000_000,
                  sdram_inside=True):
    """Step 2 and routing of every PrimaryCaps output of ``inputs`` ((N, T*N_dims, G, G) int8) through ``plan`` (a
    :class:`~models.capsnet.stream_plan.StreamPlan`) on ``accelerator``; the convolutions' descriptors are empty."""
    config = plan.config
    rows = np.zeros((len(inputs), *np.shape(inputs)[1:3], config.row_bytes), np.int8)
    rows[..., :config.grid] = inputs
    run, _ = _simulate(accelerator, plan, descriptors=(0, 0, plan.descriptor, 0), regions=plan.regions,
                       image=plan.image, input_region="primary",
                       inputs=rows.reshape(len(inputs), -1).view(np.uint8), readback=("predictions",),
                       simulator=simulator, waves=waves, max_cycles=max_cycles, sdram_inside=sdram_inside)
    return run


def run_image_stream(accelerator, plan, images, *, simulator="verilator", waves=None, max_cycles=200_000_000,
                     sdram_inside=True):
    """Every network input of ``images`` ((N, 1, H, W) int8) through ``plan`` (an
    :class:`~models.capsnet.image_stream_plan.ImageStreamPlan`) on ``accelerator``: a whole run each."""
    inputs = np.stack([plan.input_region(image) for image in images]) if len(images) else np.zeros((0, 0), np.uint8)
    run, outputs = _simulate(accelerator, plan.step2, descriptors=plan.descriptors, regions=plan.regions,
                             image=plan.image, input_region="image", inputs=inputs,
                             readback=("conv1_output", "primary", "predictions"), simulator=simulator, waves=waves,
                             max_cycles=max_cycles, sdram_inside=sdram_inside)
    run.features = {name: np.stack([plan.feature_map(name, region) for region in outputs[f"region_{name}"]])
                    for name in ("conv1_output", "primary")}
    return run
