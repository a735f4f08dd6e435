"""Bit-exact golden model of the DQN accelerator: a compiled :class:`models.dqn_plan.Plan`, run in the hardware's order.

Each layer is what the matrix modules compute (docs/dqn_accelerator.md, "Mapping a layer"): for every output
position and output channel, the products ``float_mul(input scalar, weight)`` in the order
``c, kh, kw`` then ``float_mul(1.0, bias)``, summed by :func:`models.matrix_module.accumulate_products`
(interleaved partial sums starting at ``-0``, pairwise tree, ReLU).  The layer is vectorised over all
positions and channels at once (channels past the layer's output count, with zero weights, are computed and
dropped, as the hardware's result writer drops them).  The padding elements of a packed output are never
written: they read as the RAM's initial ``+0`` when the next layer multiplies them by their zero weights.
The action is the argmax over the last layer's outputs by the hardware's total order on the encodings
(``-0 < +0``; ties -> lowest index).
"""

from dataclasses import dataclass

import numpy as np

from models.float_arith import float_mul
from models.dqn_plan import unpack_image
from models.matrix_module import accumulate_products

__all__ = ["GoldenRun", "golden_forward", "golden_layer", "hardware_argmax", "order_key"]


@dataclass
class GoldenRun:
    activations: list     # per layer: the output tensor's words, (words, row_elements) raw bits
    q_values: np.ndarray  # (actions,) raw bits of the last layer's outputs
    action: int
    action_value: int     # raw bits of q_values[action]


def order_key(fmt, bits):
    """Unsigned keys ordering the encodings as the hardware's comparator: -NaN < -inf < ... < -0 < +0 < ... < +NaN."""
    bits = np.asarray(bits, dtype=np.uint64)
    sign = bits >> np.uint64(fmt.width - 1) & np.uint64(1)
    mask = np.uint64((1 << fmt.width) - 1)
    return bits ^ np.where(sign == 1, mask, np.uint64(1 << (fmt.width - 1)))


def hardware_argmax(fmt, bits):
    """Index of the largest encoding by :func:`order_key`; the lowest index among equals."""
    return int(np.argmax(order_key(fmt, bits)))


def _windows(layer, image):
    """``(positions, products)`` input scalars: row ``p`` lists the window of output position ``p`` in step order."""
    d = layer.descriptor
    kernel, stride = (d["kernel_height"], d["kernel_width"]), d["stride"]
    view = np.lib.stride_tricks.sliding_window_view(image, kernel, axis=(1, 2))[:, ::stride, ::stride]
    view = view[:, :d["out_height"], :d["out_width"]]                    # (C, oy, ox, kh, kw)
    return view.transpose(1, 2, 0, 3, 4).reshape(d["positions"], d["products"])


def golden_layer(config, layer, image):
    """One layer on its input tensor ``image`` (``layer.input.shape``, raw bits): ``(positions, C * lanes)`` bits."""
    fmt = config.fmt
    scalars = _windows(layer, np.asarray(image))
    products = float_mul(fmt, scalars.T[:, :, None], layer.weights[:, None, :])   # (products, positions, channels)
    one = np.full((1, scalars.shape[0], 1), np.float32(1.0).view(np.uint32))
    bias_product = float_mul(fmt, one, layer.bias[None, None, :])
    return accumulate_products(fmt, np.concatenate([products, bias_product]),
                               adder_latency=config.adder_latency, relu=bool(layer.descriptor["relu"]))


def _output_words(config, layer, results):
    """The layer's results ``(positions, C * lanes)`` as its output tensor's words (what the result writer stores)."""
    d = layer.descriptor
    words = np.zeros((layer.output.words, config.row_elements), np.uint32)
    if layer.output.packed:
        flat = np.zeros(layer.output.words * config.lanes, np.uint32)
        flat[:d["out_channels"]] = results[0, :d["out_channels"]]
        words[:, :config.lanes] = flat.reshape(-1, config.lanes)
    else:
        image = results[:, :d["out_channels"]].T.reshape(d["out_channels"], d["out_height"], d["out_width"])
        words[:, :d["out_width"]] = image.reshape(-1, d["out_width"])
    return words


def golden_forward(plan, state):
    """Run ``plan`` on one network input (float32, the first layer's input shape): a :class:`GoldenRun`."""
    config = plan.config
    words = plan.input_words(state)
    activations = []
    for layer in plan.layers:
        results = golden_layer(config, layer, unpack_image(layer.input, words))
        words = _output_words(config, layer, results)
        activations.append(words)
    q_values = plan.output_values(words)
    action = hardware_argmax(config.fmt, q_values)
    return GoldenRun(activations=activations, q_values=q_values, action=action, action_value=int(q_values[action]))
