"""DCP's predictor features: the 7-entry layer code (``dse.shared.layer.Layer.to_code``) and relaxed dataflow codes
(``dse.shared.dataflow_code``) as the predictor reads them.

Features are the log2 of every size and bound, so that products (tiles, steps, PEs used) are sums the network
sees directly.
"""

import numpy as np

from nnaccel.dse.shared.layer import LayerType

LAYER_FEATURES = 10     # log2 Y X R S K C, log2 stride, one-hot T (conv, depthwise, dense)


def layer_features(layers):
    """(batch, 10) float32 features of a sequence of ``Layer``: the layer code in log2 (types
    one-hot) plus the stride."""
    rows = []
    for layer in layers:
        y, x, r, s, k, c, layer_type = layer.to_code()
        one_hot = [float(layer_type == t) for t in LayerType]
        rows.append([*np.log2([y, x, r, s, k, c, layer.stride]), *one_hot])
    return np.asarray(rows, dtype=np.float32).reshape(-1, LAYER_FEATURES)


def relaxed_features(relaxed):
    """Predictor input of relaxed codes (batch, M, N, 2): slots scaled to 0..1 and log2 sizes,
    flattened to (batch, M * N * 2). Works on NumPy arrays and torch tensors alike."""
    dims = relaxed.shape[-2]
    scaled = relaxed[..., 0:1] / (dims - 1)
    both = (np.concatenate if isinstance(relaxed, np.ndarray) else _torch_cat)(
        [scaled, relaxed[..., 1:2]], -1)
    return both.reshape(relaxed.shape[0], -1)


def _torch_cat(parts, axis):
    import torch

    return torch.cat(parts, dim=axis)
