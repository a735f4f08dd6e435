"""Binary-classification data sets for EBP training on the PE ring: the built-in digit tasks and a user's file.

A user's file (``nnaccel run ebp --data FILE``) is one of

* ``.npz`` with exactly two arrays: ``features`` (N x F numbers) and ``labels`` (N numbers, 0 or 1);
* ``.csv``: one sample per line, comma-separated numbers, the 0/1 label in the last column; an
  optional header line (the first line, if it is not all numbers) and ``#`` comment lines are skipped.

Every fault is an :class:`models.shared.input_files.InputError` naming the file (and the line or
sample): unreadable, wrong shapes, non-numbers, NaN or infinite values, labels other than 0/1,
fewer than two samples.  Features are scaled per column to [0, 1] (min-max over the file; a
constant column becomes 0), the range the ring's sigmoid network is trained on for the digits.
"""

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from nnaccel.models.shared.input_files import InputError, load_arrays, require_keys

__all__ = ["DataSet", "digits_task", "load_data_set", "DATA_SET_LAYOUT"]

DATA_SET_LAYOUT = ("expected a .npz with features (N x F) and labels (N, 0 or 1), or a .csv with one sample per "
                   "line, the 0/1 label last")
_NPZ_KEYS = ("features", "labels")


@dataclass(frozen=True)
class DataSet:
    """``features`` (N, F) float64 in [0, 1], ``labels`` (N,) float64 0.0 or 1.0, ``name`` for reports."""

    name: str
    features: np.ndarray
    labels: np.ndarray


def digits_task(side, classes=None):
    """scikit-learn's 8x8 digits scaled to [0, 1], average-pooled to ``side`` x ``side``, optionally only the
    digits in ``classes``; label 1 for a 0."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    keep = np.ones(len(digits.target), dtype=bool) if classes is None else np.isin(digits.target, classes)
    images = digits.images[keep] / 16.0
    if side != 8:
        factor = 8 // side
        images = images.reshape(-1, side, factor, side, factor).mean(axis=(2, 4))
    name = "digits 'is it a 0'" if classes is None else f"digits '0 among {tuple(classes)}'"
    return DataSet(name=name, features=images.reshape(len(images), -1),
                   labels=(digits.target[keep] == 0).astype(np.float64))


def load_data_set(path):
    """The data set in ``path`` (``.npz`` or ``.csv``), checked and scaled; raises :class:`InputError`."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        features, labels, where = _read_csv(path)
    elif path.suffix.lower() == ".npz":
        arrays = load_arrays(path, expected=DATA_SET_LAYOUT)
        require_keys(path, arrays, _NPZ_KEYS, expected=DATA_SET_LAYOUT)
        features, labels = _check_npz_shapes(path, arrays["features"], arrays["labels"])
        where = "row {} of the arrays".format
    else:
        raise InputError(f"{path}: unknown kind of file {path.suffix or '(no extension)'!r} ({DATA_SET_LAYOUT})")
    _check_values(path, features, labels, where)
    low, high = features.min(axis=0), features.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    return DataSet(name=str(path), features=(features - low) / span, labels=labels)


def _read_csv(path):
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file ({DATA_SET_LAYOUT})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: cannot be read as text: {error} ({DATA_SET_LAYOUT})") from None
    rows, line_numbers, header_skipped = [], [], False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = [cell.strip() for cell in stripped.split(",")]
        try:
            values = [float(cell) for cell in cells]
        except ValueError:
            if not rows and not header_skipped:
                header_skipped = True
                continue
            bad = next(cell for cell in cells if not _is_number(cell))
            raise InputError(f"{path} line {number}: {bad!r} is not a number ({DATA_SET_LAYOUT})") from None
        if rows and len(values) != len(rows[0]):
            raise InputError(f"{path} line {number}: {len(values)} columns, the first sample has {len(rows[0])} "
                             f"(expected the same features on every line, the label last)")
        rows.append(values)
        line_numbers.append(number)
    if not rows:
        raise InputError(f"{path}: no samples ({DATA_SET_LAYOUT})")
    if len(rows[0]) < 2:
        raise InputError(f"{path}: one column per line; expected at least one feature and the label")
    table = np.array(rows, dtype=np.float64)
    return table[:, :-1], table[:, -1], lambda index: f"line {line_numbers[index]}"


def _is_number(cell):
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _check_npz_shapes(path, features, labels):
    if features.ndim != 2 or features.shape[1] < 1:
        raise InputError(f"{path}: features have shape {features.shape}, expected (N samples, F features)")
    if labels.ndim == 2 and labels.shape[1] == 1:
        labels = labels[:, 0]
    if labels.shape != (features.shape[0],):
        raise InputError(f"{path}: labels have shape {labels.shape}, expected ({features.shape[0]},): one per sample")
    for name, array in (("features", features), ("labels", labels)):
        if array.dtype.kind not in "biuf":
            raise InputError(f"{path}: {name} are {array.dtype}, expected numbers")
    return features.astype(np.float64), labels.astype(np.float64)


def _check_values(path, features, labels, where):
    if len(features) < 2:
        raise InputError(f"{path}: {len(features)} sample; expected at least two (one to train on, one held out)")
    bad = np.flatnonzero(~np.isfinite(features).all(axis=1))
    if len(bad):
        column = int(np.flatnonzero(~np.isfinite(features[bad[0]]))[0])
        raise InputError(f"{path} {where(bad[0])}: feature {column + 1} is {features[bad[0], column]}, "
                         f"expected a finite number")
    bad = np.flatnonzero((labels != 0) & (labels != 1))
    if len(bad):
        raise InputError(f"{path} {where(bad[0])}: label {labels[bad[0]]}, expected 0 or 1")
