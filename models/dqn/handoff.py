"""Handoffs between passes of the DQN accelerator: when a pass may read the RAM whose last rows are still written.

A run's pass starts on the cycle after the previous pass's last product ``b'``, while that pass's last group drains
through the matrix modules and the result writer.  Without a handoff, a pass that reads the RAM being written waits
until the group is written (the writer owns both ports of that RAM).  With one (the previous pass's descriptor bit
``handoff``), the writer writes that last group on port 1 alone, one write a cycle, and the next pass reads on port
0 at once.  The compiler sets the bit only where it has proved, cycle by cycle, that this reads what a wait would:

* the next pass is a convolution (a reduction reads on port 1) whose first group lies in one output row (its
  second row slot, read on port 1, is not used);
* every word it reads on port 0 before the writes end is read after its last write (the reads and writes of both
  passes are fixed: :func:`handoff_safe` lists them);
* its second group's rows, read on port 1 at the start of its first group's last step, are read after the writes.

Cycles, counted from ``b'``: the last group's results reach the writer on ``L + 1`` (``L``: the matrix modules'
latency) and write ``i`` of the group is on ``L + 2 + i``; the next pass loads its descriptor on 1, walks its first
group's ``k_0`` positions, reads its first step's rows on ``3 + k_0`` and issues its first product on ``f = 4 + k_0``;
step ``j >= 1`` of its first group is read on ``f + (j - 1) * kernel_width`` (the sequencer reads a step's rows on the
first product of the step before).  A read on cycle ``t`` sees a write on a cycle before ``t``.
"""

import math

__all__ = ["handoff_safe", "handoff_slack", "last_group_writes"]


def last_group_writes(config, producer, out_base):
    """The words the last group of pass ``producer`` (a PassShape) writes, in the order of its one-port writes:
    ``{word: write index}``; ``out_base``: the word of the pass's output (channel 0, row 0, or position 0)."""
    per_group = config.modules // producer.column_blocks
    groups = -(-producer.count // per_group)
    first = producer.first_position + (groups - 1) * per_group
    valid = producer.count - (groups - 1) * per_group
    out_height, out_width = producer.grid
    blocks = -(-producer.out_channels // config.lanes)
    if producer.layout == "image":
        oy0, ox0 = divmod(first, out_width)
        rows = 1 + (ox0 + valid > out_width)
        words = [out_base + channel * out_height + oy0 + row for channel in range(producer.out_channels)
                 for row in range(rows)]
    elif producer.layout == "position_major":
        words = [out_base + first - producer.first_position + position for position in range(valid)
                 for _ in range(blocks)]
    else:
        words = [out_base + block for block in range(blocks)]
    return {word % config.activation_depth: index for index, word in enumerate(words)}


def handoff_slack(config, producer, consumer, *, out_base, in_base, in_height, latency):
    """The fewest cycles by which pass ``consumer``, following pass ``producer`` (PassShapes of one run) under a
    handoff, reads after the cycle the rules of the module docstring allow (negative: too early), over its reads of
    the words the producer's last group writes and its second group's first read on port 1; ``None`` where the
    consumer cannot take a handoff (a reduction, or a first group on two output rows) or the producer give one (an add); infinity where no read is
    bound.  ``out_base``: the producer's output word (as :func:`last_group_writes`),
    ``in_base`` and ``in_height``: the consumer's input word and rows per channel, in the same RAM; ``latency``: the
    matrix modules'."""
    if consumer.reduce or producer.layout == "row_words":     # an add reads, and writes its words, on its own rule
        return None
    walk = min(config.modules // consumer.column_blocks, consumer.count)
    first_oy, first_ox = consumer.first
    if first_ox + walk > consumer.grid[1]:
        return None
    writes = last_group_writes(config, producer, out_base)
    writes_end = latency + 2 + len(writes)            # the first cycle after the last write
    kernel_height, kernel_width = consumer.kernel
    first = 4 + walk
    slack = math.inf
    if consumer.count > walk:
        slack = first + consumer.products - kernel_width - writes_end
    for step in range(consumer.in_channels * kernel_height):
        read = first - 1 if step == 0 else first + (step - 1) * kernel_width
        if read >= writes_end:
            break
        channel, kernel_row = divmod(step, kernel_height)
        row = first_oy * consumer.stride[0] + kernel_row - consumer.padding[0]
        if not 0 <= row < in_height:
            continue
        index = writes.get((in_base + channel * in_height + row) % config.activation_depth)
        if index is not None:
            slack = min(slack, read - (latency + 3 + index))
    return slack


def handoff_safe(config, producer, consumer, **words):
    """Whether pass ``consumer`` may follow pass ``producer`` under a handoff: :func:`handoff_slack` (same
    arguments) is at least 0."""
    slack = handoff_slack(config, producer, consumer, **words)
    return slack is not None and slack >= 0
