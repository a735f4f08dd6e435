"""Layer descriptors of the CapsNet accelerator: what the host writes to run one layer.

A layer is either a convolution on the convolution engine (``kind = CONV``, step 1) or a batch of
matrix-vector products on the matrix-vector engine (``kind = MATVEC``, step 2).  One flat layout holds the
fields of both kinds (a field of the other kind is 0); :func:`descriptor_layout` gives it (LSB first) and
:func:`encode_descriptor` packs it for the host.  Derived fields (``products``, ``block_rows``,
``column_step``, ...) are computed by the compiler (:mod:`models.capsnet.plan`) so that the controllers need
no multipliers.  docs/capsnet_accelerator.md explains every field.
"""

from amaranth.lib import data

from nnaccel.hw.capsnet.config import CapsNetConfig, SHIFT_BITS

__all__ = ["LayerKind", "descriptor_layout", "encode_descriptor", "descriptor_bits", "DESCRIPTOR_FIELDS"]


class LayerKind:
    CONV, MATVEC = range(2)


def _bits_for(limit):
    """Bits of an unsigned field holding 0 .. limit."""
    return max(1, int(limit).bit_length())


def _field_widths(config):
    activation_address = _bits_for(config.activation_depth - 1)
    return {
        "kind": 1,                                       # LayerKind
        "in_ram": 1,                                     # activation RAM (0/1) the layer reads
        "in_base": activation_address,                   # word of input channel 0, row 0
        "shift": SHIFT_BITS,                             # requantize: (acc + 2**(shift-1)) >> shift
        "relu": 1,
        # ---- convolution (kind CONV) ----
        "in_height": 10,                                 # rows per input channel (word step between channels)
        "kernel_height": 5,
        "kernel_width": 5,
        "stride": 3,
        "out_height": 10,
        "out_width": _bits_for(config.row_elements),
        "out_channels": 12,
        "channel_blocks": 8,                             # ceil(out_channels / conv_modules)
        "column_blocks": 6,                              # ceil(out_width / conv_lanes)
        "products": 20,                                  # in_channels * kernel_height * kernel_width
        "column_step": 8,                                # conv_lanes * stride: input columns between column blocks
        "block_rows": activation_address,                # conv_modules * out_height: output words per channel block
        "weight_base": _bits_for(config.conv_weight_depth - 1),
        "bias_base": _bits_for(config.bias_depth - 1),
        "out_ram": 1,
        "out_base": activation_address,
        "channels": 10,                                  # C: input channels
        "kernel_words": 10,                              # kernel_height * kernel_width
        "row_groups": 10,                                # ceil(out_height / conv_rows)
        "channel_words": activation_address,             # output word step between channels
        "slot_words": activation_address,                # tiled: output words of one staging slot
        # ---- matrix-vector products (kind MATVEC) ----
        "capsule_types": 8,                              # T: input capsule i = (type, y, x), type-major
        "grid_height": 8,                                # H
        "grid_width": 8,                                 # W
        "column_base": _bits_for(config.row_elements - 1),   # grid column of the first capsule (x = base + 0 ..)
        "type_words": activation_address,                # word step between capsule types
        "dim_words": activation_address,                 # word step between the dimensions of one capsule
        "in_dims": 7,                                    # N: products per matrix-vector product
        "out_capsules": 8,                               # J: products u_hat_j|i per input capsule
        "matvec_weight_base": _bits_for(config.matvec_weight_depth - 1),
        "prediction_base": _bits_for(config.prediction_depth - 1),
    }


DESCRIPTOR_FIELDS = tuple(_field_widths(CapsNetConfig()))


def descriptor_layout(config):
    return data.StructLayout(_field_widths(config))


def descriptor_bits(config):
    return sum(_field_widths(config).values())


def encode_descriptor(config, **fields):
    """The descriptor word (an int) for ``fields``; fields not given are 0, every given one must fit its width."""
    widths = _field_widths(config)
    unknown = sorted(set(fields) - set(widths))
    if unknown:
        raise ValueError(f"descriptor fields unknown: {unknown}")
    word, offset = 0, 0
    for name, width in widths.items():
        value = fields.get(name, 0)
        if not isinstance(value, int) or isinstance(value, bool) and width != 1 or not 0 <= value < (1 << width):
            raise ValueError(f"descriptor field {name} must be an integer from 0 to {(1 << width) - 1}, not {value!r}")
        word |= int(value) << offset
        offset += width
    return word
