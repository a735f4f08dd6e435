"""A predictor of the external-weight space (``dse.rtl.stream_space.StreamSpace``) trained once on other networks
and reused on the network searched (transfer), and DCP with it (its whole budget searching).

:class:`TransferPredictor` sees a network mapping layer by layer: per layer the layer's shape and its choice's
attributes, as closed-form quantities of the configuration and the memory (:func:`choice_features`: log2 of the
channel tiles, position groups, passes, product cycles, weight words and bytes loaded, the cycles the memory needs
for them at its sustained rate, the first tile's load; the choice's tile, blocks, ranges, order, split; dense /
grouped), and the previous layer's choice (its product and load cycles: a layer's first loads overlap the passes
before).  A shared network (a linear term plus a residual MLP) gives per layer and choice pair the natural logs of
its contribution to latency and to energy; a mapping's prediction is the log of their sum over the layers.  Nothing
in it is indexed by a network's layers or choices, so it is trained on the mappings of some networks and used on
another: the relaxed mapping (per layer a softmax over the choices) predicts the sum of every pair's contribution
weighted by the two layers' probabilities, which is the one-hot mapping's own prediction where the softmax is
one-hot, and DCP descends its gradient.

:func:`transfer_rows` costs a network's training mappings (every choice of every layer about equally often, latency
and energy, through the shared cost cache), :func:`train_transfer` fits the predictor on several networks' rows,
:func:`save_transfer` / :func:`load_transfer` keep it in a file with its training networks and their evaluations
(``data/predictor_stream_<network>.pt``: for searching ``<network>``, trained on the others; made by
``benchmarks/dse/train_stream_predictor.py``), :func:`held_out_error` scores
it on mappings of a network it never saw, and :func:`dcp_transfer` is DCP with it.
"""

import copy
import math
from itertools import islice
from pathlib import Path

import numpy as np
import torch

from nnaccel.dse.dcp.predictor import MLPNet
from nnaccel.dse.dcp.stream_search import OBJECTIVES, StreamEvaluator, sample_balanced
from nnaccel.dse.rtl.stream_space import ORDERS
from nnaccel.models.shared.sdram import sustained_read_bytes_per_cycle
from nnaccel.sim.progress import counting

__all__ = ["choice_features", "TransferPredictor", "transfer_rows", "train_transfer", "save_transfer",
           "load_transfer", "predict", "held_out_error", "dcp_transfer", "transfer_path", "FEATURES", "CONTEXT"]

FEATURES = 20       # per layer and choice (:func:`choice_features`)
CONTEXT_COLUMNS = (8, 11, 7)    # the next layer sees these of a choice's features: product cycles, load cycles, passes
CONTEXT = len(CONTEXT_COLUMNS)


def _log2(value):
    return math.log2(max(float(value), 1.0))


