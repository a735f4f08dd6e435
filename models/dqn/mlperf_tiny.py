"""The MLPerf Tiny benchmark's four reference models, its sample inputs, and the published FPGA figures.

The models and samples are not shipped with nnaccel (they belong to MLCommons and EEMBC); they live in a folder
laid out as ``../shared/mlperf_tiny`` beside the checkout (its README gives the sources and licences):
``models/<file>.tflite``, ``samples/kws01/*.bin`` + ``y_labels.csv``, ``samples/ad01/*.bin``.  The folder is the
one the caller gives, else ``$NNACCEL_MLPERF_TINY_DIR``, else ``<repository>/../shared/mlperf_tiny``.

Tasks (:data:`TASKS`): ``ic`` ResNet-8 on CIFAR-10 (1x32x32x3, pixels / 255), ``kws`` DS-CNN keyword spotting
(1x49x10x1 MFCCs), ``vww`` MobileNetV1-0.25 visual wake words (1x96x96x3, pixels / 255), ``ad`` the dense
autoencoder of anomaly detection (1x640).

Samples, as the graph's NCHW float32 inputs:

- KWS: 490 int8 values per file (49 frames x 10 MFCCs), dequantised with the int8 model's input quantisation,
  ``(q - 83) * 0.5847029`` in float32, shape ``(1, 49, 10)``; labels (0..11, :data:`KWS_LABELS`) from
  ``y_labels.csv``.
- AD: float32 little-endian 640-value windows (the shared file holds 40); a window's anomaly score is the mean
  squared error between it and the autoencoder's output.
- IC / VWW: CIFAR-10 and COCO are not here, so real photos shipped inside installed packages stand in:
  ``skimage.data`` when scikit-image is installed, else the photos of scikit-learn (``china.jpg``, ``flower.jpg``)
  and matplotlib (``grace_hopper.jpg``), decoded with Pillow; centre-cropped to a square and area-averaged to
  32 x 32 or 96 x 96 with NumPy, divided by 255.

:func:`published_figures` reads ``data/mlperf_tiny_published.json``: the hls4ml / FINN latencies, energies and
qualities of the MLPerf Tiny open division on 100 MHz FPGA fabric, with the results repository and path each
comes from.
"""

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from nnaccel.models.shared.input_files import InputError

__all__ = ["TASKS", "TinyModel", "MODELS", "KWS_INT8_MODEL", "KWS_LABELS", "KWS_INPUT_SCALE", "KWS_INPUT_ZERO_POINT",
           "Samples", "mlperf_tiny_dir", "model_path", "kws_samples", "ad_windows", "anomaly_scores",
           "sample_images", "published_figures"]

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TASKS = ("ic", "kws", "vww", "ad")
KWS_LABELS = ("down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes", "silence", "unknown")
KWS_INPUT_SCALE, KWS_INPUT_ZERO_POINT = np.float32(0.5847029), 83     # the int8 model's input quantisation
KWS_INT8_MODEL = "kws_dscnn_int8.tflite"
AD_WINDOW = 640


@dataclass(frozen=True)
class TinyModel:
    """One benchmark task: its reference model file (float32) and input shape (NCHW, no batch)."""

    task: str
    title: str
    file: str
    input_shape: tuple


MODELS = {
    "ic": TinyModel("ic", "image classification, ResNet-8 (CIFAR-10)", "ic_resnet8_float32.tflite", (3, 32, 32)),
    "kws": TinyModel("kws", "keyword spotting, DS-CNN", "kws_dscnn_float32.tflite", (1, 49, 10)),
    "vww": TinyModel("vww", "visual wake words, MobileNetV1-0.25", "vww_mobilenetv1_025_float32.tflite",
                     (3, 96, 96)),
    "ad": TinyModel("ad", "anomaly detection, dense autoencoder", "ad_autoencoder_float32.tflite", (AD_WINDOW,)),
}


class Samples(NamedTuple):
    """Sample inputs ``(N, *input shape)`` float32, their labels ``(N,)`` int64 (None for photos) and names."""

    inputs: np.ndarray
    labels: np.ndarray
    names: list


def mlperf_tiny_dir(folder=None):
    """The MLPerf Tiny folder: ``folder``, else ``$NNACCEL_MLPERF_TINY_DIR``, else ``<repository>/../shared/
    mlperf_tiny``; raises :class:`InputError` if it has no ``models`` folder."""
    if folder is not None:
        directory, how = Path(folder), "the folder given"
    elif os.environ.get("NNACCEL_MLPERF_TINY_DIR"):
        directory, how = Path(os.environ["NNACCEL_MLPERF_TINY_DIR"]), "$NNACCEL_MLPERF_TINY_DIR"
    else:
        directory, how = REPOSITORY_ROOT.parent / "shared" / "mlperf_tiny", "the default beside the repository"
    if not (directory / "models").is_dir():
        raise InputError(f"{directory}: no MLPerf Tiny models here ({how}; expected a folder with models/*.tflite "
                         f"and samples/, as ../shared/mlperf_tiny; set NNACCEL_MLPERF_TINY_DIR or give the folder)")
    return directory


def model_path(task, folder=None):
    """The float32 reference model of ``task`` (one of :data:`TASKS`)."""
    if task not in MODELS:
        raise InputError(f"task {task!r}: expected one of {', '.join(TASKS)}")
    path = mlperf_tiny_dir(folder) / "models" / MODELS[task].file
    if not path.is_file():
        raise InputError(f"{path}: no such file (the MLPerf Tiny {MODELS[task].title} model)")
    return path


