"""DANCE's cost network without feature forwarding (patent Table 1's first cost row): ``BestPointCostEstimator``.

It reads a network alone (``training.without_forwarding_inputs``: its one-hots, its layer sizes and, where it does
not fit every point, which points it fits) and gives latency, energy and area on the network's best hardware point;
nothing of a point is forwarded into it. A 5-layer MLP like ``evaluator.CostEstimator`` (input layer, three
residual layers ``x + ReLU(BN(W x))``, width 256), with four heads on the last layer:

- area: logits over ``AREA_BINS`` bins of log area (``LogBins``) spanning the training networks' best-point areas,
  trained with cross entropy against the true log area spread over the bins by a Gaussian of ``AREA_BIN_SPREAD``
  bins (a histogram-loss target), and read as the bin of least expected relative error under the predicted
  distribution (``LogBins.least_relative_error``). The area of a network's best point takes only the areas of the
  space's points and jumps with the point: alike networks have their best points on accelerators of one, two or
  three module counts, a factor of two or three apart in area. A regression output lands between such modes, where
  it is wrong for both; the distribution keeps them apart and the readout takes the one that costs least relative
  error (issue 27: on a validation split of the training networks, area accuracy 90.6 -> 93.7 % on the RTL family
  under EDAP; docs/dance.md);
- latency: an MLP (two hidden layers of ``LATENCY_WIDTH``) reading the last layer and the log area of the best
  point: the true one in training, the network's own area readout at use. The area says which accelerator the
  best point is (how many modules, how wide), and the latency follows from it; a latency read from the last layer
  alone lands between the accelerators alike networks choose (issue 27: RTL family, EDAP, validation split,
  latency 91.8 -> 93.1 %; docs/dance.md);
- energy: the logarithm from one linear layer;
- latency and energy are relative to the training set's geometric mean, ``exp``'d, trained on the mean absolute
  relative error (``evaluator.mare``, what Table 1 measures; one epoch of squared log error first);
- hardware: per hardware parameter logits over its values, trained towards the generator's targets (the share of
  each value among the network's near-optimal points): the layers learn where a network's best point lies, which
  decides its costs there. A training target only: no cost reads it.

``ensemble_costs`` reads several members (consecutive seeds) as one: the area read from the mean of their area
distributions, then each member's latency given that area; the geometric mean of their latencies and energies.
"""

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from nnaccel.dse.dance.evaluator import COST_WIDTH, cost_layers

AREA_BINS = 512
AREA_BIN_SPREAD = 6.0       # the target Gaussian's standard deviation, in bins
BIN_MARGIN = 0.2            # in log area, below the least and above the largest training area
LATENCY_WIDTH = 256         # the latency head's hidden layers


class LogBins:
    """``count`` bins of equal width in the logarithm of a cost, centres from ``low`` to ``high``."""

    def __init__(self, low, high, count=AREA_BINS, spread=AREA_BIN_SPREAD):
        if not high > low:
            raise ValueError(f"log bins need high > low, not {low} .. {high}")
        self.centres = torch.linspace(float(low), float(high), count, dtype=torch.float64)
        self.width = (float(high) - float(low)) / (count - 1)
        self.spread = spread

    @classmethod
    def around(cls, log_values, **options):
        """Bins over ``log_values`` (the training targets) with ``BIN_MARGIN`` either side."""
        return cls(np.min(log_values) - BIN_MARGIN, np.max(log_values) + BIN_MARGIN, **options)

    def targets(self, log_values):
        """(N,) log values -> (N, bins) each value's Gaussian (standard deviation ``spread`` bins) integrated over
        the bins, normalised."""
        edges = torch.cat([self.centres - self.width / 2, self.centres[-1:] + self.width / 2])
        below = torch.special.ndtr((edges - torch.as_tensor(log_values, dtype=torch.float64)[:, None])
                                   / (self.spread * self.width))
        mass = below[:, 1:] - below[:, :-1]
        return (mass / mass.sum(dim=1, keepdim=True)).float()

    def least_relative_error(self, probabilities):
        """(N, bins) distributions -> (N,) the log of the centre ``c`` that minimises the expected relative error
        ``sum_k p_k |exp(c - c_k) - 1|``. The expectation is convex and piecewise linear in ``exp(c)`` with its
        kinks at the centres, so its least over the centres is its least over every value."""
        relative = (torch.exp(self.centres[:, None] - self.centres[None, :]) - 1).abs()      # (candidate, bin)
        expected = torch.as_tensor(probabilities, dtype=torch.float64) @ relative.T          # (N, candidate)
        return self.centres[expected.argmin(dim=1)]


class BestPointCostEstimator(nn.Module):
    """(N, inputs) a network's features -> (N, 3) latency ms, energy mJ, area on its best point (module docstring).
    ``log_mean``: the training targets' mean log latency, energy and area; ``area_bins``: ``LogBins`` over the
    training areas; ``hardware_sizes``: a value count per hardware parameter."""

    def __init__(self, inputs, log_mean, area_bins, hardware_sizes, width=COST_WIDTH):
        super().__init__()
        self.stem, self.body = cost_layers(inputs, width)
        self.energy = nn.Linear(width, 1)
        self.latency = nn.Sequential(nn.Linear(width + 1, LATENCY_WIDTH), nn.ReLU(),
                                     nn.Linear(LATENCY_WIDTH, LATENCY_WIDTH), nn.ReLU(), nn.Linear(LATENCY_WIDTH, 1))
        self.area = nn.Linear(width, len(area_bins.centres))
        self.hardware_sizes = tuple(hardware_sizes)
        self.hardware = nn.Linear(width, sum(self.hardware_sizes))
        self.area_bins = area_bins
        self.register_buffer("log_mean", torch.as_tensor(np.asarray(log_mean), dtype=torch.float32))

    def hidden(self, features):
        """The last layer (N, width) the heads read."""
        return self.body(self.stem(features))

    def latency_energy(self, hidden, log_area):
        """(N, 2) log latency and energy given the last layer and the best point's log area (N,)."""
        area = (torch.as_tensor(log_area, dtype=torch.float32) - self.log_mean[2])[:, None]
        return torch.cat([self.latency(torch.cat([hidden, area], dim=1)), self.energy(hidden)], dim=1) \
            + self.log_mean[:2]

    def outputs(self, features, log_area):
        """(log latency and energy (N, 2) given ``log_area``, area logits (N, bins), per hardware parameter logits
        (N, values))."""
        hidden = self.hidden(features)
        return (self.latency_energy(hidden, log_area), self.area(hidden),
                torch.split(self.hardware(hidden), self.hardware_sizes, dim=1))

    def forward(self, features):
        return ensemble_costs([self], features)


def ensemble_costs(members, features):
    """(N, 3) costs of ``members`` (``BestPointCostEstimator``s over the same bins) read as one: the area of least
    expected relative error under their mean distribution; the geometric mean of their latencies (given that
    area) and energies."""
    hidden = [member.hidden(features) for member in members]
    area_probabilities = torch.stack([functional.softmax(member.area(layer), dim=1)
                                      for member, layer in zip(members, hidden)]).mean(dim=0)
    log_area = members[0].area_bins.least_relative_error(area_probabilities)
    log_latency_energy = torch.stack([member.latency_energy(layer, log_area) for member, layer in zip(members, hidden)])
    return torch.cat([torch.exp(log_latency_energy.mean(dim=0)), torch.exp(log_area).float()[:, None]], dim=1)