def choice_features(space):
    """Per layer of ``space`` a (choices, :data:`FEATURES`) array of its choices' features and a (choices,
    :data:`CONTEXT`) array of what the next layer sees of them, from the layer's shape, the configuration and the
    memory's sustained read rate alone (closed form: nothing is compiled or costed)."""
    config = space.config
    word_bytes = config.weight_word_bits // 8
    rate = sustained_read_bytes_per_cycle(space.timing, port_bits=config.external_bus_bits)
    features, context = [], []
    for index, (layer, choices) in enumerate(zip(space.layers, space.choices)):
        rows = []
        for choice in choices:
            shape = space.choice_shape(index, choice)
            products = int(np.prod(layer.weight_shape[:-1])) if layer.weight_shape else 1
            slots = config.modules // choice.blocks
            groups = -(-shape.positions // slots)
            passes = shape.tiles * choice.segments + (shape.tiles if choice.split > 1 else 0)
            product_cycles = shape.tiles * groups * products / choice.split
            words = shape.tiles * choice.segments * (products + 1)
            load_cycles = words * word_bytes / rate
            first_load = (products + 1) * word_bytes / rate
            rows.append([_log2(products), _log2(layer.weight_shape[-1] if layer.weight_shape else 1),
                         _log2(shape.positions), float(shape.dense), float(shape.groups > 1), _log2(shape.tiles),
                         _log2(groups), _log2(passes), _log2(product_cycles), _log2(words), _log2(words * word_bytes),
                         _log2(load_cycles), _log2(max(load_cycles, product_cycles)), _log2(first_load),
                         _log2(layer.macs), _log2(choice.tile), _log2(choice.blocks), _log2(choice.segments),
                         float(ORDERS.index(choice.order)), _log2(choice.split)])
        features.append(np.asarray(rows, np.float32))
        context.append(features[-1][:, list(CONTEXT_COLUMNS)])
    return features, context


class TransferPredictor(torch.nn.Module):
    """``(log latency, log energy)`` of a network mapping as the log of a sum over its layers of per-layer, per-choice
    contributions (module docstring); ``width``, ``depth``: the residual MLP's."""

    def __init__(self, *, width=64, depth=2):
        super().__init__()
        inputs = FEATURES + CONTEXT
        self.width, self.depth = width, depth
        self.linear = torch.nn.Linear(inputs, 2)
        self.net = MLPNet(inputs=inputs, width=width, depth=depth)
        self.register_buffer("mean", torch.zeros(inputs))
        self.register_buffer("scale", torch.ones(inputs))
        self.register_buffer("offset", torch.zeros(2))

    def pair_logs(self, features, context):
        """Per layer a (previous choices, choices, 2) tensor: the log contributions of every pair (the first layer:
        one row, no previous layer)."""
        logs = []
        for index, own in enumerate(features):
            own = torch.as_tensor(own)
            before = (torch.zeros(1, CONTEXT) if index == 0 else torch.as_tensor(context[index - 1]))
            pairs = torch.cat([before[:, None, :].expand(-1, len(own), -1),
                               own[None, :, :].expand(len(before), -1, -1)], dim=2)
            inputs = ((pairs - self.mean) / self.scale).reshape(-1, pairs.shape[2])
            out = self.linear(inputs) + self.net(inputs, inputs[:, :0]) + self.offset
            logs.append(out.reshape(len(before), len(own), 2))
        return logs

    def forward(self, probabilities, features, context):
        """``probabilities``: per layer a (batch, choices) tensor (one-hot for a mapping) -> (batch, 2) natural logs
        of latency and energy."""
        total = 0.0
        for index, logs in enumerate(self.pair_logs(features, context)):
            own = probabilities[index]
            before = torch.ones(len(own), 1) if index == 0 else probabilities[index - 1]
            total = total + torch.einsum("ba,bc,ack->bk", before, own, torch.exp(logs))
        return torch.log(total)

    @staticmethod
    def one_hot(space, rows):
        """Index tuples -> per layer a (batch, choices) one-hot tensor."""
        encoded = [torch.zeros(len(rows), len(choices)) for choices in space.choices]
        for row, indices in enumerate(rows):
            for layer, index in enumerate(indices):
                encoded[layer][row, int(index)] = 1.0
        return encoded


def transfer_rows(space, known, samples, *, seed=0, progress=True, save=None, save_every=20):
    """``samples`` legal mappings of ``space`` (:func:`~dse.dcp.stream_search.sample_balanced`) with their
    ``(latency, energy)``, costed through ``known`` (the space's cost cache; ``save()``, if given, is called every
    ``save_every`` mappings costed and at the end): ``[(indices, (latency, energy))]``."""
    evaluator = StreamEvaluator(space, "latency", known)
    rows = sample_balanced(evaluator, samples, np.random.default_rng(seed))
    labelled = []
    with counting(f"{space.name}: training mappings costed", total=len(rows), enabled=progress) as shown:
        for row in rows:
            cost = evaluator.cost(row)
            labelled.append((row, (cost["latency"], cost["energy"])))
            shown.update()
            if save is not None and len(labelled) % save_every == 0:
                save()
    if save is not None:
        save()
    return labelled


def _fit(predictor, batches, *, epochs, learning_rate):
    """Adam on the squared error of the log costs over ``batches`` (``(one-hot, features, context, log targets)``
    per network, every network weighted alike); returns the last loss."""
    optimiser = torch.optim.Adam(predictor.parameters(), lr=learning_rate)
    loss = torch.zeros(())
    for _ in range(epochs):
        loss = sum(((predictor(one_hot, features, context) - targets) ** 2).mean()
                   for one_hot, features, context, targets in batches) / len(batches)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return float(loss.detach())


def _batch(space, rows, tables=None):
    features, context = tables or choice_features(space)
    targets = torch.log(torch.as_tensor(np.asarray([cost for _, cost in rows], np.float64), dtype=torch.float32))
    return TransferPredictor.one_hot(space, [indices for indices, _ in rows]), features, context, targets


def _standardise(predictor, batches):
    """The predictor's input mean and scale over every network's choices (the context: the same quantities')."""
    own = np.concatenate([np.concatenate(features) for _, features, _, _ in batches])
    mean, scale = own.mean(0), np.maximum(own.std(0), 0.5)
    predictor.mean.copy_(torch.as_tensor(np.concatenate([mean[list(CONTEXT_COLUMNS)], mean])))
    predictor.scale.copy_(torch.as_tensor(np.concatenate([scale[list(CONTEXT_COLUMNS)], scale])))


def train_transfer(networks, *, epochs=600, learning_rate=3e-3, seed=0, width=64, depth=2):
    """A :class:`TransferPredictor` fitted on ``networks``: ``[(space, rows)]`` (rows of :func:`transfer_rows`), its
    inputs standardised over every network's choices and its output offset to their mean log cost per layer."""
    torch.manual_seed(seed)
    predictor = TransferPredictor(width=width, depth=depth)
    batches = [_batch(space, rows) for space, rows in networks]
    _standardise(predictor, batches)
    per_layer = [targets.mean(0) - math.log(len(features)) for _, features, _, targets in batches]
    predictor.offset.copy_(torch.stack(per_layer).mean(0))
    _fit(predictor, batches, epochs=epochs, learning_rate=learning_rate)
    return predictor


def save_transfer(path, predictor, evaluations):
    """``predictor`` and its training ``evaluations`` (network -> mappings costed) into ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"state": predictor.state_dict(), "width": predictor.width, "depth": predictor.depth,
                "evaluations": dict(evaluations)}, path)


def transfer_path(model):
    """The shipped predictor for searching ``model`` (``nnaccel dse stream --model``): trained without it."""
    return Path(__file__).parent / "data" / f"predictor_stream_{model}.pt"


def load_transfer(path):
    """``(predictor, evaluations)`` from a file of :func:`save_transfer`."""
    saved = torch.load(path, weights_only=True)
    predictor = TransferPredictor(width=saved["width"], depth=saved["depth"])
    predictor.load_state_dict(saved["state"])
    return predictor, saved["evaluations"]


def predict(predictor, space, rows, tables=None):
    """Predicted ``(latency, energy)`` of ``rows`` (index tuples), an (N, 2) array."""
    features, context = tables or choice_features(space)
    with torch.no_grad():
        return torch.exp(predictor(TransferPredictor.one_hot(space, rows), features, context)).numpy()


def held_out_error(predictor, space, rows):
    """How well ``predictor`` knows ``space`` (a network it was not trained on) from ``rows`` (:func:`transfer_rows`):
    mean relative error of latency and energy, and the Spearman rank correlation of each with the truth."""
    predicted = predict(predictor, space, [indices for indices, _ in rows])
    truth = np.asarray([cost for _, cost in rows], np.float64)
    error = np.abs(predicted / truth - 1).mean(0)

    def ranks(values):
        return np.argsort(np.argsort(values))

    spearman = [float(np.corrcoef(ranks(predicted[:, column]), ranks(truth[:, column]))[0, 1]) for column in (0, 1)]
    return {"mappings": len(rows), "latency_mre": float(error[0]), "energy_mre": float(error[1]),
            "latency_spearman": spearman[0], "energy_spearman": spearman[1]}


def _random_rows(space, count, rng):
    return [tuple(int(rng.integers(len(choices))) for choices in space.choices) for _ in range(count)]


def dcp_transfer(space, predictor, objective, known, *, budget, seed=0, start_default=False, restarts=1, steps=400,
                 decode_every=5, learning_rate=0.3, candidates=2000, ridge=0.1):
    """DCP with a predictor trained on other networks (:func:`load_transfer`): its whole ``budget`` searching.
    The starts: the ``restarts`` best of ``candidates`` random mappings by the predictor (predictions cost no
    evaluation), or with ``start_default`` the compiler's mapping taking one restart's place; each start costed
    first.  Adam on the predicted log objective of every restart's softmax; every ``decode_every`` steps each restart
    decoded (its most likely choice per layer, or the single-layer change of it the predictor rates best, legal and
    not costed yet) and costed; a restart whose decoded mapping costs less than the best it has costed moves there
    (its logits set to that mapping's one-hot: the descent goes on from the best the costs have shown it, not from
    where the transferred gradient left it).  The search learns the network from every evaluation as it counts it:
    the predictor (a copy) has its level set to the mean of the costed mappings (a network's scale transfers worst),
    and what is left is fitted by a slope (how far the costs bear the transferred predictions' differences out) and a
    correction per layer and choice (ridge regression on the one-hot mappings, strength ``ridge``: the transferred
    prediction is the prior, the costs pull it where they say).  Stops at ``budget`` evaluations or after
    ``steps``; the answer is the best mapping by the cost model."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    predictor = copy.deepcopy(predictor)
    tables = choice_features(space)
    evaluator = StreamEvaluator(space, objective, known)
    target = OBJECTIVES.index(objective)
    corrections = [torch.zeros(len(choices)) for choices in space.choices]
    slope = [0.0, 0.0]                  # the transferred differences stretched by 1 + slope[0] about slope[1]
    costed = []

    def predicted(probabilities):
        """The log objective of per-layer probabilities, recalibrated on the network's costs."""
        transferred = predictor(probabilities, *tables)[:, target]
        return transferred + slope[0] * (transferred - slope[1]) + sum(
            layer @ correction for layer, correction in zip(probabilities, corrections))

    def cost(indices):
        """Cost ``indices`` (counted if legal and new) and refit the correction to every mapping costed so far."""
        evaluator(indices)
        if evaluator.seen[indices] < math.inf and indices not in costed:
            costed.append(indices)
            _correct(predictor, slope, corrections, space, costed, evaluator, tables, target, ridge)

    def seat(restart, indices):
        """Set a restart's logits to the one-hot of ``indices``."""
        with torch.no_grad():
            for layer, encoded in zip(logits, TransferPredictor.one_hot(space, [indices])):
                layer[restart] = 3.0 * encoded[0]

    pool = list(dict.fromkeys(_random_rows(space, candidates, rng)))
    with torch.no_grad():
        ranked = torch.argsort(predicted(TransferPredictor.one_hot(space, pool))).tolist()
    starts = list(islice((pool[index] for index in ranked if evaluator.legal(pool[index])), restarts))
    if start_default:
        default = tuple(0 for _ in space.choices)
        starts = [default] + [row for row in starts if row != default][:restarts - 1]
    for row in starts:
        if evaluator.evaluations < budget:
            cost(row)
    held = list(starts)                 # per restart the best mapping it has costed
    logits = [(3.0 * layer + 0.1 * torch.randn_like(layer)).requires_grad_(True)
              for layer in TransferPredictor.one_hot(space, starts)]
    optimiser = torch.optim.Adam(logits, lr=learning_rate)
    for step in range(1, steps + 1):
        if evaluator.evaluations >= budget:
            break
        loss = predicted([torch.softmax(layer, dim=1) for layer in logits]).sum()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        if step % decode_every:
            continue
        fresh = 0
        for restart in range(len(starts)):
            decoded = _decode(space, evaluator, predicted, tuple(int(torch.argmax(layer[restart])) for layer in logits))
            if decoded is not None and evaluator.evaluations < budget:
                cost(decoded)
                fresh += 1
                if evaluator.seen[decoded] < evaluator.seen[held[restart]]:
                    held[restart] = decoded
                    seat(restart, decoded)
        if not fresh:                   # every restart sits on a mapping already costed: move one elsewhere
            seat(int(rng.integers(len(starts))), _random_rows(space, 1, rng)[0])
    return evaluator.result("DCP (transfer)")


def _decode(space, evaluator, predicted, best):
    """Among ``best`` and every single-layer change of it, the legal mapping not costed yet of best ``predicted``
    log objective (None if there is none); ranked first, then checked for legality in that order."""
    candidates = [best] + [best[:layer] + (index,) + best[layer + 1:] for layer, choices in enumerate(space.choices)
                           for index in range(len(choices)) if index != best[layer]]
    candidates = [candidate for candidate in candidates if candidate not in evaluator.seen]
    if not candidates:
        return None
    with torch.no_grad():
        ranked = torch.argsort(predicted(TransferPredictor.one_hot(space, candidates))).tolist()
    return next((candidates[index] for index in ranked if evaluator.legal(candidates[index])), None)


def _correct(predictor, slope, corrections, space, costed, evaluator, tables, target, ridge):
    """The transferred prediction recalibrated on ``costed`` (the network's mappings costed so far): the predictor's
    level set to their mean log cost, then fitted together to what is left, ``slope`` (the transferred predictions'
    differences about their mean stretched or shrunk, hardly penalised, at least -1: at worst they are ignored, never
    reversed; and that mean) and ``corrections`` (per layer, per choice, ridge strength ``ridge``)."""
    one_hot = TransferPredictor.one_hot(space, costed)
    truth = torch.log(torch.as_tensor([evaluator.seen[row] for row in costed], dtype=torch.float64))
    with torch.no_grad():
        base = predictor(one_hot, *tables)[:, target].double()
        level = float((truth - base).mean())
        predictor.offset[target] += level
        base = base + level
        inputs = torch.cat([torch.cat(one_hot, dim=1).double(), (base - base.mean())[:, None]], dim=1)
        penalty = torch.full((inputs.shape[1],), ridge, dtype=torch.float64)
        penalty[-1] = 1e-4              # the slope: only enough to stay solvable on one mapping
        fitted = torch.linalg.solve(inputs.T @ inputs + torch.diag(penalty), inputs.T @ (truth - base))
    for correction, part in zip(corrections, torch.split(fitted[:-1].float(), [len(c) for c in corrections])):
        correction.copy_(part)
    slope[:] = [max(-1.0, float(fitted[-1])), float(base.mean())]
