"""DANCE's hardware generation by search over the cost network: ``CostArgminGenerator``.

The patent's generator is a classifier (``evaluator.HardwareGenerator``) that learns each training network's best
point. This one learns nothing of its own: it reads the frozen cost network with forwarding
(``unit_cost.UnitSumCostEstimator``) on every point of the hardware space and takes the point of least predicted
cost under the cost function, the exhaustive search run on the evaluator's costs instead of the ground truth. Where
the cost network is exact on a network's units, so is the answer; where two points cost within the cost network's
error of each other it may pick either.

It reads and returns what a generator does (``evaluator.OneHotGenerator``): per hardware parameter, logits over
its values, the value's best predicted cost ``-log(cost) / temperature`` (the cost of the cheapest point with that
value), so each head's argmax is the argmin point's value, and ``one_hot`` gives the straight-through one-hots the
co-search forwards. The gradient reaches the network encoding through the cost network (the envelope of the
minimum); the argmin itself is piecewise constant.

The search runs over the points the network fits (``FitMask``: the hardware space's own check, the compiler's
allocation of RAM words, weight words and descriptors, which reads no cost). On the RTL family the cheapest
predicted points are those of the smallest RAMs, which most networks do not fit: without the mask the answer was an
unfit point for 61-80 % of the held-out networks.

Over a refined cost network (``cost_refiner.CostRefiner``) the search is in two steps: the cost network under the
refiner costs every point, and its ``candidates`` cheapest fitting points are ranked by the refined costs; every other
point is raised to just above the dearest candidate, so the refiner, which learned only such points, decides among
them alone and the logits keep their gradient.
"""

import numpy as np
import torch

from nnaccel.dse.dance.cost_refiner import CostRefiner, cheapest_points
from nnaccel.dse.dance.evaluator import OneHotGenerator, on_every_point

TEMPERATURE = 0.01          # logits in units of 1 % of the cost
NETWORKS_PER_CHUNK = 8      # networks costed on every point at once (memory: chunk x points x units rows)
CANDIDATE_MARGIN = 1e-4     # over a refiner, how far (in log cost) the other points stay above the candidates


class FitMask:
    """Network encodings (N, width) -> (N, points) bool: where each network fits a point of ``hardware_space``
    (``network_fits``), one row per network kept; a network that fits no point gets every point (its answer has no
    cost wherever it lands)."""

    def __init__(self, hardware_space, network_space):
        self.hardware_space, self.network_space = hardware_space, network_space
        self.rows = {}

    def __call__(self, encoding):
        points = [tuple(int(i) for i in row) for row in self.network_space.decode(encoding)]
        missing = [point for point in dict.fromkeys(points) if point not in self.rows]
        if missing:
            fits = self.hardware_space.network_fits([self.network_space.network(point) for point in missing])
            for point, row in zip(missing, fits):
                self.rows[point] = torch.as_tensor(row if row.any() else np.ones_like(row))
        return torch.stack([self.rows[point] for point in points])


class CostArgminGenerator(OneHotGenerator):
    """Network encoding (N, network one-hot width) -> per-parameter logits (module docstring). ``cost``: the frozen
    cost network; ``hardware_space``: its grid (``encode``, ``all_points``, ``sizes``, ``network_fits``);
    ``cost_function``: what the least cost is of; ``network_space``: what the encodings encode."""

    def __init__(self, cost, hardware_space, cost_function, network_space, temperature=TEMPERATURE):
        super().__init__()
        self.cost, self.cost_function, self.temperature = cost, cost_function, temperature
        self.fits = FitMask(hardware_space, network_space)
        self.sizes, self.inputs = tuple(hardware_space.sizes), cost.network_width
        points = hardware_space.all_points()
        self.register_buffer("hardware", torch.as_tensor(hardware_space.encode(points), dtype=torch.float32))
        # per parameter, (values, points): 1 where a point has the value
        self.value_masks = [torch.as_tensor(np.eye(size, dtype=bool)[:, points[:, column]])
                            for column, size in enumerate(self.sizes)]

    def log_costs(self, encoding):
        """(N, points) the log of the cost function on every point, as the cost network predicts it; ``inf`` where
        the network does not fit. Over a ``CostRefiner`` the cost network's cheapest ``candidates`` fitting points
        get the refined costs."""
        fits = self.fits(encoding.detach().numpy())
        rows = []
        for start in range(0, len(encoding), NETWORKS_PER_CHUNK):
            chunk = encoding[start:start + NETWORKS_PER_CHUNK]
            count, points = len(chunk), len(self.hardware)
            features = on_every_point(chunk, self.hardware)
            if isinstance(self.cost, CostRefiner):
                rows.append(self._refined(features.reshape(count, points, -1), fits[start:start + count]))
            else:
                costs = self.cost(features)
                rows.append(torch.log(self.cost_function(costs[:, 0], costs[:, 1], costs[:, 2])).reshape(count, points))
        return torch.cat(rows).masked_fill(~fits, float("inf"))

    def _log_cost_function(self, log_costs):
        return torch.log(self.cost_function(*torch.exp(log_costs).unbind(dim=-1)))

    def _refined(self, features, fits):
        """(count, points) the cost function's log on every point of each network (``features``: (count, points,
        inputs)): the base cost network's, but on its ``candidates`` cheapest fitting points the refiner's."""
        count, points, inputs = features.shape
        base = self.cost.base.log_costs(features.reshape(count * points, inputs)).reshape(count, points, 3)
        values = self._log_cost_function(base)
        fitting = values.detach().masked_fill(~fits, float("inf"))
        chosen = cheapest_points(fitting, self.cost.candidates)
        rows = torch.arange(count)[:, None].expand_as(chosen)
        refined = self.cost.refine(features[rows, chosen].reshape(-1, inputs), base[rows, chosen].reshape(-1, 3))
        ranked = self._log_cost_function(refined).reshape(chosen.shape)
        # every other point is raised above the dearest candidate: the refiner decides among the candidates only
        dearest = ranked.detach().masked_fill(~torch.gather(fits, 1, chosen), -float("inf")).max(dim=1).values
        others = fitting.index_put((rows, chosen), torch.tensor(float("inf")))
        raise_by = (dearest - others.min(dim=1).values + CANDIDATE_MARGIN).clamp(min=0)
        return (values + raise_by[:, None]).index_put((rows, chosen), ranked)

    def forward(self, encoding):
        log_costs = self.log_costs(encoding)
        return [-torch.stack([log_costs[:, mask].min(dim=1).values for mask in masks], dim=1) / self.temperature
                for masks in self.value_masks]
