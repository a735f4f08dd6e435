"""The files through which :func:`sim.harness.simulate` talks to a cocotb test module.

The harness writes ``stimulus.npz`` and ``config.json`` into the run directory and names them
in the environment; the test module reads them with :func:`load_stimulus` and
:func:`load_config` and hands its observations back with :func:`save_outputs`.
"""

import json
import os

import numpy as np


def _path(variable):
    try:
        return os.environ[variable]
    except KeyError:
        raise RuntimeError(f"{variable} is not set: run this cocotb module through sim.harness.simulate") from None


def load_stimulus():
    with np.load(_path("NNACCEL_STIMULUS")) as archive:
        return {name: archive[name] for name in archive.files}


def load_config():
    with open(_path("NNACCEL_CONFIG")) as config_file:
        return json.load(config_file)


def save_outputs(**arrays):
    np.savez(_path("NNACCEL_OUTPUTS"), **arrays)


def pack_lanes(values, bits):
    """Python ints from an (N,) or (N, lanes) unsigned array: lane 0 in the least significant bits."""
    values = np.asarray(values)
    if values.ndim == 1:
        return [int(v) for v in values]
    packed = [0] * values.shape[0]
    for lane in range(values.shape[1]):
        shift = lane * bits
        packed = [word | (int(v) << shift) for word, v in zip(packed, values[:, lane])]
    return packed


def unpack_lanes(words, lanes, bits):
    """Inverse of :func:`pack_lanes`: an (N,) array for one lane, else (N, lanes); uint64 lanes."""
    mask = (1 << bits) - 1
    if lanes == 1:
        return np.array([w & mask for w in words], dtype=np.uint64)
    return np.array([[(w >> (lane * bits)) & mask for lane in range(lanes)] for w in words],
                    dtype=np.uint64).reshape(len(words), lanes)
