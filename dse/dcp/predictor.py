"""DCP's neural predictor: (layer code, hardware, relaxed dataflow code) -> natural logs of
latency and energy (EDP is their sum), trained on the cost model's labels, then frozen.

Two architectures (``ARCHITECTURES``), chosen by ``kind``:

- ``mlp``: the three inputs concatenated (10 + hardware + M*N*2 features), a linear stem, a
  stack of residual blocks (LayerNorm, Linear, SiLU, Linear), a linear head. The patent names
  image backbones (MobileNet-V2, ResNet-101, ViT); the code is a short vector, not an image, so
  the residual MLP is ResNet's idea at the size the data supports (a few hundred thousand
  parameters for some 10^5 samples).
- ``transformer``: ViT's idea on the code's own tokens: one token per (level, dimension) entry
  (its slot and log2 size, plus level and dimension embeddings) and one context token (layer
  and hardware features), a small pre-norm transformer encoder, the head on the mean token.

Inputs and targets are standardised with the training set's mean and deviation (kept in the
checkpoint). The loss is the mean squared error of the standardised log targets, i.e. of the
relative error.

A checkpoint (``save`` / ``load``) holds the architecture, its hyper-parameters, the weights,
the standardisation, and the design space's name and code shape.
"""

import math
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import torch
from torch import nn

from nnaccel.dse.dcp.encoding import LAYER_FEATURES, relaxed_features
from nnaccel.models.shared.input_files import InputError

OUTPUTS = 2     # log latency, log energy
DEFAULT_CHECKPOINT = "predictor_{space}.pt"
DERIVED_FEATURES = 14
_N, _K, _C, _Y, _X, _R, _S = range(7)


def derived_features(layer_rows, relaxed, temperature=0.1):
    """(batch, 14) log2 quantities of the (M = 3, N = 7) template-shaped nest, computed from the
    relaxed code with no parameters and differentiable: temporal steps, PEs used, and the words
    of W, I, O and their total in the RF, array and GB tiles. A level's parallel entry is
    weighted by a softmax of its slot scores (one-hot on an exact code)."""
    position, log_size = relaxed[..., 0], relaxed[..., 1]
    parallel = torch.softmax(-position / temperature, dim=-1)
    temporal = log_size * (1 - parallel)
    spatial = (log_size * parallel).sum(dim=1)
    rf = temporal[:, 2]
    array = spatial + rf
    gb = temporal[:, 1] + array
    stride = torch.exp2(layer_rows[:, 6])
    depthwise = layer_rows[:, 7 + 1]

    def tile(extent):
        weights = extent[:, [_K, _C, _R, _S]].sum(dim=1)
        outputs = extent[:, [_N, _Y, _X]].sum(dim=1) + (1 - depthwise) * extent[:, _K] \
            + depthwise * extent[:, _C]
        rows = torch.log2((torch.exp2(extent[:, _Y]) - 1) * stride + torch.exp2(extent[:, _R]))
        cols = torch.log2((torch.exp2(extent[:, _X]) - 1) * stride + torch.exp2(extent[:, _S]))
        inputs = extent[:, _N] + extent[:, _C] + rows + cols
        words = torch.stack([weights, inputs, outputs], dim=1)
        return [weights, inputs, outputs, torch.logsumexp(words * math.log(2), dim=1) / math.log(2)]

    return torch.stack([temporal.sum(dim=(1, 2)), spatial.sum(dim=1), *tile(rf), *tile(array),
                        *tile(gb)], dim=1)


class _Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.body = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.SiLU(),
                                  nn.Linear(width, width))

    def forward(self, x):
        return x + self.body(x)


class MLPNet(nn.Module):
    """Residual MLP on the concatenated features."""

    def __init__(self, *, inputs, width=256, depth=3):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, width),
                                 *(_Residual(width) for _ in range(depth)),
                                 nn.LayerNorm(width), nn.SiLU(), nn.Linear(width, OUTPUTS))

    def forward(self, context, code):
        return self.net(torch.cat([context, code.reshape(len(code), -1)], dim=1))


class TokenNet(nn.Module):
    """A small transformer over the code's entries plus one context token."""

    def __init__(self, *, context_features, levels, dims, width=64, depth=2, heads=4):
        super().__init__()
        self.context = nn.Linear(context_features, width)
        self.entry = nn.Linear(2, width)
        self.position = nn.Parameter(torch.zeros(levels * dims, width))
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width,
                                           dropout=0.0, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, OUTPUTS))
        nn.init.normal_(self.position, std=0.1)

    def forward(self, context, code):
        tokens = self.entry(code.reshape(len(code), -1, 2)) + self.position
        sequence = torch.cat([self.context(context)[:, None], tokens], dim=1)
        return self.head(self.encoder(sequence).mean(dim=1))


