"""Host side of :mod:`testbench.capsnet.accelerator_tb`: a compiled network on a simulated ``hw.capsnet.accelerator``."""

from dataclasses import dataclass

import numpy as np

from nnaccel.sim.harness import simulate

__all__ = ["CapsNetRun", "run_on_capsnet", "COUNTER_NAMES"]

COUNTER_NAMES = ("cycles", "product_cycles", "stall_cycles", "drain_cycles")


@dataclass
class CapsNetRun:
    predictions: np.ndarray      # (N, capsules, J, rows) int8, or (N, 0) without a matrix-vector layer
    layer_outputs: list          # per convolution layer (N, C, H, W) int8, if asked for (else [])
    total_cycles: np.ndarray     # (N,) TOTAL_CYCLES
    layer_counters: np.ndarray   # (N, layers, 4) in COUNTER_NAMES order
    load_cycles: np.ndarray      # (N,) cycles the host took to write each input
    run_wall_seconds: np.ndarray  # (N,) wall time from START to done
    build_seconds: float
    run_seconds: float


def run_on_capsnet(accelerator, plan, inputs, *, read_layers=False, simulator="verilator", waves=None,
                   max_cycles=20_000_000):
    """Load ``plan`` into ``accelerator`` and run every int8 input of ``inputs`` (N, C, H, W) in one simulation.

    ``read_layers``: also read back every convolution layer's output after each run.
    """
    if accelerator.config != plan.config:
        raise ValueError(f"the plan was compiled for {plan.config}, the accelerator is built for {accelerator.config}")
    words = np.stack([plan.input_words(image) for image in inputs]).view(np.uint8)
    conv_layers = [layer for layer in plan.layers if layer.output is not None]
    dumps = [{"ram": layer.output.ram, "base": layer.output.base, "words": layer.output.words}
             for layer in conv_layers] if read_layers else []
    prediction_words = plan.prediction_words if plan.prediction_shape else 0
    config = {"descriptors": plan.descriptors, "max_cycles": max_cycles, "prediction_words": prediction_words,
              "input": {"ram": plan.input.ram, "base": plan.input.base, "words": plan.input.words}, "dumps": dumps}
    stimulus = {"conv_weights": plan.conv_weight_image.view(np.uint8),
                "biases": plan.bias_image.view(np.uint32),
                "matvec_weights": plan.matvec_weight_image.view(np.uint8), "inputs": words}
    result = simulate(accelerator, name=accelerator.module_name, test_module="nnaccel.testbench.capsnet.accelerator_tb",
                      simulator=simulator, waves=waves, config=config, stimulus=stimulus)
    outputs = result.outputs
    predictions = outputs["predictions"].view(np.int8)
    if prediction_words:
        predictions = np.stack([plan.predictions(words) for words in predictions])
    layer_outputs = [np.stack([plan.tensor_values(layer.output, run_words) for run_words in
                               outputs[f"dump{index}"].view(np.int8)])
                     for index, layer in enumerate(conv_layers)] if read_layers else []
    return CapsNetRun(predictions=predictions, layer_outputs=layer_outputs,
                      total_cycles=outputs["total_cycles"].astype(np.int64),
                      layer_counters=outputs["layer_counters"].astype(np.int64),
                      load_cycles=outputs["load_cycles"].astype(np.int64),
                      run_wall_seconds=outputs["run_wall_seconds"], build_seconds=result.build_seconds,
                      run_seconds=result.run_seconds)
