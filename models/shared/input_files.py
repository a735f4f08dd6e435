"""Reading a user's array files safely, and the one exception every bad input is reported with.

:class:`InputError` is what a loader raises when a file (or an option) a user gave is wrong: its
message is one line naming the file, what is wrong with it and what was expected.  The ``nnaccel``
command turns it into that line on standard error and exit status 2, never a traceback.

:func:`load_arrays` opens a ``.npy`` or ``.npz`` file without unpickling anything (a pickle can run
code) and reports every way a file can fail to be one as an :class:`InputError`: missing, a
directory, not NumPy data, Python objects inside, a zip member that is not an array.
"""

import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["InputError", "require_file", "load_arrays", "load_single_array", "check_batch", "require_keys"]

_NPY_MAGIC = b"\x93NUMPY"


class InputError(ValueError):
    """Bad user input: the message is one line naming the file or option, the fault and what was expected."""


def require_file(path, *, expected, error=InputError):
    """``path`` as a ``Path`` if it names an existing file, else ``error`` (an :class:`InputError`) saying it is
    missing or a directory, ending with ``expected``."""
    path = Path(path)
    if not path.exists():
        raise error(f"{path}: no such file ({expected})")
    if path.is_dir():
        raise error(f"{path}: is a directory, not a file ({expected})")
    return path


def load_arrays(path, *, expected):
    """The arrays of the ``.npz`` archive (``{name: array}``) or ``.npy`` file (``{"": array}``) at ``path``.

    ``expected`` says what the file should hold; every message ends with it, e.g. ``"expected a .npz
    with keys a, b"``.  Raises :class:`InputError`.
    """
    path = require_file(path, expected=expected)
    try:
        with open(path, "rb") as handle:
            start = handle.read(len(_NPY_MAGIC))
    except OSError as error:
        raise InputError(f"{path}: cannot be read: {error.strerror} ({expected})") from None
    if start == _NPY_MAGIC:
        with _numpy_errors(path, expected):
            return {"": np.load(path, allow_pickle=False)}
    if not zipfile.is_zipfile(path):
        raise InputError(f"{path}: not a NumPy .npy or .npz file ({expected})")
    with zipfile.ZipFile(path) as archive:
        strays = [name for name in archive.namelist() if not name.endswith(".npy")]
    if strays:
        raise InputError(f"{path}: the archive member {strays[0]!r} is not a NumPy array ({expected})")
    with _numpy_errors(path, expected), np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def load_single_array(path, *, expected):
    """The one array of a ``.npy`` file or one-array ``.npz`` archive; raises :class:`InputError`."""
    arrays = load_arrays(path, expected=expected)
    if len(arrays) != 1:
        raise InputError(f"{path}: holds {len(arrays)} arrays ({', '.join(arrays)}) ({expected})")
    return next(iter(arrays.values()))


def check_batch(array, shape, what):
    """``array`` must be a batch ``(N, *shape)`` of finite float32 values; raises ``ValueError`` naming ``what``
    ("states", "inputs") and the fault."""
    if array.ndim != len(shape) + 1 or array.shape[1:] != tuple(shape):
        raise ValueError(f"{what} must have shape (N, {', '.join(map(str, shape))}), not {array.shape}")
    if array.dtype != np.float32:
        raise ValueError(f"{what} must be float32, not {array.dtype}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} hold NaN or infinite values")
    return array


@contextmanager
def _numpy_errors(path, expected):
    """NumPy's reading errors turned into one-line :class:`InputError` messages."""
    try:
        yield
    except ValueError as error:
        if "allow_pickle" in str(error):
            raise InputError(f"{path}: holds Python objects (pickled data), which nnaccel never loads "
                             f"({expected})") from None
        raise InputError(f"{path}: corrupt NumPy data: {_one_line(error)} ({expected})") from None
    except (OSError, EOFError, zipfile.BadZipFile) as error:
        raise InputError(f"{path}: corrupt NumPy data: {_one_line(error)} ({expected})") from None


def _one_line(error):
    return " ".join(str(error).split())


def require_keys(path, arrays, keys, *, expected):
    """Raise :class:`InputError` unless ``arrays`` (from an ``.npz``) has exactly ``keys``."""
    if "" in arrays and len(arrays) == 1:
        raise InputError(f"{path}: a single array (.npy), not an archive ({expected})")
    missing = [key for key in keys if key not in arrays]
    unexpected = sorted(set(arrays) - set(keys))
    if missing or unexpected:
        faults = ([f"missing {_some(missing)}"] if missing else []) + (
            [f"unexpected {_some(unexpected)}"] if unexpected else [])
        raise InputError(f"{path}: {'; '.join(faults)} ({expected})")


def _some(names, shown=4):
    listed = ", ".join(names[:shown])
    return listed if len(names) <= shown else f"{listed} and {len(names) - shown} more"
