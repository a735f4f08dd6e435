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
           "sample_images", "published_figures", "benchmark_inputs"]

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]
TASKS = ("ic", "kws", "vww", "ad")
KWS_LABELS = ("down", "go", "left", "no", "off", "on", "right", "stop", "up", "yes", "silence", "unknown")
KWS_INPUT_SCALE, KWS_INPUT_ZERO_POINT = np.float32(0.5847029), 83     # the int8 model's input quantisation
KWS_INT8_MODEL = "kws_dscnn_int8.tflite"
AD_WINDOW = 640
KWS_SAMPLE_BYTES = 490


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
        if path.name not in labels:
            raise InputError(f"{labels_file}: no label for {path.name}")
        inputs[index] = _kws_sample(path)
    return Samples(inputs, np.array([labels[path.name] for path in files], np.int64), [path.name for path in files])


def _kws_sample(path):
    raw = np.fromfile(path, np.int8)
    if raw.size != KWS_SAMPLE_BYTES:
        raise InputError(f"{path}: {raw.size} bytes; a KWS sample is 490 int8 values (49 frames x 10 MFCCs)")
    return ((raw.astype(np.float32) - KWS_INPUT_ZERO_POINT) * KWS_INPUT_SCALE).reshape(1, 49, 10)


def _ad_file(path):
    values = np.fromfile(path, "<f4")
    if values.size == 0 or values.size % AD_WINDOW or not np.all(np.isfinite(values)):
        raise InputError(f"{path}: {values.size} float32 values; expected finite 640-value windows")
    return values.reshape(-1, AD_WINDOW).astype(np.float32)


def benchmark_inputs(path, input_shape):
    """The inputs in one of the benchmark's own sample files, for a model whose input is ``input_shape``: a KWS
    sample (490 int8 MFCCs, dequantised) for ``(1, 49, 10)``, an AD file (float32 640-value windows) for
    ``(640,)``: ``(N, *input_shape)`` float32.  Raises InputError naming the file."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file (expected a benchmark sample .bin)")
    if tuple(input_shape) == MODELS["kws"].input_shape:
        return _kws_sample(path)[None]
    if tuple(input_shape) == (AD_WINDOW,):
        return _ad_file(path)
    raise InputError(f"{path}: a benchmark sample file holds KWS (1 x 49 x 10) or AD (640) inputs; the model's input "
                     f"is {' x '.join(map(str, input_shape))}")


def ad_windows(folder=None):
    """The anomaly-detection sample's 640-value windows ``(N, 640)`` float32 (the first ``.bin`` of ``ad01``)."""
    _, files = _sample_files(folder, "ad01", "*.bin")
    return _ad_file(files[0])


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


# Square crops of each photo, as (fraction of the shorter side, vertical, horizontal position in 0..1): the whole
# centre square first, then nine smaller views, so that N inputs are N different images, not N copies.
_CROPS = ((1.0, 0.5, 0.5),) + tuple((0.6, top, left) for top in (0.0, 0.5, 1.0) for left in (0.0, 0.5, 1.0))


def _area_resize(photo, size, crop=_CROPS[0]):
    """A square ``crop`` of ``photo`` averaged over ``size`` x ``size`` boxes: ``(3, size, size)`` float64."""
    fraction, vertical, horizontal = crop
    height, width = photo.shape[:2]
    side = int(min(height, width) * fraction)
    top, left = round((height - side) * vertical), round((width - side) * horizontal)
    square = photo[top:top + side, left:left + side].astype(np.float64)
    edges = np.arange(size) * side // size
    counts = np.diff(np.append(edges, side))
    boxes = np.add.reduceat(np.add.reduceat(square, edges, axis=0), edges, axis=1)
    return (boxes / np.outer(counts, counts)[:, :, None]).transpose(2, 0, 1)


def sample_images(task, count=None):
    """Real photos as ``task``'s inputs (``ic``: ``(N, 3, 32, 32)``, ``vww``: ``(N, 3, 96, 96)``, pixels / 255,
    float32) and their names: the photos' centre squares, then crops of them (:data:`_CROPS`), ``count`` in all
    (default: one per photo; at most ten per photo)."""
    if task not in ("ic", "vww"):
        raise InputError(f"task {task!r}: photos are the inputs of ic and vww")
    photos = _photos()
    count = len(photos) if count is None else count
    if count > len(photos) * len(_CROPS):
        raise InputError(f"{count} {task} inputs asked for; the {len(photos)} photos give {len(photos) * len(_CROPS)} "
                         f"different crops")
    size = MODELS[task].input_shape[1]
    chosen = [(photos[index % len(photos)], _CROPS[index // len(photos)]) for index in range(count)]
    inputs = np.stack([_area_resize(photo, size, crop) / 255.0 for (_, photo), crop in chosen]).astype(np.float32)
    names = [name if crop == _CROPS[0] else f"{name} crop {_CROPS.index(crop)}" for (name, _), crop in chosen]
    return Samples(inputs, None, names)


def published_figures():
    """The published MLPerf Tiny FPGA results (hls4ml, FINN): a list of dicts (board, task, model, flow,
    latency_us, energy_uj, quality, repository, path)."""
    table = json.loads((Path(__file__).parent / "data" / "mlperf_tiny_published.json").read_text())
    return table["results"]
