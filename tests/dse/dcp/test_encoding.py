import numpy as np
import pytest

from nnaccel.dse.dcp.encoding import (LAYER_FEATURES, exact_code, factorizations, layer_features,
                              nearest_factorization, relax, relaxed_features)
from nnaccel.dse.shared.layer import Layer, LayerType, dqn_layers
from nnaccel.dse.shared.mapping import Mapping

MAPPING = Mapping.from_text("N1 C2 K1 Y1 X1 R1 S1 / K2 N1 C1 Y1 X1 R1 S1 / Y1 N1 K1 X1 R1 S1 C2")


def test_relaxed_code_indexes_the_same_entries_by_dimension():
    code = MAPPING.to_code()
    relaxed = relax(code[None])[0]
    assert relaxed.shape == code.shape == (3, 7, 2)
    # GB level: K (index 1) is the parallel entry (slot 0) on 2 PEs
    assert relaxed[1, 1].tolist() == [0.0, 1.0]
    # RF level: C (index 2) is the last loop (slot 6) of size 2; Y (index 3) the parallel slot
    assert relaxed[2, 2].tolist() == [6.0, 1.0] and relaxed[2, 3].tolist() == [0.0, 0.0]
    assert (exact_code(relaxed) == code).all()


def test_relax_round_trips_every_permutation():
    rng = np.random.default_rng(1)
    codes = np.stack([np.stack([np.stack([rng.permutation(7), rng.integers(1, 50, 7)], axis=1)
                                for _ in range(3)]) for _ in range(50)])
    assert (exact_code(relax(codes)) == codes).all()


def test_factorizations_are_every_ordered_product():
    options = factorizations(12, 3)
    assert (options.prod(axis=1) == 12).all()
    assert len({tuple(o) for o in options}) == len(options) == 18  # 3 for 3^1, 6 for 2^2: 3 * 6
    assert factorizations(1, 3).tolist() == [[1, 1, 1]]


def test_nearest_factorization_is_least_squares_in_log2():
    assert nearest_factorization(16, [1.0, 1.0, 2.0]).tolist() == [2, 2, 4]
    assert nearest_factorization(16, [0.0, 3.2, 0.9]).tolist() == [1, 8, 2]
    assert nearest_factorization(18, [5.0, 0.0, 0.0]).tolist() == [18, 1, 1]
    # level 0 held at 1: its wish for 2^5 goes unmet, the rest is shared by least squares
    assert nearest_factorization(18, [5.0, 0.0, 4.0], forced_one=(0,)).tolist() == [1, 1, 18]
    assert nearest_factorization(18, [5.0, 0.0, 0.0], forced_one=(0,)).tolist() == [1, 3, 6]


def test_layer_features_are_the_layer_code_in_log2():
    rows = layer_features([dqn_layers()[1], Layer.dense(in_features=8, out_features=2)])
    assert rows.shape == (2, LAYER_FEATURES)
    assert rows[0, :7].tolist() == pytest.approx(np.log2([20, 20, 4, 4, 32, 16, 2]).tolist())
    assert rows[0, 7:].tolist() == [1, 0, 0] and rows[1, 7 + LayerType.DENSE] == 1


def test_relaxed_features_scale_slots_and_keep_log_sizes():
    features = relaxed_features(relax(MAPPING.to_code()[None]))
    assert features.shape == (1, 42)
    assert features.reshape(3, 7, 2)[2, 2].tolist() == [1.0, 1.0]
