"""DANCE's cost-estimation network shaped like the cost: a network's latency and energy are sums over its cost
units (the template's layers, the RTL family's layer contexts) and its area is the hardware point's alone.

``UnitSumCostEstimator`` reads what ``CostEstimator`` reads, (network one-hots, hardware one-hots) (N, inputs), and
returns (N, 3) latency ms, energy mJ, area:

- one *unit network*, shared by the network's unit positions (``NETWORK_UNITS``): the position's one-hot, the
  network one-hots of the choices that shape that position's unit (``unit_masks``: every other choice is zeroed, so
  a held-out network's conv1 is the conv1 of every training network with the same conv1 choices) and the hardware
  one-hots -> the unit's log latency and log energy; a 4-layer MLP (input layer, residual layers
  ``x + ReLU(BN(W x))``, output layer) of width ``width``;
- a unit absent from a network (the hidden dense layer of a network without one) is gated off: its gate is 1 minus
  the network one-hots of the choice values that leave it out (``absent_columns``);
- latency and energy the gated sums of the units' exponentials; area an *area network* (the same shape) on the
  hardware one-hots alone.

``unit_structure(unit_ids, network_space)`` finds the masks and the absent columns from the labelled space: a choice
shapes a position's unit if two networks that differ only in that choice have different units there (the network
space is a full grid of choices, so the unit is then a function of the masked choices alone).
Forwarding as in the patent: the generator's one-hots go in as the hardware one-hots.

Two ways to train it (``training.EvaluatorSettings.cost_targets``): on network totals, the patent's cases
(``evaluator.train_cost``), or, on a space whose costs add up over its units (``costs_add_up_over_units``), on
*unit targets* (``train_on_units``): the unit network on what each distinct unit of the training networks adds on
every point (``unit_cases``, the space's ``unit_latency_energy``), the area network on every point's area. The
unit targets are the labels the totals are summed from, so nothing a held-out network has is read.

``CostEnsemble``: several such networks trained alike from consecutive seeds (``training.EvaluatorSettings.
cost_members``), read as one: the geometric mean of their costs. Where one network is off by its own error on a
point, the others mostly are not, so the mean's error is smaller; the search over the cost network
(``cost_argmin``) then tells near-optima apart more often.
"""

import numpy as np
import torch
from torch import nn

from nnaccel.dse.dance.evaluator import ResidualLayer, fit

WIDTH = 128
RESIDUAL_LAYERS = 2
AREA_EPOCHS = 6000      # the area network's epochs on the space's points (4,335 or 5,832 cases: 3-5 minutes in all)


def _mlp(inputs, outputs, width):
    return nn.Sequential(nn.Linear(inputs, width), nn.BatchNorm1d(width), nn.ReLU(),
                         *(ResidualLayer(width, True) for _ in range(RESIDUAL_LAYERS)), nn.Linear(width, outputs))


class UnitSumCostEstimator(nn.Module):
    """(network one-hots, hardware one-hots) (N, inputs) -> (N, 3) latency, energy, area (module docstring).
    ``unit_masks`` and ``absent_columns``: (units, network one-hot width) 0/1 arrays (``unit_structure``);
    ``log_mean``: the training costs' mean logarithms (latency, energy, area)."""

    def __init__(self, network_width, hardware_width, unit_masks, absent_columns, log_mean, width=WIDTH):
        super().__init__()
        self.network_width, self.hardware_width, self.width = int(network_width), int(hardware_width), int(width)
        self.inputs = self.network_width + self.hardware_width
        self.register_buffer("unit_masks", torch.as_tensor(np.asarray(unit_masks), dtype=torch.float32))
        self.register_buffer("absent_columns", torch.as_tensor(np.asarray(absent_columns), dtype=torch.float32))
        self.register_buffer("log_mean", torch.as_tensor(np.asarray(log_mean), dtype=torch.float32))
        self.units = len(self.unit_masks)
        self.unit_network = _mlp(self.units + self.inputs, 2, width)
        self.area_network = _mlp(self.hardware_width, 1, width)

    def unit_costs(self, features):
        """(N, units, 2) latency and energy of each unit position, before the gates; each starts at its share of
        the training set's geometric mean."""
        count = len(features)
        network, hardware = features[:, :self.network_width], features[:, self.network_width:]
        positions = torch.eye(self.units, dtype=features.dtype).expand(count, -1, -1)
        rows = torch.cat([positions, network[:, None, :] * self.unit_masks,
                          hardware[:, None, :].expand(-1, self.units, -1)], dim=2)
        logs = self.unit_network(rows.reshape(count * self.units, -1)).reshape(count, self.units, 2)
        return torch.exp(logs + self.log_mean[:2] - float(np.log(self.units)))

    def forward(self, features):
        gates = 1 - features[:, :self.network_width] @ self.absent_columns.T
        sums = (self.unit_costs(features) * gates[..., None]).sum(dim=1)
        area = torch.exp(self.area_network(features[:, self.network_width:]) + self.log_mean[2])
        return torch.cat([sums, area], dim=1)

    def log_costs(self, features):
        return torch.log(self(features))


