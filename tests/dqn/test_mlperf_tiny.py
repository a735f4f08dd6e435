"""models.dqn.mlperf_tiny: where the folder is, the sample loaders, the photos for IC and VWW, the published table."""

import sys
import types

import numpy as np
import pytest

from nnaccel.models.dqn import mlperf_tiny
from nnaccel.models.shared.input_files import InputError


def test_folder_from_the_argument_the_environment_or_beside_the_repository(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    assert mlperf_tiny.mlperf_tiny_dir(tmp_path) == tmp_path
    monkeypatch.setenv("NNACCEL_MLPERF_TINY_DIR", str(tmp_path))
    assert mlperf_tiny.mlperf_tiny_dir() == tmp_path
    monkeypatch.delenv("NNACCEL_MLPERF_TINY_DIR")
    monkeypatch.setattr(mlperf_tiny, "REPOSITORY_ROOT", tmp_path / "checkout")
    with pytest.raises(InputError, match=r"shared/mlperf_tiny: no MLPerf Tiny models here \(the default beside the "
                                         r"repository; .*set NNACCEL_MLPERF_TINY_DIR or give the folder\)"):
        mlperf_tiny.mlperf_tiny_dir()
    with pytest.raises(InputError, match=r"task 'image': expected one of ic, kws, vww, ad"):
        mlperf_tiny.model_path("image")


def test_kws_samples_are_dequantised_int8_with_their_labels():
    samples = mlperf_tiny.kws_samples()
    assert samples.inputs.shape == (200, 1, 49, 10) and samples.inputs.dtype == np.float32
    first = mlperf_tiny.mlperf_tiny_dir() / "samples" / "kws01" / samples.names[0]
    raw = np.fromfile(first, np.int8).astype(np.float32)
    assert samples.inputs[0].tobytes() == ((raw - 83) * np.float32(0.5847029)).reshape(1, 49, 10).tobytes()
    assert samples.names[0] == "tst_000000_Stop_7.bin" and samples.labels[0] == 7
    assert all(name.split("_")[-1] == f"{label}.bin" for name, label in zip(samples.names, samples.labels))
    assert all(name.split("_")[2].lower() == mlperf_tiny.KWS_LABELS[label]
               for name, label in zip(samples.names, samples.labels))


def test_ad_windows_and_scores():
    windows = mlperf_tiny.ad_windows()
    assert windows.shape == (40, 640) and windows.dtype == np.float32
    assert mlperf_tiny.anomaly_scores(windows, windows.astype(np.float64) + 2).tolist() == [4.0] * 40


def test_bad_sample_files(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "samples" / "kws01").mkdir(parents=True)
    (tmp_path / "samples" / "kws01" / "tst_1.bin").write_bytes(b"\0" * 489)
    (tmp_path / "samples" / "kws01" / "y_labels.csv").write_text("tst_1.bin,12,3\n")
    with pytest.raises(InputError, match=r"tst_1.bin: 489 bytes; a KWS sample is 490 int8 values"):
        mlperf_tiny.kws_samples(tmp_path)
    with pytest.raises(InputError, match=r"samples/ad01: no \*\.bin sample files"):
        mlperf_tiny.ad_windows(tmp_path)


def test_photos_from_installed_packages_resized_by_area():
    images = mlperf_tiny.sample_images("vww", 4)
    assert images.inputs.shape == (4, 3, 96, 96) and images.labels is None
    assert 0 <= images.inputs.min() and images.inputs.max() <= 1 and images.inputs.std() > 0.1
    # Three photos' centre squares, then a crop of the first: four different images.
    assert len(set(images.names)) == 4 and images.names[3] == f"{images.names[0]} crop 1"
    assert len({image.tobytes() for image in images.inputs}) == 4
    assert mlperf_tiny.sample_images("ic").inputs.shape[1:] == (3, 32, 32)


def test_photos_from_scikit_image_when_installed(monkeypatch):
    """A stand-in ``skimage.data`` (scikit-image is not in the environment): its photos are taken first, a box
    average of each 3 x 3 block when 96 x 96 is cut from 288 x 288."""
    photo = np.arange(300 * 288 * 3, dtype=np.int64).reshape(300, 288, 3) % 256
    data = types.SimpleNamespace(astronaut=lambda: photo, chelsea=lambda: photo, coffee=lambda: photo)
    monkeypatch.setitem(sys.modules, "skimage", types.SimpleNamespace(data=data))
    monkeypatch.setitem(sys.modules, "skimage.data", data)
    images = mlperf_tiny.sample_images("vww")
    assert images.names == ["astronaut", "chelsea", "coffee"]
    expected = photo[12:15, 0:3, 1].mean() / 255        # output row 2: crop rows 6..8, the crop starting at row 6
    assert images.inputs[0, 1, 2, 0] == np.float32(expected)


def test_published_figures():
    figures = mlperf_tiny.published_figures()
    assert {row["task"] for row in figures} == {"ic", "kws", "ad"}
    kws = next(row for row in figures if row["model"] == "KWS-W3A3" and row["board"].startswith("Pynq"))
    assert (kws["flow"], kws["latency_us"], kws["clock_mhz"]) == ("FINN", 17.5, 100)
    assert all(row["repository"].startswith("github.com/mlcommons/tiny_results_v") and row["path"] for row in figures)
