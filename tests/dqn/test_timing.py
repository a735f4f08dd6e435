"""The DQN accelerator's timing model: the closed form against the group-by-group rules, the writer's writes,
hand-worked passes and runs.

The model's agreement with the hardware is checked on the simulated accelerator (tests/dqn/test_accelerator.py,
tests/dse/test_rtl_validate.py); here it is checked against the rules of its docstring, group by group, and
hand-worked passes."""

import numpy as np

from nnaccel.models.dqn.timing import IMAGE, PACKED, POSITION_MAJOR, ROW_WORDS, pass_counters, pass_writes


def group_writes(layout, out_channels, lanes, valid, first_column, out_width):
    """The writer's row writes of one group (the rule of the docstring, one group at a time)."""
    blocks = -(-out_channels // lanes)
    rows = 1 + (first_column + valid > out_width)
    return {IMAGE: out_channels * rows, PACKED: blocks, POSITION_MAJOR: blocks * valid, ROW_WORDS: valid}[layout]


def group_write_cycles(layout, reduce, out_channels, lanes, valid, first_column, out_width):
    """``W_g`` of a group before a pass's last: image layout outside reductions two rows a cycle (a channel's two
    rows, or two channels' one row); an add's word with the writer's done (0); otherwise one write a cycle."""
    writes = group_writes(layout, out_channels, lanes, valid, first_column, out_width)
    if layout == ROW_WORDS:
        return 0
    if layout == IMAGE and not reduce:
        return out_channels if first_column + valid > out_width else -(-out_channels // 2)
    return writes


def group_by_group_stalls(P, count, products, latency, out_channels, lanes, layout, reduce, first_column, out_width):
    """The stalls of a pass run alone, by the docstring's rules: ``f_g = b_{g-1} + 1``, ``b_g = max(f_g + products
    - 1, b_{g-1} + gap)``, the gap ``L + W_{g-1} + 3`` (an add's 2)."""
    last, stalls = products - 1, 0
    for group in range(1, -(-count // P)):
        previous = group - 1
        writes = group_write_cycles(layout, reduce, out_channels, lanes, min(P, count - previous * P),
                                    (first_column + previous * P) % out_width, out_width)
        gap = 2 if layout == ROW_WORDS else latency + writes + 3
        following = max(last + products, last + gap)
        stalls += following - (last + products)
        last = following
    return stalls


def test_a_hand_worked_pass_that_waits_for_the_writer():
    """P = 2 positions per group, 4 positions in a 4-wide grid, 1 product, latency 6, 2 channels in image layout,
    a reduction.  Group 0: its one product on 1 (set-up 1: the descriptor, the taps and the first read).  Group 1:
    its taps are ready on 2, its product, also its last, waits for group 0's writes (one a cycle in a reduction):
    1 + 6 + 2 writes + 3 = 12 (10 stalls).  Its last group written on both ports: drain 6 + 1 + 3."""
    counters = pass_counters(positions_per_group=2, count=4, products=1, latency=6, out_channels=2, lanes=4,
                             layout=IMAGE, reduce=1, first_column=0, out_width=4)
    assert {name: int(value) for name, value in counters.items()} == {
        "cycles": 1 + 12 + 10, "product_cycles": 2, "stall_cycles": 10, "drain_cycles": 10}


def random_passes(rng, size):
    out_width = rng.integers(1, 20, size)
    positions_per_group = np.minimum(rng.integers(1, 17, size), out_width + 1)
    return dict(positions_per_group=positions_per_group, count=rng.integers(1, 120, size),
                products=rng.integers(1, 40, size), latency=rng.integers(1, 12, size),
                out_channels=rng.integers(1, 24, size), lanes=rng.integers(1, 9, size),
                layout=rng.integers(0, 4, size), reduce=rng.integers(0, 2, size), first_column=rng.integers(0, 1 << 20, size) % out_width,
                out_width=out_width)


def test_the_closed_form_is_the_group_by_group_rule():
    rng = np.random.default_rng(12)
    passes = random_passes(rng, 3_000)
    counters = pass_counters(**passes)
    stalls = [group_by_group_stalls(*(int(passes[name][index]) for name in (
        "positions_per_group", "count", "products", "latency", "out_channels", "lanes", "layout", "reduce",
        "first_column", "out_width"))) for index in range(3_000)]
    assert counters["stall_cycles"].tolist() == stalls
    assert stalls.count(0) > 300 and len(stalls) - stalls.count(0) > 300
    groups = -(-passes["count"] // passes["positions_per_group"])
    assert np.array_equal(counters["product_cycles"], groups * passes["products"])
    assert np.array_equal(counters["cycles"], 1 + counters["product_cycles"] + counters["stall_cycles"]
                          + counters["drain_cycles"])


def test_pass_writes_sum_the_writes_of_every_group():
    rng = np.random.default_rng(13)
    passes = random_passes(rng, 3_000)
    del passes["products"], passes["latency"], passes["reduce"]
    got = pass_writes(**passes)
    for index in range(len(got)):
        one = {name: int(values[index]) for name, values in passes.items()}
        P, count, width = one["positions_per_group"], one["count"], one["out_width"]
        expected = sum(group_writes(one["layout"], one["out_channels"], one["lanes"], min(P, count - group * P),
                                    (one["first_column"] + group * P) % width, width)
                       for group in range(-(-count // P)))
        assert got[index] == expected, one
    assert {PACKED, POSITION_MAJOR, IMAGE, ROW_WORDS} == set(passes["layout"].tolist())


def test_a_hand_worked_pass_with_paired_writes():
    """The pass above, not a reduction: group 0 (one row) writes its 2 channels in one cycle on both ports, so
    group 1's product waits for 1 + 6 + 1 + 3 = 11 (9 stalls), and the drain is 6 + 1 + 3."""
    counters = pass_counters(positions_per_group=2, count=4, products=1, latency=6, out_channels=2, lanes=4,
                             layout=IMAGE, reduce=0, first_column=0, out_width=4)
    assert {name: int(value) for name, value in counters.items()} == {
        "cycles": 1 + 11 + 10, "product_cycles": 2, "stall_cycles": 9, "drain_cycles": 10}


def test_paired_write_cycles_halve_the_image_writes():
    """Image layout outside reductions: a group on two rows writes each channel's two rows in one cycle, a group
    on one row two channels a cycle: the closed form's writer stalls (products 1, latency 6) follow."""
    for first_column, rows in ((0, 1), (2, 2)):
        channels = np.arange(1, 40)
        counters = pass_counters(positions_per_group=3, count=6, products=1, latency=6, out_channels=channels,
                                 lanes=4, layout=IMAGE, reduce=0, first_column=first_column, out_width=4)
        paired = channels if rows == 2 else -(-channels // 2)
        assert np.array_equal(counters["stall_cycles"], 6 + paired + 2)
        one_port = pass_counters(positions_per_group=3, count=6, products=1, latency=6, out_channels=channels,
                                 lanes=4, layout=IMAGE, reduce=1, first_column=first_column, out_width=4)
        assert np.array_equal(one_port["stall_cycles"], 6 + channels * rows + 2)


def test_a_run_overlaps_each_pass_with_the_drain_of_the_one_before():
    """Three passes of one run (the hand-worked pass, then twice 1 position of 20 products, latency 6): the second
    reads the RAM the first writes: it waits for the first pass's last group, written 6 + 1 write cycle + 2 after
    its last product (two channels on one row, both ports): 6 + 1 + 1 drain cycles from its cycle 1, its read on
    the next.  The third reads the other RAM: it reads on its first cycle, and its last product (f_0 + 19) is
    later than the second pass's writes (f_0 + 6 + 1 + 1): no stall.  Only the last pass drains (6 + 1 packed write
    + 3)."""
    counters = pass_counters(positions_per_group=2, count=[4, 1, 1], products=[1, 20, 20], latency=6,
                             out_channels=2, lanes=4, layout=[IMAGE, PACKED, PACKED], reduce=[1, 0, 0],
                             first_column=0, out_width=[4, 1, 1], run=0, reads_previous=[True, True, False])
    assert {name: values.tolist() for name, values in counters.items()} == {
        "cycles": [1 + 12, 1 + 8 + 1 + 20, 1 + 20 + 10], "product_cycles": [2, 20, 20],
        "stall_cycles": [10, 0, 0], "drain_cycles": [0, 8, 10]}
    alone = pass_counters(positions_per_group=2, count=[4, 1, 1], products=[1, 20, 20], latency=6, out_channels=2,
                          lanes=4, layout=[IMAGE, PACKED, PACKED], reduce=[1, 0, 0], first_column=0,
                          out_width=[4, 1, 1])
    assert alone["cycles"].tolist() == [1 + 12 + 10, 1 + 20 + 10, 1 + 20 + 10]
    # A pass that reads the other RAM with fewer products than the writes it follows: its last product waits for
    # them (b_0 >= b' + 6 + 1 + 3 = f_0 + 8).
    short = pass_counters(positions_per_group=2, count=[4, 1], products=[1, 2], latency=6, out_channels=2, lanes=4,
                          layout=[IMAGE, PACKED], reduce=[1, 0], first_column=0, out_width=[4, 1], run=0,
                          reads_previous=[1, 0])
    assert short["stall_cycles"].tolist() == [10, 8 - 1]
    # A start delay of 5: the first read on the pass's cycle 4 (3 drain cycles), whatever the writer does.
    delayed = pass_counters(positions_per_group=2, count=[4, 1], products=[1, 20], latency=6, out_channels=2,
                            lanes=4, layout=[IMAGE, PACKED], reduce=[1, 0], first_column=0, out_width=[4, 1], run=0,
                            reads_previous=[1, 1], start_delay=[0, 5])
    assert delayed["cycles"].tolist() == [1 + 12, 1 + 4 + 20 + 10] and delayed["drain_cycles"].tolist() == [0, 3 + 10]


def test_a_hand_worked_add_of_row_words():
    """A residual add of 5 row words (one per group, 2 products, latency 6): its groups follow one another every
    two cycles (the writer writes a word whole with its done), no stall; alone: set-up 1, 10 product cycles,
    drain 6 + 0 + 3.  The pass after it reads the RAM it writes: it waits for the last word, written 6 + 0 + 2
    cycles after the add's last product: 6 + 0 + 1 drain cycles from its cycle 1, its read on the next."""
    add = dict(positions_per_group=1, count=5, products=2, latency=6, out_channels=8, lanes=4, layout=ROW_WORDS,
               reduce=1, first_column=0, out_width=1)
    assert {name: int(value) for name, value in pass_counters(**add).items()} == {
        "cycles": 1 + 10 + 9, "product_cycles": 10, "stall_cycles": 0, "drain_cycles": 9}
    run = pass_counters(**(add | dict(count=[5, 1], products=[2, 20], layout=[ROW_WORDS, PACKED], reduce=[1, 0],
                                      run=0, reads_previous=[1, 1])))
    assert run["cycles"].tolist() == [1 + 10, 1 + 7 + 1 + 20 + 6 + 2 + 3]
    assert run["drain_cycles"].tolist() == [0, 7 + 6 + 2 + 3]
    assert pass_writes(**{name: add[name] for name in ("positions_per_group", "count", "out_channels", "lanes",
                                                       "layout", "first_column", "out_width")}) == 5
