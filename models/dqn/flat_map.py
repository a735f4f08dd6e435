"""The flat map of a depthwise convolution: lanes over one channel's output positions in raster order.

Models of the flat map's datapath units (``hw.dqn.flat_lane_window.FlatLaneWindow``: the lanes' operands;
``hw.dqn.flat_word_packer.FlatWordPacker``: the output words), the arithmetic their sequencer would do (the steps'
offsets, bounds and window shifts) and the golden model of a flat pass (:func:`flat_depthwise`);
docs/dqn_accelerator.md ("The flat map's datapath") has the design and what is not built yet.  The mapping
covered: a depthwise layer of stride 1 whose output rows are as wide as its input rows (``pad_left + pad_right ==
kernel_width - 1``, TFLite's and PyTorch's SAME at stride 1), any kernel and any top and bottom padding; and a
depthwise layer of stride 2 whose output map is ``ceil(H/2) x ceil(W/2)`` (TFLite's SAME, padded unevenly, and
PyTorch's ``padding=k//2``): it is computed at stride 1 with its top and left padding, and only the positions of even
rows and columns are written (:func:`strided_writes`).

*Flat layout*: channel ``c`` of a ``[C, H, W]`` tensor at base word ``b`` holds its ``H * W`` elements in raster
order over ``ceil(H * W / F)`` words of ``F = row_elements`` elements: flat position ``q = y*W + x`` at word ``b +
c*ceil(H*W/F) + q // F``, element ``q % F`` (image layout is the case ``F = W``).  A 1 x 1 convolution reads and
writes it as the image ``[C, ceil(H*W/F), F]`` with ``H * W`` positions.

*Lanes*: a group gives global lane ``i`` (module ``i // lanes``, lane ``i % lanes``) output position ``q0 + i`` of
channel ``c``.  For stride 1 and ``out_width == in_width`` the input element of step ``(kh, kw)`` of every lane is
flat position ``q0 + i + d`` with the step's offset ``d = (kh - pad_top)*W + kw - pad_left``: one shift of a window
of consecutive words serves all lanes.  Lane ``i`` (output ``(oy, ox)``) takes it where ``0 <= oy + kh - pad_top <
in_height`` and ``0 <= ox + kw - pad_left < in_width`` (:func:`step_bounds`), ``+0`` elsewhere (padding).
"""

import numpy as np

from nnaccel.models.dqn.matrix_module import accumulate_products
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.shared.float_arith import float_mul

__all__ = ["flat_map_applies", "flat_words", "step_offset", "step_bounds", "window_base", "window_shift",
           "window_words_needed", "lane_coordinates", "advance_coordinates", "lane_operands",
           "word_writes", "flat_depthwise", "flat_pass_fits", "flat_view", "flat_descriptor_fields", "flat_pass_rows",
           "flat_pass_weights", "flat_layer", "strided_flat", "strided_writes", "maps_per_slot", "descriptor_maps"]


