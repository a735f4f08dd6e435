"""The DQN accelerator's timing, cycle for cycle: the four per-pass counters of a batch of passes (NumPy).

One implementation serves the compiler (:mod:`models.dqn.plan`, one pass at a time) and the design-space cost
model (:mod:`dse.rtl.cost_model`, batches of thousands): :func:`pass_counters` takes arrays (or scalars) of pass
parameters and returns the counters the hardware reads back for each pass (docs/dqn_accelerator.md, "Host
interface"): ``cycles``, ``product_cycles``, ``stall_cycles`` and ``drain_cycles``.

The sequencer (hw/dqn/sequencer.py) runs a pass of ``n`` positions in ``G = ceil(n / P)`` groups of ``P``
positions; group ``g`` takes ``products`` product cycles (the bias is the accumulations' seed, read with the
first product).  Counted from the pass's first cycle:

* set-up: ``3 + k_0`` cycles: load the descriptor, start the position walker, wait while it walks the ``k_0 =
  min(P, n)`` positions of the first group, read the first rows;
* group ``g``'s first product ``f_g`` and last product ``b_g`` (``f_0`` = the set-up's end, ``b_0 = f_0 +
  products - 1``)::

      f_g = max(b_{g-1} + 1, f_{g-1} + k_g + 1)                # the walker, started at f_{g-1}, needs k_g cycles
      b_g = max(f_g + products - 1, b_{g-1} + L + W_{g-1} + 3)  # group g-1 must be written: latency L, W writes

  where ``k_g = min(P, n - g*P)`` and ``W_g`` is the result writer's write cycles of group ``g``: in image layout
  one row write per output channel and output row the group touches (one or two rows), two a cycle (both ports
  of the output RAM: ``out_channels`` cycles on two rows, ``ceil(out_channels / 2)`` on one), except in a
  reduction's groups before its last (it reads the RAM it writes on port 1: one write a cycle); one write per
  channel block (packed), or one per channel block and position (position-major), one a cycle;
* a residual add (layout :data:`ROW_WORDS`: two products per row word, one group per word) writes a group's word
  whole on the cycle the writer says done (``W = 0``: written ``L + 2`` cycles after its last product), and its
  groups after its first do not wait for the writer, which takes an add's word every two cycles: for them
  ``b_g = max(f_g + 1, b_{g-1} + 2)``, two cycles per word;
* the drain: ``L + W_{G-1} + 3`` cycles after the last product (results out of the matrix modules, the
  last group's writes, the writer's done, the sequencer's next state), paid only by a run's last pass;
* a run's later passes start on the cycle after the previous pass's last product ``b'`` and set up while
  its last group drains (its ``L + W'`` cycles, ``W'`` that group's write cycles; written on ``b' + L + W' + 2``).
  A pass that reads the RAM the previous one writes waits for those writes (on both ports) before its first
  read: its set-up is ``3 + max(k_0, L + W')`` and the ``max(0, L + W' - k_0)`` cycles past its walk are its
  drain cycles.  A pass that reads the other RAM sets up in ``3 + k_0``; its first group's last product waits
  for the writes (``b_0 >= f_0 + L + W' - 1 - k_0``, stall cycles).  A *handoff* (a descriptor bit the compiler
  sets, :func:`models.dqn.plan.pass_handoffs`) lets a pass read the RAM its predecessor writes without waiting:
  the predecessor writes its last group on port 1 alone, one write a cycle (``W'`` = its row writes), while the
  pass reads on port 0; it then sets up in ``3 + k_0`` like a pass that reads the other RAM, with the same
  earliest last product.  A pass's counters run from its first cycle
  to its last product (to its drain's end for the run's last pass), so the passes' cycles add up to TOTAL_CYCLES.

:func:`pass_writes` counts the writer's row writes of a whole pass (closed form: the groups that cross an output
row are counted with floor sums), for the energy model: as many with one write port as with two.

Product cycles are ``G * products``; stall cycles are the cycles the recurrences add to them (a first product
waiting for its taps, a last product waiting for the writer).  A pass without stalls (``k_g <= products - 1`` and
``L + W_g + 3 <= products`` for every group, always the case for the thesis network) run alone takes ``3 + k_0 +
G * products + L + W_{G-1} + 3`` cycles.  The ``reduce`` flag only matters for a reduction in image layout (the
sum of a split convolution) with more than one group.  Where only one kind of stall can happen the stalls are a
closed form (:func:`pass_counters`); passes where both can happen are evaluated group by group, vectorized over them.
"""

