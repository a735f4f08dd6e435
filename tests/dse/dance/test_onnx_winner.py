"""``nnaccel dse cosearch --onnx``: DANCE's winning network, retrained, written as ONNX (the search itself is tested
in test_cosearch.py; here the results are given)."""

from argparse import Namespace

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import command
from nnaccel.dse.dance.cosearch import images_tensor, retrain
from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.models.dqn.lowering import lower_graph
from nnaccel.models.dqn.onnx_import import onnx_runtime_outputs, read_onnx
from nnaccel.models.shared.mnist import sample_digits


def layer_shape(layer):
    """What the accelerator computes of a layer: its weight shape, strides and ReLU (names come from the file)."""
    return layer.weight_shape, getattr(layer, "stride_y", None), getattr(layer, "stride_x", None), layer.relu


def test_the_winner_is_retrained_and_written_as_onnx(tmp_path, monkeypatch):
    images, labels = sample_digits()
    digits = (images_tensor(images), torch.as_tensor(labels.astype(np.int64)))
    monkeypatch.setattr(command, "_mnist", lambda settings: (digits, digits))
    first, second = (tuple(int(i) for i in row) for row in NETWORK_SPACE.all_points()[[0, -1]])
    results = [{"method": "dance", "edap": 2.0, "indices": first},
               {"method": "dance", "edap": 1.0, "indices": second},
               {"method": "baseline", "edap": 0.5, "indices": first}]
    arguments = Namespace(search_epochs=1, warmup_epochs=0, retrain_epochs=1, train_images=0, seeds=(0,))
    winner = command.winner(results)
    assert winner is results[1]
    network_choice, model, accuracy, _ = command.retrain_winner(arguments, winner)
    command.export_winner(network_choice, model, tmp_path / "winner.onnx")
    graph = read_onnx(tmp_path / "winner.onnx")
    assert [layer_shape(layer) for layer in lower_graph(graph).layers] == \
        [layer_shape(layer) for layer in NETWORK_SPACE.network(second).dqn_layers()]
    # The file holds the retrained weights: the same seeded retraining here computes what ONNX Runtime computes.
    retrained_accuracy, model, _ = retrain(NETWORK_SPACE.network(second), digits, digits,
                                           command._settings(arguments, 0))
    assert retrained_accuracy == accuracy
    with torch.no_grad():
        expected = model(digits[0]).numpy()
    np.testing.assert_allclose(onnx_runtime_outputs(graph, digits[0].numpy()), expected, rtol=1e-4, atol=1e-4)


def test_onnx_needs_a_dance_run():
    arguments = Namespace(methods=("baseline",), onnx="winner.onnx", train_images=0, warmup_epochs=0,
                          search_epochs=1, rtl_digits=0)
    with pytest.raises(ValueError, match="--onnx writes DANCE's winning network: --methods must include dance"):
        command.check_arguments(arguments)