ARCHITECTURES = ("mlp", "transformer")


def build_network(kind, *, hardware_features, levels, dims, derived=True, **hyper):
    context = LAYER_FEATURES + hardware_features + (DERIVED_FEATURES if derived else 0)
    if kind == "mlp":
        return MLPNet(inputs=context + levels * dims * 2, **hyper)
    if kind == "transformer":
        return TokenNet(context_features=context, levels=levels, dims=dims, **hyper)
    raise InputError(f"predictor kind must be one of {', '.join(ARCHITECTURES)}, not {kind!r}")


class Predictor(nn.Module):
    """The trained network with its standardisation: ``forward(layer_features,
    hardware_features, relaxed_codes)`` -> (batch, 2) natural logs of latency and energy."""

    def __init__(self, *, kind, space, levels, dims, hardware_features, hyper=None):
        super().__init__()
        self.kind, self.space, self.hyper = kind, space, dict(hyper or {})
        self.shape = (levels, dims, hardware_features)
        self.network = build_network(kind, hardware_features=hardware_features, levels=levels,
                                     dims=dims, **self.hyper)
        self.derived = self.hyper.get("derived", True)
        context = LAYER_FEATURES + hardware_features + (DERIVED_FEATURES if self.derived else 0)
        for name, size in (("context_mean", context), ("context_std", context),
                           ("code_mean", levels * dims * 2), ("code_std", levels * dims * 2),
                           ("target_mean", OUTPUTS), ("target_std", OUTPUTS)):
            self.register_buffer(name, torch.zeros(size) if "mean" in name else torch.ones(size))

    def _context(self, layer_rows, hardware_rows, relaxed):
        parts = [layer_rows, hardware_rows]
        if self.derived:
            parts.append(derived_features(layer_rows, relaxed))
        return torch.cat(parts, dim=1)

    def fit_standardisation(self, layer_rows, hardware_rows, relaxed, targets):
        context = self._context(*(torch.as_tensor(a) for a in (layer_rows, hardware_rows,
                                                                relaxed))).numpy()
        code = relaxed_features(relaxed)
        for prefix, values in (("context", context), ("code", code), ("target", targets)):
            getattr(self, f"{prefix}_mean").copy_(torch.as_tensor(values.mean(axis=0)))
            getattr(self, f"{prefix}_std").copy_(torch.as_tensor(values.std(axis=0) + 1e-3))

    def standardised(self, layer_rows, hardware_rows, relaxed):
        context = (self._context(layer_rows, hardware_rows, relaxed) - self.context_mean) \
            / self.context_std
        code = (relaxed_features(relaxed) - self.code_mean) / self.code_std
        return self.network(context, code)

    def forward(self, layer_rows, hardware_rows, relaxed):
        return self.standardised(layer_rows, hardware_rows, relaxed) * self.target_std \
            + self.target_mean

    def parameter_count(self):
        return sum(p.numel() for p in self.network.parameters())

    def freeze(self):
        self.eval()
        for parameter in self.parameters():
            parameter.requires_grad_(False)
        return self


def new_predictor(space, kind="mlp", **hyper):
    """An untrained predictor for ``space`` (its ``predictor_defaults`` under ``hyper``)."""
    hyper = {**space.predictor_defaults, **hyper}
    return Predictor(kind=kind, space=space.name, levels=len(space.levels), dims=len(space.dims),
                     hardware_features=space.hardware_feature_count, hyper=hyper)


@dataclass
class TrainReport:
    epochs: int
    seconds: float
    samples: int
    parameters: int
    history: list = field(default_factory=list)    # (epoch, train loss, validation loss)


def _tensors(data, space):
    layer_rows, hardware_rows, relaxed = data.inputs(space)
    return (torch.as_tensor(layer_rows), torch.as_tensor(hardware_rows),
            torch.as_tensor(relaxed), torch.as_tensor(data.targets()))


