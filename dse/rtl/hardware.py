"""nnaccel's RTL family, the DQN accelerator's configurations (:class:`hw.dqn.config.DqnConfig`), as a design space:
the choices of each hardware parameter (:class:`RtlSpace`) and the JSON of a case's configuration and network, so that
a case can travel to a Dask worker and into the result store.

Hardware: matrix modules (a power of two), lanes per module, number format (binary32, bfloat16, binary16),
multiplier and adder latency (the float units' register stages), row elements (the activation word), activation-
and weight-RAM depths, descriptor-table entries; the matrix modules' max mode (max pools) where a case asks for it.
Networks: ``models.dqn.network`` layers.
"""

from dataclasses import dataclass

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer

__all__ = ["FORMATS", "RtlSpace", "RTL_SPACE", "config_to_json", "config_from_json", "network_to_json",
           "network_from_json"]

FORMATS = ("binary32", "bfloat16", "binary16")
_CONFIG_FIELDS = ("modules", "lanes", "multiplier_latency", "adder_latency", "row_elements", "activation_depth",
                  "weight_depth", "max_layers")


@dataclass(frozen=True)
class RtlSpace:
    """Choices of each hardware parameter the samplers draw from (the area table covers these latencies)."""

    modules: tuple = (1, 2, 4, 8, 16, 32)
    lanes: tuple = (1, 2, 4, 8, 16, 32)
    formats: tuple = FORMATS
    multiplier_latencies: tuple = (1, 2, 3)
    adder_latencies: tuple = (1, 2, 3)
    row_elements: tuple = (16, 32, 84, 128)
    activation_depths: tuple = (512, 1024, 2048)
    weight_depths: tuple = (1024, 4096, 8192)
    max_layers: tuple = (8, 16)


RTL_SPACE = RtlSpace()


def config_to_json(config):
    return {"fmt": config.fmt.name, "pad_columns": config.pad_columns,
            **{name: getattr(config, name) for name in _CONFIG_FIELDS},
            **({"max_pooling": True} if config.max_pooling else {}),
            **({"flat_slots": config.flat_slots, "flat_window_words": config.flat_window_words}
               if config.flat_slots else {})}


def config_from_json(data):
    """The :class:`DqnConfig` of ``data`` (one written before ``pad_columns`` existed has the default; one without
    ``max_pooling`` has no max mode, one without ``flat_slots`` no flat map)."""
    return DqnConfig(fmt=float_format(data["fmt"]), pad_columns=int(data.get("pad_columns", DqnConfig.pad_columns)),
                     max_pooling=bool(data.get("max_pooling", False)), flat_slots=int(data.get("flat_slots", 0)),
                     flat_window_words=int(data.get("flat_window_words", DqnConfig.flat_window_words)),
                     **{name: int(data[name]) for name in _CONFIG_FIELDS})


def network_to_json(layers):
    def one(layer):
        if isinstance(layer, ConvLayer):
            return {"conv": [layer.name, layer.in_channels, layer.in_size, layer.out_channels, layer.kernel,
                             layer.stride, layer.relu, layer.padding, layer.groups, layer.source, layer.maximum]}
        if isinstance(layer, AddLayer):
            return {"add": [layer.name, layer.skip, layer.relu, layer.source]}
        return {"dense": [layer.name, layer.inputs, layer.outputs, layer.relu, layer.source]}
    return [one(layer) for layer in layers]


def network_from_json(data):
    kinds = {"conv": ConvLayer, "dense": DenseLayer, "add": AddLayer}
    return tuple(next(kind(*entry[key]) for key, kind in kinds.items() if key in entry) for entry in data)
