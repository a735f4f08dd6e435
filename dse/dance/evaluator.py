"""DANCE's evaluator (patent Figure 8): a hardware-generation network and a cost-estimation network,
trained on the ground truth of ``dse.dance.labels``, then frozen for the co-search.

- ``HardwareGenerator``: network encoding -> one head per hardware parameter. A 5-layer MLP (an
  input layer, three residual layers ``x + ReLU(W x)``, the heads), width 128, ReLU. Trained with
  cross entropy against a distribution per parameter (``train_generator``: the share of each value among the
  network's near-optimal points, ``training.near_optimal_shares``); at use its heads go through
  Gumbel-softmax (``one_hot``) so the chosen point is a (straight-through) one-hot vector.
- ``GeneratorEnsemble``: several generators trained alike from different seeds (``EvaluatorSettings.
  generator_members``), read as one: per parameter the mean of their log-probabilities.
- ``CostEstimator``: features -> latency, energy, area. A 5-layer MLP (input layer, three residual layers
  ``x + ReLU(BN(W x))``, the output layer), width 256, batch norm, ReLU. It predicts the logarithm relative to the
  training set's geometric mean; outputs are ``exp``'d so they stay positive. ``train_cost`` trains it with the mean
  squared relative error ``sum_i (1 - y_hat_i / y_i)^2`` (``msre``, patent equation 2) or another relative error
  (``mare``, ``sum_i |1 - y_hat_i / y_i|``, what Table 1 measures). The cost network with forwarding, (network
  encoding, hardware one-hots) -> costs, is ``unit_cost.UnitSumCostEstimator``; the one without,
  network -> costs on its best point (Table 1's first cost row), ``best_point_cost.BestPointCostEstimator``.
- ``Evaluator``: the generator's one-hots forwarded into the cost network.

Accuracy as the patent reports it (Table 1; the patent does not define it): for a hardware
parameter, the fraction of held-out networks whose predicted value equals the exhaustive search's;
for a cost metric, 1 - the mean absolute relative error |y_hat / y - 1|.
"""

import time
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional

GENERATOR_WIDTH = 128
COST_WIDTH = 256
RESIDUAL_LAYERS = 3


class ResidualLayer(nn.Module):
    def __init__(self, width, batch_norm):
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.norm = nn.BatchNorm1d(width) if batch_norm else nn.Identity()

    def forward(self, x):
        return x + functional.relu(self.norm(self.linear(x)))


class OneHotGenerator(nn.Module):
    """What a generator's user reads: ``forward`` (N, inputs) -> per-parameter logits, and ``one_hot``."""

    def one_hot(self, encoding, *, tau=1.0, noise=False):
        """Concatenated one-hot points (N, sum(sizes)): hard Gumbel-softmax with straight-through
        gradients, or without ``noise`` the argmax (also straight-through)."""
        parts = []
        for logits in self(encoding):
            if noise:
                parts.append(functional.gumbel_softmax(logits, tau=tau, hard=True))
            else:
                soft = torch.softmax(logits / tau, dim=1)
                hard = functional.one_hot(soft.argmax(dim=1), soft.shape[1]).to(soft.dtype)
                parts.append(hard - soft.detach() + soft)
        return torch.cat(parts, dim=1)


class HardwareGenerator(OneHotGenerator):
    """Network encoding (N, inputs) -> per-parameter logits; ``sizes`` the parameters' choice counts."""

    def __init__(self, inputs, sizes, width=GENERATOR_WIDTH):
        super().__init__()
        self.sizes = tuple(int(s) for s in sizes)
        self.inputs = inputs
        self.stem = nn.Linear(inputs, width)
        self.body = nn.Sequential(*(ResidualLayer(width, False) for _ in range(RESIDUAL_LAYERS)))
        self.heads = nn.ModuleList(nn.Linear(width, size) for size in self.sizes)

    def forward(self, encoding):
        features = self.body(functional.relu(self.stem(encoding)))
        return [head(features) for head in self.heads]


class GeneratorEnsemble(OneHotGenerator):
    """``members`` (``HardwareGenerator`` of the same sizes) as one generator: per parameter the mean of the
    members' log-probabilities, the logits of a generator that agrees with them all."""

    def __init__(self, members):
        super().__init__()
        self.members = nn.ModuleList(members)
        self.sizes, self.inputs = members[0].sizes, members[0].inputs

    def forward(self, encoding):
        outputs = [member(encoding) for member in self.members]
        return [torch.stack([functional.log_softmax(logits[head], dim=1) for logits in outputs]).mean(dim=0)
                for head in range(len(self.sizes))]