import numpy as np

__all__ = ["IMAGE", "PACKED", "POSITION_MAJOR", "ROW_WORDS", "LAYOUTS", "pass_counters", "pass_writes"]

# ROW_WORDS: a residual add's output, one row word per position (group), written whole in one cycle; the add's
# groups after its first do not wait for the writer.
IMAGE, PACKED, POSITION_MAJOR, ROW_WORDS = 0, 1, 2, 3
LAYOUTS = {"image": IMAGE, "packed": PACKED, "position_major": POSITION_MAJOR, "row_words": ROW_WORDS}

# A residual add's groups: the writer takes one every two cycles (capture, then the word's write with its done).
ROW_WORDS_GAP = 2


def _word_writes(layout, blocks, valid):
    """Write cycles of a group of ``valid`` positions in a layout other than the image: one per channel block
    (packed), per block and position (position-major), per position (row words)."""
    return np.where(layout == POSITION_MAJOR, blocks * valid, np.where(layout == ROW_WORDS, valid, blocks))


def _word_write_cycles(layout, blocks, valid):
    """``W`` of such a group in the timing: its write cycles before the writer's done, except an add's word, written
    on the cycle the writer says done (``W = 0``: the group is written ``L + 2`` cycles after its last product)."""
    return np.where(layout == ROW_WORDS, 0, _word_writes(layout, blocks, valid))


def _writer_gap(layout, latency, writes):
    """The fewest cycles from a group's last product to the next group's: the previous group must be written
    (``L + W + 3``), except in an add, whose writer keeps pace with its groups (:data:`ROW_WORDS_GAP`)."""
    return np.where(layout == ROW_WORDS, ROW_WORDS_GAP, latency + writes + 3)


