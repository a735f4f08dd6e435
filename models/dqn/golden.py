"""Bit-exact golden model of the DQN accelerator: a compiled :class:`models.dqn.plan.Plan`, run pass by pass on
the two activation RAMs in the hardware's order and number format (``config.fmt``: every product and sum rounded
to nearest even in that format by :mod:`models.shared.float_arith`).

A pass is what the matrix modules compute (docs/dqn_accelerator.md, "Mapping a layer"): group position ``q``
of output position ``p`` (``q = (p - first) mod P``) and column block ``b`` run on module ``m = q*C + b``, whose
vector on step ``k`` is slot ``m`` of weight row ``k``; its scalars are the window of ``p`` in the order
``c, kh, kw``; the accumulation starts from slot ``m`` of the bias row (the row after the products) as its seed.  A reduction pass takes, on step ``k``, scalar ``1.0`` and
vector = elements ``m*lanes ..`` of input word ``in_base + (p - first) + k*step_distance`` (a K-split's sum: one
position, distance 1; a residual add: one row word per position, the addends ``step_distance`` words apart).  The products are summed by
:func:`models.dqn.matrix_module.accumulate_products` (interleaved partial sums starting at ``-0``, pairwise tree,
ReLU), vectorised over all positions of the pass; channels past the output count are computed and dropped,
as the result writer drops them.  Results are stored as the writer stores them (image, packed or
position-major layout) into RAMs that start as all ``+0``: elements never written read as ``+0``.
A max-pooling pass (descriptor bit ``maximum``) takes the
largest product instead of the sum, from the same seed (its bias row: ``-inf``).
The action is the argmax over the outputs of the passes with the ``last`` bit (with ``argmax_tiles`` every channel
tile of the last layer, the running maximum carried from tile to tile, the index offset by the tile's first channel;
without it the run's last pass alone, indexed within it: a channel-tiled last layer's last tile) by the hardware's
total order on the encodings (``-0 < +0``; ties -> lowest index).  A convolution
reads its padding (rows above and below the image, columns left of it and past its width) as ``+0``.
A flat pass (descriptor bit ``flat``) is :func:`models.dqn.flat_map.flat_depthwise` on its input read from the flat
layout, its outputs stored in flat layout (each channel's output map, nothing past it; a stride-2 pass's channels
``out_channel_words`` apart).
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.models.shared.float_arith import float_mul
from nnaccel.models.dqn.flat_map import descriptor_maps, flat_depthwise, flat_layer, flat_pass_weights
from nnaccel.models.dqn.plan import unpack_image
from nnaccel.models.dqn.matrix_module import accumulate_products

__all__ = ["GoldenRun", "golden_forward", "golden_pass", "hardware_argmax", "order_key", "running_argmax"]


@dataclass
class GoldenRun:
    activations: list     # per pass: its output tensor's words after the run, (words, row_elements) raw bits
    q_values: np.ndarray  # (actions,) raw bits of the last layer's outputs
    action: int
    action_value: int     # raw bits of q_values[action]
    rams: np.ndarray      # (2, activation_depth, row_elements): both activation RAMs after the run


def order_key(fmt, bits):
    """Unsigned keys ordering the encodings as the hardware's comparator: -NaN < -inf < ... < -0 < +0 < ... < +NaN."""
    bits = np.asarray(bits, dtype=np.uint64)
    sign = bits >> np.uint64(fmt.width - 1) & np.uint64(1)
    mask = np.uint64((1 << fmt.width) - 1)
    return bits ^ np.where(sign == 1, mask, np.uint64(1 << (fmt.width - 1)))


def hardware_argmax(fmt, bits):
    """Index of the largest encoding by :func:`order_key`; the lowest index among equals."""
    return int(np.argmax(order_key(fmt, bits)))


def _positions(layer):
    d = layer.descriptor
    return np.arange(d["first_position"], d["positions"])


