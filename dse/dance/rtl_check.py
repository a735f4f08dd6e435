"""A co-search's answer, built and run: the chosen network (retrained as the search retrained it) compiled onto the
DQN accelerator, the whole 2,000-digit test split through the golden model (the hardware's arithmetic in the
hardware's order) and its first test digits through the simulated RTL.

The report says whether the RTL's ten outputs per digit equal the golden model's bit for bit, whether the
hardware's TOTAL_CYCLES and every layer's cycle counters equal the RTL family's cost model
(:func:`dse.rtl.cost_model.evaluate_network`, the compiler's counter model), and the golden model's accuracy
on the test split next to the float32 PyTorch model's.  The network space holds only networks that compile onto
the DQN accelerator's default 16 x 16 configuration, so every answer of a search on the template can be checked
there; an answer of a search on the RTL family (``dse.rtl.hardware_space``) is checked on the configuration and
split mode the search chose.  On a configuration with external weights (``dse.rtl.stream_hardware_space``) the
weights are cut into tiles (``models.dqn.weight_stream.stream_plan``), the simulated accelerator's Avalon-MM master
is served by the memory model ``memory`` (the Python slave), and every run's counters are checked against
``stream_counters`` for that run's own START cycle (the memory's refresh phase moves with it).
"""

import numpy as np

__all__ = ["check_answer", "describe_config"]


def check_answer(network, model, test, *, digits=20, config=None, split="auto", simulator="verilator", memory=None,
                 progress=None):
    """Compile ``network`` with the weights of ``model`` (a trained :class:`dse.dance.supernet.Candidate`) for
    ``config`` (default: the DQN accelerator's default configuration) with the compiler's ``split`` mode and run
    ``test`` (standardised float32 images (N, 1, 28, 28) and labels, NumPy) through the golden model and the first
    ``digits`` through the simulated RTL (with external weights in ``memory``, a ``models.shared.sdram.SdramTiming``);
    returns the report as a dict.  ``progress``, if given, is called with a
    short text before each long stage."""
    import torch

    from nnaccel.dse.dance.cosearch import accuracy
    from nnaccel.dse.rtl.cost_model import evaluate_network
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.hw.dqn.config import DqnConfig
    from nnaccel.models.dqn.golden import golden_forward
    from nnaccel.models.dqn.plan import compile_network
    from nnaccel.models.dqn.weight_stream import formula_mismatches, on_chip_twin, stream_plan
    from nnaccel.testbench.dqn.host import run_on_accelerator

    say = progress or (lambda text: None)
    config = config or DqnConfig()
    test_images, test_labels = test
    float_accuracy = accuracy(model, torch.as_tensor(test_images), torch.as_tensor(test_labels.astype(np.int64)))
    layers = network.dqn_layers()
    if config.external_weights:
        stream = stream_plan(config, compile_network(on_chip_twin(config), layers, model.dqn_weights(), split=split))
        plan, loaded, options = stream.plan, stream, {"sdram_inside": False, "sdram_timing": memory}
    else:
        plan = compile_network(config, layers, model.dqn_weights(), split=split)
        loaded, options = plan, {}
    say(f"golden model on {len(test_images)} test digits")
    goldens = [golden_forward(plan, image) for image in test_images]
    golden_accuracy = float(np.mean([golden.action == label for golden, label in zip(goldens, test_labels)]))
    say(f"{digits} test digits on the simulated accelerator ({simulator})")
    run = run_on_accelerator(DqnAccelerator(config=config), loaded, test_images[:digits], simulator=simulator,
                             **options)
    exact = [bool(np.array_equal(run.q_values[index], goldens[index].q_values)) for index in range(digits)]
    measured_totals = [int(cycles) for cycles in run.total_cycles]
    measured_layers = _layer_cycles(plan, run.layer_counters[0])
    if config.external_weights:
        mismatches, first = formula_mismatches(stream, run, memory)
        predicted_total, cycles_equal = first.total, not mismatches
        predicted_layers = _layer_cycles(plan, [[counters["cycles"]] for counters in first.passes])
    else:
        _, per_layer, totals = evaluate_network(config, layers, split=split, area=False)
        predicted_total = int(totals["latency_cycles"])
        cycles_equal = all(cycles == predicted_total for cycles in measured_totals)
        predicted_layers = [int(row["latency_cycles"]) for row in per_layer]
    wall = float(np.sum(run.run_wall_seconds))
    return {
        "network": network.describe(), "configuration": describe_config(config, split),
        "float_accuracy": float_accuracy, "golden_accuracy": golden_accuracy, "test_digits": len(test_images),
        "rtl_digits": digits, "bit_exact": exact, "all_bit_exact": all(exact),
        "rtl_predictions": [int(action) for action in run.actions],
        "golden_predictions": [int(golden.action) for golden in goldens[:digits]],
        "predicted_cycles": predicted_total, "measured_cycles": measured_totals,
        "cycles_equal": cycles_equal, "external_weights": config.external_weights,
        "start_cycles": [int(start) for start in run.start_cycles],
        "layers": [{"name": layer.name, "predicted_cycles": predicted, "measured_cycles": measured}
                   for layer, predicted, measured in zip(layers, predicted_layers, measured_layers)],
        "simulated_cycles_per_second": sum(measured_totals) / wall if wall > 0 else None,
    }


def describe_config(config, split):
    """A configuration and split mode in words."""
    weights = (f"{config.weight_depth}-word weight buffer (two halves), weights external on a "
               f"{config.external_bus_bits}-bit port" if config.external_weights
               else f"{config.weight_depth}-word weight RAM")
    return (f"{config.modules} x {config.lanes} {config.fmt.name}, multiplier / adder latency "
            f"{config.multiplier_latency} / {config.adder_latency}, {config.row_elements}-element rows, "
            f"{config.activation_depth}-word activation RAMs, {weights}, split {split}")


def _layer_cycles(plan, counters):
    """Measured cycles per network layer: the sum of its passes' cycle counters (column 0)."""
    totals = {}
    for layer, row in zip(plan.layers, counters):
        totals[layer.network_layer] = totals.get(layer.network_layer, 0) + int(row[0])
    return list(totals.values())