def cost_layers(inputs, width):
    """A cost network's input layer and three residual layers ``x + ReLU(BN(W x))`` (``CostEstimator`` and
    ``best_point_cost.BestPointCostEstimator`` put their heads on them)."""
    return (nn.Sequential(nn.Linear(inputs, width), nn.BatchNorm1d(width), nn.ReLU()),
            nn.Sequential(*(ResidualLayer(width, True) for _ in range(RESIDUAL_LAYERS))))


class CostEstimator(nn.Module):
    """(N, inputs) features -> (N, 3) latency ms, energy mJ, area mm^2."""

    def __init__(self, inputs, log_mean, width=COST_WIDTH):
        super().__init__()
        self.inputs = inputs
        self.stem, self.body = cost_layers(inputs, width)
        self.out = nn.Linear(width, 3)
        self.register_buffer("log_mean", torch.as_tensor(np.asarray(log_mean), dtype=torch.float32))

    def log_costs(self, features):
        return self.out(self.body(self.stem(features))) + self.log_mean

    def forward(self, features):
        return torch.exp(self.log_costs(features))


class Evaluator(nn.Module):
    """The frozen pair: network encoding -> (hardware one-hots, costs)."""

    def __init__(self, generator, cost):
        super().__init__()
        self.generator = generator
        self.cost = cost

    def forward(self, encoding, *, tau=1.0, noise=False):
        hardware = self.generator.one_hot(encoding, tau=tau, noise=noise)
        return hardware, self.cost(torch.cat([encoding, hardware], dim=1))


def freeze(module):
    module.eval()
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    return module


def msre(predicted, target):
    """Patent equation 2, averaged over the batch: sum over metrics of (1 - y_hat / y)^2."""
    return ((1 - predicted / target) ** 2).sum(dim=1).mean()


def mare(predicted, target):
    """Sum over metrics of |1 - y_hat / y|, averaged over the batch: one minus the accuracy Table 1 reports. Where
    the target is two-valued for alike inputs (a network whose best point is one of two near-ties far apart in
    latency and area) it leads to the nearer value, where MSRE leads between the two."""
    return (1 - predicted / target).abs().sum(dim=1).mean()


def _batches(count, batch, generator):
    order = torch.randperm(count, generator=generator)
    return [order[start:start + batch] for start in range(0, count, batch)]


def _adam_cosine(network, lr, steps, seed):
    """Adam on ``network`` with a cosine schedule over ``steps`` steps, and the seeded generator that shuffles."""
    optimizer = torch.optim.Adam(network.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(steps, 1))
    return optimizer, schedule, torch.Generator().manual_seed(seed)


def train_generator(generator, encodings, targets, *, epochs, batch=128, lr=1e-3, seed=0, progress=None):
    """Cross entropy against ``targets`` (one (N, choices) distribution per parameter's head: the best point's
    one-hots, or the share of the near-optimal points with each value) summed over the heads; Adam with a cosine
    schedule (the patent's SGD at lr 0.001 for 200 epochs does not converge in the few epochs a shared CPU
    allows)."""
    encodings = torch.as_tensor(encodings, dtype=torch.float32)
    targets = [torch.as_tensor(np.asarray(target), dtype=torch.float32) for target in targets]

    def loss(index, epoch):
        return sum(functional.cross_entropy(head, target[index])
                   for head, target in zip(generator(encodings[index]), targets))

    return fit(generator, len(encodings), loss, epochs=epochs, batch=batch, lr=lr, seed=seed, progress=progress)


def train_cost(cost, features, targets, *, epochs, batch=1024, lr=2e-3, seed=0, progress=None, checkpoint=None,
               relative_error=msre):
    """First epoch: squared log error; then ``relative_error`` (default MSRE, patent equation 2). Adam, cosine
    schedule; batches of 1,024 by default (the patent's 256 run four times slower per case on one CPU thread).
    ``checkpoint`` as in ``fit``."""
    features = torch.as_tensor(features, dtype=torch.float32)
    targets = torch.as_tensor(targets, dtype=torch.float32)

    def loss(index, epoch):
        return cost_loss(epoch, lambda: cost.log_costs(features[index]), lambda: cost(features[index]),
                         targets[index], relative_error)

    return fit(cost, len(features), loss, epochs=epochs, batch=batch, lr=lr, seed=seed, progress=progress,
               checkpoint=checkpoint)


