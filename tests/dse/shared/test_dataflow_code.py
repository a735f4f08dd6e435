"""DCP's dataflow code: ``relax`` (slot order -> indexed by dimension) and the factorizations the decoders use."""

import numpy as np

from nnaccel.dse.shared.dataflow_code import factorizations, nearest_factorization, relax
from tests.dse.template.mapping_text import mapping_from_text

MAPPING = mapping_from_text("N1 C2 K1 Y1 X1 R1 S1 / K2 N1 C1 Y1 X1 R1 S1 / Y1 N1 K1 X1 R1 S1 C2")


def _slot_order(relaxed):
    """The integer code back from a relaxed one whose sizes are powers of two of integers (the inverse, by hand)."""
    order = np.argsort(relaxed[..., 0], axis=-1, kind="stable")
    sizes = np.rint(2.0 ** relaxed[..., 1]).astype(np.int64)
    return np.stack([order, np.take_along_axis(sizes, order, axis=-1)], axis=-1)


def test_relaxed_code_indexes_the_same_entries_by_dimension():
    code = MAPPING.to_code()
    relaxed = relax(code[None])[0]
    assert relaxed.shape == code.shape == (3, 7, 2)
    # GB level: K (index 1) is the parallel entry (slot 0) on 2 PEs
    assert relaxed[1, 1].tolist() == [0.0, 1.0]
    # RF level: C (index 2) is the last loop (slot 6) of size 2; Y (index 3) the parallel slot
    assert relaxed[2, 2].tolist() == [6.0, 1.0] and relaxed[2, 3].tolist() == [0.0, 0.0]
    assert (_slot_order(relaxed) == code).all()


def test_relax_round_trips_every_permutation():
    rng = np.random.default_rng(1)
    codes = np.stack([np.stack([np.stack([rng.permutation(7), rng.integers(1, 50, 7)], axis=1)
                                for _ in range(3)]) for _ in range(50)])
    assert (_slot_order(relax(codes)) == codes).all()


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