class CostEnsemble(nn.Module):
    """``members`` (``UnitSumCostEstimator`` of the same widths) as one cost network: (N, inputs) -> (N, 3), the
    geometric mean of the members' latency, energy and area."""

    def __init__(self, members):
        super().__init__()
        self.members = nn.ModuleList(members)
        first = members[0]
        self.network_width, self.hardware_width = first.network_width, first.hardware_width
        self.units, self.width = first.units, first.width

    def forward(self, features):
        return torch.exp(self.log_costs(features))

    def log_costs(self, features):
        return torch.stack([member.log_costs(features) for member in self.members]).mean(dim=0)


def unit_structure(unit_ids, network_space):
    """(unit_masks, absent_columns), each (units, network one-hot width): the one-hot columns of the choices that
    shape each unit position, and those of the choice values for which the position has no unit (``unit_ids``:
    (networks, units) unit indices of ``network_space.all_points()``, -1 where a network has no such unit)."""
    points = network_space.all_points()
    encodings = network_space.encode(points)
    starts = np.concatenate([[0], np.cumsum(network_space.sizes)])
    masks = np.zeros((unit_ids.shape[1], encodings.shape[1]))
    absent = np.zeros_like(masks)
    for position in range(unit_ids.shape[1]):
        present = unit_ids[:, position] >= 0
        for choice in range(len(network_space.sizes)):
            _, group = np.unique(np.delete(points[present], choice, axis=1), axis=0, return_inverse=True)
            pairs = np.unique(np.stack([group.ravel(), unit_ids[present, position]], axis=1), axis=0)
            if len(pairs) > group.max() + 1:      # some group of networks differing only in this choice has 2 units
                masks[position, starts[choice]:starts[choice + 1]] = 1
        for column in range(encodings.shape[1]):
            absent[position, column] = not present[encodings[:, column] == 1].any()
        if not np.array_equal(encodings @ absent[position] > 0, ~present):
            raise ValueError(f"unit position {position}: which networks lack it is not a set of choice values")
    return masks, absent


def unit_cases(table, networks, unit_masks):
    """The distinct cost units of ``networks`` (flat indices of ``table``, a ``labels.LabelTable``) as the unit
    network reads them: (inputs (R, positions + network one-hot width): the position's one-hot and the network
    one-hots of the choices that shape it; unit ids (R,) into ``table``'s columns; last (R,): whether the unit is
    its network's last)."""
    encodings = table.network_space.encode(table.network_space.all_points()[networks])
    ids = table.unit_ids[networks]
    present = ids >= 0
    last_position = present.shape[1] - 1 - np.argmax(present[:, ::-1], axis=1)
    positions = np.eye(present.shape[1])
    cases = {}
    for row, position in zip(*np.nonzero(present)):
        masked = encodings[row] * unit_masks[position]
        entry = (int(ids[row, position]), bool(position == last_position[row]))
        if cases.setdefault((position, masked.tobytes()), (entry, masked))[0] != entry:
            raise ValueError(f"unit position {position}: networks with the same shaping choices have different "
                             "units there")
    inputs = np.array([np.concatenate([positions[position], masked]) for (position, _), (_, masked) in cases.items()])
    entries = np.array([entry for entry, _ in cases.values()])
    return inputs, entries[:, 0], entries[:, 1].astype(bool)


