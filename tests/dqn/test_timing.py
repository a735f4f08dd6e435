"""The DQN accelerator's timing model: the stall recurrences, the closed form without stalls, the writer's writes.

The model's agreement with the hardware is checked on the simulated accelerator (tests/dqn/test_accelerator.py,
tests/dse/test_rtl_validate.py); here its parts are checked against each other and a hand-worked pass."""

import numpy as np

from nnaccel.models.dqn.timing import (IMAGE, PACKED, POSITION_MAJOR, ROW_WORDS, _group_write_cycles, _group_writes,
                                       _stall_cycles, pass_counters, pass_writes)


def test_a_hand_worked_pass_with_both_kinds_of_stall():
    """P = 2 positions per group, 4 positions in a 4-wide grid, 1 product, latency 6, 2 channels in image layout.
    Group 0: its one product at 0.  Group 1: the walker (started at 0, 2 positions) is ready at 3 (two tap
    stalls); its product, also its last, waits for group 0's writes: 0 + 6 + 2 writes + 3 = 11 (8 more stalls).
    Set-up 3 + 2, 12 run cycles; a reduction, its last group written on both ports: drain 6 + 1 + 3."""
    counters = pass_counters(positions_per_group=2, count=4, products=1, latency=6, out_channels=2, lanes=4,
                             layout=IMAGE, reduce=1, first_column=0, out_width=4)
    assert {name: int(value) for name, value in counters.items()} == {
        "cycles": 5 + 12 + 10, "product_cycles": 2, "stall_cycles": 10, "drain_cycles": 10}


def random_passes(rng, size):
    out_width = rng.integers(1, 20, size)
    positions_per_group = np.minimum(rng.integers(1, 17, size), out_width + 1)
    return dict(positions_per_group=positions_per_group, count=rng.integers(1, 120, size),
                products=rng.integers(1, 40, size), latency=rng.integers(1, 12, size),
                out_channels=rng.integers(1, 24, size), lanes=rng.integers(1, 9, size),
                layout=rng.integers(0, 4, size), reduce=rng.integers(0, 2, size), first_column=rng.integers(0, 1 << 20, size) % out_width,
                out_width=out_width)


