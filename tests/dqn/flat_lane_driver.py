"""Drives hw.dqn.flat_lane_window.FlatLaneWindow's control as the flat map's sequencer would, for the flat-map tests:
the first group's windows loaded and swapped in, then every group's steps back to back, the next group's windows
loaded into the back windows during them (two words a cycle) and swapped in, and the lanes moved on (or set anew
at a channel's start), with the group's last step."""

from nnaccel.models.dqn.flat_map import lane_coordinates, step_bounds, window_base, window_shift

BOUNDS = ("row_low", "row_high", "column_low", "column_high")


def _pack(words, width):
    return [sum(int(value) << (width * element) for element, value in enumerate(word)) for word in words]


async def drive_groups(ctx, window, layer, memory, groups, on_step):
    """``groups``: per group, per slot ``(channel_word, first_position)`` (every slot's lanes move together: slot
    ``s``'s first position is the group's plus ``s`` slots of lanes).  Calls ``await on_step(group, kh, kw)`` after
    each step's cycle (the vectors are then the step's); returns when the last step's vectors are out."""
    control, config = window.control, window.config
    group_lanes = config.modules * config.lanes
    row_elements = config.row_elements

    def loads(assignments):
        # The slots' window words in order, two a load (a load may end one slot's window and start the next's).
        words = [memory[(channel_word + window_base(layer, row_elements, first) + word) % len(memory)]
                 for channel_word, first in assignments for word in range(window.window_words)]
        for index in range(len(words) // 2):
            yield index, words[2 * index:2 * index + 2]

    def move_lanes(previous, assignments):
        first = assignments[0][1]
        if previous is not None and first == previous[0][1] + group_lanes:
            ctx.set(control.advance, 1)
            ctx.set(control.advance_rows, group_lanes // layer.out_width)
            ctx.set(control.advance_columns, group_lanes % layer.out_width)
            ctx.set(control.out_width, layer.out_width)
        else:
            rows, columns = lane_coordinates(layer.out_width, first, group_lanes)
            ctx.set(control.lane_rows, [int(row) for row in rows])
            ctx.set(control.lane_columns, [int(column) for column in columns])
            ctx.set(control.set_lanes, 1)

    def load(index, words):
        ctx.set(control.load, 1)
        ctx.set(control.load_index, index)
        ctx.set(window.words, _pack(words, config.fmt.width))

    def clear():
        for name in ("load", "swap", "advance", "set_lanes"):
            ctx.set(getattr(control, name), 0)

    for index, words in loads(groups[0]):
        load(index, words)
        await ctx.tick()
    clear()
    ctx.set(control.swap, 1)
    move_lanes(None, groups[0])
    await ctx.tick()
    clear()
    steps = [(kh, kw) for kh in range(layer.kernel_height) for kw in range(layer.kernel_width)]
    for group, assignments in enumerate(groups):
        following = groups[group + 1] if group + 1 < len(groups) else None
        pending = list(loads(following)) if following else []
        assert len(pending) <= len(steps), "the next group's windows do not load within a group's steps"
        for index, (kh, kw) in enumerate(steps):
            ctx.set(control.shifts, [window_shift(layer, row_elements, first, kh, kw) for _, first in assignments])
            for name, value in zip(BOUNDS, step_bounds(layer, kh, kw)):
                ctx.set(getattr(control, name), value)
            if index < len(pending):
                load(*pending[index])
            if index == len(steps) - 1 and following:
                ctx.set(control.swap, 1)
                move_lanes(assignments, following)
            await ctx.tick()
            clear()
            await on_step(group, kh, kw)
