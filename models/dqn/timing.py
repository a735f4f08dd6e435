"""The DQN accelerator's timing, cycle for cycle: the four per-pass counters of a batch of passes (NumPy).

One implementation serves the compiler (:mod:`models.dqn.plan`, one pass at a time) and the design-space cost
model (:mod:`dse.shared.rtl_cost`, batches of thousands): :func:`pass_counters` takes arrays (or scalars) of pass
parameters and returns the counters the hardware reads back for each pass (docs/dqn_accelerator.md, "Host
interface"): ``cycles``, ``product_cycles``, ``stall_cycles`` and ``drain_cycles``.

The sequencer (hw/dqn/sequencer.py) runs a pass of ``n`` positions in ``G = ceil(n / P)`` groups of ``P``
positions; group ``g`` takes ``products + 1`` product cycles (the last one the bias).  Counted from the pass's
first cycle:

* set-up: ``3 + k_0`` cycles: load the descriptor, start the position walker, wait while it walks the ``k_0 =
  min(P, n)`` positions of the first group, read the first rows;
* group ``g``'s first product ``f_g`` and bias product ``b_g`` (``f_0`` = the set-up's end, ``b_0 = f_0 +
  products``)::

      f_g = max(b_{g-1} + 1, f_{g-1} + k_g + 1)            # the walker, started at f_{g-1}, needs k_g cycles
      b_g = max(f_g + products, b_{g-1} + L + W_{g-1} + 3)  # group g-1 must be written: latency L, W writes

  where ``k_g = min(P, n - g*P)`` and ``W_g`` is the result writer's writes of group ``g``: per output channel
  one row write per output row the group touches (image layout: one or two rows), one write per channel block
  (packed), or one per channel block and position (position-major);
* the drain: ``L + W_{G-1} + 3`` cycles after the last bias product (results out of the matrix modules, the
  last group's writes, the writer's done, the sequencer's next state).

:func:`pass_writes` counts the writer's writes of a whole pass, ``sum_g W_g`` (closed form: the groups that
cross an output row are counted with floor sums), for the energy model.

Product cycles are ``G * (products + 1)``; stall cycles are the cycles the recurrences add to them (a first
product waiting for its taps, a bias product waiting for the writer).  A pass without stalls
(``k_g <= products`` and ``L + W_g + 2 <= products`` for every group, always the case for the thesis network)
takes ``3 + k_0 + G * (products + 1) + L + W_{G-1} + 3`` cycles; the others are evaluated group by group,
vectorized over the passes that can stall.
"""

import numpy as np

__all__ = ["IMAGE", "PACKED", "POSITION_MAJOR", "LAYOUTS", "pass_counters", "pass_writes"]

IMAGE, PACKED, POSITION_MAJOR = 0, 1, 2
LAYOUTS = {"image": IMAGE, "packed": PACKED, "position_major": POSITION_MAJOR}


