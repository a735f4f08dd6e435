"""DANCE's co-exploration on MNIST and its baselines (patent equations 1 and 5, Table 2, Figure 9).

Methods (``METHODS``), all on the same super-network and the same schedule:

- ``baseline``: the NAS alone (loss CE), then the best hardware for the found network by
  exhaustive search (the separate design of the patent's first baseline);
- ``flops``: CE + l2 * MACs / MACs_ref, then the exhaustive search;
- ``edd``: EDD's loss, l2 * CE * latency with EDD's latency model (the network's MACs over the
  number of multipliers, the compute parameters searched along with the network by Gumbel-softmax),
  then the exhaustive search over the other parameters with the searched compute parameters fixed;
- ``dance``: CE + l2 * Cost_HW / Cost_ref, Cost_HW the cost function of the frozen evaluator's
  output for the sampled network's encoding (hardware generation forwarded into cost estimation);
  after the search one exact hardware generation (the exhaustive search) for the chosen network. On a space with a
  fit head (``dse.dance.fit_head``: a small board's, where some networks fit no point) DANCE's loss adds
  ``fit_weight`` times the head's probability that the sampled network fits no point (warmed up like l2).

Every method's answer fits (``fitting_answer``): where the chosen network (each choice's most probable value) fits no
point of the hardware space (a small board's), the answer is the most probable network under the search's final
architecture probabilities that fits one, the candidates checked in order of probability by the same exhaustive
search, at most ``FALLBACK_CANDIDATES`` of them; the result names the first choice it replaced.

l1 ||w|| is the weight decay (4e-5, the patent's) of the weight optimizer. l2 warms up: a tenth of
its value in the first ``warmup`` epochs. Every architecture found is retrained from scratch on the
8,000 training digits and tested on the 2,000 test digits; its latency, energy, area and EDAP come
from the hardware space's cost model (the ground truth), not from the evaluator.

The hardware space is any ``dse.dance.hardware_space.HardwareSpace`` (its exhaustive search and its
compute parameters); the evaluator any pair trained on it (``dse.dance.training``).
"""

import time
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from torch.nn import functional

from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.settings import METHODS, SearchSettings
from nnaccel.dse.dance.supernet import ArchitectureParameters, Candidate, SuperNet

WEIGHT_DECAY = 4e-5
LABEL_SMOOTHING = 0.1
WARMUP_FACTOR = 0.1
#: networks ``fitting_answer`` checks at most, the first choice included
FALLBACK_CANDIDATES = 64
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


@dataclass
class SearchResult:
    method: str
    cost: str
    lambda2: float
    indices: list
    network: str
    hardware: str
    accuracy: float
    latency_ms: float
    energy_mj: float
    area_mm2: float
    edap: float
    macs: int
    search_s: float
    retrain_s: float
    architecture_probabilities: list = field(default_factory=list)
    hardware_point: list = field(default_factory=list)     # one index per hardware parameter
    area_unit: str = "mm2"                                 # of area_mm2: the hardware space's area_unit
    seed: int = 0                                          # of the search and the retraining
    fits: bool = True      # False: the network fits no point of the space (costs and hardware None; a small board's)
    first_choice: str = ""          # the search's own choice where it fit no point and a fitting network replaced it
    candidates_checked: int = 1     # networks checked in order of probability until one fit (fitting_answer)

    def to_dict(self):
        return asdict(self)


def images_tensor(images):
    """uint8 digits (N, 28, 28) -> (N, 1, 28, 28) float32, scaled to [0, 1] and standardised with
    MNIST's usual mean and deviation."""
    scaled = np.asarray(images, dtype=np.float32) / 255.0
    return torch.as_tensor((scaled - MNIST_MEAN) / MNIST_STD)[:, None]


def _mac_tensor(space):
    macs = np.array([space.network(indices).macs for indices in space.all_points()], dtype=np.float64)
    return torch.as_tensor(macs.reshape(space.sizes), dtype=torch.float32)


def _contract(tensor, one_hots):
    """The multilinear form of ``tensor`` at ``one_hots`` (one vector per axis): exact at one-hots,
    differentiable in each."""
    for one_hot in one_hots:
        tensor = torch.tensordot(one_hot, tensor, dims=([0], [0]))
    return tensor


