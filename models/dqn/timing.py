"""The DQN accelerator's timing, cycle for cycle: the four per-pass counters of a batch of passes (NumPy).

One implementation serves the compiler (:mod:`models.dqn.plan`, one pass at a time) and the design-space cost
model (:mod:`dse.rtl.cost_model`, batches of thousands): :func:`pass_counters` takes arrays (or scalars) of pass
parameters and returns the counters the hardware reads back for each pass (docs/dqn_accelerator.md, "Host
interface"): ``cycles``, ``product_cycles``, ``stall_cycles`` and ``drain_cycles``.

The sequencer (hw/dqn/sequencer.py) runs a pass of ``n`` positions in ``G = ceil(n / P)`` groups of ``P``
positions; group ``g`` takes ``products`` product cycles (the bias is the accumulations' seed, read with the
first product).  Counted from the pass's first cycle:

* set-up: 2 cycles: load the descriptor and compute the first group's taps (the position walker computes a
  group's taps in one cycle), then read the first rows;
* group ``g``'s first product ``f_g`` and last product ``b_g`` (``f_0`` = the set-up's end, ``b_0 = f_0 +
  products - 1``)::

      f_g = b_{g-1} + 1                                          # the taps, computed on f_{g-1}, are ready
      b_g = max(f_g + products - 1, b_{g-1} + L + W_{g-1} + 3)  # group g-1 must be written: latency L, W writes

  where ``W_g`` is the result writer's write cycles of group ``g``: in image layout
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
  A pass that reads the RAM the previous one writes and has no start delay waits for those writes (on both
  ports) before its first read: ``L + W' + 1`` drain cycles after its first cycle.  A pass with a *start delay*
  ``d`` (a descriptor field the compiler sets, :func:`models.dqn.plan.pass_handoffs`: every word it reads is read
  after its write, on a port the writer leaves free; :mod:`models.dqn.handoff`) reads first on its cycle ``d``:
  ``d - 1`` drain cycles.  Its predecessor may *hand off* its last group (a descriptor bit): written on port 1
  alone, one write a cycle (``W'`` = its row writes), while the pass reads on port 0.  A pass that reads the
  other RAM starts at once.  A pass's first group's last product waits for the previous pass's writes
  (``b_0 >= b' + L + W' + 3``, stall cycles).  A pass's counters run from its first cycle
  to its last product (to its drain's end for the run's last pass), so the passes' cycles add up to TOTAL_CYCLES.

:func:`pass_writes` counts the writer's row writes of a whole pass (closed form: the groups that cross an output
row are counted with floor sums), for the energy model: as many with one write port as with two.

Product cycles are ``G * products``; stall cycles are the cycles the rules add to them (a last product waiting
for the writer), a closed form over the one- and two-row groups.  A pass without stalls (``L + W_g + 3 <=
products`` for every group, always the case for the thesis network) run alone takes ``2 + G * products + L +
W_{G-1} + 3`` cycles.  The ``reduce`` flag only matters for a reduction in image layout (the sum of a split
convolution) with more than one group.
"""

import numpy as np

from nnaccel.models.dqn.flat_map import strided_writes

__all__ = ["SET_UP_CYCLES", "IMAGE", "PACKED", "POSITION_MAJOR", "ROW_WORDS", "FLAT", "LAYOUTS", "pass_counters",
           "pass_writes", "flat_group_writes"]

# ROW_WORDS: a residual add's output, one row word per position (group), written whole in one cycle; the add's
# groups after its first do not wait for the writer.  FLAT: a flat pass (hw/dqn/flat_stepper.py), its groups
# position-major over the channels (a channel per slot), each slot's flat words written one a cycle on a port of
# its own.
IMAGE, PACKED, POSITION_MAJOR, ROW_WORDS, FLAT = 0, 1, 2, 3, 4
LAYOUTS = {"image": IMAGE, "packed": PACKED, "position_major": POSITION_MAJOR, "row_words": ROW_WORDS, "flat": FLAT}

# A pass's cycles before its first product: the descriptor, its first group's taps and its first rows' read.
SET_UP_CYCLES = 1

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


