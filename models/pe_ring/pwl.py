"""PWL tables for sigmoid, tanh and Gaussian, the bit-exact model of :class:`hw.pe_ring.pwl_activation.PWLActivation`,
and the approximation error table.

Table construction: segment ``i`` spans ``[x_i, x_i + w)``; its intercept is ``f(x_i)`` and its slope the
chord ``(f(x_i + w) - f(x_i)) / w`` (the line interpolates both segment ends, so the approximation is
continuous before quantisation), each rounded to the nearest raw value of the format.
"""

import numpy as np

from nnaccel.hw.pe_ring.pwl_activation import PWLTable
from nnaccel.models.shared import fixed_point as fx

__all__ = ["FUNCTIONS", "DEFAULT_RANGES", "make_table", "function_table", "sigmoid_table", "evaluate",
           "error_statistics", "error_table"]


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _gaussian(x):
    return np.exp(-0.5 * x * x)


FUNCTIONS = {"sigmoid": _sigmoid, "tanh": np.tanh, "gaussian": _gaussian}
DEFAULT_RANGES = {"sigmoid": 8.0, "tanh": 4.0, "gaussian": 4.0}


def make_table(function, *, fmt, input_range, segments=256, name="pwl"):
    """Chord-interpolation :class:`PWLTable` of the real function ``function`` over ``[-input_range, +input_range)``."""
    if not isinstance(segments, int) or isinstance(segments, bool) or segments < 2:
        raise ValueError(f"segments must be an integer power of two of at least 2, not {segments!r}")
    width = 2.0 * input_range / segments
    left = -input_range + width * np.arange(segments)
    values_left, values_right = function(left), function(left + width)
    slopes = fx.to_raw((values_right - values_left) / width, fmt)
    intercepts = fx.to_raw(values_left, fmt)
    return PWLTable(fmt=fmt, input_range=input_range, slopes=tuple(int(s) for s in slopes),
                    intercepts=tuple(int(b) for b in intercepts), name=name)


def function_table(name, *, fmt, segments=256):
    """The table of :data:`FUNCTIONS` ``[name]`` over its :data:`DEFAULT_RANGES` range."""
    return make_table(FUNCTIONS[name], fmt=fmt, input_range=DEFAULT_RANGES[name], segments=segments, name=name)


def sigmoid_table(*, fmt, segments=256):
    """The ring's activation: the sigmoid over [-8, 8)."""
    return function_table("sigmoid", fmt=fmt, segments=segments)


def evaluate(table, x):
    """The unit's output (raw integers) for raw inputs ``x``, as the hardware computes it."""
    fmt = table.fmt
    offset_max = (2 << table.range_log2) - 1
    offset = np.clip(np.asarray(x, dtype=np.int64) + (1 << table.range_log2), 0, offset_max)
    index = offset >> table.segment_shift
    dx = offset & ((1 << table.segment_shift) - 1)
    slopes = np.asarray(table.slopes, dtype=np.int64)[index]
    intercepts = np.asarray(table.intercepts, dtype=np.int64)[index]
    return fx.mac(intercepts, slopes, dx, fmt)


def error_statistics(table, function):
    """(max, mean) absolute error against ``function`` over every representable input of the range."""
    fmt = table.fmt
    x = np.arange(-(1 << table.range_log2), 1 << table.range_log2, dtype=np.int64)
    error = np.abs(fx.to_float(evaluate(table, x), fmt) - function(fx.to_float(x, fmt)))
    return float(error.max()), float(error.mean())


def error_table(formats, segment_counts=(16, 64, 256)):
    """Rows (function, format name, input range, segments, max error, mean error) for the printed table."""
    rows = []
    for fmt in formats:
        for name, function in FUNCTIONS.items():
            for segments in segment_counts:
                table = function_table(name, fmt=fmt, segments=segments)
                rows.append((name, fmt.name, DEFAULT_RANGES[name], segments, *error_statistics(table, function)))
    return rows
