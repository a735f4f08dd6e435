"""A co-search answer built and run: a small network of the space, retrained on the shipped digits, compiled onto
the DQN accelerator's default configuration, two digits on the RTL against the golden model and the cost model."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dse.dance import cosearch  # noqa: E402
from dse.dance.network_space import NETWORK_SPACE  # noqa: E402
from dse.dance.rtl_check import check_answer  # noqa: E402
from models.shared.mnist import sample_digits  # noqa: E402


def test_the_smallest_answer_is_bit_exact_and_cycle_exact_on_the_rtl():
    images, labels = sample_digits()
    data = (cosearch.images_tensor(images[:150]), torch.as_tensor(labels[:150].astype(np.int64)))
    test = (cosearch.images_tensor(images[150:]).numpy(), labels[150:])
    settings = cosearch.SearchSettings(search_epochs=1, warmup_epochs=0, retrain_epochs=1, batch=50)
    answer = {"indices": [0, 1, 1, 0, 0, 1, 0], "accuracy": None}     # conv 24 5x5/3, conv 40 2x2/3, dense 10
    report = check_answer(answer, settings, digits=2, data=data, test=test)
    assert report["network"] == NETWORK_SPACE.network(answer["indices"]).describe()
    assert report["bit_exact"] == [True, True]
    assert report["rtl_predictions"] == report["golden_predictions"]
    assert report["measured_cycles"] == [report["predicted_cycles"]] * 2
    assert [layer["measured_cycles"] for layer in report["layers"]] == [layer["predicted_cycles"]
                                                                      for layer in report["layers"]]
    assert sum(layer["measured_cycles"] for layer in report["layers"]) == report["predicted_cycles"]
    assert report["test_digits"] == len(labels) - 150
    # the golden model's predictions agree with the float32 network's on nearly every digit (rounding can flip
    # a near-tie); here both are computed on the same digits, so their accuracies are close
    assert abs(report["golden_accuracy"] - report["retrained_accuracy"]) <= 0.05