def train(predictor, train_set, space, *, epochs, validation=None, batch=512, learning_rate=2e-3,
          seed=0, progress=None):
    """Fit ``predictor`` on ``train_set`` (a ``DataSet``) with AdamW and a cosine schedule;
    ``progress(epoch, train_loss, validation_loss)`` is called after each epoch."""
    torch.manual_seed(seed)
    tensors = _tensors(train_set, space)
    predictor.fit_standardisation(*(t.numpy() for t in tensors))
    targets = (tensors[3] - predictor.target_mean) / predictor.target_std
    optimiser = torch.optim.AdamW(predictor.network.parameters(), lr=learning_rate,
                                  weight_decay=1e-4)
    steps = epochs * math.ceil(len(targets) / batch)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=learning_rate,
                                                   total_steps=max(steps, 1), pct_start=0.1)
    report = TrainReport(epochs, 0.0, len(targets), predictor.parameter_count())
    start = time.perf_counter()
    for epoch in range(epochs):
        predictor.train()
        order = torch.randperm(len(targets))
        total = 0.0
        for first in range(0, len(order), batch):
            pick = order[first:first + batch]
            output = predictor.standardised(tensors[0][pick], tensors[1][pick], tensors[2][pick])
            loss = ((output - targets[pick]) ** 2).mean()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
            total += loss.item() * len(pick)
        validation_loss = None
        if validation is not None and len(validation):
            validation_loss = float(np.mean(accuracy(predictor, validation, space)["log_mse"]))
        report.history.append((epoch + 1, total / len(targets), validation_loss))
        if progress:
            progress(epoch + 1, total / len(targets), validation_loss)
    report.seconds = time.perf_counter() - start
    return report


@torch.no_grad()
def predict(predictor, data, space, *, batch=8192):
    """(n, 2) predicted latency and energy (linear units) of a ``DataSet``."""
    predictor.eval()
    tensors = _tensors(data, space)
    rows = [predictor(*(t[i:i + batch] for t in tensors[:3]))
            for i in range(0, len(tensors[0]), batch)]
    return torch.exp(torch.cat(rows).double()).numpy() if rows else np.zeros((0, OUTPUTS))


def accuracy(predictor, data, space):
    """Per metric (latency, energy, edp): mean relative error, share within 5 %, and the mean
    squared error of the standardised logs (``log_mse``, the training loss)."""
    predicted = predict(predictor, data, space)
    truth = np.stack([data.latency, data.energy], axis=1)
    predicted = np.concatenate([predicted, predicted.prod(axis=1, keepdims=True)], axis=1)
    truth = np.concatenate([truth, truth.prod(axis=1, keepdims=True)], axis=1)
    relative = np.abs(predicted / truth - 1)
    log_error = (np.log(predicted[:, :2]) - np.log(truth[:, :2])) \
        / predictor.target_std.double().numpy()
    return {"metrics": ("latency", "energy", "edp"),
            "mean_relative_error": relative.mean(axis=0).tolist(),
            "within_5_percent": (relative <= 0.05).mean(axis=0).tolist(),
            "log_mse": (log_error ** 2).mean(axis=0).tolist(),
            "samples": len(truth)}


def save(predictor, path, *, extra=None):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    levels, dims, hardware_features = predictor.shape
    torch.save({"kind": predictor.kind, "space": predictor.space, "levels": levels, "dims": dims,
                "hardware_features": hardware_features, "hyper": predictor.hyper,
                "state": predictor.state_dict(),
                "extra": extra or {}}, path)


def load(path=None, *, space="template"):
    """A frozen predictor from ``path`` (default: the one shipped in ``dse/dcp/data`` for the design
    space named ``space``)."""
    if path is None:
        path = resources.files("nnaccel.dse.dcp").joinpath("data", DEFAULT_CHECKPOINT.format(space=space))
    try:
        with open(path, "rb") as handle:
            saved = torch.load(handle, weights_only=True)
    except FileNotFoundError:
        raise InputError(f"{path}: no predictor checkpoint there (train one with "
                         f"`nnaccel dse predictor`)") from None
    except Exception as error:      # torch reports a corrupt or foreign file with many exception types
        raise InputError(f"{path}: not a predictor checkpoint ({type(error).__name__}: "
                         f"{str(error).splitlines()[0] if str(error) else 'unreadable'}; expected a file "
                         f"`nnaccel dse predictor --out` writes)") from None
    fields = ("kind", "space", "levels", "dims", "hardware_features", "hyper")
    if not isinstance(saved, dict) or any(field not in saved for field in fields):
        raise InputError(f"{path}: not a predictor checkpoint (expected the fields {', '.join(fields)}, "
                         f"as `nnaccel dse predictor --out` writes them)")
    predictor = Predictor(kind=saved["kind"], space=saved["space"], levels=saved["levels"],
                          dims=saved["dims"], hardware_features=saved["hardware_features"],
                          hyper=saved["hyper"])
    predictor.load_state_dict(saved["state"])
    predictor.extra = saved["extra"]
    return predictor.freeze()