class _HardwareTerm:
    """The differentiable hardware term of one method: ``(ce, one_hots) -> loss``."""

    def __init__(self, method, lambda2, space, hardware_space, evaluator, fit_head=None, fit_weight=0.0):
        self.method, self.lambda2 = method, lambda2
        self.fit_head, self.fit_weight = (fit_head, fit_weight) if method == "dance" else (None, 0.0)
        self.space, self.hardware_space, self.evaluator = space, hardware_space, evaluator
        self.macs = _mac_tensor(space)
        self.macs_ref = float(self.macs.median())
        self.extra = None
        if method == "edd":
            self.compute_values = [np.array(dict(hardware_space.parameters)[name], dtype=np.float32)
                                   for name in hardware_space.compute_parameters]
            self.extra = ArchitectureParameters([len(values) for values in self.compute_values])
            self.latency_ref = self.macs_ref / float(np.prod([np.median(v) for v in self.compute_values]))
        if method == "dance":
            self.frozen = evaluator.evaluator()
            function = evaluator.cost_function
            self.cost_ref = float(function(*function.reference))

    def loss(self, ce, one_hots, factor, tau):
        scale = self.lambda2 * factor
        if self.method == "baseline":
            return ce
        if self.method == "flops":
            return ce + scale * _contract(self.macs, one_hots) / self.macs_ref
        if self.method == "edd":
            compute_hots, _ = self.extra.sample(tau)
            multipliers = 1.0
            for hot, values in zip(compute_hots, self.compute_values):
                multipliers = multipliers * (hot * torch.as_tensor(values)).sum()
            latency = _contract(self.macs, one_hots) / multipliers
            return self.lambda2 * ce * latency / self.latency_ref
        encoding = torch.cat(one_hots)[None]
        _, costs = self.frozen(encoding)
        function = self.evaluator.cost_function
        loss = ce + scale * function(costs[0, 0], costs[0, 1], costs[0, 2]) / self.cost_ref
        if self.fit_head is not None and self.fit_weight:
            loss = loss + self.fit_weight * factor * torch.sigmoid(-self.fit_head(encoding))[0]
        return loss


def _batches(count, batch, generator):
    order = torch.randperm(count, generator=generator)
    return [order[start:start + batch] for start in range(0, count, batch)]


def _weight_optimizer(parameters, settings, steps):
    optimizer = torch.optim.SGD(parameters, lr=settings.lr, momentum=0.9, nesterov=True,
                                weight_decay=2 * WEIGHT_DECAY)
    return optimizer, torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, max(steps, 1))