def _sample_files(folder, task, pattern):
    directory = mlperf_tiny_dir(folder) / "samples" / task
    files = sorted(directory.glob(pattern))
    if not files:
        raise InputError(f"{directory}: no {pattern} sample files")
    return directory, files


def kws_samples(folder=None, count=None):
    """The keyword-spotting samples (the first ``count``, or all) as :class:`Samples`: MFCCs ``(N, 1, 49, 10)``
    float32 dequantised as the int8 model's input, labels from ``y_labels.csv``."""
    directory, files = _sample_files(folder, "kws01", "*.bin")
    files = files[:count]
    labels_file = directory / "y_labels.csv"
    try:
        with open(labels_file, newline="") as handle:
            labels = {row[0]: int(row[2]) for row in csv.reader(handle) if row}
    except (OSError, ValueError, IndexError) as error:
        raise InputError(f"{labels_file}: cannot read the labels (file,classes,label per line): {error}") from None
    inputs = np.empty((len(files), *MODELS["kws"].input_shape), np.float32)
    for index, path in enumerate(files):
        raw = np.fromfile(path, np.int8)
        if raw.size != 490:
            raise InputError(f"{path}: {raw.size} bytes; a KWS sample is 490 int8 values (49 frames x 10 MFCCs)")
        if path.name not in labels:
            raise InputError(f"{labels_file}: no label for {path.name}")
        inputs[index] = ((raw.astype(np.float32) - KWS_INPUT_ZERO_POINT) * KWS_INPUT_SCALE).reshape(1, 49, 10)
    return Samples(inputs, np.array([labels[path.name] for path in files], np.int64), [path.name for path in files])


def ad_windows(folder=None):
    """The anomaly-detection sample's 640-value windows ``(N, 640)`` float32 (the first ``.bin`` of ``ad01``)."""
    _, files = _sample_files(folder, "ad01", "*.bin")
    values = np.fromfile(files[0], "<f4")
    if values.size == 0 or values.size % AD_WINDOW or not np.all(np.isfinite(values)):
        raise InputError(f"{files[0]}: {values.size} float32 values; expected finite 640-value windows")
    return values.reshape(-1, AD_WINDOW).astype(np.float32)


def anomaly_scores(windows, reconstructions):
    """Each window's anomaly score: the mean squared error between it and the autoencoder's output (float64)."""
    difference = np.asarray(windows, np.float64) - np.asarray(reconstructions, np.float64)
    return (difference ** 2).mean(axis=-1)


def _photos():
    """Real RGB photos (H, W, 3) uint8 from installed packages, with their names."""
    try:
        from skimage import data
    except ImportError:
        pass
    else:
        return [(name, getattr(data, name)()) for name in ("astronaut", "chelsea", "coffee")]
    photos = []
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None:
        candidates = []
        try:
            import sklearn.datasets
            candidates += sorted((Path(sklearn.datasets.__file__).parent / "images").glob("*.jpg"))
        except ImportError:
            pass
        try:
            import matplotlib
            candidates.append(Path(matplotlib.get_data_path()) / "sample_data" / "grace_hopper.jpg")
        except ImportError:
            pass
        for path in candidates:
            if path.is_file():
                with Image.open(path) as image:
                    photos.append((path.stem, np.asarray(image.convert("RGB"))))
    if not photos:
        raise InputError("no photos to run: IC and VWW take real images from scikit-image (skimage.data), or with "
                         "Pillow from scikit-learn's or matplotlib's sample photos; install one of them "
                         "(pip install 'nnaccel[ebp]') or give --inputs")
    return photos


def _area_resize(photo, size):
    """Centre-cropped to a square and averaged over ``size`` x ``size`` boxes: ``(3, size, size)`` float32."""
    height, width = photo.shape[:2]
    side = min(height, width)
    top, left = (height - side) // 2, (width - side) // 2
    square = photo[top:top + side, left:left + side].astype(np.float64)
    edges = np.arange(size) * side // size
    counts = np.diff(np.append(edges, side))
    boxes = np.add.reduceat(np.add.reduceat(square, edges, axis=0), edges, axis=1)
    return (boxes / np.outer(counts, counts)[:, :, None]).transpose(2, 0, 1)


def sample_images(task, count=None):
    """Real photos as ``task``'s inputs (``ic``: ``(N, 3, 32, 32)``, ``vww``: ``(N, 3, 96, 96)``, pixels / 255,
    float32) and their names; ``count`` repeats or cuts the list."""
    if task not in ("ic", "vww"):
        raise InputError(f"task {task!r}: photos are the inputs of ic and vww")
    photos = _photos()
    count = len(photos) if count is None else count
    chosen = [photos[index % len(photos)] for index in range(count)]
    size = MODELS[task].input_shape[1]
    inputs = np.stack([_area_resize(photo, size) / 255.0 for _, photo in chosen]).astype(np.float32)
    return Samples(inputs, None, [name for name, _ in chosen])


def published_figures():
    """The published MLPerf Tiny FPGA results (hls4ml, FINN): a list of dicts (board, task, model, flow,
    latency_us, energy_uj, quality, repository, path)."""
    table = json.loads((Path(__file__).parent / "data" / "mlperf_tiny_published.json").read_text())
    return table["results"]
