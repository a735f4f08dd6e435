"""DANCE's fit head: does a network fit any point of the hardware space?  On a small board's space
(``rtl-stream-1k``) 1,095 of the 3,840 networks fit none, and the evaluator, trained on fitting networks only, does
not see it; the co-search's loss reads this head instead (``cosearch``: a term pushing the architecture
distribution away from networks predicted not to fit).

- ``fit_labels(hardware_space)``: the exact column, each network of the network space fits some point or not (the
  hardware space's own costs, ``network_costs``: finite on some point);
- ``FitHead``: a small network on the network one-hots, a logit of "fits";
- ``train_fit_head``: trained on ``labels.split_networks``' training networks, its accuracy measured on the
  held-out ones (every held-out network, fitting or not);
- ``save`` / ``load``: ``data/fit_<space>.pt`` (its weights and the training run's report). A space without a
  shipped fit head is one where every network fits: the co-search then adds no term.

    python -m nnaccel.dse.dance.fit_head --space rtl-stream-1k [--epochs E] [--out DIR] [--json F]
"""

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from nnaccel.dse.dance.evaluator import freeze
from nnaccel.dse.dance.labels import split_networks
from nnaccel.dse.dance.network_space import NETWORK_SPACE

__all__ = ["FitHead", "fit_labels", "train_fit_head", "fit_checkpoint", "fit_digest", "save", "load", "report_line"]

HIDDEN = 64


class FitHead(nn.Module):
    """Network one-hots (N, encoding width) -> the logit that the network fits some point (N,)."""

    def __init__(self, inputs, hidden=HIDDEN):
        super().__init__()
        self.inputs, self.hidden = inputs, hidden
        self.layers = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                    nn.Linear(hidden, 1))

    def forward(self, encodings):
        return self.layers(encodings)[:, 0]


def fit_labels(hardware_space, network_space=NETWORK_SPACE, batch=64, progress=None):
    """(networks,) bool: whether each network of ``network_space`` (in ``all_points`` order) fits some point of
    ``hardware_space``, by its exact costs."""
    points = network_space.all_points()
    fits = np.zeros(len(points), bool)
    for start in range(0, len(points), batch):
        networks = [network_space.network(indices) for indices in points[start:start + batch]]
        fits[start:start + batch] = np.isfinite(hardware_space.network_costs(networks)).all(axis=-1).any(axis=-1)
        if progress:
            progress(min(start + batch, len(points)), len(points))
    return fits


def train_fit_head(fits, network_space=NETWORK_SPACE, *, epochs=400, seed=0):
    """A ``FitHead`` trained on the training networks of ``split_networks(seed)`` (full batch, Adam, binary cross
    entropy) and its report: held-out accuracy, its fitting and unfitting networks' accuracies, the shares."""
    train, held_out = split_networks(len(fits), seed)
    encodings = torch.as_tensor(network_space.encode(network_space.all_points()), dtype=torch.float32)
    targets = torch.as_tensor(fits, dtype=torch.float32)
    torch.manual_seed(seed)
    head = FitHead(encodings.shape[1])
    optimizer = torch.optim.Adam(head.parameters(), lr=3e-3, weight_decay=1e-5)
    for _ in range(epochs):
        loss = functional.binary_cross_entropy_with_logits(head(encodings[train]), targets[train])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    freeze(head)
    with torch.no_grad():
        predicted = (head(encodings) > 0).numpy()
    right = predicted == fits
    report = {"held_out_accuracy": float(right[held_out].mean()), "train_accuracy": float(right[train].mean()),
              "held_out_networks": int(len(held_out)), "held_out_fitting": int(fits[held_out].sum()),
              "held_out_accuracy_fitting": float(right[held_out][fits[held_out]].mean()),
              "held_out_accuracy_unfitting": float(right[held_out][~fits[held_out]].mean()),
              "networks_fitting_no_point": int((~fits).sum()), "epochs": epochs, "seed": seed}
    return head, report


def fit_checkpoint(space_name, directory=None):
    """The fit head's checkpoint of ``space_name``: shipped, or in ``directory``."""
    from nnaccel.dse.dance.training import data_path

    name = f"fit_{space_name}.pt"
    return data_path(name) if directory is None else Path(directory) / name


def fit_digest(space_name):
    """SHA-256 (16 hex digits) of the shipped fit head, "" without one (a space where every network fits)."""
    path = fit_checkpoint(space_name)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else ""


def save(head, report, space_name, directory=None):
    path = fit_checkpoint(space_name, directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"space": space_name, "inputs": head.inputs, "hidden": head.hidden, "state": head.state_dict(),
                "report": report}, path)
    return path


def load(space_name, directory=None):
    """The frozen shipped ``FitHead`` of ``space_name`` and its report, or ``(None, None)`` without one."""
    path = fit_checkpoint(space_name, directory)
    if not path.exists():
        return None, None
    data = torch.load(path, weights_only=True)
    head = FitHead(data["inputs"], data["hidden"])
    head.load_state_dict(data["state"])
    return freeze(head), data["report"]


def report_line(report):
    """The fit head's held-out accuracy as text."""
    return (f"fit head on {report['held_out_networks']} held-out networks ({report['held_out_fitting']} fit some "
            f"point): accuracy {100 * report['held_out_accuracy']:.1f}% "
            f"(fitting {100 * report['held_out_accuracy_fitting']:.1f}%, "
            f"fitting none {100 * report['held_out_accuracy_unfitting']:.1f}%; "
            f"training networks {100 * report['train_accuracy']:.1f}%); "
            f"{report['networks_fitting_no_point']} of the space's networks fit no point")


def main(argv=None):
    from nnaccel.dse.dance.hardware_space import SPACES, make_hardware_space

    parser = argparse.ArgumentParser(prog="python -m nnaccel.dse.dance.fit_head",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--space", choices=SPACES, default="rtl-stream-1k")
    parser.add_argument("--epochs", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", metavar="DIR", help="checkpoint directory (default the shipped dse/dance/data)")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    arguments = parser.parse_args(argv)
    if arguments.epochs < 1:
        print(f"fit_head: --epochs must be positive, not {arguments.epochs}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    start = time.perf_counter()
    fits = fit_labels(make_hardware_space(arguments.space),
                      progress=lambda done, total: print(f"fit labels: {done} of {total}", flush=True))
    labelled = time.perf_counter() - start
    head, report = train_fit_head(fits, epochs=arguments.epochs, seed=arguments.seed)
    report["label_seconds"], report["train_seconds"] = labelled, time.perf_counter() - start - labelled
    path = save(head, report, arguments.space, arguments.out)
    print(report_line(report))
    print(f"labels {labelled:.1f} s, training {report['train_seconds']:.1f} s; written to {path}")
    if arguments.json:
        with open(arguments.json, "w") as stream:
            json.dump(report, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