def unit_training_cases(table, networks, unit_masks):
    """What ``train_on_units`` teaches the unit network: the distinct units of ``networks`` as it reads them
    (``unit_cases``' inputs), and the cases, each a unit's row of those inputs and a point (flat index) the unit
    fits, with the unit's log latency and log energy there: (inputs, rows, points, (cases, 2) log targets)."""
    inputs, unit_ids, last = unit_cases(table, networks, unit_masks)
    targets = table.hardware_space.unit_latency_energy({name: column[unit_ids]
                                                        for name, column in table.columns.items()}, last)
    rows, points = np.nonzero((targets > 0).all(axis=-1))     # NaN (the unit does not fit) compares False
    return inputs, rows, points, np.log(targets[rows, points])


def _log_then_relative(log_error, epoch):
    """Per case, the squared log error in the first epoch, the squared relative error (MSRE's terms) after it,
    summed over the outputs (``log_error``: (N, outputs) predicted minus true logarithms)."""
    return (log_error ** 2 if epoch == 0 else (1 - torch.exp(log_error)) ** 2).sum(dim=1)


def train_on_units(cost, table, networks, *, epochs, area_epochs=AREA_EPOCHS, batch=1024, lr=2e-3, seed=0,
                   progress=None, checkpoint=None):
    """Train ``cost`` (a ``UnitSumCostEstimator``) on unit targets (module docstring): the unit network on every
    (distinct unit of ``networks``, point) case the unit fits, first epoch squared log error, then MSRE; then the
    area network on every point's area. ``checkpoint`` as in ``evaluator.fit`` (the unit network's training).
    Returns how many (unit, point) cases the unit network learned."""
    space = table.hardware_space
    if not space.costs_add_up_over_units:
        raise ValueError(f"the {space.name} space's costs do not add up over its units: train on network totals")
    inputs, rows, points, log_targets = unit_training_cases(table, networks, cost.unit_masks.numpy())
    hardware = torch.as_tensor(space.encode(space.all_points()), dtype=torch.float32)
    inputs = torch.as_tensor(inputs, dtype=torch.float32)
    log_targets = torch.as_tensor(log_targets, dtype=torch.float32)
    rows, points = torch.as_tensor(rows), torch.as_tensor(points)
    offset = cost.log_mean[:2] - float(np.log(cost.units))

    def unit_loss(index, epoch):
        logs = cost.unit_network(torch.cat([inputs[rows[index]], hardware[points[index]]], dim=1)) + offset
        return _log_then_relative(logs - log_targets[index], epoch).mean()

    fit(cost.unit_network, len(rows), unit_loss, epochs=epochs, batch=batch, lr=lr, seed=seed, progress=progress,
        checkpoint=checkpoint)
    log_area = torch.as_tensor(np.log(space.area()), dtype=torch.float32)[:, None]

    def area_loss(index, epoch):
        return _log_then_relative(cost.area_network(hardware[index]) + cost.log_mean[2] - log_area[index],
                                  epoch).mean()

    fit(cost.area_network, len(hardware), area_loss, epochs=area_epochs, batch=256, lr=lr, seed=seed)
    _batch_norm_over(cost.area_network, hardware)
    cost.eval()
    return len(rows)


def _batch_norm_over(network, inputs):
    """Set ``network``'s batch-norm statistics to those of all ``inputs`` (one pass, no step): the area network
    fits a fixed set of points, and the running statistics of its last batches, which it would keep otherwise,
    double its error (RTL family: mean |relative error| 0.08-0.13 % with them, 0.05 % with the whole set's)."""
    layers = [module for module in network.modules() if isinstance(module, nn.BatchNorm1d)]
    momenta = [layer.momentum for layer in layers]
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None       # a cumulative average: one pass gives the whole set's statistics
    network.train()
    with torch.no_grad():
        network(inputs)
    for layer, momentum in zip(layers, momenta):
        layer.momentum = momentum
    network.eval()