def search(method, data, settings, *, lambda2=1.0, hardware_space=None, evaluator=None, progress=None,
           space=NETWORK_SPACE, fit_head=None, fit_weight=0.0):
    """Run one method's search; returns (chosen indices, architecture probabilities, extra compute
    indices for EDD or None, seconds). ``data``: (train images tensor, train labels tensor); ``fit_head`` and
    ``fit_weight``: DANCE's fit term (``dse.dance.fit_head``; other methods ignore them)."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    torch.manual_seed(settings.seed)
    images, labels = data
    arch_count = int(len(images) * settings.arch_fraction)
    weight_images, weight_labels = images[arch_count:], labels[arch_count:]
    arch_images, arch_labels = images[:arch_count], labels[:arch_count]
    supernet = SuperNet(space)
    arch = ArchitectureParameters(space.sizes)
    term = _HardwareTerm(method, lambda2, space, hardware_space, evaluator, fit_head, fit_weight)
    arch_parameters = list(arch.parameters()) + (list(term.extra.parameters()) if term.extra else [])
    steps_per_epoch = -(-len(weight_images) // settings.batch)
    optimizer, schedule = _weight_optimizer(supernet.parameters(), settings, settings.search_epochs * steps_per_epoch)
    arch_optimizer = torch.optim.Adam(arch_parameters, lr=settings.arch_lr, betas=(0.5, 0.999))
    shuffle = torch.Generator().manual_seed(settings.seed)
    start = time.perf_counter()
    total_steps = settings.search_epochs * steps_per_epoch
    step = 0
    for epoch in range(settings.search_epochs):
        factor = WARMUP_FACTOR if epoch < settings.warmup_epochs else 1.0
        arch_batches = iter(_batches(len(arch_images), settings.batch, shuffle))
        for index in _batches(len(weight_images), settings.batch, shuffle):
            tau = settings.tau_start + (settings.tau_end - settings.tau_start) * step / max(total_steps - 1, 1)
            with torch.no_grad():
                _, indices = arch.sample(tau)
            logits = supernet(weight_images[index], indices)
            loss = functional.cross_entropy(logits, weight_labels[index], label_smoothing=LABEL_SMOOTHING)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if step % settings.arch_every == 0:
                arch_index = next(arch_batches, None)
                if arch_index is None:
                    arch_batches = iter(_batches(len(arch_images), settings.batch, shuffle))
                    arch_index = next(arch_batches)
                one_hots, indices = arch.sample(tau)
                gates = [hot[i] for hot, i in zip(one_hots, indices)]
                logits = supernet(arch_images[arch_index], indices, gates)
                ce = functional.cross_entropy(logits, arch_labels[arch_index], label_smoothing=LABEL_SMOOTHING)
                arch_loss = term.loss(ce, one_hots, factor, tau)
                arch_optimizer.zero_grad()
                supernet.zero_grad()
                arch_loss.backward()
                arch_optimizer.step()
            if progress:
                progress()
    extra = term.extra.best() if term.extra else None
    return arch.best(), arch.probabilities(), extra, time.perf_counter() - start


def retrain(network, data, test, settings, *, progress=None):
    """Train ``network`` from scratch; returns (test accuracy, model, seconds)."""
    torch.manual_seed(settings.seed)
    images, labels = data
    model = Candidate(network)
    steps = settings.retrain_epochs * -(-len(images) // settings.batch)
    optimizer, schedule = _weight_optimizer(model.parameters(), settings, steps)
    shuffle = torch.Generator().manual_seed(settings.seed + 1)
    start = time.perf_counter()
    model.train()
    for _ in range(settings.retrain_epochs):
        for index in _batches(len(images), settings.batch, shuffle):
            loss = functional.cross_entropy(model(images[index]), labels[index], label_smoothing=LABEL_SMOOTHING)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            if progress:
                progress()
    seconds = time.perf_counter() - start
    return accuracy(model, *test), model, seconds


@torch.no_grad()
def accuracy(model, images, labels, batch=1000):
    model.eval()
    correct = sum(int((model(images[start:start + batch]).argmax(dim=1) == labels[start:start + batch]).sum())
                  for start in range(0, len(images), batch))
    return correct / len(images)


def probable_networks(probabilities, space=NETWORK_SPACE):
    """The networks of ``space`` (index rows) in decreasing probability under the independent per-choice
    ``probabilities`` (the architecture parameters' softmax), ties in the space's order."""
    points = space.all_points()
    log_probability = sum(np.log(np.maximum(np.asarray(row, dtype=np.float64), 1e-300))[points[:, axis]]
                          for axis, row in enumerate(probabilities))
    return points[np.argsort(-log_probability, kind="stable")]


def fitting_answer(indices, probabilities, hardware_space, cost_function, *, fixed=None, space=NETWORK_SPACE,
                   limit=FALLBACK_CANDIDATES):
    """The answer of a search that chose ``indices``: ``(indices, hardware points (1, parameters), costs (1, 3),
    networks checked)``. ``indices`` if its network fits a point of ``hardware_space`` (among those matching
    ``fixed``); else the first network of ``probable_networks`` that does, at most ``limit`` networks checked in
    all; if none does, ``indices`` with its (infinite) costs."""
    first = hardware_space.best_hardware([space.network(indices)], cost_function, fixed=fixed)
    if np.isfinite(first[1]).all():
        return list(indices), *first, 1
    checked = 1
    for candidate in probable_networks(probabilities, space):
        if checked >= limit:
            break
        if list(candidate) == list(indices):
            continue
        checked += 1
        points, costs = hardware_space.best_hardware([space.network(candidate)], cost_function, fixed=fixed)
        if np.isfinite(costs).all():
            return [int(i) for i in candidate], points, costs, checked
    return list(indices), *first, checked


def run_method(method, data, test, settings, hardware_space, evaluator, cost_function, *, lambda2=1.0,
               progress=None, space=NETWORK_SPACE, fit_head=None, fit_weight=0.0):
    """Search, one exact hardware generation (of a network that fits, ``fitting_answer``), retraining; a
    ``SearchResult``."""
    chosen, probabilities, extra, search_s = search(method, data, settings, lambda2=lambda2,
                                                    hardware_space=hardware_space, evaluator=evaluator,
                                                    progress=progress, space=space, fit_head=fit_head,
                                                    fit_weight=fit_weight)
    fixed = dict(zip(hardware_space.compute_parameters, extra)) if extra is not None else None
    indices, points, costs, checked = fitting_answer(chosen, probabilities, hardware_space, cost_function,
                                                     fixed=fixed, space=space)
    network = space.network(indices)
    test_accuracy, _, retrain_s = retrain(network, data, test, settings, progress=progress)
    fits = bool(np.isfinite(costs[0]).all())
    latency, energy, area = (float(v) for v in costs[0]) if fits else (None, None, None)
    return SearchResult(method=method, cost=cost_function.name, lambda2=lambda2, indices=[int(i) for i in indices],
                        network=network.describe(),
                        hardware=hardware_space.describe(points[0]) if fits else "fits no point of the space",
                        accuracy=test_accuracy, latency_ms=latency, energy_mj=energy, area_mm2=area,
                        edap=latency * energy * area if fits else None, macs=int(network.macs), search_s=search_s,
                        retrain_s=retrain_s,
                        architecture_probabilities=[[float(p) for p in row] for row in probabilities],
                        hardware_point=[int(i) for i in points[0]] if fits else [], area_unit=hardware_space.area_unit,
                        seed=settings.seed, fits=fits,
                        first_choice=space.network(chosen).describe() if list(indices) != list(chosen) else "",
                        candidates_checked=checked)
