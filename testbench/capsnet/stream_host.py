"""Host side of :mod:`testbench.capsnet.streaming_tb`: a compiled step 2 on a simulated streaming accelerator."""

from dataclasses import dataclass

import numpy as np

from sim.harness import simulate

__all__ = ["StreamRun", "run_on_stream"]


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
    build_seconds: float
    run_seconds: float


def _field(words, field, lanes=1):
    """A routing-word field from (..., bytes) uint8 words: (..., lanes) signed values, or unsigned with lanes=1."""
    values = [int.from_bytes(word.tobytes(), "little") >> field.offset for word in words.reshape(-1, words.shape[-1])]
    bits = field.width // lanes
    out = np.array([[(value >> (lane * bits)) & ((1 << bits) - 1) for lane in range(lanes)] for value in values],
                   dtype=np.int64)
    if lanes > 1:
        out = np.where(out >= 1 << (bits - 1), out - (1 << bits), out)
    return out.reshape(*words.shape[:-1], lanes)


def run_on_stream(accelerator, plan, inputs, *, simulator="verilator", waves=None, max_cycles=50_000_000):
    """Run every PrimaryCaps output of ``inputs`` ((N, T*N_dims, G, G) int8) through ``plan`` on ``accelerator``."""
    if accelerator.config != plan.config:
        raise ValueError(f"the plan was compiled for {plan.config}, the accelerator is built for {accelerator.config}")
    config = plan.config
    rows = np.zeros((len(inputs), *np.shape(inputs)[1:3], config.row_bytes), np.int8)
    rows[..., :config.grid] = inputs
    layout = accelerator.routing_word
    routing_bytes = -(-layout.size // 8)
    result = simulate(accelerator, name=accelerator.module_name, test_module="testbench.capsnet.streaming_tb",
                      simulator=simulator, waves=waves,
                      config={"descriptor": plan.descriptor, "regions": plan.regions, "max_cycles": max_cycles,
                              "routing_words": config.classes, "routing_bytes": routing_bytes},
                      stimulus={"inputs": rows.reshape(len(inputs), -1).view(np.uint8),
                                **{f"region_{name}": values for name, values in plan.image.items()}})
    outputs = result.outputs
    words, fields = outputs["routing"], dict(layout)
    dims = config.digit_dims
    return StreamRun(
        predictions=np.stack([plan.predictions(memory) for memory in outputs["predictions"]]) if len(inputs) else None,
        sums=_field(words, fields["sums"], dims), digit_caps=_field(words, fields["caps"], dims).astype(np.int8),
        squared_lengths=_field(words, fields["squared_length"])[..., 0],
        labels=_field(words, fields["label"])[:, -1, 0],
        start_cycles=outputs["start_cycles"], total_cycles=outputs["total_cycles"],
        layer_counters=outputs["layer_counters"], build_seconds=result.build_seconds, run_seconds=result.run_seconds)
