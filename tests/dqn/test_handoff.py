"""Handoffs and start delays between passes (models/dqn/handoff.py): the words a last group writes, in order, and
the earliest cycle the next pass may read, worked by hand for the thesis network (its RTL run,
tests/dqn/test_accelerator.py and `nnaccel run dqn`, has the three handoffs and the five start delays;
tests/dqn/test_accelerator_amaranth.py runs one at its tightest and one a cycle too early)."""

import pytest

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.handoff import last_group_writes, start_delay
from nnaccel.models.dqn.network import dqn_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network, layer_shapes, pass_shapes

LATENCY = 6       # the default configuration's matrix modules


def plan_passes(plan):
    """The PassShapes of ``plan``, in the order they run."""
    shapes = layer_shapes(plan.config, plan.network)
    return [work for shape, layer_mapping in zip(shapes, plan.mapping.layers)
            for work in pass_shapes(plan.config, shape, layer_mapping)]


@pytest.fixture(scope="module")
def thesis():
    return compile_network(DqnConfig(), dqn_layers(18), seeded_weights())


def test_the_words_a_last_group_writes_in_order(thesis):
    """CONV_2's sum writes position 0 (row 0 of the 9 x 9 map) of its 32 channels: word c*9, write c.  FC_1 writes
    its 16 packed words.  The partial sums write each position's two blocks.  A group on two rows writes each
    channel's two rows one after the other: CONV_2's positions 1..64 end with the group 57..64, rows 6 and 7."""
    config, passes = thesis.config, plan_passes(thesis)
    assert [work.name for work in passes] == ["CONV_1", "CONV_2", "CONV_2 @0 partials", "CONV_2 @0 sum", "FC_1",
                                              "FC_2 partials", "FC_2 sum"]
    assert last_group_writes(config, passes[3], 0) == {channel * 9: channel for channel in range(32)}
    assert last_group_writes(config, passes[4], 320) == {320 + block: block for block in range(16)}
    assert last_group_writes(config, passes[2], 100) == {100 + position: 2 * position + 1 for position in range(8)}
    first_64 = passes[1]._replace(count=64)
    assert last_group_writes(config, first_64, 0) == {channel * 9 + 6 + row: 2 * channel + row
                                                      for channel in range(32) for row in range(2)}


def test_the_thesis_networks_start_delays(thesis):
    """Latency 6: write i of a last group on 8 + i after the last product ``b'``, readable from 9 + i; a pass with
    start delay d reads first on ``b' + d`` and issues its first product on ``b' + 1 + d``.  CONV_2 reads rows 0..5
    while CONV_1 writes row 19 (handed off, port 1): d = 1.  The partial sums of CONV_2's position 0 read the other
    RAM (no delay).  Their sum reads partial q (both blocks written by write 2q + 1, readable from 10 + 2q) on
    1 + d + q: d = 16 (q = 7).  FC_1 reads row 0 of channel 0, the handed-off sum's write 0, first: d = 9.  FC_2's
    partials read FC_1's word c (written on 8 + c) on d (c = 0) and 1 + d + 2(c - 1): d = 9.  FC_2's sum as
    CONV_2's: d = 16."""
    assert [layer.descriptor["handoff"] for layer in thesis.layers] == [1, 0, 0, 1, 1, 0, 0]
    assert [layer.descriptor["start_delay"] for layer in thesis.layers] == [0, 1, 0, 16, 9, 9, 16]


def test_a_first_group_on_two_rows_reads_port_1(thesis):
    """CONV_2's positions from 8 on: its first group (8..15) spans rows 0 and 1, whose second row slot is read on
    port 1, the writer's during a handoff: no start delay.  Nor for the partial sums of CONV_2's position 0, whose
    group is the kernel's two row halves."""
    config, passes = thesis.config, plan_passes(thesis)
    from_8 = passes[1]._replace(first=(0, 8), count=72)
    words = dict(out_base=0, in_base=0, in_height=20, latency=LATENCY)
    assert start_delay(config, passes[0], from_8, handoff=True, **words) is None
    assert start_delay(config, passes[0], passes[2], handoff=True, **words) is None
    assert start_delay(config, passes[0], passes[1], handoff=True, **words) == 1
    assert start_delay(config, passes[0], passes[1], handoff=False, **words) is None   # both ports written