def cost_loss(epoch, log_costs, costs, targets, relative_error):
    """A cost network's loss in ``epoch``: the first, the squared log error of ``log_costs()`` (the relative error of
    an untrained exponential output is unbounded); after it, ``relative_error(costs(), targets)``. ``log_costs``
    and ``costs`` are called only when needed (a network's costs may be its primary output, its log costs derived)."""
    if epoch == 0:
        return ((log_costs() - torch.log(targets)) ** 2).sum(dim=1).mean()
    return relative_error(costs(), targets)


def fit(network, count, loss, *, epochs, batch, lr, seed=0, progress=None, checkpoint=None):
    """Train ``network`` on ``count`` cases, shuffled, ``batch`` a step: ``loss(case indices, epoch)`` is the
    step's loss. Adam, cosine schedule over every step.

    ``checkpoint`` (a path): after every epoch the network, the optimizer, the schedule and the shuffle's state
    go there, and a call that finds the file resumes after its last epoch; with the same arguments the result is
    the uninterrupted run's, bit for bit."""
    torch.manual_seed(seed)
    optimizer, schedule, shuffle = _adam_cosine(network, lr, epochs * -(-count // batch), seed)
    first_epoch = _resume(checkpoint, network, optimizer, schedule, shuffle)
    network.train()
    for epoch in range(first_epoch, epochs):
        for index in _batches(count, batch, shuffle):
            step_loss = loss(index, epoch)
            optimizer.zero_grad()
            step_loss.backward()
            optimizer.step()
            schedule.step()
        if checkpoint is not None:
            _save_training_state(checkpoint, epoch + 1, network, optimizer, schedule, shuffle)
        if progress:
            progress()
    network.eval()
    return network


def _save_training_state(path, epochs_done, network, optimizer, schedule, shuffle):
    """Write the training state atomically (a killed run leaves the previous epoch's file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    torch.save({"epochs_done": epochs_done, "network": network.state_dict(), "optimizer": optimizer.state_dict(),
                "schedule": schedule.state_dict(), "shuffle": shuffle.get_state()}, partial)
    partial.replace(path)


def _resume(path, network, optimizer, schedule, shuffle):
    """Load the training state at ``path`` if there is one; the first epoch still to run."""
    if path is None or not Path(path).exists():
        return 0
    state = torch.load(path, weights_only=True)
    network.load_state_dict(state["network"])
    optimizer.load_state_dict(state["optimizer"])
    schedule.load_state_dict(state["schedule"])
    shuffle.set_state(state["shuffle"])
    return state["epochs_done"]


@torch.no_grad()
def predict_points(generator, encodings):
    """Argmax point (N, parameters) of each network encoding."""
    logits = generator(torch.as_tensor(encodings, dtype=torch.float32))
    return np.stack([head.argmax(dim=1).numpy() for head in logits], axis=1)


def on_every_point(encodings, hardware):
    """(N x points, inputs) the cost network's inputs of each network encoding (N, width) on every point of
    ``hardware`` (points, one-hot width), a network's points consecutive."""
    count, points = len(encodings), len(hardware)
    return torch.cat([encodings[:, None, :].expand(-1, points, -1), hardware[None].expand(count, -1, -1)],
                     dim=2).reshape(count * points, -1)


@torch.no_grad()
def predict_costs(cost, features, batch=8192):
    features = torch.as_tensor(features, dtype=torch.float32)
    return np.concatenate([cost(features[start:start + batch]).numpy()
                           for start in range(0, len(features), batch)]).astype(np.float64)


def cost_accuracy(predicted, target):
    """Per metric: accuracy (1 - mean |y_hat / y - 1|), mean relative error (signed), the 95th percentile of the
    absolute relative error and the share of cases within 1 %."""
    relative = predicted / target - 1
    return {"accuracy": 1 - np.abs(relative).mean(axis=0), "mean_relative_error": relative.mean(axis=0),
            "p95_abs_relative_error": np.percentile(np.abs(relative), 95, axis=0),
            "within_1_percent": (np.abs(relative) <= 0.01).mean(axis=0)}


def time_generator(generator, encoding, repeats=200):
    """Median seconds of one generator inference (one network, argmax one-hots) on this CPU."""
    encoding = torch.as_tensor(encoding[None], dtype=torch.float32)
    times = []
    with torch.no_grad():
        for _ in range(repeats):
            start = time.perf_counter()
            generator.one_hot(encoding)
            times.append(time.perf_counter() - start)
    return float(np.median(times))
