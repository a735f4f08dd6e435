"""hw.dqn_buffers: the printed table reproduces the thesis' Table 4.1 (SPEC section 1) figure for figure."""

from hw.dqn_buffers import DQN_BUFFERS, format_buffer_table, print_buffer_table, thesis_kilobytes

# Table 4.1 of the thesis (layer, type, word (bit), depth, size (KB)), typed in from SPEC.md.
THESIS_TABLE_4_1 = [
    ("CONV_1", "input", 2688, 336, 112),
    ("CONV_1", "weight", 512, 256, 16),
    ("CONV_1", "output", 640, 320, 25),
    ("CONV_2", "weight", 1024, 256, 32),
    ("CONV_2", "output", 288, 288, 10),
    ("FC_1", "weight", 4096, 5184, 2654),
    ("FC_1", "output", 512, 16, 1),
    ("FC_2", "weight", 1024, 256, 32),
    ("FC_2", "output", 1024, 1, 1),
]


def parse_printed_table(text):
    """(layer, type, word, depth, KB) per buffer row of the printed table; a blank layer repeats the one above."""
    rows = []
    layer = None
    for line in text.splitlines()[2:]:
        cells = line.split()
        if cells[0] == "total":
            continue
        if not cells[0].isupper():          # continuation row: no layer cell
            cells = [layer, *cells]
        layer = cells[0]
        rows.append((cells[0], cells[1], int(cells[2]), int(cells[3]), int(cells[4])))
    return rows


def test_printed_table_matches_thesis(capsys):
    print_buffer_table()
    printed = capsys.readouterr().out
    assert printed == format_buffer_table() + "\n"
    assert parse_printed_table(printed) == THESIS_TABLE_4_1
    assert printed.splitlines()[0].split()[:6] == ["layer", "type", "word", "(bit)", "depth", "size"]


def test_derived_sizes():
    assert [b.floats_per_word for b in DQN_BUFFERS] == [84, 16, 20, 32, 9, 128, 16, 32, 32]
    assert sum(b.size_bits for b in DQN_BUFFERS) // 8 == 2_886_144      # the on-chip data, under the 6 MB
    assert (thesis_kilobytes(128 * 8), thesis_kilobytes(112_896 * 8)) == (1, 112)
    assert format_buffer_table().splitlines()[-1].split() == ["total", "2886", "1620"]