def flat_view(shape, row_elements):
    """The image ``(C, ceil(H*W / F), F)`` a ``(C, H, W)`` map in flat layout is, read as image rows."""
    channels, height, width = shape
    return channels, -(-height * width // row_elements), row_elements


def flat_pass_fits(config, layer):
    """Whether the accelerator's flat pass (hw/dqn/flat_stepper.py) runs ``layer`` on ``config``: the flat map applies
    with output maps as large as the input's (SAME; at stride 2 a quarter, its rows narrower than a word), its channels fill the channel slots of each group, a slot's
    window fits ``config.flat_window_words`` and the next group's windows load within a group's steps
    (``flat_loads`` reads, their last load before the last step's swap)."""
    return (bool(config.flat_slots) and isinstance(layer, ConvLayer) and not layer.maximum and flat_map_applies(layer)
            and (layer.out_width < config.row_elements if strided_flat(layer) else layer.out_height == layer.in_height)
            and layer.in_channels % config.flat_slots == 0
            and window_words_needed(layer, config.row_elements, config.flat_group_lanes) <= config.flat_window_words
            and layer.kernel_height * layer.kernel_width >= config.flat_loads + 2)


def flat_layer(descriptor):
    """The depthwise layer a flat pass's descriptor runs (SAME padding: the bottom and right borders follow; stride 2:
    the output map ``ceil(H/2) x ceil(W/2)``)."""
    d = descriptor
    kernel, stride, size = (d["kernel_height"], d["kernel_width"]), d["stride_y"], (d["in_height"], d["in_width"])
    # The bottom and right borders that give the output map: H at stride 1, ceil(H/2) at stride 2.
    after = [max(0, (-(-extent // stride) - 1) * stride + k - extent - before)
             for extent, k, before in zip(size, kernel, (d["pad_top"], d["pad_left"]))]
    return ConvLayer("flat", d["in_channels"], size, d["in_channels"], kernel, stride,
                     padding=(d["pad_top"], after[0], d["pad_left"], after[1]), groups=d["in_channels"])


def strided_flat(layer):
    """Whether ``layer`` is a stride-2 depthwise layer the flat map runs at stride 1, writing only its even rows and
    columns: output map ``ceil(H/2) x ceil(W/2)``, its top and left padding within the kernel."""
    return (layer.groups == layer.in_channels == layer.out_channels and layer.stride_y == layer.stride_x == 2
            and layer.out_height == -(-layer.in_height // 2) and layer.out_width == -(-layer.in_width // 2)
            and layer.pad_top < layer.kernel_height and layer.pad_left < layer.kernel_width)


def strided_writes(first_position, valid, width, row_elements):
    """The writes that store a slot's lanes of a stride-2 flat pass (stride-1 positions ``first_position ..`` of a map
    ``width`` wide, the first ``valid`` real): the even rows' even columns, output map ``ceil(width/2)`` wide in flat
    layout.  The writer sees the slot's even lanes (``d``: stride-1 lane ``2d``; the group's first position is even);
    output row ``oy`` of the group starts at even lane ``r = (2*oy*width - first_position) / 2``, its output positions
    ``oy*Wo + d - r`` for its lanes ``max(r, 0) <= d < min(r + Wo, ceil(valid/2))``.  Returns per write ``(word,
    offset, first, end)``: output word (from the channel's first), ``offset`` the even lane under its element 0 and the
    lanes it stores, ``first <= lane < end`` (``hw.dqn.flat_word_packer.FlatWordPacker``'s ``offset``, ``first``,
    ``valid``); the rows in order, a row's one or two words in order."""
    out_width, even_valid = -(-width // 2), -(-valid // 2)
    writes = []
    for row in range(first_position // width - first_position // width % 2, first_position + valid, 2):
        lane = (row * width - first_position) // 2
        if lane >= even_valid:
            break
        first, end = max(lane, 0), min(lane + out_width, even_valid)
        if first >= end:
            continue
        row_position = row // 2 * out_width
        for word in range((row_position + first - lane) // row_elements,
                          (row_position + end - 1 - lane) // row_elements + 1):
            writes.append((word, word * row_elements - row_position + lane, first, end))
    return writes


def flat_descriptor_fields(config, layer):
    """A flat pass's own descriptor fields (hw/dqn/descriptor.py) for ``layer``: the words of a channel's map, the first
    window's word (mod the RAM's depth) and element, and the lanes' advance per group of positions (a slot's lanes);
    a stride-2 pass's writes (:func:`strided_writes`): the words of a channel's output map, and per group the first
    written row's even lane back by ``lane_advance`` (``G/2 - a*W``, ``a = (G/2) // W``) and its output position on by
    ``a * Wo`` (``out_advance_word`` words and ``out_advance_element`` elements), one row more where that row ends before
    the group (0 at stride 1)."""
    offset = step_offset(layer, 0, 0)
    fields = {"flat": 1, "channel_words": -(-layer.in_height * layer.in_width // config.row_elements),
              "window_word": (offset // config.row_elements) % config.activation_depth,
              "window_element": offset % config.row_elements,
              "lane_rows": config.flat_group_lanes // layer.in_width,
              "lane_columns": config.flat_group_lanes % layer.in_width}
    if not strided_flat(layer):
        return fields | dict.fromkeys(("out_channel_words", "lane_advance", "out_advance_word", "out_advance_element"),
                                      0)
    rows, lane_advance = divmod(config.flat_group_lanes // 2, layer.in_width)
    advance_word, advance_element = divmod(rows * layer.out_width, config.row_elements)
    return fields | {"out_channel_words": -(-layer.out_height * layer.out_width // config.row_elements),
                     "lane_advance": lane_advance, "out_advance_word": advance_word,
                     "out_advance_element": advance_element}


def maps_per_slot(config, layer):
    """Channels' maps a slot's lanes take in a flat pass of ``layer`` (a stride-1 flat pass, see
    :func:`flat_pass_fits`): 1, or, for maps of at most one word, ``k >= 2`` maps one word apart (channel ``v*k + j``
    of *map group* ``v`` at lanes ``j*F ..`` of the slot, ``F = row_elements``), the most for which ``(k - 1)*F + H*W``
    positions fit the slot's ``G`` lanes, the channels make whole groups of ``S`` slots and no module straddles two
    maps (``F`` a multiple of the lanes).  MobileNet's 3 x 3 maps: two a slot (105 of 128 lanes' positions)."""
    positions, row_elements = layer.in_height * layer.in_width, config.row_elements
    if strided_flat(layer) or positions > row_elements or row_elements % config.lanes:
        return 1
    maps = (config.flat_group_lanes - positions) // row_elements + 1
    while maps > 1 and layer.in_channels % (maps * config.flat_slots):
        maps -= 1
    return max(maps, 1)


def descriptor_maps(descriptor, row_elements):
    """Channels' maps a slot takes in the flat pass of ``descriptor`` (:func:`maps_per_slot`): its ``positions`` run
    ``(k - 1)`` words past the map's ``H * W``."""
    return 1 + max(0, descriptor["positions"] - descriptor["in_height"] * descriptor["in_width"]) // row_elements


def _slot_lane_channels(config, maps):
    """Per lane of the modules, ``(slot, map)``: its slot's channel and which of the slot's ``maps`` maps it covers."""
    lanes = np.arange(config.macs)
    return lanes // config.flat_group_lanes, np.minimum(lanes % config.flat_group_lanes // config.row_elements,
                                                        maps - 1)


def flat_pass_rows(config, width, kernel, bias, maps=1):
    """The weight rows of a flat pass over a map ``width`` wide (raw bits, ``(2 + C/(S*k)*(kh*kw + 1), modules *
    lanes)``, ``S = config.flat_slots`` channel slots of ``G = config.flat_group_lanes`` lanes, ``k = maps`` maps a
    slot: :func:`maps_per_slot`): the lanes' output rows and columns (lane ``i`` of a slot: position ``p = i`` of its
    channel's map, or with ``k > 1`` ``p = i % F`` of map ``i // F``: ``p // width``, ``p % width``; a lane past its
    map's positions is outside every step's bounds), then per group of ``S*k`` channels ``c ..`` their ``kh*kw``
    weights and their bias, channel ``c + s*k + j``'s over the lanes of map ``j`` of slot ``s`` (module ``m`` takes
    weight slot ``m``'s first element as its scalar, the bias row as its seed).  ``kernel`` ``(1, kh, kw, C)`` and
    ``bias`` ``(C,)`` bits of the format, ``C`` a multiple of ``S*k``."""
    lanes = np.arange(config.macs) % config.flat_group_lanes
    positions = lanes % config.row_elements if maps > 1 else lanes
    kernel = np.asarray(kernel)
    steps = kernel.shape[1] * kernel.shape[2]
    per_channel = np.concatenate([kernel.reshape(steps, -1), np.asarray(bias)[None, :]])       # (steps + 1, C)
    slot, lane_map = _slot_lane_channels(config, maps)
    per_group = config.flat_slots * maps
    groups = np.arange(per_channel.shape[1] // per_group)[:, None] * per_group
    channel_rows = per_channel[:, groups + slot * maps + lane_map].transpose(1, 0, 2).reshape(-1, config.macs)
    return np.concatenate([(positions // width)[None, :], (positions % width)[None, :], channel_rows]).astype(np.uint32)


def flat_pass_weights(config, rows, channels, kernel_height, kernel_width, maps=1):
    """``(kernel (1, kh, kw, C), bias (C,))`` back from a flat pass's weight rows (:func:`flat_pass_rows`)."""
    steps, per_group = kernel_height * kernel_width, config.flat_slots * maps
    slot, lane_map = _slot_lane_channels(config, maps)
    firsts = [int(np.flatnonzero((slot == index // maps) & (lane_map == index % maps))[0]) for index in range(per_group)]
    rows = np.asarray(rows).reshape(len(rows), -1)[2:2 + channels // per_group * (steps + 1)][:, firsts]
    per_channel = rows.reshape(channels // per_group, steps + 1, per_group).transpose(0, 2, 1).reshape(channels,
                                                                                                       steps + 1)
    return per_channel[:, :steps].T.reshape(1, kernel_height, kernel_width, channels), per_channel[:, steps]


def flat_map_applies(layer):
    """Whether the flat map runs ``layer`` (a :class:`~models.dqn.network.ConvLayer`): depthwise, stride 1, output rows
    as wide as the input's; or stride 2 as :func:`strided_flat` says."""
    return (layer.groups == layer.in_channels == layer.out_channels and layer.stride_y == layer.stride_x == 1
            and layer.out_width == layer.in_width) or strided_flat(layer)


def flat_words(image, row_elements):
    """``image`` ``[C, H, W]`` in flat layout: ``[C, ceil(H*W / F), F]`` (``F = row_elements``), the elements past
    ``H * W`` of a channel's last word zero."""
    image = np.asarray(image)
    channels = image.shape[0]
    positions = image.shape[1] * image.shape[2]
    words = -(-positions // row_elements)
    flat = np.zeros((channels, words * row_elements), dtype=image.dtype)
    flat[:, :positions] = image.reshape(channels, positions)
    return flat.reshape(channels, words, row_elements)


def step_offset(layer, kernel_row, kernel_column):
    """``d``: flat input position of step ``(kernel_row, kernel_column)`` minus the lane's output position."""
    return (kernel_row - layer.pad_top) * layer.in_width + kernel_column - layer.pad_left


def step_bounds(layer, kernel_row, kernel_column):
    """``(row_low, row_high, column_low, column_high)``: lane ``(oy, ox)`` reads a real element at step
    ``(kernel_row, kernel_column)`` iff ``row_low <= oy < row_high`` and ``column_low <= ox < column_high``."""
    return (layer.pad_top - kernel_row, layer.in_height + layer.pad_top - kernel_row,
            layer.pad_left - kernel_column, layer.in_width + layer.pad_left - kernel_column)


def window_base(layer, row_elements, first_position):
    """The first word (relative to the channel's first word, may be negative) of the window a group starting at
    ``first_position`` loads: the word of its smallest input position."""
    return (first_position + step_offset(layer, 0, 0)) // row_elements


def window_shift(layer, row_elements, first_position, kernel_row, kernel_column):
    """The window element under lane 0 at step ``(kernel_row, kernel_column)``."""
    return (first_position + step_offset(layer, kernel_row, kernel_column)
            - window_base(layer, row_elements, first_position) * row_elements)


def window_words_needed(layer, row_elements, group_lanes):
    """Words a group's window must hold so that every step's shift fits: the largest shift plus ``group_lanes``
    elements, in words (the worst alignment of the first one)."""
    span = row_elements - 1 + step_offset(layer, layer.kernel_height - 1, layer.kernel_width - 1) \
        - step_offset(layer, 0, 0) + group_lanes
    return -(-span // row_elements)


def lane_coordinates(out_width, first_position, group_lanes):
    """``(oy, ox)`` arrays of the ``group_lanes`` lanes' output positions ``first_position + i``."""
    positions = first_position + np.arange(group_lanes)
    return positions // out_width, positions % out_width


def advance_coordinates(rows, columns, out_width, advance):
    """The lanes' coordinates ``advance`` positions on (the next group of the channel): what the hardware's per-lane
    adders do with ``advance // out_width`` rows and ``advance % out_width`` columns."""
    columns = columns + advance % out_width
    wrapped = columns >= out_width
    return rows + advance // out_width + wrapped, np.where(wrapped, columns - out_width, columns)


def lane_operands(memory, channel_word, layer, first_position, kernel_row, kernel_column, group_lanes):
    """The ``group_lanes`` elements the lanes of a group take at step ``(kernel_row, kernel_column)``, by definition:
    lane ``i`` (output position ``q = first_position + i`` of the channel whose flat map starts at word
    ``channel_word`` of ``memory`` ``[depth, F]``) the flat element ``q + d`` where its input position is real, ``+0``
    where it is padding.  Addresses wrap at the RAM's depth (a window may start before the channel's first word)."""
    depth, row_elements = memory.shape
    rows, columns = lane_coordinates(layer.out_width, first_position, group_lanes)
    row_low, row_high, column_low, column_high = step_bounds(layer, kernel_row, kernel_column)
    real = (rows >= row_low) & (rows < row_high) & (columns >= column_low) & (columns < column_high)
    flat = channel_word * row_elements + first_position + np.arange(group_lanes) \
        + step_offset(layer, kernel_row, kernel_column)
    elements = memory.reshape(-1)[flat % (depth * row_elements)]
    return np.where(real, elements, 0).astype(memory.dtype)


def word_writes(first_position, valid, row_elements):
    """The writes that store a slot's lanes (output positions ``first_position ..``, the first ``valid`` of them
    real) in flat layout: per touched word ``j`` (relative to the channel's first word) the ``offset = j*row_elements -
    first_position`` of ``hw.dqn.flat_word_packer.FlatWordPacker`` (element ``e`` takes lane ``offset + e``, enabled
    where ``0 <= offset + e < valid``)."""
    words = range(first_position // row_elements, (first_position + valid - 1) // row_elements + 1)
    return [(word, word * row_elements - first_position) for word in words]


def flat_depthwise(fmt, image, weights, biases, layer, *, adder_latency, relu):
    """A depthwise convolution as the flat map computes it (raw bits of ``fmt``): each output position's lane
    accumulates, from its channel's bias as the seed, the products ``weights[0, kh, kw, c] * input`` in the order
    ``kh, kw`` (the steps), padding as ``+0`` (the lane window's zeros, multiplied like every element), summed in the
    matrix module's order (:func:`~models.dqn.matrix_module.accumulate_products`).  ``image`` ``[C, H, W]``,
    ``weights`` ``(1, kh, kw, C)``, ``biases`` ``(C,)``; returns ``[C, out_height, out_width]``."""
    image = np.asarray(image)
    padded = np.pad(image, ((0, 0), (layer.pad_top, layer.pad_bottom), (layer.pad_left, layer.pad_right)))
    rows, columns = layer.out_height, layer.out_width
    products = [float_mul(fmt, np.asarray(weights)[0, kh, kw, :, None, None],
                          padded[:, kh:kh + rows * layer.stride_y:layer.stride_y,
                                 kw:kw + columns * layer.stride_x:layer.stride_x])
                for kh in range(layer.kernel_height) for kw in range(layer.kernel_width)]
    seed = np.broadcast_to(np.asarray(biases)[:, None, None], (image.shape[0], rows, columns))
    return accumulate_products(fmt, np.stack(products), adder_latency=adder_latency, relu=relu, seed=seed)
