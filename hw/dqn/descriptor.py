"""Layer descriptors of the DQN accelerator: what the host writes to run one layer.

Every layer, convolution or fully connected, runs as a convolution: a fully connected layer is a
convolution whose kernel covers its whole input (one output position).  A descriptor is one word
of the descriptor table; :func:`descriptor_layout` gives its fields (LSB first) and
:func:`encode_descriptor` packs them for the host.  docs/dqn_accelerator.md explains the fields.
"""

from amaranth.hdl import signed
from amaranth.lib import data

from nnaccel.hw.dqn.config import DqnConfig

__all__ = ["descriptor_layout", "descriptor_bits", "group_layout", "encode_descriptor", "DESCRIPTOR_FIELDS",
           "GEOMETRY_BITS", "POSITION_BITS", "STRIDE_BITS", "START_DELAY_BITS", "tap_columns"]

GEOMETRY_BITS = 12      # an output height, width, row or column; a channel count
POSITION_BITS = 20      # an output position (oy * out_width + ox)
STRIDE_BITS = 4
START_DELAY_BITS = 6    # a pass's first read on its cycle start_delay - 1 (models/dqn/handoff.py)


def _bits_for(limit):
    """Bits of an unsigned field holding 0 .. limit."""
    return max(1, int(limit).bit_length())


def tap_columns(config):
    """Elements of a feeder row register: ``pad_columns`` zeros, then the row; a tap column indexes them."""
    return config.pad_columns + config.row_elements


def _field_widths(config):
    activation_address = _bits_for(config.activation_depth - 1)
    return {
        "in_ram": 1,                                   # activation RAM (0/1) the layer reads
        "in_base": activation_address,                 # word of input channel 0, row 0
        "in_channels": 12,
        "in_height": 10,                               # rows per input channel (word stride of a channel)
        "in_width": _bits_for(config.row_elements),    # elements per input row (later ones load as zeros)
        "kernel_height": 8,
        "kernel_width": _bits_for(tap_columns(config)),
        "stride_y": STRIDE_BITS,
        "stride_x": STRIDE_BITS,
        "pad_top": 8,                                  # zero rows above the input (rows < 0 and >= in_height)
        "pad_left": _bits_for(config.pad_columns),     # zero columns left of the input (<= pad_columns)
        "out_height": GEOMETRY_BITS,
        "out_width": GEOMETRY_BITS,
        "positions": POSITION_BITS,                    # end of the layer's positions (exclusive)
        "first_position": POSITION_BITS,               # first output position the layer computes
        "first_oy": GEOMETRY_BITS,                     # its output row and column
        "first_ox": GEOMETRY_BITS,
        "first_row": GEOMETRY_BITS + STRIDE_BITS,      # first_oy * stride_y
        "first_column": _bits_for(tap_columns(config)),  # first_ox * stride_x
        "column_blocks_log2": _bits_for(config.modules.bit_length() - 1),
        "out_channels": 12,
        "products": 24,                                # in_channels * kernel_height * kernel_width
        "weight_base": _bits_for(config.weight_address_depth - 1),
        "out_ram": 1,
        "out_base": activation_address,
        "packed_output": 1,                            # 1: output n -> word out_base + n // lanes, element n % lanes
        "position_major": 1,                           # with packed_output: position p -> word out_base + p, element n
        "reduce": 1,                                   # vectors from words in_base + p - first_position + k*step
        "step_distance": activation_address,           # words between a reduction's steps (wraps: any distance)
        "relu": 1,
        "last": 1,                                     # the network's last layer: argmax over its outputs
        "handoff": 1,                                  # the next pass reads while the last group is written (port 1)
        "start_delay": START_DELAY_BITS,               # 0: wait for the last pass's writes; d: first read on cycle d-1
    } | ({"maximum": 1} if config.max_pooling else {}) | (  # a max pool: the modules take the largest product
        {"first_channel": GEOMETRY_BITS} if config.argmax_tiles else {}) | (  # the channel tile's first: argmax offset
        _flat_field_widths(config) if config.flat_slots else {})