def _group_writes(layout, out_channels, lanes, valid, first_column, out_width):
    """Result-writer writes of a group of ``valid`` positions whose first position is in column
    ``first_column`` of an output grid ``out_width`` wide."""
    blocks = -(-out_channels // lanes)
    rows = 1 + (first_column + valid > out_width)
    return np.where(layout == IMAGE, out_channels * rows, np.where(layout == POSITION_MAJOR, blocks * valid, blocks))


def pass_counters(*, positions_per_group, count, products, latency, out_channels, lanes, layout, first_column,
                  out_width):
    """The counters of each pass (arrays broadcast together; int64 results), as the module docstring derives.

    ``positions_per_group`` P (= modules / column blocks), ``count`` positions of the pass, ``products`` per
    group (without the bias), ``latency`` of the matrix modules, ``out_channels``, ``lanes``, ``layout``
    (:data:`IMAGE`, :data:`PACKED` or :data:`POSITION_MAJOR`), ``first_column``: the output column of the
    pass's first position, ``out_width``: the output grid's width.
    Returns a dict of ``cycles``, ``product_cycles``, ``stall_cycles``, ``drain_cycles``.
    """
    arrays = np.broadcast_arrays(*(np.asarray(value, dtype=np.int64) for value in (
        positions_per_group, count, products, latency, out_channels, lanes, layout, first_column, out_width)))
    shape = arrays[0].shape
    P, n, products, latency, out_channels, lanes, layout, first_column, out_width = (array.ravel() for array in arrays)
    groups = -(-n // P)
    last_valid = n - (groups - 1) * P

    def writes(group, valid):
        return _group_writes(layout, out_channels, lanes, valid, (first_column + group * P) % out_width, out_width)

    last_writes = writes(groups - 1, last_valid)
    product_cycles = groups * (products + 1)
    drain = latency + last_writes + 3
    stalls = np.zeros_like(product_cycles)
    # Stalls are possible only where a group's walk or the previous group's writes outlast its products.
    most_writes = _group_writes(layout, out_channels, lanes, P, out_width - 1, out_width)
    stalling = np.flatnonzero((groups > 1) & ((P > products) | (latency + most_writes + 2 > products)))
    if stalling.size:
        stalls[stalling] = _stall_cycles(*(array[stalling] for array in (
            P, n, groups, products, latency, out_channels, lanes, layout, first_column, out_width)))
    cycles = 3 + np.minimum(P, n) + product_cycles + stalls + drain
    return {name: values.reshape(shape) for name, values in (
        ("cycles", cycles), ("product_cycles", product_cycles), ("stall_cycles", stalls), ("drain_cycles", drain))}


def _stall_cycles(P, n, groups, products, latency, out_channels, lanes, layout, first_column, out_width):
    """The recurrences of the module docstring, group by group, for passes that may stall."""
    first = np.zeros_like(n)                  # f_g relative to f_0
    bias = first + products                   # b_g
    previous_writes = _group_writes(layout, out_channels, lanes, np.minimum(P, n), first_column % out_width,
                                    out_width)
    for group in range(1, int(groups.max())):
        active = group < groups
        walk = np.minimum(P, n - group * P)
        next_first = np.maximum(bias + 1, first + walk + 1)
        next_bias = np.maximum(next_first + products, bias + latency + previous_writes + 3)
        first = np.where(active, next_first, first)
        bias = np.where(active, next_bias, bias)
        previous_writes = _group_writes(layout, out_channels, lanes, np.clip(walk, 0, None),
                                        (first_column + group * P) % out_width, out_width)
    return bias + 1 - groups * (products + 1)


def _floor_sum(n, m, a, b):
    """``sum_{i=0}^{n-1} floor((a*i + b) / m)`` element-wise (``n >= 0``, ``m >= 1``, ``a, b >= 0``), by the
    Euclid-like reduction of the sum (each round swaps the roles of ``a`` and ``m``)."""
    n, m, a, b = (np.array(value, dtype=np.int64) for value in np.broadcast_arrays(n, m, a, b))
    total = np.zeros_like(n)
    active = n > 0
    while active.any():
        total += np.where(active, n * (n - 1) // 2 * (a // m) + n * (b // m), 0)
        a, b = a % m, b % m
        top = a * n + b
        active &= top >= m
        n, b, m, a = (np.where(active, top // m, n), np.where(active, top % m, b), np.where(active, a, m),
                      np.where(active, m, a))
    return total


def pass_writes(*, positions_per_group, count, out_channels, lanes, layout, first_column, out_width):
    """The result writer's writes over a whole pass (arrays broadcast together, int64): per group ``W_g`` as in
    the module docstring; in image layout a group writes two rows per channel when it crosses an output row."""
    P, n, out_channels, lanes, layout, first_column, out_width = np.broadcast_arrays(*(
        np.asarray(value, dtype=np.int64) for value in (positions_per_group, count, out_channels, lanes, layout,
                                                        first_column, out_width)))
    groups = -(-n // P)
    blocks = -(-out_channels // lanes)
    last_column = (first_column + (groups - 1) * P) % out_width
    last_crosses = last_column + n - (groups - 1) * P > out_width
    full_crossings = (_floor_sum(groups - 1, out_width, P, first_column + P - 1)
                      - _floor_sum(groups - 1, out_width, P, first_column))
    image = out_channels * (groups + full_crossings + last_crosses)
    return np.where(layout == IMAGE, image, np.where(layout == POSITION_MAJOR, blocks * n, blocks * groups))
