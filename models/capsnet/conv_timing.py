"""Cycle model of :class:`hw.capsnet.conv_engine.CapsNetConvEngine` in its tiled mode: when every step of a streamed
convolution runs, when its tiles are released and its row groups written, and what the engine's counters show.

The engine's rules (its docstring, "Timing"), from ``start`` on cycle ``s``: products from ``s + 2``, one per cycle;
a step's first product waits until its tile is ready; a *finishing* product (one of the pass's last ``R``, one
per accumulator row) waits until the writer has written the previous row: a finishing product on cycle ``t``
has its row written on ``t + 5 .. t + 4 + W`` (``W`` channels of its block), so the next finishing product
issues no earlier than ``t + 5 + W``; ``done`` on the cycle after the last row is written.
"""

from nnaccel.hw.capsnet.int_matrix_module import INT_MATRIX_MODULE_LATENCY

__all__ = ["ConvEngineTiming"]

WRITE_DELAY = 1 + INT_MATRIX_MODULE_LATENCY + 1   # finishing product -> first write: read, module, writer start


class ConvEngineTiming:
    """The steps of one streamed convolution (``layer``: a
    :class:`models.capsnet.image_stream_plan.ConvStreamLayer`) on an engine of ``modules`` x ``rows``, started on
    cycle ``start``.  Call :meth:`run_step` with the cycle each next step's tile is ready; read ``release_cycles``
    (per tile, the cycle of its last ``tile_done``), ``group_written_cycles`` (per row group) and, once
    ``finished``, ``done_cycle`` and ``counters`` (product, stall and drain cycles)."""

    def __init__(self, layer, *, modules, rows, start):
        self.layer, self.modules, self.rows = layer, modules, rows
        stream = layer.stream
        self.channels, self.column_blocks = stream["channels"], stream["column_blocks"]
        self.row_groups, self.image = stream["block_groups"], bool(stream["image"])
        kernel_height, kernel_width = layer.kernel
        self.step_products = kernel_height * kernel_width * rows
        self.steps = layer.blocks * self.row_groups * self.column_blocks * self.channels
        self.step = 0
        self.earliest = start + 2            # the first cycle the next product may issue
        self.writer_free = start + 2         # the first cycle a finishing product may issue
        self.release_cycles, self.group_written_cycles = [], []
        self.products = self.stalls = 0
        self.last_product = None
        self.done_cycle = None

    @property
    def finished(self):
        return self.step == self.steps

    def _position(self):
        """(block, group, column block, channel) of the next step."""
        rest, channel = divmod(self.step, self.channels)
        rest, column_block = divmod(rest, self.column_blocks)
        block, group = divmod(rest, self.row_groups)
        return block, group, column_block, channel

    @property
    def next_tile(self):
        """Index of the tile the next step uses (in load order)."""
        block, _, _, _ = self._position()
        return block if self.image else self.step

    @property
    def next_opens_group(self):
        """The row group (counted over the layer) whose first step is next, or None."""
        block, group, column_block, channel = self._position()
        return block * self.row_groups + group if column_block == 0 and channel == 0 else None

    def run_step(self, ready):
        """Run the next step, its tile ready from cycle ``ready`` on."""
        block, group, column_block, channel = self._position()
        begin = max(self.earliest, ready)
        self.stalls += begin - self.earliest
        cycle = begin + self.step_products - 1           # its last product, unless it ends a pass
        if channel == self.channels - 1:
            writes = min(self.modules, self.layer.out_shape[0] - block * self.modules)
            cycle = begin + self.step_products - self.rows - 1
            for _ in range(self.rows):                     # the finishing products, one per row
                issue = max(cycle + 1, self.writer_free)
                self.stalls += issue - (cycle + 1)
                cycle = issue
                self.writer_free = issue + WRITE_DELAY + writes
            if column_block == self.column_blocks - 1:
                self.group_written_cycles.append(self.writer_free - 1)
        self.products += self.step_products
        last_use = not self.image or (group == self.row_groups - 1 and column_block == self.column_blocks - 1)
        if last_use:
            self.release_cycles.append(cycle)
        self.earliest = cycle + 1
        self.last_product = cycle
        self.step += 1
        if self.finished:
            self.done_cycle = self.writer_free

    @property
    def counters(self):
        """(product cycles, stall cycles, drain cycles) as the engine's events count them."""
        return self.products, self.stalls, self.done_cycle - self.last_product
