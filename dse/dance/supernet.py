"""The super-network of DANCE's network space (``dse.dance.network_space``) and the candidates it
contains, in PyTorch.

Paths are sampled, not mixed: every step draws one candidate with hard Gumbel-softmax (one
one-hot per choice, straight-through gradients, as GDAS does) and runs only that path. A soft
mixture (DARTS) would sum the candidates' outputs, which is undefined here: kernel size and
stride change the feature maps' size and so the dense layer's input. ProxylessNAS' binary gates
need every path's output for their gradient, for the same reason not available. The gradient of
the loss reaches the architecture logits through the selected one-hots: each layer's output is
multiplied by the straight-through gate of every choice that shaped it (value 1).

Weights are shared across widths (channel slicing, as in slimmable networks): conv1 has one
64-channel kernel per (kernel, stride), conv2 one 96 x 64 kernel per (kernel, stride) sliced to
(C2, C1), the hidden dense layer one 256 x (96 x H x W) matrix per conv2 output size, sliced, and
the classifier a 10 x 256 matrix (or, without hidden layer, 10 x (96 x H x W) per size).

``Candidate`` is one network of the space as a plain module, trained from scratch after the
search; ``dqn_weights`` gives its weights in the DQN compiler's layout (float32).
"""

import numpy as np
import torch
from torch import nn
from torch.nn import functional

from nnaccel.dse.dance.network_space import CLASSES, IMAGE_CHANNELS, NETWORK_SPACE, Network


class ArchitectureParameters(nn.Module):
    """One logit vector per choice; ``sample`` draws hard Gumbel-softmax one-hots."""

    def __init__(self, sizes):
        super().__init__()
        self.logits = nn.ParameterList(nn.Parameter(torch.zeros(size)) for size in sizes)

    def sample(self, tau):
        """(one-hots per choice, straight-through, value exactly one-hot; indices (choices,))."""
        one_hots = [functional.gumbel_softmax(logits, tau=tau, hard=True) for logits in self.logits]
        indices = [int(one_hot.argmax()) for one_hot in one_hots]
        return one_hots, indices

    def best(self):
        return [int(logits.argmax()) for logits in self.logits]

    def probabilities(self):
        return [torch.softmax(logits, dim=0).detach().numpy() for logits in self.logits]


def _conv_sizes(space):
    values = dict(space.choices)
    sizes = set()
    for k1 in values["k1"]:
        for s1 in values["s1"]:
            for k2 in values["k2"]:
                for s2 in values["s2"]:
                    sizes.add(Network(c1=1, k1=k1, s1=s1, c2=1, k2=k2, s2=s2, d1=0).conv2_size)
    return sorted(sizes)


class SuperNet(nn.Module):
    """Every candidate of ``space`` with shared weights (see the module docstring)."""

    def __init__(self, space=NETWORK_SPACE):
        super().__init__()
        self.space = space
        values = dict(space.choices)
        self.c1_max, self.c2_max, self.d1_max = max(values["c1"]), max(values["c2"]), max(values["d1"])
        self.conv1 = nn.ModuleDict({f"{k}_{s}": nn.Conv2d(IMAGE_CHANNELS, self.c1_max, k, stride=s)
                                    for k in values["k1"] for s in values["s1"]})
        self.conv2 = nn.ModuleDict({f"{k}_{s}": nn.Conv2d(self.c1_max, self.c2_max, k, stride=s)
                                    for k in values["k2"] for s in values["s2"]})
        sizes = _conv_sizes(space)
        self.dense1 = nn.ModuleDict({str(h): nn.Linear(self.c2_max * h * h, self.d1_max) for h in sizes})
        self.direct = nn.ModuleDict({str(h): nn.Linear(self.c2_max * h * h, CLASSES) for h in sizes})
        self.dense2 = nn.Linear(self.d1_max, CLASSES)

    def forward(self, images, indices, gates=None):
        """Logits of the candidate ``indices`` (one per choice); ``gates`` (one scalar per choice,
        value 1, carrying the architecture gradient) or None."""
        net = self.space.network(indices)
        gate = dict(zip(self.space.names, gates)) if gates is not None else {n: 1.0 for n in self.space.names}
        conv1 = self.conv1[f"{net.k1}_{net.s1}"]
        x = functional.relu(functional.conv2d(images, conv1.weight[:net.c1], conv1.bias[:net.c1], stride=net.s1))
        x = x * (gate["c1"] * gate["k1"] * gate["s1"])
        conv2 = self.conv2[f"{net.k2}_{net.s2}"]
        x = functional.relu(functional.conv2d(x, conv2.weight[:net.c2, :net.c1], conv2.bias[:net.c2],
                                              stride=net.s2))
        x = x * (gate["c2"] * gate["k2"] * gate["s2"])
        h = net.conv2_size
        flat = x.flatten(1)
        if net.d1:
            dense1 = self.dense1[str(h)]
            weight = dense1.weight.view(self.d1_max, self.c2_max, h, h)[:net.d1, :net.c2].reshape(net.d1, -1)
            hidden = functional.relu(functional.linear(flat, weight, dense1.bias[:net.d1])) * gate["d1"]
            return functional.linear(hidden, self.dense2.weight[:, :net.d1], self.dense2.bias)
        direct = self.direct[str(h)]
        weight = direct.weight.view(CLASSES, self.c2_max, h, h)[:, :net.c2].reshape(CLASSES, -1)
        return functional.linear(flat, weight, direct.bias) * gate["d1"]


class Candidate(nn.Module):
    """One network of the space, trained on its own (conv, conv, [dense], dense, ReLU between)."""

    def __init__(self, network):
        super().__init__()
        self.network = network
        self.conv1 = nn.Conv2d(IMAGE_CHANNELS, network.c1, network.k1, stride=network.s1)
        self.conv2 = nn.Conv2d(network.c1, network.c2, network.k2, stride=network.s2)
        self.dense1 = nn.Linear(network.flat_features, network.d1) if network.d1 else None
        self.dense2 = nn.Linear(network.d1 or network.flat_features, CLASSES)

    def forward(self, images):
        x = functional.relu(self.conv1(images))
        x = functional.relu(self.conv2(x)).flatten(1)
        if self.dense1 is not None:
            x = functional.relu(self.dense1(x))
        return self.dense2(x)

    def dqn_weights(self):
        """``[(weight, bias), ...]`` float32 in the layout of ``models.dqn.network`` (conv
        ``[in, kh, kw, out]``, dense ``[in, out]``), one pair per layer of ``network.dqn_layers()``."""
        pairs = []
        for layer in (self.conv1, self.conv2, self.dense1, self.dense2):
            if layer is None:
                continue
            weight = layer.weight.detach().numpy()
            weight = weight.transpose(1, 2, 3, 0) if weight.ndim == 4 else weight.T
            pairs.append((np.ascontiguousarray(weight, dtype=np.float32),
                          layer.bias.detach().numpy().astype(np.float32)))
        return pairs
