"""Handoffs between passes (models/dqn/handoff.py): the words a last group writes, in order, and the slack of the
next pass's reads, worked by hand for the thesis network (its RTL run, tests/dqn/test_accelerator.py and `nnaccel
run dqn`, has the three handoffs; tests/dqn/test_accelerator_amaranth.py runs one at slack 0 and a forced one at
slack -1)."""

import math

import pytest

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.models.dqn.handoff import handoff_slack, last_group_writes
from nnaccel.models.dqn.network import dqn_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network, layer_shapes, pass_shapes


def plan_passes(plan):
    """The PassShapes of ``plan``, in the order they run."""
    shapes = layer_shapes(plan.config, plan.network)
    return [work for shape, layer_mapping in zip(shapes, plan.mapping.layers)
            for work in pass_shapes(plan.config, shape, layer_mapping)]


def handoff_slacks(plan):
    """Per pass of ``plan``: the handoff slack (:func:`handoff_slack`) of the pass after it where that pass reads
    the RAM this one writes, from the passes and their descriptors' words (None otherwise and for the last)."""
    config, passes = plan.config, plan_passes(plan)
    latency = matrix_module_latency(config.multiplier_latency, config.adder_latency)
    return [handoff_slack(config, work, after, out_base=layer.descriptor["out_base"],
                          in_base=following.descriptor["in_base"], in_height=following.descriptor["in_height"],
                          latency=latency) if following.descriptor["in_ram"] == layer.descriptor["out_ram"] else None
            for work, after, layer, following in zip(passes, passes[1:], plan.layers, plan.layers[1:])] + [None]


@pytest.fixture(scope="module")
def thesis():
    return compile_network(DqnConfig(), dqn_layers(18), seeded_weights())


def test_the_words_a_last_group_writes_in_order(thesis):
    """CONV_2's sum writes position 80 (row 8 of the 9 x 9 map) of its 32 channels: word c*9 + 8, write c.  FC_1
    writes its 16 packed words.  A group on two rows writes each channel's two rows one after the other: CONV_2's
    first 64 positions end with the group 56..63, rows 6 and 7 of the 9-wide map."""
    config, passes = thesis.config, plan_passes(thesis)
    assert last_group_writes(config, passes[3], 0) == {channel * 9 + 8: channel for channel in range(32)}
    assert last_group_writes(config, passes[4], 320) == {320 + block: block for block in range(16)}
    first_64 = passes[1]._replace(count=64)
    assert last_group_writes(config, first_64, 0) == {channel * 9 + 6 + row: 2 * channel + row
                                                      for channel in range(32) for row in range(2)}


def test_the_thesis_networks_slacks(thesis):
    """Latency 6: write i of a last group on 8 + i after the last product, readable from 9 + i.  CONV_2 reads rows
    0..5 while CONV_1 writes row 19; its second group's rows are read on 12 + 256 - 4 = 264, 240 after the writes'
    end (6 + 2 + 16).  FC_1 reads row 8 of channel 0 at step 8, on 5 + 7*9 = 68, after the sum's 32 writes end (6 + 2 + 32):
    no read is bound (infinity).  FC_2's
    partials read FC_1's word c on 11 (c = 0) and 10 + 2c, written on 8 + c: slack 2.  The sums are reductions
    (None); the tail reads the other RAM (None)."""
    assert handoff_slacks(thesis) == [240, None, None, math.inf, 2, None, None]
    assert [layer.descriptor["handoff"] for layer in thesis.layers] == [1, 0, 0, 1, 1, 0, 0]


def test_a_first_group_on_two_rows_takes_no_handoff(thesis):
    """CONV_2's positions from 8 on: its first group (8..15) spans rows 0 and 1, whose second row slot is read on
    port 1, the writer's during a handoff."""
    config, passes = thesis.config, plan_passes(thesis)
    from_8 = passes[1]._replace(first=(0, 8), count=72)
    assert handoff_slack(config, passes[0], from_8, out_base=0, in_base=0, in_height=20, latency=6) is None
