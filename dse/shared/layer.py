"""A DNN layer as the design-space searches see it: DCP's 7-entry layer code and the loop bounds of
its nest.

DCP (SPEC section 5) describes a layer by ``(Y, X, R, S, K, C, T)``: input rows and columns, filter
rows and columns, output and input channels, and the layer type. The code has no stride or batch;
they are extra fields here (stride 1 and batch 1 by default), so a code converts back exactly when
they are left at their defaults.

A mapping tiles the seven loop dimensions of the layer's nest, ``DIMS = (N, K, C, Y, X, R, S)``:
batch, output channels, input channels, *output* rows and columns, filter rows and columns (the
loop bounds of the nest, so that a mapping's tile sizes multiply up to them exactly). The output
size is ``(Y - R) // stride + 1`` (padding, if any, is already in ``Y`` and ``X``).

Layer types:
- ``CONV``: ``O[n,k,y,x] += W[k,c,r,s] * I[n,c,y*stride+r,x*stride+s]``.
- ``DEPTHWISE``: one filter per channel, ``O[n,c,y,x] += W[c,r,s] * I[n,c,...]``; ``K`` must
  equal ``C`` and the nest's ``K`` bound is 1 (the channel loop is ``C``).
- ``DENSE``: a fully connected layer, ``C`` inputs to ``K`` outputs; ``Y = X = R = S = 1``.
"""

from dataclasses import asdict, dataclass
from enum import IntEnum
from math import prod

from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.dqn.network import dqn_layers as network_dqn_layers

DIMS = ("N", "K", "C", "Y", "X", "R", "S")
DIM_INDEX = {name: index for index, name in enumerate(DIMS)}


class LayerType(IntEnum):
    """The ``T`` entry of DCP's layer code."""

    CONV = 0
    DEPTHWISE = 1
    DENSE = 2


def _check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"layer {name} must be a positive integer, not {value!r}")


@dataclass(frozen=True, kw_only=True)
class Layer:
    """One conv, depthwise-conv or dense layer (see the module docstring for the fields)."""

    y: int
    x: int
    r: int
    s: int
    k: int
    c: int
    type: LayerType = LayerType.CONV
    stride: int = 1
    batch: int = 1
    name: str = ""

    def __post_init__(self):
        for field in ("y", "x", "r", "s", "k", "c", "stride", "batch"):
            _check_positive_int(field, getattr(self, field))
        try:
            object.__setattr__(self, "type", LayerType(self.type))
        except ValueError:
            raise ValueError(f"layer type must be one of {[int(t) for t in LayerType]} "
                             f"(conv, depthwise, dense), not {self.type!r}") from None
        if self.r > self.y or self.s > self.x:
            raise ValueError(f"layer filter {self.r}x{self.s} is larger than its input "
                             f"{self.y}x{self.x}")
        if self.type == LayerType.DENSE and (self.y, self.x, self.r, self.s, self.stride) != (1,) * 5:
            raise ValueError(f"a dense layer has Y = X = R = S = stride = 1, not Y={self.y} "
                             f"X={self.x} R={self.r} S={self.s} stride={self.stride}")
        if self.type == LayerType.DEPTHWISE and self.k != self.c:
            raise ValueError(f"a depthwise layer has K = C (one filter per channel), not "
                             f"K={self.k} C={self.c}")

    @classmethod
    def conv(cls, *, in_channels, in_size, out_channels, kernel, stride=1, batch=1, name=""):
        """A square convolution: ``in_channels`` x ``in_size`` x ``in_size`` input."""
        return cls(y=in_size, x=in_size, r=kernel, s=kernel, k=out_channels, c=in_channels,
                   stride=stride, batch=batch, name=name)

    @classmethod
    def dense(cls, *, in_features, out_features, batch=1, name=""):
        return cls(y=1, x=1, r=1, s=1, k=out_features, c=in_features, type=LayerType.DENSE,
                   batch=batch, name=name)

    @property
    def out_y(self):
        return (self.y - self.r) // self.stride + 1

    @property
    def out_x(self):
        return (self.x - self.s) // self.stride + 1

    def to_code(self):
        """DCP's layer code ``(Y, X, R, S, K, C, T)``."""
        return (self.y, self.x, self.r, self.s, self.k, self.c, int(self.type))

    @classmethod
    def from_code(cls, code, *, stride=1, batch=1, name=""):
        if len(code) != 7:
            raise ValueError(f"a layer code has 7 entries (Y, X, R, S, K, C, T), not {len(code)}: "
                             f"{tuple(code)!r}")
        y, x, r, s, k, c, layer_type = (int(v) for v in code)
        return cls(y=y, x=x, r=r, s=s, k=k, c=c, type=LayerType(layer_type), stride=stride,
                   batch=batch, name=name)

    def loop_bounds(self):
        """The nest's bounds in ``DIMS`` order (N, K, C, Y, X, R, S)."""
        k = 1 if self.type == LayerType.DEPTHWISE else self.k
        return (self.batch, k, self.c, self.out_y, self.out_x, self.r, self.s)

    @property
    def macs(self):
        return prod(self.loop_bounds())

    def to_dict(self):
        data = asdict(self)
        data["type"] = int(self.type)
        return data

    @classmethod
    def from_dict(cls, data):
        return cls(**data)


def from_network_layer(layer, *, name=None):
    """The ``Layer`` of a ``models.dqn.network`` layer (``ConvLayer`` or ``DenseLayer``), named as it is unless
    ``name`` is given."""
    name = layer.name if name is None else name
    if isinstance(layer, ConvLayer):
        return Layer.conv(in_channels=layer.in_channels, in_size=layer.in_size, out_channels=layer.out_channels,
                          kernel=layer.kernel, stride=layer.stride, name=name)
    return Layer.dense(in_features=layer.inputs, out_features=layer.outputs, name=name)


def dqn_layers():
    """The thesis' DQN network (SPEC section 1, ``models.dqn.network.dqn_layers``): 4x84x84 state, 18 actions."""
    return tuple(from_network_layer(layer) for layer in network_dqn_layers(18))