def flat_group_writes(count, group_lanes, row_elements, width=None, stride=1):
    """The result writer's write cycles of a flat pass's groups at positions ``0, G, 2G ..`` of a channel of
    ``count`` positions (``G = group_lanes``): the flat words each touches, ``ceil((q0 % F + valid) / F)``; at
    ``stride`` 2 (a map ``width`` wide) the output words of its even rows (``strided_writes``), at least one cycle."""
    starts = np.arange(0, count, group_lanes)
    valid = np.minimum(group_lanes, count - starts)
    if stride == 2:
        return np.array([max(1, len(strided_writes(start, lanes, width, row_elements)))
                         for start, lanes in zip(starts, valid)], dtype=np.int64)
    return -(-(starts % row_elements + valid) // row_elements)


def staged_stalls(products, latency, writes, *, on_done=False):
    """Stall cycles between the groups of a pass whose writer has a second staging register (the flat map's
    configurations), ``writes`` the write cycles ``W_g`` of its groups before the last.  A group's last product
    ``t_g`` may issue while one group is in flight (its results wait in the second register), except the pass's
    first and last groups, which wait until no group is in flight; group ``g``'s results reach the writer on
    ``t_g + L + 1``, which takes them when it is idle, writes them (``W_g`` cycles) and says written on
    ``D_g``::

        t_g = max(t_{g-1} + products, D_{g-2} + 1)      (the last group: D_{g-1} + 1)
        D_g = max(t_g + L + 1, D_{g-1} + 1) + W_g + 1   (D_0 = t_0 + L + W_0 + 2)

    ``on_done``: the writer takes results that wait (or come) on its done cycle ``D_{g-1}`` on that cycle (a pass
    that is not flat: hw/dqn/result_writer.py), ``D_g = max(t_g + L + 1, D_{g-1}) + W_g + 1``.
    Without the second register ``t_g = max(t_{g-1} + products, D_{g-1} + 1)``: ``max(0, L + W + 2 - span)`` a
    group, the closed form of :func:`pass_counters`."""
    last_product, written, before = 0, latency + writes[0] + 2 if len(writes) else 0, None
    for group in range(1, len(writes) + 1):
        earliest = last_product + products
        if group == len(writes):                                   # the last group: nothing in flight
            last_product = max(earliest, written + 1)
            break
        last_product = max(earliest, before + 1) if before is not None else earliest
        before, written = written, max(last_product + latency + 1, written + (not on_done)) + writes[group] + 1
    return int(last_product - len(writes) * products)


def _flat_pass(latency, span, count, channels, group_lanes, row_elements, slots, width, stride, staged):
    """``(groups, stall cycles between its groups, the last group's writes)`` of a flat pass: its groups run ``slots``
    channels at a time at each position block ``j``, and a group's last product waits for the previous group's
    writes ``W_j`` (a slot's words: two slots write on the two ports together, four in two rounds, slots 0 and 1
    then 2 and 3; ``max(0, L + W_j + 2 - span)``, as any group's), or with ``staged`` (a second staging register)
    as :func:`staged_stalls` says."""
    writes = flat_group_writes(count, group_lanes, row_elements, width, stride) * max(1, slots // 2)
    rounds = channels // slots
    if staged:
        return len(writes) * rounds, staged_stalls(span + 1, latency, np.repeat(writes, rounds)[:-1]), int(writes[-1])
    waits = np.maximum(0, latency + writes + 2 - span)
    return len(writes) * rounds, int((rounds - 1) * waits.sum() + waits[:-1].sum()), int(writes[-1])


def pass_counters(*, positions_per_group, count, products, latency, out_channels, lanes, layout, reduce,
                  first_column, out_width, run=None, reads_previous=None, handoff=None, start_delay=None,
                  weight_ready=None, weight_last=None, row_elements=None, flat_loads=None, flat_slots=None,
                  flat_strides=None, staged=None):
    """The counters of each pass (arrays broadcast together; int64 results), as the module docstring derives.

    ``positions_per_group`` P (= modules / column blocks), ``count`` positions of the pass, ``products`` per
    group, ``latency`` of the matrix modules, ``out_channels``, ``lanes``, ``layout`` (:data:`IMAGE`,
    :data:`PACKED`, :data:`POSITION_MAJOR` or :data:`ROW_WORDS`), ``reduce`` (1: the pass reads the RAM it
    writes, a reduction or an add: its groups before the last write on one port), ``first_column``: the output
    column of the pass's first position, ``out_width``: the output grid's width.  ``run``: which run each pass
    belongs to (the passes of a run consecutive, in the order they run; by default every pass is a run of its
    own) and ``reads_previous``: the pass reads the activation RAM the pass before it writes (default: every pass);
    ``handoff``: the pass hands its last group over to the next pass (default: none): written on port 1 alone;
    ``start_delay``: the pass's descriptor field (default 0: it waits for the previous pass's writes where it reads
    their RAM; ``d``: its first read on its cycle ``d``).
    ``weight_ready``: with external weights, the earliest first product of each pass counted from its first cycle
    (its weight tile is loaded; :mod:`models.dqn.weight_stream`); the cycles its first product waits past its
    set-up for it are stall cycles (default: none); ``weight_last``: likewise the earliest last product of a
    one-group pass whose weights stream in while it runs (default: none).
    A flat pass (layout :data:`FLAT`: ``positions_per_group`` = a slot's lanes ``G`` over one channel's positions,
    ``count`` its map's positions, ``out_channels`` its channels, ``products`` the kernel's steps) needs
    ``row_elements``, ``flat_loads`` (the read cycles of a group's windows) and ``flat_slots`` (channels a group):
    its prologue loads the first windows, ``flat_loads + 1`` cycles more than a pass's set-up; its groups
    :func:`_flat_pass`; ``flat_strides`` (default 1): 2 where it writes only its even rows and columns (``out_width``
    its map's width).  ``staged`` (default 0): 1 where the writer has a second staging register and the pass uses it
    (image or flat layout, not a reduction): its stalls between groups :func:`staged_stalls`.
    Returns a dict of ``cycles``, ``product_cycles``, ``stall_cycles``, ``drain_cycles``.

    With ``span = products - 1`` a group's last product waits ``max(0, L + W_{g-1} + 2 - span)`` cycles for the
    writer (an add's ``max(0, 1 - span)``), a sum over the one- and two-row groups; the first group's for the
    previous pass's writes.
    """
    shape, (P, n, products, latency, out_channels, lanes, layout, reduce, first_column, out_width) = _pass_arrays((
        positions_per_group, count, products, latency, out_channels, lanes, layout, reduce, first_column, out_width))
    span = products - 1                       # a group's first product to its last
    run = np.arange(n.size) if run is None else np.broadcast_to(np.asarray(run, np.int64), shape).ravel()
    reads_previous = np.broadcast_to(np.asarray(1 if reads_previous is None else reads_previous), shape).ravel()
    handoff = np.broadcast_to(np.asarray(0 if handoff is None else handoff), shape).ravel() != 0
    start_delay = np.broadcast_to(np.asarray(0 if start_delay is None else start_delay, np.int64), shape).ravel()
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
    flat = np.flatnonzero(layout == FLAT)
    if flat.size:
        row_elements = np.broadcast_to(np.asarray(row_elements, np.int64), shape).ravel()
        flat_slots = np.broadcast_to(np.asarray(flat_slots, np.int64), shape).ravel()
        flat_strides = np.broadcast_to(np.asarray(1 if flat_strides is None else flat_strides, np.int64), shape).ravel()
    staged = np.broadcast_to(np.asarray(0 if staged is None else staged, np.int64), shape).ravel() != 0
    flat_passes = {index: _flat_pass(latency[index], span[index], n[index], out_channels[index], P[index],
                                     row_elements[index], flat_slots[index], out_width[index], flat_strides[index],
                                     staged[index])
                   for index in flat}
    for index, (_, _, writes) in flat_passes.items():
        last_writes[index] = writes
    # Within a run: a pass sets up while the one before drains (its last group written L + W + 2 cycles after its
    # last product).  Without a start delay, a pass that reads that RAM waits for the writes (L + W + 1 drain cycles
    # from its cycle 1), then reads; with one, d, it reads on its cycle d - 1 (d - 2 drain cycles from cycle 1);
    # otherwise it reads on its cycle 0.  Its first group's last product comes no earlier than b' + L + W + 3.
    follows = np.concatenate([[False], run[1:] == run[:-1]])
    ends = np.concatenate([run[1:] != run[:-1], [True]])
    previous_drain = latency + np.concatenate([[0], last_writes[:-1]])
    waits = follows & (reads_previous != 0) & (start_delay == 0)
    draining = np.where(waits, previous_drain + 1, np.maximum(0, start_delay - 2))
    wait = np.where(waits, previous_drain + 2, np.maximum(0, start_delay - 1))    # and the first read's cycle
    first_product = SET_UP_CYCLES + wait
    weight_ready = np.broadcast_to(np.asarray(0 if weight_ready is None else weight_ready, np.int64), shape).ravel()
    weight_wait = np.maximum(0, weight_ready - first_product)
    earliest_last = np.where(follows, previous_drain + 1 - wait, 0) - weight_wait
    if weight_last is not None:
        weight_last = np.broadcast_to(np.asarray(weight_last, np.int64), shape).ravel()
        earliest_last = np.maximum(earliest_last, weight_last - (first_product + weight_wait))
    # The excess of a full group's writes (one row, two rows) over the products.
    one_row_excess = _writer_gap(layout, latency, one_row_writes) - 1 - span
    two_row_excess = latency + two_row_writes + 2 - span
    one_rows = groups - 1 - two_rows
    between = one_rows * np.maximum(0, one_row_excess) + two_rows * np.maximum(0, two_row_excess)
    for index in np.flatnonzero(staged & image & (reduce == 0) & (groups > 1)):
        # The groups before the last: one or two output rows, their paired write cycles.
        columns = (first_column[index] + np.arange(groups[index] - 1) * P[index]) % out_width[index]
        rows = 1 + (columns + P[index] > out_width[index])
        between[index] = staged_stalls(products[index], latency[index],
                                       _image_write_cycles(out_channels[index], rows), on_done=True)
    stalls = between + np.maximum(0, earliest_last - span) + weight_wait
    product_cycles = groups * products
    if flat.size:
        # A flat pass: its prologue (the first window's loads), its groups and the stalls between them.
        prologue = np.broadcast_to(np.asarray(flat_loads, np.int64), shape).ravel()[flat] + 1
        first_product[flat] += prologue
        stalls[flat] = np.maximum(0, earliest_last[flat] - prologue - span[flat]) + weight_wait[flat]
        for index, (flat_groups, between, _) in flat_passes.items():
            product_cycles[index] = flat_groups * products[index]
            stalls[index] += between
    drain = np.where(ends, latency + last_writes + 3, 0)
    cycles = first_product + product_cycles + stalls + drain
    return {name: values.reshape(shape) for name, values in (
        ("cycles", cycles), ("product_cycles", product_cycles), ("stall_cycles", stalls),
        ("drain_cycles", draining + drain))}


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


def pass_writes(*, positions_per_group, count, out_channels, lanes, layout, first_column, out_width, row_elements=None,
                flat_strides=None):
    """The result writer's row writes over a whole pass (arrays broadcast together, int64): per group one per
    output channel and row in image layout (two rows per channel when the group crosses an output row), one per
    channel block (packed) or per block and position (position-major); with two ports as many, in fewer cycles;
    a flat pass's (:data:`FLAT`, with ``row_elements`` and ``flat_strides``) the flat words of each channel's groups."""
    shape, (P, n, out_channels, lanes, layout, first_column, out_width) = _pass_arrays((
        positions_per_group, count, out_channels, lanes, layout, first_column, out_width))
    groups = -(-n // P)
    blocks = -(-out_channels // lanes)
    two_rows, last_two_rows = _two_row_groups(P, n, groups, first_column, out_width)
    image = out_channels * (groups + two_rows + last_two_rows)
    writes = np.where(layout == IMAGE, image, np.where(layout == PACKED, blocks * groups, _word_writes(layout, blocks, n)))
    flat = np.flatnonzero(layout == FLAT)
    if flat.size:
        row_elements = np.broadcast_to(np.asarray(row_elements, np.int64), shape).ravel()
        flat_strides = np.broadcast_to(np.asarray(1 if flat_strides is None else flat_strides, np.int64), shape).ravel()
        for index in flat:
            writes[index] = out_channels[index] * flat_group_writes(n[index], P[index], row_elements[index],
                                                                    out_width[index], flat_strides[index]).sum()
    return writes.reshape(shape)
