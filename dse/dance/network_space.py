"""DANCE's network space for MNIST: conv, conv, dense, dense (the DQN accelerator's shape), one
choice per layer dimension, every candidate compilable onto the DQN accelerator.

A candidate is one index per choice (``CHOICES`` order); its encoding, what the evaluator reads, is
the concatenation of one one-hot vector per choice (``NetworkSpace.encode``).

========  ============================  ===================================================
choice    values                        why these values
========  ============================  ===================================================
c1        24, 32, 48, 64 channels       > 16 so a group of output positions (16 / column
                                        blocks) stays within two rows of an 8..13-wide map
k1        3, 5, 7                       28x28 input, no padding
s1        2, 3                          conv1 maps of 8..13 rows: C1 x rows fits a 1,024-word
                                        activation RAM
c2        40, 48, 64, 96 channels       > 32 (at most 4 positions per group) because conv2's
                                        maps are 1..6 wide
k2        2, 3, 4, 5
s2        2, 3                          keeps the flattened conv2 output (C2 x rows x cols,
                                        the dense layer's weight-RAM rows) small
d1        none, 32, 64, 128, 256        the hidden dense layer, or none (ProxylessNAS'
                                        zero op: the network is then conv, conv, dense)
========  ============================  ===================================================

The constraints come from ``models.dqn.plan.compile_network`` on the default 16 x 16
configuration (84-element rows, 1,024-word activation RAMs, 4,096-word weight RAM, 8
descriptors): output channels <= modules x lanes, a group of output positions within two rows,
activation and weight RAM depths, no padding. The test compiles every candidate.

The classifier is 10 digits; weights are float32 (the accelerator's default binary32).
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.dse.shared.one_hot_grid import OneHotGrid
from nnaccel.models.dqn.network import ConvLayer, DenseLayer

IMAGE_SIZE = 28
IMAGE_CHANNELS = 1
CLASSES = 10

CHOICES = (
    ("c1", (24, 32, 48, 64)),
    ("k1", (3, 5, 7)),
    ("s1", (2, 3)),
    ("c2", (40, 48, 64, 96)),
    ("k2", (2, 3, 4, 5)),
    ("s2", (2, 3)),
    ("d1", (0, 32, 64, 128, 256)),
)


@dataclass(frozen=True)
class Network:
    """One candidate: its choice values by name (``d1 == 0``: no hidden dense layer)."""

    c1: int
    k1: int
    s1: int
    c2: int
    k2: int
    s2: int
    d1: int

    @property
    def conv1_size(self):
        return (IMAGE_SIZE - self.k1) // self.s1 + 1

    @property
    def conv2_size(self):
        return (self.conv1_size - self.k2) // self.s2 + 1

    @property
    def flat_features(self):
        return self.c2 * self.conv2_size ** 2

    def dqn_layers(self):
        """The layers as the DQN compiler takes them (``models.dqn.network``)."""
        layers = [ConvLayer("conv1", IMAGE_CHANNELS, IMAGE_SIZE, self.c1, self.k1, self.s1),
                  ConvLayer("conv2", self.c1, self.conv1_size, self.c2, self.k2, self.s2)]
        if self.d1:
            layers += [DenseLayer("dense1", self.flat_features, self.d1),
                       DenseLayer("dense2", self.d1, CLASSES, relu=False)]
        else:
            layers.append(DenseLayer("dense2", self.flat_features, CLASSES, relu=False))
        return tuple(layers)

    @property
    def macs(self):
        return sum(layer.macs for layer in self.dqn_layers())

    def describe(self):
        hidden = f"dense {self.d1}" if self.d1 else "no hidden dense"
        return (f"conv {self.c1}x{self.k1}x{self.k1}/{self.s1}, conv {self.c2}x{self.k2}x{self.k2}/"
                f"{self.s2}, {hidden}, dense {CLASSES}")


class NetworkSpace(OneHotGrid):
    """The candidates of ``CHOICES`` (a point: one index per choice): indexing, one-hot encoding, enumeration,
    sampling."""

    def __init__(self, choices=CHOICES):
        self.choices = tuple((name, tuple(values)) for name, values in choices)
        self.names = tuple(name for name, _ in self.choices)
        self.sizes = tuple(len(values) for _, values in self.choices)

    def network(self, indices):
        """The ``Network`` of one index per choice."""
        if len(indices) != len(self.choices):
            raise ValueError(f"a candidate has {len(self.choices)} choice indices "
                             f"({', '.join(self.names)}), not {len(indices)}")
        values = {}
        for (name, options), index in zip(self.choices, indices):
            if not 0 <= int(index) < len(options):
                raise ValueError(f"choice {name} index must be in 0..{len(options) - 1}, not {index!r}")
            values[name] = options[int(index)]
        return Network(**values)

    def indices(self, network):
        return tuple(options.index(getattr(network, name)) for name, options in self.choices)

    def sample(self, rng, count):
        return np.stack([rng.integers(size, size=count) for size in self.sizes], axis=1)

    def layer_sizes(self, points):
        """(N, 15) for N candidates: per layer slot (``LAYER_SLOTS``) the logarithm of its MACs, weights and
        outputs (zeros for the hidden dense slot a network leaves empty), of the two convolutions' output sides and
        of the whole network's MACs. The one-hots imply these only through products of several choices; the cost
        network without forwarding (``training.without_forwarding_inputs``) reads them beside the one-hots."""
        rows = []
        for indices in points:
            network = self.network(indices)
            layers = {layer.name: layer for layer in network.dqn_layers()}
            row = []
            for slot in LAYER_SLOTS:
                layer = layers.get(slot)
                row += ([0.0] * 3 if layer is None else
                        [np.log(layer.macs), np.log(np.prod(layer.weight_shape)), np.log(_outputs(layer))])
            rows.append(row + [np.log(network.conv1_size), np.log(network.conv2_size), np.log(network.macs)])
        return np.asarray(rows)


LAYER_SLOTS = ("conv1", "conv2", "dense1", "dense2")


def _outputs(layer):
    return layer.outputs if isinstance(layer, DenseLayer) else layer.out_channels * layer.out_height * layer.out_width


NETWORK_SPACE = NetworkSpace()