def _flat_field_widths(config):
    """The flat map's fields (docs/dqn_accelerator.md, "The flat map in the accelerator"): a flat pass's own (its other
    fields: the map's ``in_height`` x ``in_width``, ``positions`` = their product, ``in_channels`` = ``out_channels`` =
    its channels, ``products`` = the kernel's steps, ``weight_base`` its weight rows) and any pass's second output
    grid ``write_width``: the writer writes position ``p`` at row ``p // write_width``, column ``p % write_width`` of
    a grid ``out_height`` rows high (a convolution writing the flat layout: ``row_elements`` wide; a 1 x 1 convolution
    on the flat view writing an image: the image's width); 0: the walk's own grid."""
    activation_address = _bits_for(config.activation_depth - 1)
    return {
        "flat": 1,                                      # a flat depthwise pass (hw/dqn/flat_stepper.py)
        "channel_words": activation_address,            # words of one channel's flat map
        "window_word": activation_address,              # the first window's word from the channel's, mod depth
        "window_element": _bits_for(config.row_elements - 1),   # the element of step (0, 0) under lane 0
        "lane_rows": GEOMETRY_BITS,                     # the lanes' advance to the next positions: lanes // width
        "lane_columns": GEOMETRY_BITS,                  # and lanes % width
        "write_width": GEOMETRY_BITS,                   # the writer's grid width (0: out_width), walked from 0
        # A stride-2 flat pass (stride_x 2) writes its even rows' even columns (models.dqn.flat_map.strided_writes):
        "out_channel_words": activation_address,        # words of one channel's output map
        "lane_advance": GEOMETRY_BITS,                  # per group: the first row's even lane back by this,
        "out_advance_word": activation_address,         # its output position on by these words
        "out_advance_element": _bits_for(config.row_elements - 1),   # and elements
    }


DESCRIPTOR_FIELDS = tuple(_field_widths(DqnConfig()))


def descriptor_layout(config):
    return data.StructLayout({name: width for name, width in _field_widths(config).items()})


def descriptor_bits(config):
    """Bits of a descriptor word (``descriptor_layout(config).size``, without building the layout)."""
    return sum(_field_widths(config).values())


def group_layout(config):
    """A group of output positions, from the sequencer to the result writer: its first position ``p0`` and that
    position's output row and column; with the flat map also ``flat_word`` (a flat group's first word from the output
    tensor's: channel * channel_words + p0 // row_elements) and ``flat_element`` (p0 % row_elements), and for a
    stride-2 flat pass ``flat_out_word`` / ``flat_out_element`` (the output word and element of the group's first
    written row: channel * out_channel_words + its position) and ``flat_row_lane`` (that row's even lane, signed)."""
    widths = _field_widths(config)
    flat = {"flat_word": widths["channel_words"], "flat_element": widths["window_element"],
            "flat_out_word": widths["out_channel_words"], "flat_out_element": widths["out_advance_element"],
            "flat_row_lane": signed(GEOMETRY_BITS + 1)} if config.flat_slots else {}
    return data.StructLayout({"p0": widths["first_position"], "oy0": widths["first_oy"], "ox0": widths["first_ox"]}
                             | flat)


def encode_descriptor(config, **fields):
    """The descriptor word (an int) for ``fields``; every field must be given and fit its width."""
    widths = _field_widths(config)
    unknown = sorted(set(fields) - set(widths))
    missing = [name for name in widths if name not in fields]
    if unknown or missing:
        raise ValueError(f"descriptor fields unknown: {unknown}, missing: {missing}")
    word, offset = 0, 0
    for name, width in widths.items():
        value = fields[name]
        if not isinstance(value, int) or isinstance(value, bool) and width != 1 or not 0 <= value < (1 << width):
            raise ValueError(f"descriptor field {name} must be an integer from 0 to {(1 << width) - 1}, not {value!r}")
        word |= int(value) << offset
        offset += width
    return word
