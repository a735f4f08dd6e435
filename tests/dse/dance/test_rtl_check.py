"""A co-search answer built and run: a small network of the space, retrained on the shipped digits, compiled onto
the DQN accelerator's default configuration, two digits on the RTL against the golden model and the cost model."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nnaccel.dse.dance import cosearch  # noqa: E402
from nnaccel.dse.dance.network_space import NETWORK_SPACE  # noqa: E402
from nnaccel.dse.dance.rtl_check import check_answer  # noqa: E402
from nnaccel.models.shared.mnist import sample_digits  # noqa: E402


def _small_answer():
    """A small network of the space retrained on the shipped digits: (network, model, test split, its labels)."""
    images, labels = sample_digits()
    data = (cosearch.images_tensor(images[:150]), torch.as_tensor(labels[:150].astype(np.int64)))
    test = (cosearch.images_tensor(images[150:]).numpy(), labels[150:])
    settings = cosearch.SearchSettings(search_epochs=1, warmup_epochs=0, retrain_epochs=1, batch=50)
    network = NETWORK_SPACE.network([0, 1, 1, 0, 0, 1, 0])     # conv 24 5x5/3, conv 40 2x2/3, dense 10
    _, model, _ = cosearch.retrain(network, data, (torch.as_tensor(test[0]), torch.as_tensor(test[1])), settings)
    return network, model, test, labels


def test_the_smallest_answer_is_bit_exact_and_cycle_exact_on_the_rtl():
    network, model, test, labels = _small_answer()
    report = check_answer(network, model, test, digits=2)
    assert report["network"] == network.describe()
    assert report["bit_exact"] == [True, True]
    assert report["rtl_predictions"] == report["golden_predictions"]
    assert report["measured_cycles"] == [report["predicted_cycles"]] * 2
    assert [layer["measured_cycles"] for layer in report["layers"]] == [layer["predicted_cycles"]
                                                                      for layer in report["layers"]]
    assert sum(layer["measured_cycles"] for layer in report["layers"]) == report["predicted_cycles"]
    assert report["test_digits"] == len(labels) - 150
    # the golden model rounds as the hardware does, PyTorch otherwise: a near-tie may go the other way on a digit,
    # so the two accuracies on the same digits are close, not equal
    assert abs(report["golden_accuracy"] - report["float_accuracy"]) <= 0.05


def test_an_answer_with_external_weights_is_bit_exact_with_every_counter_as_the_formula():
    """A point of the ``rtl-stream`` space with its weights in the DDR3 model: the tiles served by the Python slave
    with that model's timing, every run's counters against the formula for its own START cycle."""
    from nnaccel.dse.rtl.stream_hardware_space import RtlStreamHardwareSpace

    network, model, test, _ = _small_answer()
    space = RtlStreamHardwareSpace()
    point = next(point for point in space.all_points() if space.point_values(point) == {
        "modules": 16, "lanes": 16, "format": "binary32", "activation_depth": 1024, "weight_depth": 4096,
        "weights": "ddr3"})
    config, split = space.accelerator_build(point)
    report = check_answer(network, model, test, digits=2, config=config, split=split, memory=space.external_memory)
    assert report["external_weights"] and "external on a 1024-bit port" in report["configuration"]
    assert report["bit_exact"] == [True, True] and report["cycles_equal"]
    assert report["rtl_predictions"] == report["golden_predictions"]
    assert report["measured_cycles"][0] == report["predicted_cycles"]
    assert [layer["measured_cycles"] for layer in report["layers"]] == [layer["predicted_cycles"]
                                                                      for layer in report["layers"]]
