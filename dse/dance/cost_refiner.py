"""A second look at the cost network's cheapest points: ``CostRefiner``.

The cost network with forwarding (``unit_cost``) is right to 0.1-0.3 % on a network's near-optimal points, and the
points a search over it has to tell apart are often closer than that: two values of one parameter (the template's
PE_x, the RTL family's multiplier latency) that cost within 0.01-0.3 % of each other, where one trades latency for
area. The search then picks either (``cost_argmin``), and the cost it predicts on its pick carries the pick's error.

``CostRefiner`` wraps a trained cost network and adds a learned correction to its log latency, energy and area: an
MLP (three hidden layers, width ``WIDTH``, ReLU) reads what the cost network reads (network one-hots, hardware
one-hots) and the cost network's own log costs there (less their mean), and gives the correction in hundredths;
``members`` such MLPs, each trained alone from its own seed, read as one by the mean of their corrections (on the
near-ties the refiner settles, one MLP's error from its seed is as large as the difference it has to find, and the
mean of three narrows it: docs/dance.md, "Three refiners read as one").
It is trained (``training_points``, ``train_refiner``) where it is used: on the training networks' ``candidates``
cheapest fitting points under every cost function, *as the cost network ranks them* (so it learns the cost network's
errors on the points a search over it lands on), against the labels, mean squared error of the log. The cost network stays
frozen, so the refiner learns only what it gets wrong there. A held-out network is read only to measure.

Read as a cost network (``forward`` / ``log_costs``, the same inputs and outputs) it is what the evaluator
forwards into; ``cost_argmin.CostArgminGenerator`` over it searches every point on the cost network and then
ranks the ``candidates`` cheapest by the refined costs (``candidate_log_costs``): off the near-optimal points the
refiner has seen nothing, so it decides only among them.
"""

import hashlib

import numpy as np
import torch
from torch import nn

from nnaccel.dse.dance import evaluator as ev

WIDTH = 256
HIDDEN_LAYERS = 3
SCALE = 100.0           # the correction's output unit: a hundredth of the log (about 1 %)
CANDIDATES = 8          # cheapest points per network and cost function it is trained on and ranks
EPOCHS = 80
MEMBERS = 3             # MLPs read as one (the mean of their corrections)
NETWORKS_PER_CHUNK = 8  # networks costed on every point at once while the training points are found


class CostRefiner(nn.Module):
    """(network one-hots, hardware one-hots) (N, inputs) -> (N, 3) latency, energy, area: ``base``'s costs times
    the learned correction's ``exp`` (module docstring). ``base``: the frozen cost network; ``log_mean``: its mean
    log costs over the training points (the correction reads its log costs less these); ``candidates``: how many
    of a network's cheapest points the search ranks by the refined costs; ``members``: how many MLPs the
    correction is the mean of (``corrections``)."""

    def __init__(self, base, log_mean, candidates=CANDIDATES, width=WIDTH, members=MEMBERS):
        super().__init__()
        self.base, self.candidates, self.width = base, int(candidates), int(width)
        self.network_width, self.hardware_width = base.network_width, base.hardware_width
        self.register_buffer("log_mean", torch.as_tensor(np.asarray(log_mean), dtype=torch.float32))
        self.corrections = nn.ModuleList(self._mlp() for _ in range(int(members)))

    def _mlp(self):
        layers = [nn.Linear(self.network_width + self.hardware_width + 3, self.width), nn.ReLU()]
        for _ in range(HIDDEN_LAYERS - 1):
            layers += [nn.Linear(self.width, self.width), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(self.width, 3))

    def inputs(self, features, base_log_costs):
        """What the correction reads: ``features`` and ``base``'s log costs there less their training mean."""
        return torch.cat([features, base_log_costs - self.log_mean], dim=1)

    def refine(self, features, base_log_costs):
        """(N, 3) the refined log costs of ``features`` from ``base``'s log costs there."""
        inputs = self.inputs(features, base_log_costs)
        correction = torch.stack([member(inputs) for member in self.corrections]).mean(dim=0)
        return base_log_costs + correction / SCALE

    def log_costs(self, features):
        return self.refine(features, self.base.log_costs(features))

    def forward(self, features):
        return torch.exp(self.log_costs(features))

    def state(self):
        """What ``from_state`` needs besides the base network, and which base network it was trained over."""
        return {"candidates": self.candidates, "width": self.width, "members": len(self.corrections),
                "base": base_digest(self.base), "state": {
            name: value for name, value in self.state_dict().items() if not name.startswith("base.")}}

    @classmethod
    def from_state(cls, base, data):
        """The refiner ``state()`` gave, over ``base``; a ValueError if it was trained over another cost network
        (a refiner corrects one network's errors, not another's)."""
        absent = {"candidates", "width", "members", "base", "state"} - set(data)
        if absent:
            raise ValueError(f"not a refiner's state: no {', '.join(sorted(absent))}")
        if data["base"] != base_digest(base):
            raise ValueError("it was trained over another cost network (train it again: train_evaluator --refiner)")
        refiner = cls(base, np.zeros(3), data["candidates"], data["width"], data["members"])
        missing, unexpected = refiner.load_state_dict(data["state"], strict=False)    # the base is not in it
        if unexpected or any(not name.startswith("base.") for name in missing):
            raise ValueError(f"not a refiner's state: missing {missing}, unexpected {unexpected}")
        return refiner