def test_the_closed_form_is_the_recurrence_where_nothing_stalls():
    rng = np.random.default_rng(12)
    passes = random_passes(rng, 20_000)
    P, count, products = passes["positions_per_group"], passes["count"], passes["products"]
    recurrence = _stall_cycles(P, count, -(-count // P), products - 1, passes["latency"], passes["out_channels"],
                               passes["lanes"], passes["layout"], passes["reduce"], passes["first_column"],
                               passes["out_width"])
    counters = pass_counters(**passes)
    assert np.array_equal(counters["stall_cycles"], recurrence)
    assert (recurrence == 0).sum() > 2_000 and (recurrence > 0).sum() > 2_000
    groups = -(-count // P)
    assert np.array_equal(counters["product_cycles"], groups * products)
    assert np.array_equal(counters["cycles"], 3 + np.minimum(P, count) + counters["product_cycles"]
                          + counters["stall_cycles"] + counters["drain_cycles"])


def test_pass_writes_sum_the_writes_of_every_group():
    rng = np.random.default_rng(13)
    passes = random_passes(rng, 3_000)
    del passes["products"], passes["latency"], passes["reduce"]
    got = pass_writes(**passes)
    for index in range(len(got)):
        one = {name: int(values[index]) for name, values in passes.items()}
        P, count, width = one["positions_per_group"], one["count"], one["out_width"]
        expected = sum(int(_group_writes(np.int64(one["layout"]), one["out_channels"], one["lanes"],
                                         min(P, count - group * P), (one["first_column"] + group * P) % width, width))
                       for group in range(-(-count // P)))
        assert got[index] == expected, one
    assert {PACKED, POSITION_MAJOR, IMAGE, ROW_WORDS} == set(passes["layout"].tolist())


def test_a_hand_worked_pass_with_paired_writes():
    """The pass above, not a reduction: group 0 (one row) writes its 2 channels in one cycle on both ports, so
    group 1's product waits for 0 + 6 + 1 + 3 = 10 (9 stalls), and the drain is 6 + 1 + 3."""
    counters = pass_counters(positions_per_group=2, count=4, products=1, latency=6, out_channels=2, lanes=4,
                             layout=IMAGE, reduce=0, first_column=0, out_width=4)
    assert {name: int(value) for name, value in counters.items()} == {
        "cycles": 5 + 11 + 10, "product_cycles": 2, "stall_cycles": 9, "drain_cycles": 10}


def test_paired_write_cycles_halve_the_image_writes():
    """Image layout outside reductions: a group on two rows writes each channel's two rows in one cycle, a group
    on one row two channels a cycle; reductions and the packed layouts write one row a cycle."""
    channels = np.arange(1, 40)
    for valid, first_column, rows in ((3, 0, 1), (3, 2, 2)):
        writes = _group_writes(IMAGE, channels, 4, valid, first_column, 4)
        assert np.array_equal(writes, channels * rows)
        assert np.array_equal(_group_write_cycles(IMAGE, 0, channels, 4, valid, first_column, 4), -(-writes // 2))
        assert np.array_equal(_group_write_cycles(IMAGE, 1, channels, 4, valid, first_column, 4), writes)
    for layout in (PACKED, POSITION_MAJOR):
        assert np.array_equal(_group_write_cycles(layout, 0, channels, 4, 3, 0, 4),
                              _group_writes(layout, channels, 4, 3, 0, 4))


def test_a_run_overlaps_each_pass_with_the_drain_of_the_one_before():
    """Three passes of one run (the hand-worked pass, then twice 1 position of 20 products, latency 6): the second
    reads the RAM the first writes: its set-up (3 + its 1-position walk) waits for the first pass's last group,
    written 6 + 1 write cycle after its last product (two channels on one row, both ports): 6 + 1 - 1 drain
    cycles past the walk.  The third reads the other
    RAM: it sets up at once (3 + 1) and its last product (f_0 + 19) is later than the second pass's writes
    (f_0 + 6 + 1 - 1 - 1): no stall.  Only the last pass drains (6 + 1 packed write + 3)."""
    counters = pass_counters(positions_per_group=2, count=[4, 1, 1], products=[1, 20, 20], latency=6,
                             out_channels=2, lanes=4, layout=[IMAGE, PACKED, PACKED], reduce=[1, 0, 0],
                             first_column=0, out_width=[4, 1, 1], run=0, reads_previous=[True, True, False])
    assert {name: values.tolist() for name, values in counters.items()} == {
        "cycles": [5 + 12, 3 + 1 + 6 + 20, 3 + 1 + 20 + 10], "product_cycles": [2, 20, 20],
        "stall_cycles": [10, 0, 0], "drain_cycles": [0, 6, 10]}
    alone = pass_counters(positions_per_group=2, count=[4, 1, 1], products=[1, 20, 20], latency=6, out_channels=2,
                          lanes=4, layout=[IMAGE, PACKED, PACKED], reduce=[1, 0, 0], first_column=0,
                          out_width=[4, 1, 1])
    assert alone["cycles"].tolist() == [5 + 12 + 10, 4 + 20 + 10, 4 + 20 + 10]
    # A pass that reads the other RAM with fewer products than the writes it follows: its last product waits.
    short = pass_counters(positions_per_group=2, count=[4, 1], products=[1, 2], latency=6, out_channels=2, lanes=4,
                          layout=[IMAGE, PACKED], reduce=[1, 0], first_column=0, out_width=[4, 1], run=0,
                          reads_previous=[1, 0])
    assert short["stall_cycles"].tolist() == [10, (6 + 1 - 1 - 1) - 1]


def test_a_hand_worked_add_of_row_words():
    """A residual add of 5 row words (one per group, 2 products, latency 6): its groups follow one another every
    two cycles (the writer writes a word whole with its done), no stall; alone: set-up 3 + 1, 10 product cycles,
    drain 6 + 0 + 3.  The pass after it reads the RAM it writes: it waits for the last word, written 6 + 0 + 2
    cycles after the add's last product: 6 - 1 drain cycles past its 1-position walk."""
    add = dict(positions_per_group=1, count=5, products=2, latency=6, out_channels=8, lanes=4, layout=ROW_WORDS,
               reduce=1, first_column=0, out_width=1)
    assert {name: int(value) for name, value in pass_counters(**add).items()} == {
        "cycles": 4 + 10 + 9, "product_cycles": 10, "stall_cycles": 0, "drain_cycles": 9}
    run = pass_counters(**(add | dict(count=[5, 1], products=[2, 20], layout=[ROW_WORDS, PACKED], reduce=[1, 0],
                                      run=0, reads_previous=[1, 1])))
    assert run["cycles"].tolist() == [4 + 10, 3 + 1 + 5 + 20 + 6 + 2 + 3]
    assert run["drain_cycles"].tolist() == [0, 5 + 6 + 2 + 3]
    assert pass_writes(**{name: add[name] for name in ("positions_per_group", "count", "out_channels", "lanes",
                                                       "layout", "first_column", "out_width")}) == 5
