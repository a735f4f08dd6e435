"""Per-action energy and area at 45 nm, read from ``data/energy_45nm.json`` (each figure with its
published source there; see docs/dse.md).

- MAC energy and area per number format (multiply + add).
- Storage access energy per word by size (SRAM law through the published 8 KiB / 32 KiB / 1 MiB
  points, log-log), for the register files and the global buffer alike; off-chip (HBM) per word.
- Register-file area per word (flip-flops) and SRAM area per KiB.

Functions take NumPy arrays (or scalars) and return float64 arrays, so the cost model stays
vectorized.
"""

import json
from functools import cache
from importlib import resources

import numpy as np

TABLE_FILE = "energy_45nm.json"


@cache
def table():
    """The parsed data file."""
    text = resources.files("nnaccel.dse.shared").joinpath("data", TABLE_FILE).read_text()
    return json.loads(text)


def mac_pj(number_format):
    entry = table()["mac"][number_format]
    return entry["multiply_pj"] + entry["add_pj"]


def multiply_pj(number_format):
    return table()["mac"][number_format]["multiply_pj"]


def add_pj(number_format):
    return table()["mac"][number_format]["add_pj"]


def mac_um2(number_format):
    entry = table()["mac"][number_format]
    return entry["multiply_um2"] + entry["add_um2"]


def storage_pj_per_word(words, word_bits):
    """Energy of one read or write of one word of a storage of ``words`` words."""
    points = table()["sram"]["read_pj_per_64_bits"]
    log_kib = np.log([p["kib"] for p in points])
    log_pj = np.log([p["pj"] for p in points])
    size_kib = np.asarray(words, dtype=np.float64) * np.asarray(word_bits) / 8 / 1024
    x = np.log(size_kib)
    segment = np.clip(np.searchsorted(log_kib, x) - 1, 0, len(points) - 2)
    slope = (log_pj[segment + 1] - log_pj[segment]) / (log_kib[segment + 1] - log_kib[segment])
    pj_per_64_bits = np.exp(log_pj[segment] + slope * (x - log_kib[segment]))
    return pj_per_64_bits * np.asarray(word_bits) / 64


def dram_pj_per_word(word_bits):
    return table()["dram"]["hbm_pj_per_bit"] * np.asarray(word_bits, dtype=np.float64)


def register_file_um2_per_word(word_bits):
    return table()["area"]["flip_flop_um2"] * np.asarray(word_bits, dtype=np.float64)


def sram_um2_per_kib():
    area = table()["area"]
    return 8192 * area["sram_cell_um2"] / area["sram_array_efficiency"]