def base_digest(base):
    """SHA-256 (16 hex digits) of a cost network's weights and buffers: which network a refiner corrects."""
    digest = hashlib.sha256()
    for name, value in base.state_dict().items():
        digest.update(name.encode())
        digest.update(value.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def cheapest_points(log_costs, count):
    """(N, count) per row of ``log_costs`` (N, points; ``inf`` where a network does not fit) its ``count`` least
    entries' columns, least first."""
    nearest = torch.topk(log_costs, min(count, log_costs.shape[1]), dim=1, largest=False, sorted=True)
    return nearest.indices


def training_points(table, base, networks, cost_functions, candidates, *, progress=None):
    """(networks, points) flat indices: each of ``networks`` on its ``candidates`` cheapest fitting points under
    each of ``cost_functions`` as ``base`` predicts them, every such pair once; ``progress()`` after each chunk of
    networks (the cost network on every point of the space: the long part)."""
    network_space, hardware_space = table.network_space, table.hardware_space
    hardware = torch.as_tensor(hardware_space.encode(hardware_space.all_points()), dtype=torch.float32)
    encodings = torch.as_tensor(network_space.encode(network_space.all_points()[networks]), dtype=torch.float32)
    fits = torch.as_tensor(table.fits[networks])
    pairs = []
    for start in range(0, len(networks), NETWORKS_PER_CHUNK):
        chunk = encodings[start:start + NETWORKS_PER_CHUNK]
        count, points = len(chunk), len(hardware)
        with torch.no_grad():
            costs = base(ev.on_every_point(chunk, hardware)).double().reshape(count, points, 3)
        unfit = ~fits[start:start + count]
        for function in cost_functions:
            values = torch.log(function(costs[..., 0], costs[..., 1], costs[..., 2])).masked_fill(unfit, np.inf)
            chosen = cheapest_points(values, candidates)
            chosen_fit = torch.gather(~unfit, 1, chosen)
            rows = torch.arange(start, start + count)[:, None].expand_as(chosen)
            pairs.append(torch.stack([rows[chosen_fit], chosen[chosen_fit]], dim=1))
        if progress:
            progress()
    pairs = np.unique(torch.cat(pairs).numpy(), axis=0)
    return np.asarray(networks)[pairs[:, 0]], pairs[:, 1]


def train_refiner(table, base, pair_networks, pair_points, *, candidates=CANDIDATES, epochs=EPOCHS,
                  members=MEMBERS, seed=0, progress=None):
    """A frozen ``CostRefiner`` of ``base`` (a frozen cost network) trained on the (network, point) pairs (flat
    indices; ``training_points``: the training networks' cheapest points): its ``members`` MLPs each alone, from
    seeds ``seed``, ``seed + 1``, ...; ``progress()`` after each epoch of each."""
    features = torch.as_tensor(table.features(pair_networks, pair_points), dtype=torch.float32)
    with torch.no_grad():
        base_log = base.log_costs(features)
    targets = torch.as_tensor(np.log(table.costs(pair_networks, pair_points)), dtype=torch.float32)
    torch.manual_seed(seed)
    refiner = CostRefiner(base, base_log.mean(dim=0).numpy(), candidates, members=members)
    inputs = refiner.inputs(features, base_log)
    residual = (targets - base_log) * SCALE
    for number, member in enumerate(refiner.corrections):
        def loss(index, epoch, member=member):
            return ((member(inputs[index]) - residual[index]) ** 2).sum(dim=1).mean()

        ev.fit(member, len(features), loss, epochs=epochs, batch=512, lr=1e-3, seed=seed + number,
               progress=progress)
    return ev.freeze(refiner)
