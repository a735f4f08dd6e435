"""The DQN accelerator's on-chip buffer layout, thesis Table 4.1 (SPEC section 1), as data.

Every buffer is a :class:`hw.dual_port_buffer.DualPortBuffer` of binary32 words; each :class:`BufferSpec` says
what one word holds (``contents``): a word is what one access of the layer needs (an image row, the weights of
all filters for one product, ...).

Sizes in the thesis' "KB" column are 1000-byte kilobytes rounded down, a buffer under 1 KB being listed as 1
(FC_2's 128-byte output): :func:`thesis_kilobytes` reproduces every figure of the table.
"""

from dataclasses import dataclass

from hw.dual_port_buffer import block_ram_count

__all__ = ["BufferSpec", "DQN_BUFFERS", "thesis_kilobytes", "format_buffer_table", "print_buffer_table"]

FLOAT_BITS = 32


def thesis_kilobytes(size_bits):
    """Table 4.1's size column: whole kilobytes of 1000 bytes, rounded down, at least 1."""
    return max(1, size_bits // 8 // 1000)


@dataclass(frozen=True)
class BufferSpec:
    """One row of Table 4.1: a buffer of ``depth`` words of ``word_bits`` bits serving ``layer`` in ``role``."""

    layer: str
    role: str
    word_bits: int
    depth: int
    contents: str

    @property
    def floats_per_word(self):
        return self.word_bits // FLOAT_BITS

    @property
    def size_bits(self):
        return self.word_bits * self.depth

    @property
    def kilobytes(self):
        return thesis_kilobytes(self.size_bits)

    @property
    def m20k_blocks(self):
        """Stratix V M20K blocks in true dual-port mode (1024 x 20 each), as :class:`DualPortBuffer` maps it."""
        return block_ram_count(self.word_bits, self.depth, block_depth=1024)


DQN_BUFFERS = (
    BufferSpec("CONV_1", "input", 84 * FLOAT_BITS, 4 * 84, "one image row; 4 channels x 84 rows"),
    BufferSpec("CONV_1", "weight", 16 * FLOAT_BITS, 4 * 8 * 8, "16 filters of one (channel, row, column)"),
    BufferSpec("CONV_1", "output", 20 * FLOAT_BITS, 16 * 20, "one output row; 16 channels x 20 rows"),
    BufferSpec("CONV_2", "weight", 32 * FLOAT_BITS, 16 * 4 * 4, "32 filters of one (channel, row, column)"),
    BufferSpec("CONV_2", "output", 9 * FLOAT_BITS, 32 * 9, "one output row; 32 channels x 9 rows"),
    BufferSpec("FC_1", "weight", 128 * FLOAT_BITS, 2592 * 2, "128 of the 256 weights of one input"),
    BufferSpec("FC_1", "output", 16 * FLOAT_BITS, 256 // 16, "16 of the 256 outputs"),
    BufferSpec("FC_2", "weight", 32 * FLOAT_BITS, 256, "the 32 action weights of one input"),
    BufferSpec("FC_2", "output", 32 * FLOAT_BITS, 1, "the 32 Q-values"),
)


def format_buffer_table(buffers=DQN_BUFFERS):
    """Table 4.1 as text: layer (on its first buffer only, as in the thesis), type, word, depth, size (KB),
    then this project's extra columns: floats per word and M20K blocks."""
    header = ("layer", "type", "word (bit)", "depth", "size (KB)", "floats/word", "M20K")
    rows = []
    previous_layer = None
    for buffer in buffers:
        rows.append((buffer.layer if buffer.layer != previous_layer else "", buffer.role, str(buffer.word_bits),
                     str(buffer.depth), str(buffer.kilobytes), str(buffer.floats_per_word),
                     str(buffer.m20k_blocks)))
        previous_layer = buffer.layer
    total_bits = sum(buffer.size_bits for buffer in buffers)
    rows.append(("total", "", "", "", str(thesis_kilobytes(total_bits)), "",
                 str(sum(buffer.m20k_blocks for buffer in buffers))))
    widths = [max(len(row[column]) for row in (header, *rows)) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if column < 2 else cell.rjust(width)
                       for column, (cell, width) in enumerate(zip(row, widths))).rstrip()
             for row in (header, *rows)]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def print_buffer_table(buffers=DQN_BUFFERS):
    print(format_buffer_table(buffers))


if __name__ == "__main__":
    print_buffer_table()