def _windows(layer, image, positions):
    """``(positions, products)`` input scalars: row ``i`` lists the window of ``positions[i]`` in step order, the
    padding's elements ``+0``."""
    d = layer.descriptor
    kernel, stride_y, stride_x = (d["kernel_height"], d["kernel_width"]), d["stride_y"], d["stride_x"]
    top, left = d["pad_top"], d["pad_left"]
    out_height = -(-d["positions"] // d["out_width"])       # the walk's rows (out_height may be a second grid's)
    rows = max(0, (out_height - 1) * stride_y + kernel[0] - top - image.shape[1])
    columns = max(0, (d["out_width"] - 1) * stride_x + kernel[1] - left - image.shape[2])
    padded = np.pad(image, ((0, 0), (top, rows), (left, columns)))
    view = np.lib.stride_tricks.sliding_window_view(padded, kernel, axis=(1, 2))[:, ::stride_y, ::stride_x]
    view = view[:, :out_height, :d["out_width"]]                         # (C, oy, ox, kh, kw)
    flat = view.transpose(1, 2, 0, 3, 4).reshape(-1, d["products"])
    return flat[positions]


def golden_pass(config, layer, rams):
    """One pass on ``rams`` ((2, depth, row_elements) raw bits): ``(positions, C * lanes)`` result bits."""
    fmt, lanes, blocks = config.fmt, config.lanes, layer.column_blocks
    positions = _positions(layer)
    group_position = (positions - positions[0]) % layer.positions_per_group
    modules = group_position[:, None] * blocks + np.arange(blocks)[None, :]          # (positions, C)
    slots = layer.weight_words.reshape(-1, config.modules, lanes)
    vectors = slots[:, modules].reshape(slots.shape[0], len(positions), blocks * lanes)
    d = layer.descriptor
    one = fmt.bias << fmt.mantissa_bits                                              # 1.0 in the format
    if layer.reduce:
        # Step k of position p: word in_base + (p - first_position) + k*step_distance (addresses wrap); modules
        # whose lanes lie past the word take their (zero) weight slot: +0, as the zero-padded word gives.
        addresses = d["in_base"] + (positions - d["first_position"])[:, None] + \
            np.arange(d["products"])[None, :] * d["step_distance"]
        words = np.zeros((len(positions), d["products"], config.modules * lanes), np.uint32)
        used = min(config.row_elements, config.modules * lanes)
        words[:, :, :used] = rams[d["in_ram"], addresses % config.activation_depth, :used]
        reduced = np.stack([words[index, :, module * lanes:(module + 1) * lanes]
                            for index in range(len(positions)) for module in modules[index]], 1)
        products = float_mul(fmt, np.full(reduced.shape, one), reduced).reshape(d["products"], len(positions), -1)
    else:
        image = unpack_image(layer.input, rams[layer.input.ram, layer.input.base:])
        scalars = _windows(layer, image, positions)
        products = float_mul(fmt, scalars.T[:, :, None], vectors[:-1])
    # The bias row (the weight row after the products) is the accumulation's seed: partial 0 starts from it.
    return accumulate_products(fmt, products, adder_latency=config.adder_latency, relu=bool(d["relu"]),
                               seed=vectors[-1], maximum=bool(d.get("maximum", 0)))


def _flat_pass(config, layer, rams):
    """A flat pass on ``rams``, its outputs stored."""
    d = layer.descriptor
    maps = descriptor_maps(d, config.row_elements)          # several one-word maps a slot: each a channel
    channels, height, width = d["in_channels"] * maps, d["in_height"], d["in_width"]
    positions, words = height * width, d["channel_words"] // maps
    addresses = (d["in_base"] + np.arange(channels * words)) % config.activation_depth
    image = rams[d["in_ram"], addresses].reshape(channels, -1)[:, :positions].reshape(channels, height, width)
    weights, biases = flat_pass_weights(config, layer.weight_words, channels, d["kernel_height"], d["kernel_width"],
                                        maps)
    # With several maps a slot, the lanes past a map compute the rows below it (zeros read as padding) and the writer
    # stores them in the rest of the map's word, but for the slot's last map.
    rows = -(-config.row_elements // width) if maps > 1 else height
    image = np.concatenate([image, np.zeros((channels, rows - height, width), image.dtype)], axis=1)
    results = flat_depthwise(config.fmt, image, weights, biases, flat_layer(d | {"in_channels": channels,
                                                                              "in_height": rows}),
                             adder_latency=config.adder_latency, relu=bool(d["relu"]))
    out = rams[d["out_ram"]].reshape(-1)
    # A stride-2 pass's output map has channels of out_channel_words words.
    starts = (d["out_base"] + np.arange(channels) * (d["out_channel_words"] or words)) * config.row_elements
    for channel, start in enumerate(starts):
        stored = config.row_elements if channel % maps < maps - 1 else results[channel, :height].size
        out[start:start + stored] = results[channel].reshape(-1)[:stored]


def _store(config, layer, results, rams):
    """Write ``results`` as the result writer does."""
    d = layer.descriptor
    channels, lanes = d["out_channels"], config.lanes
    ram = rams[d["out_ram"]]
    if d["position_major"]:
        for index, position in enumerate(_positions(layer)):
            ram[d["out_base"] + position - d["first_position"], :channels] = results[index, :channels]
    elif d["packed_output"]:
        for block in range(-(-channels // lanes)):
            count = min(lanes, channels - block * lanes)
            ram[d["out_base"] + block, :count] = results[0, block * lanes:block * lanes + count]
    else:
        out_height, out_width = d["out_height"], d.get("write_width") or d["out_width"]   # the writer's grid
        for index, position in enumerate(_positions(layer)):
            oy, ox = divmod(int(position), out_width)
            ram[d["out_base"] + np.arange(channels) * out_height + oy, ox] = results[index, :channels]


def golden_forward(plan, state):
    """Run ``plan`` on one network input (float32, the first layer's input shape): a :class:`GoldenRun`."""
    config = plan.config
    rams = np.zeros((2, config.activation_depth, config.row_elements), np.uint32)
    words = plan.input_words(state)
    rams[plan.input.ram, plan.input.base:plan.input.base + len(words)] = words
    for layer in plan.layers:
        if layer.descriptor.get("flat"):
            _flat_pass(config, layer, rams)
        else:
            _store(config, layer, golden_pass(config, layer, rams), rams)
    # Read after the run, as the host reads them: a split layer's reduction pass completes its main pass's tensor.
    activations = [rams[layer.output.ram, layer.output.base:layer.output.base + layer.output.words].copy()
                   for layer in plan.layers]
    q_values = plan.output_values(activations[-1])
    channel = running_argmax(config, plan.argmax_passes, q_values)
    # Without argmax_tiles the ACTION register indexes the last pass's channels (a channel tile's: its own).
    action = channel if config.argmax_tiles else channel - plan.layers[-1].first_channel
    return GoldenRun(activations=activations, q_values=q_values, action=action, action_value=int(q_values[channel]),
                     rams=rams)


def running_argmax(config, passes, q_values):
    """The output channel the argmax holds after ``passes`` (those with the ``last`` bit, in run order) wrote their
    channels of ``q_values``: the running maximum carried from pass to pass, a later pass taking it only with a
    larger value (ties keep the earlier, lower channel)."""
    best = None
    for layer in passes:
        first = layer.first_channel
        candidate = first + hardware_argmax(config.fmt, q_values[first:first + layer.out_channels])
        if best is None or order_key(config.fmt, q_values[candidate]) > order_key(config.fmt, q_values[best]):
            best = candidate
    return best
