"""The streaming CapsNet accelerator's run: its steps, its descriptor-table entries, its result word (what the
compiler, the sequencer, the top and the host share)."""

import enum

from amaranth.lib import data

from nnaccel.hw.capsnet.config import SHIFT_BITS
from nnaccel.hw.capsnet.conv_tile_program import conv_stream_layout
from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.routing_engine import digit_caps_layout
from nnaccel.hw.capsnet.stream_config import BUS_BYTES
from nnaccel.hw.shared.tile_port import tile_command_layout

__all__ = ["StreamStep", "stream_descriptor_layout", "image_descriptor_layout", "routing_word_layout",
           "port_ram_address_bits", "beats_per_word_bits", "port_command_layout", "PORT_BEATS_BITS"]

PORT_BEATS_BITS = 20     # bus words of one tile port command: up to 4 MB


class StreamStep(enum.IntEnum):
    """The steps of a run, in order; each is a descriptor-table entry and a set of counters of
    :class:`~hw.shared.host_control.HostControl`."""
    CONV1 = 0               # conv1 on the convolution engine, until its last output is stored
    PRIMARY = 1             # PrimaryCaps likewise
    PREDICTIONS = 2         # step 2: to the end of the last tile's matrix-vector products
    ROUTING = 3             # from then to the end of the run (routing finish, last prediction stores)


def stream_descriptor_layout(config):
    """The run's parameters (descriptor 0): SDRAM byte addresses of the PrimaryCaps output (rows of ``row_bytes``,
    channel-major), the matrix-vector weights (word ``(i*J + j)*N + k``, ``digit_dims`` bytes) and the predictions
    (word ``i*J + j``); the number of capsule types; the matrix-vector shift and the routing shift
    (``squash_shift + COUPLING_SHIFT``)."""
    return data.StructLayout({
        "primary_base": config.address_bits, "weights_base": config.address_bits,
        "predictions_base": config.address_bits, "capsule_types": range(config.max_types + 1),
        "shift": SHIFT_BITS, "routing_shift": SHIFT_BITS})


def image_descriptor_layout(config):
    """A descriptor-table entry: ``conv`` for the convolutions (entries ``CONV1``, ``PRIMARY``: the SDRAM side,
    :func:`~hw.capsnet.conv_tile_program.conv_stream_layout`, and the engine's
    :func:`~hw.capsnet.descriptor.descriptor_layout`), ``matvec`` for step 2 (entry ``PREDICTIONS``,
    :func:`stream_descriptor_layout`)."""
    conv = data.StructLayout({
        "stream": conv_stream_layout(address_bits=config.address_bits, ram_address_bits=port_ram_address_bits(config),
                                     beats_per_word_bits=beats_per_word_bits(config)),
        "engine": descriptor_layout(config.conv_config)})
    return data.UnionLayout({"conv": conv, "matvec": stream_descriptor_layout(config)})


def port_ram_address_bits(config):
    """Address bits of the tile port's RAM side: enough for the deepest tile RAM."""
    return max(2 * config.tile_weight_words, 2 * config.type_rows, config.conv_config.activation_depth,
               config.conv_config.conv_weight_depth, config.conv_config.bias_depth).bit_length()


def beats_per_word_bits(config):
    """Bits of a command's bus words per RAM word (up to the tile port's widest RAM word)."""
    return (config.port_ram_bits // (8 * BUS_BYTES)).bit_length()


def routing_word_layout(config):
    """A routing result word (what the host reads per class): the routing engine's beat without ``last``."""
    beat = digit_caps_layout(config.classes, config.digit_dims, config.max_capsules)
    return data.StructLayout({name: field.shape for name, field in beat if name != "last"})


def port_command_layout(config):
    """The tile port's command (:func:`~hw.shared.tile_port.tile_command_layout`) for ``config``."""
    return tile_command_layout(address_bits=config.address_bits, beats_bits=PORT_BEATS_BITS,
                               ram_address_bits=port_ram_address_bits(config),
                               beats_per_word_bits=beats_per_word_bits(config))
