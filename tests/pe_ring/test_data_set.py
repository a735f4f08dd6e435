"""models.pe_ring.data_set: reading a user's .csv and .npz data sets (their errors: tests/cli/test_bad_input.py)."""

import numpy as np

from nnaccel.models.pe_ring.data_set import digits_task, load_data_set


def test_csv_with_header_and_comments(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("# two features\nwidth, height, label\n1, 10, 0\n\n3, 10, 1\n2, 10, 1\n")
    data = load_data_set(path)
    assert data.name == str(path)
    assert np.array_equal(data.features, [[0.0, 0.0], [1.0, 0.0], [0.5, 0.0]])    # min-max; constant column 0
    assert np.array_equal(data.labels, [0.0, 1.0, 1.0])


def test_npz_with_a_label_column_and_integer_features(tmp_path):
    path = tmp_path / "data.npz"
    np.savez(path, features=np.array([[0, 4], [2, 0], [4, 2]], dtype=np.int16), labels=np.array([[1], [0], [True]]))
    data = load_data_set(path)
    assert np.array_equal(data.features, [[0.0, 1.0], [0.5, 0.0], [1.0, 0.5]])
    assert np.array_equal(data.labels, [1.0, 0.0, 1.0])


def test_digit_tasks():
    task = digits_task(4, classes=(0, 1))
    assert task.features.shape[1] == 16 and task.name == "digits '0 among (0, 1)'"
    assert set(np.unique(task.labels)) == {0.0, 1.0} and task.features.max() <= 1.0
    assert digits_task(8).features.shape == (1797, 64)