def _group_writes(layout, out_channels, lanes, valid, first_column, out_width):
    """Result-writer row writes of a group of ``valid`` positions whose first position is in column
    ``first_column`` of an output grid ``out_width`` wide."""
    blocks = -(-out_channels // lanes)
    rows = 1 + (first_column + valid > out_width)
    return np.where(layout == IMAGE, out_channels * rows, _word_writes(layout, blocks, valid))


def _group_write_cycles(layout, reduce, out_channels, lanes, valid, first_column, out_width):
    """``W_g`` of a group before a pass's last: the result writer's cycles of writes for the group of
    :func:`_group_writes`; an image-layout group of a pass that is not a reduction writes two rows a cycle, an
    add's word is written with the writer's done (:func:`_word_write_cycles`)."""
    rows = 1 + (first_column + valid > out_width)
    return np.where(_paired(layout, reduce), _image_write_cycles(out_channels, rows),
                    np.where(layout == IMAGE, out_channels * rows,
                             _word_write_cycles(layout, -(-out_channels // lanes), valid)))


def _paired(layout, reduce):
    """The writer writes on both ports of the output RAM: image layout, and the pass does not read that RAM."""
    return (layout == IMAGE) & (reduce == 0)


def _image_write_cycles(out_channels, rows):
    """Paired write cycles of an image-layout group on ``rows`` output rows: a channel's two rows together, or
    two channels' one row."""
    return np.where(rows == 2, out_channels, -(-out_channels // 2))


def _pass_arrays(values):
    arrays = np.broadcast_arrays(*(np.asarray(value, dtype=np.int64) for value in values))
    return arrays[0].shape, [array.ravel() for array in arrays]


def _two_row_groups(P, count, groups, first_column, out_width):
    """How many of the first ``G - 1`` groups touch two output rows, and whether the last one does."""
    full = _floor_sum(groups - 1, out_width, P, first_column + P - 1) - _floor_sum(groups - 1, out_width, P, first_column)
    last_column = (first_column + (groups - 1) * P) % out_width
    return full, last_column + count - (groups - 1) * P > out_width


def pass_counters(*, positions_per_group, count, products, latency, out_channels, lanes, layout, reduce,
                  first_column, out_width, run=None, reads_previous=None, handoff=None, weight_ready=None,
                  weight_last=None):
    """The counters of each pass (arrays broadcast together; int64 results), as the module docstring derives.

    ``positions_per_group`` P (= modules / column blocks), ``count`` positions of the pass, ``products`` per
    group, ``latency`` of the matrix modules, ``out_channels``, ``lanes``, ``layout`` (:data:`IMAGE`,
    :data:`PACKED`, :data:`POSITION_MAJOR` or :data:`ROW_WORDS`), ``reduce`` (1: the pass reads the RAM it
    writes, a reduction or an add: its groups before the last write on one port), ``first_column``: the output
    column of the pass's first position, ``out_width``: the output grid's width.  ``run``: which run each pass
    belongs to (the passes of a run consecutive, in the order they run; by default every pass is a run of its
    own) and ``reads_previous``: the pass reads the activation RAM the pass before it writes (default: every pass);
    ``handoff``: the pass hands its last group over to the next pass (default: none), which then does not wait.
    ``weight_ready``: with external weights, the earliest first product of each pass counted from its first cycle
    (its weight tile is loaded; :mod:`models.dqn.weight_stream`); the cycles its first product waits past its
    set-up for it are stall cycles (default: none); ``weight_last``: likewise the earliest last product of a
    one-group pass whose weights stream in while it runs (default: none).
    Returns a dict of ``cycles``, ``product_cycles``, ``stall_cycles``, ``drain_cycles``.

    With ``span = products - 1``, ``t_g`` a group's tap stall and ``s_g`` its last product's stall, the
    recurrences read ``t_g = max(0, k_g - span - s_{g-1})`` and ``s_g = max(0, L + W_{g-1} + 2 - span - t_g)``.
    Where no group's walk outlasts its products (``P <= span``) every ``t_g`` is 0, and where no group's writes do
    (``L + W + 2 <= span``) every ``s_g`` is; both sums are then closed forms over the one- and two-row groups.
    Only passes where both stalls can happen, or whose first group's last product waits for the previous pass's
    writes, are evaluated group by group.
    """
    shape, (P, n, products, latency, out_channels, lanes, layout, reduce, first_column, out_width) = _pass_arrays((
        positions_per_group, count, products, latency, out_channels, lanes, layout, reduce, first_column, out_width))
    span = products - 1                       # a group's first product to its last
    run = np.arange(n.size) if run is None else np.broadcast_to(np.asarray(run, np.int64), shape).ravel()
    reads_previous = np.broadcast_to(np.asarray(1 if reads_previous is None else reads_previous), shape).ravel()
    handoff = np.broadcast_to(np.asarray(0 if handoff is None else handoff), shape).ravel() != 0
    groups = -(-n // P)
    last_valid = n - (groups - 1) * P
    blocks = -(-out_channels // lanes)
    two_rows, last_two_rows = _two_row_groups(P, n, groups, first_column, out_width)
    image = layout == IMAGE
    paired = _paired(layout, reduce)
    two_rows = np.where(image, two_rows, 0)
    one_row_writes = np.where(image, np.where(paired, _image_write_cycles(out_channels, 1), out_channels),
                              _word_write_cycles(layout, blocks, P))
    two_row_writes = np.where(paired, _image_write_cycles(out_channels, 2), 2 * out_channels)
    last_rows = 1 + last_two_rows
    # The last group is written on both ports in image layout, a reduction's too (its reads are over); handed
    # off, on port 1 alone, one write a cycle.
    last_writes = np.where(image, np.where(handoff, out_channels * last_rows,
                                           _image_write_cycles(out_channels, last_rows)),
                           _word_write_cycles(layout, blocks, last_valid))
    # Within a run: a pass sets up while the one before drains (its last group's results, L + W cycles after its
    # last product, W on both ports); it waits for those writes before its first read if it reads that RAM and the
    # pass before does not hand its last group off, otherwise only its first group's last product may wait
    # (b_0 = f_0 + span, no earlier than f_0 + L + W - 1 - k_0).
    follows = np.concatenate([[False], run[1:] == run[:-1]])
    ends = np.concatenate([run[1:] != run[:-1], [True]])
    walk = np.minimum(P, n)
    previous_drain = latency + np.concatenate([[0], last_writes[:-1]])
    waits = follows & (reads_previous != 0) & ~np.concatenate([[False], handoff[:-1]])
    wait = np.where(waits, np.maximum(0, previous_drain - walk), 0)
    weight_ready = np.broadcast_to(np.asarray(0 if weight_ready is None else weight_ready), shape).ravel()
    weight_wait = np.maximum(0, weight_ready - (3 + walk + wait))
    earliest_last = np.where(follows & ~waits, previous_drain - 1 - walk, 0) - weight_wait
    if weight_last is not None:
        weight_last = np.broadcast_to(np.asarray(weight_last), shape).ravel()
        earliest_last = np.maximum(earliest_last, weight_last - (3 + walk + wait + weight_wait))
    # The excess of a full group's writes (one row, two rows) and of its walk over the products.
    one_row_excess = _writer_gap(layout, latency, one_row_writes) - 1 - span
    two_row_excess = latency + two_row_writes + 2 - span
    one_rows = groups - 1 - two_rows
    bias_stalls = one_rows * np.maximum(0, one_row_excess) + two_rows * np.maximum(0, two_row_excess)
    walk_stalls = np.maximum(0, groups - 2) * np.maximum(0, P - span) + \
        (groups >= 2) * np.maximum(0, last_valid - span)
    no_bias_stall = ((one_rows == 0) | (one_row_excess <= 0)) & ((two_rows == 0) | (two_row_excess <= 0))
    stalls = np.where(P <= span, bias_stalls, np.where(no_bias_stall, walk_stalls, 0))
    recurrence = np.flatnonzero(((P > span) & ~no_bias_stall) | (earliest_last > span))
    if recurrence.size:
        stalls[recurrence] = _stall_cycles(*(array[recurrence] for array in (
            P, n, groups, span, latency, out_channels, lanes, layout, reduce, first_column, out_width,
            earliest_last)))
    product_cycles = groups * products
    drain = np.where(ends, latency + last_writes + 3, 0)
    stalls = stalls + weight_wait
    cycles = 3 + walk + wait + product_cycles + stalls + drain
    return {name: values.reshape(shape) for name, values in (
        ("cycles", cycles), ("product_cycles", product_cycles), ("stall_cycles", stalls),
        ("drain_cycles", wait + drain))}


def _stall_cycles(P, n, groups, span, latency, out_channels, lanes, layout, reduce, first_column, out_width,
                  earliest_last=0):
    """The recurrences of the module docstring, group by group, for passes that may stall; ``span``: a group's
    last product after its first (``products - 1``); ``earliest_last``: the first group's last product's earliest
    cycle relative to its first (the previous pass's writes)."""
    first = np.zeros_like(n)                  # f_g relative to f_0
    last = np.maximum(first + span, earliest_last)   # b_g
    previous_writes = _group_write_cycles(layout, reduce, out_channels, lanes, np.minimum(P, n),
                                          first_column % out_width, out_width)
    for group in range(1, int(groups.max())):
        active = group < groups
        walk = np.minimum(P, n - group * P)
        next_first = np.maximum(last + 1, first + walk + 1)
        next_last = np.maximum(next_first + span, last + _writer_gap(layout, latency, previous_writes))
        first = np.where(active, next_first, first)
        last = np.where(active, next_last, last)
        previous_writes = _group_write_cycles(layout, reduce, out_channels, lanes, np.clip(walk, 0, None),
                                              (first_column + group * P) % out_width, out_width)
    return last + 1 - groups * (span + 1)


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
    """The result writer's row writes over a whole pass (arrays broadcast together, int64): per group one per
    output channel and row in image layout (two rows per channel when the group crosses an output row), one per
    channel block (packed) or per block and position (position-major); with two ports as many, in fewer cycles."""
    shape, (P, n, out_channels, lanes, layout, first_column, out_width) = _pass_arrays((
        positions_per_group, count, out_channels, lanes, layout, first_column, out_width))
    groups = -(-n // P)
    blocks = -(-out_channels // lanes)
    two_rows, last_two_rows = _two_row_groups(P, n, groups, first_column, out_width)
    image = out_channels * (groups + two_rows + last_two_rows)
    return np.where(layout == IMAGE, image, np.where(layout == PACKED, blocks * groups,
                                                     _word_writes(layout, blocks, n))).reshape(shape)
