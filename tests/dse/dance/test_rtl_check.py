"""A co-search answer built and run: a small network of the space, retrained on the shipped digits, compiled onto
the DQN accelerator's default configuration, two digits on the RTL against the golden model and the cost model."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from nnaccel.dse.dance import cosearch  # noqa: E402
from nnaccel.dse.dance.network_space import NETWORK_SPACE  # noqa: E402
from nnaccel.dse.dance.rtl_check import check_answer  # noqa: E402
from nnaccel.models.shared.mnist import sample_digits  # noqa: E402


def test_the_smallest_answer_is_bit_exact_and_cycle_exact_on_the_rtl():
    images, labels = sample_digits()
    data = (cosearch.images_tensor(images[:150]), torch.as_tensor(labels[:150].astype(np.int64)))
    test = (cosearch.images_tensor(images[150:]).numpy(), labels[150:])
    settings = cosearch.SearchSettings(search_epochs=1, warmup_epochs=0, retrain_epochs=1, batch=50)
    network = NETWORK_SPACE.network([0, 1, 1, 0, 0, 1, 0])     # conv 24 5x5/3, conv 40 2x2/3, dense 10
    _, model, _ = cosearch.retrain(network, data, (torch.as_tensor(test[0]), torch.as_tensor(test[1])), settings)
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
