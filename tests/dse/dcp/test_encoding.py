import numpy as np
import pytest

from nnaccel.dse.dcp.encoding import LAYER_FEATURES, layer_features, relaxed_features
from nnaccel.dse.shared.dataflow_code import relax
from nnaccel.dse.shared.layer import Layer, LayerType, dqn_layers
from tests.dse.template.mapping_text import mapping_from_text

MAPPING = mapping_from_text("N1 C2 K1 Y1 X1 R1 S1 / K2 N1 C1 Y1 X1 R1 S1 / Y1 N1 K1 X1 R1 S1 C2")


def test_layer_features_are_the_layer_code_in_log2():
    rows = layer_features([dqn_layers()[1], Layer.dense(in_features=8, out_features=2)])
    assert rows.shape == (2, LAYER_FEATURES)
    assert rows[0, :7].tolist() == pytest.approx(np.log2([20, 20, 4, 4, 32, 16, 2]).tolist())
    assert rows[0, 7:].tolist() == [1, 0, 0] and rows[1, 7 + LayerType.DENSE] == 1


def test_relaxed_features_scale_slots_and_keep_log_sizes():
    features = relaxed_features(relax(MAPPING.to_code()[None]))
    assert features.shape == (1, 42)
    assert features.reshape(3, 7, 2)[2, 2].tolist() == [1.0, 1.0]
