"""Handoffs and start delays between passes of the DQN accelerator: when a pass may read the RAM whose last group is
still written.

A run's pass starts on the cycle after the previous pass's last product ``b'``, while that pass's last group drains
through the matrix modules and the result writer.  Without a start delay (the descriptor field ``start_delay`` 0), a
pass that reads the RAM being written waits until the group is written.  With one, ``d``, it reads first on its
cycle ``d`` whatever the writer does; the compiler sets it only where it has proved, cycle by cycle, that this reads
what a wait would:

* a convolution reads on port 0 while its predecessor hands its last group off (the predecessor's descriptor bit
  ``handoff``: written on port 1 alone, one write a cycle); its first group lies in one output row (its second row
  slot, read on port 1, is not used), and its second group's rows, read on port 1 at the start of its first group's
  last step, are read after the writes;
* a sum (a K-split's reduction) reads its partial sums on port 1 while they are written on port 0, one a cycle;
* every word either reads before the writes end is read after its last write (the reads and writes of both passes
  are fixed: :func:`start_delay` lists them).

Cycles, counted from ``b'``: the last group's results reach the writer on ``L + 1`` (``L``: the matrix modules'
latency) and write ``i`` of the group is on ``L + 2 + i``; the next pass loads its descriptor and its first group's
taps on 1, reads its first step's rows on ``d`` and issues its first product on ``f = 1 + d``; step ``j >= 1``
of its first group is read on ``f + (j - 1) * kernel_width`` (the sequencer reads a step's rows on the first product
of the step before), a sum's step ``k`` on ``f + k``.  A read on cycle ``t`` sees a write on a cycle before ``t``.
"""

import math

from nnaccel.hw.dqn.descriptor import START_DELAY_BITS

__all__ = ["start_delay", "last_group_writes"]


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


def _slack(config, producer, consumer, *, handoff, out_base, in_base, in_height, latency):
    """The fewest cycles by which pass ``consumer``, following pass ``producer`` (PassShapes of one run) with start
    delay 1, reads after the cycle the rules of the module docstring allow (negative: too early), over its reads of
    the words the producer's last group writes; ``None`` where it cannot start early: a convolution after a
    producer that does not hand off, or whose first group lies on two output rows (its row slot 1 is read on port
    1), a sum after one that does (it reads on port 1), an add; infinity where no read is bound."""
    if consumer.kind == "add" or producer.layout == "row_words":     # an add reads, and writes, on its own rule
        return None
    if consumer.reduce == handoff or consumer.reduce and producer.layout == "image":
        return None                        # a sum reads port 1, a convolution port 0: the writer takes the other
    writes = last_group_writes(config, producer, out_base)
    writes_end = latency + 2 + len(writes)            # the first cycle after the last write
    first = 2                                          # the first product, start delay 1
    if consumer.reduce:                                # step k reads word in_base + k on the product's cycle
        reads = [(first + step, in_base + step) for step in range(consumer.products)]
    else:
        walk = min(config.modules // consumer.column_blocks, consumer.count)
        first_oy, first_ox = consumer.first
        if first_ox + walk > consumer.grid[1]:
            return None
        kernel_height, kernel_width = consumer.kernel
        reads = []
        for step in range(consumer.in_channels * kernel_height):
            read = first - 1 if step == 0 else first + (step - 1) * kernel_width
            if read >= writes_end:
                break
            channel, kernel_row = divmod(step, kernel_height)
            row = first_oy * consumer.stride[0] + kernel_row - consumer.padding[0]
            if 0 <= row < in_height:
                reads.append((read, in_base + channel * in_height + row))
    slack = math.inf
    if not consumer.reduce and consumer.count > min(config.modules // consumer.column_blocks, consumer.count):
        slack = first + consumer.products - consumer.kernel[1] - writes_end    # the second group's rows, port 1
    for read, word in reads:
        index = writes.get(word % config.activation_depth)
        if index is not None:
            slack = min(slack, read - (latency + 3 + index))
    return slack


def start_delay(config, producer, consumer, *, handoff, **words):
    """The fewest cycles ``d >= 1`` on which pass ``consumer``, following pass ``producer`` (PassShapes of one run),
    may read first while the producer's last group is written (``handoff``: the producer writes it on port 1, the
    consumer a convolution reading port 0; otherwise on port 0, the consumer a sum reading port 1), every word it
    reads after its write; ``None`` where it cannot, or the delay does not fit the descriptor field.  ``words``:
    ``out_base`` (the producer's output word, as :func:`last_group_writes`), ``in_base`` and ``in_height`` (the
    consumer's input word and rows per channel, in the same RAM), ``latency`` (the matrix modules')."""
    if "flat" in (producer.layout, consumer.layout) or producer.write_grid:   # the flat map's passes: not derived
        return None
    slack = _slack(config, producer, consumer, handoff=handoff, **words)
    if slack is None:
        return None
    delay = 1 if slack == math.inf else max(1, 1 - slack)
    return delay if delay < 1 << START_DELAY_BITS else None
