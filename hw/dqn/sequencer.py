"""Layer sequencer of the DQN accelerator: runs the descriptor table, one product per cycle."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.descriptor import GEOMETRY_BITS, descriptor_layout, tap_columns
from nnaccel.hw.dqn.flat_stepper import FlatStepper
from nnaccel.hw.dqn.interfaces import ActivationSelectSignature, FeederControlSignature, ResultGroupSignature
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.hw.dqn.weight_handshake import WeightTileSignature
from nnaccel.hw.shared.run_control import RunSignature

__all__ = ["LayerSequencer"]


class LayerSequencer(DqnBlock):
    """Walks layers -> groups of output positions -> steps ``(c, kh)`` -> columns ``kw``.

    For each layer (``run.descriptor``, selected by ``run.layer_index``) the output positions
    ``first_position .. positions - 1`` are taken in groups of ``P = modules >> column_blocks_log2``;
    every group is ``products`` products for all modules at once, with the bias row (weight row ``weight_base +
    products``) read on the weight RAM's second port with the first one: the accumulations' seed, so the bias
    costs no product cycle.  In a
    reduction layer (``reduce``) every product has scalar 1.0 (``unit_scalar``) and step ``k`` of the group at
    position ``p0`` reads input word ``in_base + (p0 - first_position) + k*step_distance`` on
    ``row_address1`` (a K-split's sum: one position, distance 1; a residual add: one row word per group,
    the two addends ``step_distance`` words apart); the product's ``vector_from_activations`` tells the
    feeder to take the modules' vectors from that word.  On the first cycle of each step the rows of the *next*
    step are read (addresses ``row_address0/1``, ``row_read``), so the row registers of the feeder reload
    without a bubble; within a step the feeder shifts one element per product.

    Group taps: a position walker computes, in one cycle (on a group's first product, for the next group), each
    module's tap (row slot and first window column ``ox*stride_x + pad_columns - pad_left`` of the feeder's row
    registers: module ``m`` takes position ``i = m >> column_blocks_log2`` of the group, column ``ox0 + i``, one row
    down past the grid's width); the taps switch on the group's first product.

    Zero padding: step ``(c, kh)`` of a group whose first output row is ``oy0`` reads input rows ``oy0*stride_y +
    kh - pad_top`` (slot 0) and that ``+ stride_y`` (slot 1); a row outside ``0 .. in_height - 1`` is read with
    its ``row_zero`` flag, and the feeder loads it as zeros.  The left padding is the taps' offset, the right
    padding the feeder's zeroing of elements at and past ``in_width`` (``row_width``).  Padding costs no cycle:
    a group is ``in_channels * kernel_height * kernel_width`` products with or without it.

    The flat map (``config.flat_slots``): a pass with the descriptor's ``flat`` bit is walked by a
    :class:`~hw.dqn.flat_stepper.FlatStepper`, started where the pass would read its first rows (state FLAT: its
    reads and products go to the feeder, its groups to the writer as any group, its lane-window control always to the
    feeder's ``flat_lanes``); a pass with ``write_width`` has a second output grid, the writer's row and column of
    each group kept beside the walk (from position 0, ``P`` on per group).  The writer has a second staging
    register: in a pass in image or flat layout that does not read the RAM it writes, a group that is neither the
    pass's first nor its last may finish while one group is in flight; the group port takes it (from a queued group
    register) when the one before is written (``models.dqn.timing.staged_stalls``).

    Ports
    -----
    run : In(:class:`~hw.shared.run_control.RunSignature`) from the host control block: ``start`` with
        ``layer_count``; ``descriptor`` (the current layer's fields) for ``layer_index``; ``busy``, ``done``;
        ``events`` for the performance counters: ``issue`` (a product issued), ``stall`` (a product could not
        issue: the writer still holds the previous group), ``draining`` (waiting before a pass's first read for
        the previous pass's writes, or its start delay, and at the end of the run for its last writes).
    feeder : Out(:class:`~hw.dqn.interfaces.FeederControlSignature`): per product ``issue`` and ``product``
        (the matrix modules take it on the next cycle), the row registers' ``load``/``shift``/``unit_scalar``,
        the taps, and the reads of the input rows (``row_address0``, ``row_address1``, ``row_read``), weights
        (``weight_address``, ``weight_read``) and bias rows (``bias_address``, ``bias_read``).
    select : Out(:class:`~hw.dqn.interfaces.ActivationSelectSignature`): ``busy``, the layer's ``in_ram`` as
        ``read_ram`` and registered as ``in_ram`` (one cycle later, so that a read's data comes from the RAM it was
        read from, also a pass's last read, taken on the next pass's first cycle) and
        ``out_ram`` (the writer's while a group is in flight).
    group : Out(:class:`~hw.dqn.interfaces.ResultGroupSignature`): the group the writer writes next and its
        layer; ``written`` when the writer is done with it.
    weights : Out(:class:`~hw.dqn.weight_handshake.WeightTileSignature`), with ``config.external_weights`` only:
        a run's ``start`` and ``passes`` to the weight-tile loader; a pass's first read and each product wait for
        ``ready`` (the product's weight word and the bias row are loaded; the cycles they wait count as ``stall``
        where the pass waits for nothing else), and its last product gives ``release``.

    Timing per layer: 1 cycle to load the descriptor, compute its first group's taps and read its first rows
    (SETUP), ``groups * products`` product cycles plus stalls.  Stalls: the last product of a group waits until
    the previous group is written (never in the thesis network: a group is >= 8 cycles, its writes <= 64 and
    the groups of its longer passes 256).  Passes overlap: on the cycle after a pass's last product the next pass
    (``layer_index + 1``) starts while the last group drains through the matrix modules and the writer (the
    writer keeps that pass's descriptor on ``group.layer``, ``select.out_ram`` stays its RAM while the group is in
    flight).  A pass that reads the RAM being written and has no ``start_delay`` (0) waits in PRIME until the
    group is written (``draining``), then reads; with a start delay ``d`` it reads on its cycle ``d - 1``, where
    the compiler proved every read after its write on a port the writer leaves free (the previous pass's
    ``handoff`` bit writes its last group on port 1 alone while a convolution reads on port 0; a sum reads its
    partial sums on port 1 while they are written on port 0: models/dqn/handoff.py); a pass that reads the other
    RAM starts at once, and only its first group's last product may wait (a stall).  The run's last pass
    drains: matrix module latency + the last group's writes + 3.  A residual add (``reduce`` with
    ``position_major``: two products per row word) waits for the writer only with its first group: the writer
    writes an add's word whole with its ``written``, so it takes a group every two cycles, and the add's groups
    follow one another through the matrix modules and the writer, several in flight (counted; the group port moves
    on to the next word as each is written).  An add neither gives nor takes a handoff.
    ``models.dqn.timing`` gives every counter.
    FPGA: counters and adders of <= 24 bits and the per-module tap registers, in ALMs; no DSPs (the walker's
    products with a 4-bit stride are shifted adds: per module a 12-bit compare and two adders).  The overlap
    costs the descriptor register of ``group.layer`` (269 flip-flops for the default configuration), a 1-bit
    RAM compare, a 2:1 mux of ``out_ram`` and the ``in_ram`` flip-flop; the start delay a 6-bit counter and
    compare; the add's pipelining a 4-bit count of the groups in flight, a 20-bit incrementer of the group port's
    ``p0`` and a compare with ``first_position``.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        super().__init__(config, {
            "run": In(RunSignature(max_layers=config.max_layers, descriptor_layout=descriptor_layout(config))),
            "feeder": Out(FeederControlSignature(config)),
            "select": Out(ActivationSelectSignature()),
            "group": Out(ResultGroupSignature(config)),
            **({"weights": Out(WeightTileSignature(config))} if config.external_weights else {}),
        })

    def elaborate(self, platform):
        m = Module()
        config = self._config
        run, feeder = self.run, self.feeder
        layer = run.descriptor
        modules = config.modules
        group_size = Signal(range(modules + 1))                  # P
        m.d.comb += group_size.eq(modules >> layer.column_blocks_log2)
        column_origin = Signal(range(config.pad_columns + 1))    # tap column of output column 0
        m.d.comb += column_origin.eq(config.pad_columns - layer.pad_left)

        # ---- Position walker: the taps of the next group, all in one cycle -----------------------------
        # walk_*: the origin of the group after the one whose taps are computed next (its position, row, column,
        # its tap column ox*stride_x + column_origin and row oy*stride_y).  On start_walk the next group's taps are
        # computed from that origin (position index i = module >> log2 C: column ox0 + i, one row down past the
        # grid's width, as a group lies in two output rows) and the origin moves on by P positions (at most two
        # rows: P <= 2 * out_width).  reset_walk takes the pass's first group from the descriptor in the same cycle.
        walk_position = Signal.like(layer.positions)
        walk_oy, walk_ox = Signal.like(layer.first_oy), Signal.like(layer.first_ox)
        walk_column = Signal(GEOMETRY_BITS)
        walk_row = Signal.like(layer.first_row)
        next_p0, next_oy0, next_ox0 = Signal.like(walk_position), Signal.like(walk_oy), Signal.like(walk_ox)
        next_row = Signal.like(walk_row)
        next_slot = Signal(modules)
        next_column = Signal(data.ArrayLayout(range(tap_columns(config)), modules))
        start_walk = Signal()
        reset_walk = Signal()
        origin_position, origin_oy, origin_ox = Signal.like(walk_position), Signal.like(walk_oy), Signal.like(walk_ox)
        origin_column, origin_row = Signal.like(walk_column), Signal.like(walk_row)
        with m.If(reset_walk):
            m.d.comb += [origin_position.eq(layer.first_position), origin_oy.eq(layer.first_oy),
                         origin_ox.eq(layer.first_ox), origin_column.eq(layer.first_column + column_origin),
                         origin_row.eq(layer.first_row)]
        with m.Else():
            m.d.comb += [origin_position.eq(walk_position), origin_oy.eq(walk_oy), origin_ox.eq(walk_ox),
                         origin_column.eq(walk_column), origin_row.eq(walk_row)]

        def times_stride(value, stride):
            """``value * stride`` as shifted adds (a 4-bit stride: no multiplier)."""
            return sum(Mux(stride[bit], value << bit, 0) for bit in range(len(stride)))

        row_columns = Signal(GEOMETRY_BITS + len(layer.stride_x))   # out_width * stride_x: a row's tap columns
        m.d.comb += row_columns.eq(times_stride(layer.out_width, layer.stride_x))
        advanced_ox = Signal(GEOMETRY_BITS + 1)
        m.d.comb += advanced_ox.eq(origin_ox + group_size)
        rows_down = Signal(range(3))                             # output rows from this group's origin to the next's
        m.d.comb += rows_down.eq((advanced_ox >= layer.out_width) + (advanced_ox >= 2 * layer.out_width))
        with m.If(start_walk):
            m.d.sync += [next_p0.eq(origin_position), next_oy0.eq(origin_oy), next_ox0.eq(origin_ox),
                         next_row.eq(origin_row),
                         walk_position.eq(origin_position + group_size), walk_oy.eq(origin_oy + rows_down),
                         walk_ox.eq(advanced_ox - times_stride(layer.out_width, rows_down)),
                         walk_row.eq(origin_row + times_stride(layer.stride_y, rows_down)),
                         walk_column.eq(origin_column + times_stride(group_size, layer.stride_x)
                                        - times_stride(row_columns, rows_down))]
            for module in range(modules):
                index = Signal(range(modules), name=f"position_index{module}")
                m.d.comb += index.eq(module >> layer.column_blocks_log2)
                wrapped = origin_ox + index >= layer.out_width
                m.d.sync += [next_slot[module].eq(wrapped),
                             next_column[module].eq(origin_column + times_stride(index, layer.stride_x)
                                                    - Mux(wrapped, row_columns, 0))]

        # ---- Current group and step --------------------------------------------------------------
        # Counters as wide as the descriptor fields they run up to; the channel's word offset as wide as an
        # address (it is only ever added into addresses, which wrap at that width).
        group_row = Signal.like(walk_row)                        # oy0 * stride_y of the current group
        channel, kernel_row = Signal.like(layer.in_channels), Signal.like(layer.kernel_height)
        kernel_column = Signal.like(layer.kernel_width)
        channel_base = Signal.like(feeder.row_address0)            # channel * in_height
        product = Signal.like(layer.products)                    # k within the group
        reduce_address = Signal.like(feeder.row_address1)        # a reduction's next word
        # Groups whose last product is issued and whose results are not yet written: at most one, except in an
        # add (below), whose groups follow one another through the matrix modules and the writer.
        in_flight_groups = Signal(range(matrix_module_latency(config.multiplier_latency, config.adder_latency) + 4))
        in_flight = Signal()
        group_issued = Signal()                                  # a group's last product issued this cycle
        m.d.comb += in_flight.eq(in_flight_groups != 0)
        m.d.sync += in_flight_groups.eq(in_flight_groups + group_issued - self.group.written)
        current_group = Signal.like(self.group.group)            # the group taking products
        last_group = Signal()
        layer_count = Signal.like(run.layer_count)
        pass_cycle = Signal.like(layer.start_delay)              # the pass's cycles before its first read
        issue, stall = run.events.issue, run.events.stall

        def read_rows(row_base, channel_rows, kernel_row_value):
            # Input rows of the step (slot 0) and of the next output row (slot 1), in the unpadded image: a row
            # outside 0 .. in_height - 1 is padding, read as zeros (its address, wrapped, reads anything).
            row = row_base + kernel_row_value - layer.pad_top
            second_row = row + layer.stride_y
            address = layer.in_base + channel_rows + row
            m.d.comb += [feeder.row_address0.eq(address), feeder.row_address1.eq(address + layer.stride_y),
                         feeder.row_zero0.eq((row < 0) | (row >= layer.in_height)),
                         feeder.row_zero1.eq((second_row < 0) | (second_row >= layer.in_height)),
                         feeder.row_read.eq(1)]

        # The flat map's configurations: the writer has a second staging register, so a group's last product may also
        # issue while one group of its pass is in flight (its results wait there), except the pass's first and last
        # groups (models.dqn.timing.staged_stalls); the port takes the group when the one before is written.
        staged = config.flat_slots and ~layer.reduce & ~layer.packed_output
        second_staging = (in_flight_groups == 1) & staged if config.flat_slots else None
        queued_group, queued = Signal.like(self.group.group), Signal()
        flat_stepper = self._flat_stepper(m, in_flight, second_staging) if config.flat_slots else None
        write_grid = self._write_grid(m, reset_walk, start_walk, group_size) if config.flat_slots else None

        def first_read(row_base):
            # The pass's first step's rows; its products from the next cycle.
            read_rows(row_base, 0, 0)
            m.d.sync += [channel.eq(0), kernel_row.eq(0), kernel_column.eq(0), channel_base.eq(0), product.eq(0)]
            m.next = "RUN"
            if flat_stepper is not None:
                with m.If(layer.flat):                       # a flat pass: its stepper reads the first window
                    m.d.comb += flat_stepper.start.eq(1)
                    flat_reads()
                    m.next = "FLAT"

        def flat_reads():
            # The flat stepper's reads of the input RAM and the weight RAM, and its products.
            for name in ("row_address0", "row_address1", "row_read", "weight_address", "weight_read", "bias_address",
                         "bias_read"):
                m.d.comb += getattr(feeder, name).eq(getattr(flat_stepper.feeder, name))

        def group_handed_over(issuing_group, issuing_last):
            # A group's last product issued: its results reach the writer after the matrix modules' latency; its
            # position and layer stay on the group ports until then (the next group's last product waits for
            # in_flight, except an add's, whose groups the port follows as they are written).
            m.d.comb += group_issued.eq(1)
            m.d.sync += [product.eq(0), self.group.layer.eq(layer)]
            if config.external_weights:  # the pass's last weight read: its tile's half is free
                m.d.comb += self.weights.release.eq(issuing_last)
            with m.If(in_flight_groups == self.group.written):
                # No other group in flight: the port takes this one (an add's later groups follow
                # through the port as they are written, above).
                m.d.sync += self.group.group.eq(issuing_group)
            if config.flat_slots:
                with m.Elif(staged):                 # another in flight: the port takes this one when it is written
                    m.d.sync += [queued_group.eq(issuing_group), queued.eq(1)]
            with m.If(issuing_last & (run.layer_index + 1 == layer_count)):
                m.next = "DRAIN"
            with m.Elif(issuing_last):
                # The next pass sets up while this one's last group drains through the writer.
                m.d.sync += run.layer_index.eq(run.layer_index + 1)
                m.next = "SETUP"

        # An add's groups in flight are consecutive row words: when one is written and another is in flight, the
        # group port moves on to the next word (the writer writes the group on the port).
        with m.If(self.group.written & (in_flight_groups > 1)):
            m.d.sync += self.group.group.p0.eq(self.group.group.p0 + 1)
            if config.flat_slots:
                with m.If(queued):                   # a group in the second staging register: the port takes it
                    m.d.sync += [self.group.group.eq(queued_group), queued.eq(0)]
        # The RAM the running pass reads: its addresses at once (read_ram), its data one cycle late (in_ram): a
        # pass's last word read reaches the feeder on the cycle after it (a reduction's vector), when the next pass,
        # already the current one, may read its first rows from the other RAM.
        m.d.sync += self.select.in_ram.eq(layer.in_ram)
        m.d.comb += self.select.read_ram.eq(layer.in_ram)
        # The product issued this cycle; its count and ReLU flag are the layer's (the modules sample them with
        # an accumulation's first product).
        m.d.comb += [feeder.issue.eq(issue),
                     feeder.product.vector_from_activations.eq(issue & layer.reduce),
                     feeder.product.count.eq(layer.products), feeder.product.relu.eq(layer.relu),
                     feeder.row_width.eq(layer.in_width),
                     self.select.busy.eq(run.busy),
                     # While a group is in flight the writer writes its pass's output RAM (the next pass may
                     # already walk, or read another RAM); otherwise the running pass's.
                     self.select.out_ram.eq(Mux(in_flight, self.group.layer.out_ram, layer.out_ram))]
        if config.max_pooling:
            m.d.comb += feeder.product.maximum.eq(layer.maximum)      # a max pool's accumulations are maxima

        with m.FSM():
            with m.State("IDLE"):
                with m.If(run.start):
                    m.d.sync += [run.layer_index.eq(0), layer_count.eq(run.layer_count), run.done.eq(0)]
                    if config.external_weights:
                        m.d.comb += [self.weights.start.eq(1), self.weights.passes.eq(run.layer_count)]
                    m.next = "SETUP"
            # The previous pass's last group may still be written.  A pass without a start delay that reads the RAM
            # being written waits until it is written (a read of a word still to come, and the writer's ports); with
            # one, d (the compiler proved every read after its write, on a port the writer leaves free:
            # models/dqn/handoff.py), it reads first on its cycle d - 1; a pass that reads another RAM at once.
            writer_busy = in_flight & (self.group.layer.out_ram == layer.in_ram) & (layer.start_delay == 0)
            with m.State("SETUP"):
                # The descriptor's first group: its taps computed on this cycle (ready on the next), its first
                # rows read if the pass need not wait.
                m.d.comb += [run.busy.eq(1), reset_walk.eq(1), start_walk.eq(1)]
                may_read = ~writer_busy & (layer.start_delay <= 1)
                if config.external_weights:          # and the pass's weight tile is loaded (else a stall)
                    m.d.comb += stall.eq(may_read & ~self.weights.ready)
                    may_read = may_read & self.weights.ready
                with m.If(may_read):
                    first_read(origin_row)
                with m.Else():
                    m.d.sync += pass_cycle.eq(1)
                    m.next = "PRIME"
            with m.State("PRIME"):
                m.d.comb += run.busy.eq(1)
                delayed = pass_cycle + 1 < layer.start_delay
                m.d.comb += run.events.draining.eq(writer_busy | delayed)
                with m.If(delayed):
                    m.d.sync += pass_cycle.eq(pass_cycle + 1)
                may_read = ~writer_busy & ~delayed
                if config.external_weights:          # and the pass's weight tile is loaded
                    m.d.comb += stall.eq(may_read & ~self.weights.ready)
                    may_read = may_read & self.weights.ready
                with m.If(may_read):
                    first_read(next_row)
            with m.State("RUN"):
                m.d.comb += run.busy.eq(1)
                first_product = product == 0
                last_product = product + 1 == layer.products
                # The group taking this product: on its first product the walker's, later the registered one.
                issuing_group = Signal.like(current_group)
                issuing_last = Signal()
                with m.If(first_product):
                    m.d.comb += [issuing_group.p0.eq(next_p0), issuing_group.oy0.eq(next_oy0),
                                 issuing_group.ox0.eq(next_ox0),
                                 issuing_last.eq(next_p0 + group_size >= layer.positions)]
                    if write_grid is not None:       # the writer's row and column in its own grid
                        with m.If(layer.write_width != 0):
                            m.d.comb += [issuing_group.oy0.eq(write_grid[0]), issuing_group.ox0.eq(write_grid[1])]
                with m.Else():
                    m.d.comb += [issuing_group.eq(current_group), issuing_last.eq(last_group)]
                # A residual add (a reduction with position-major output: two products per row word) after its
                # first group does not wait for the writer, which takes an add's row word every two cycles.
                pipelined = layer.reduce & layer.position_major & (issuing_group.p0 != layer.first_position)
                if config.flat_slots:                # a group neither the pass's first nor its last: staged
                    pipelined = pipelined | (second_staging & (issuing_group.p0 != layer.first_position)
                                             & ~issuing_last)
                waits = last_product & in_flight & ~pipelined
                if config.external_weights:          # or for the product's weight word (a streamed pass)
                    waits = waits | ~self.weights.ready
                with m.If(waits):
                    # The previous group is still being written when this group's results would follow it, or the
                    # product's weight word is not loaded yet.
                    m.d.comb += stall.eq(1)
                with m.Else():
                    m.d.comb += issue.eq(1)
                    with m.If(layer.reduce):
                        # A reduction step: scalar 1.0 times word in_base + k of the input RAM (port 1).
                        m.d.comb += feeder.unit_scalar.eq(1)
                    with m.Else():
                        m.d.comb += [feeder.weight_read.eq(1), feeder.weight_address.eq(layer.weight_base + product),
                                     feeder.load.eq(kernel_column == 0), feeder.shift.eq(kernel_column != 0)]
                    with m.If(first_product):
                        # The group starts: its taps become current, the walker prepares the next group, and the
                        # bias row (after the products) is read on the weight RAM's second port: the seed.
                        m.d.sync += [feeder.tap_slot.eq(next_slot), feeder.tap_column.eq(next_column),
                                     group_row.eq(next_row), current_group.eq(issuing_group),
                                     last_group.eq(issuing_last)]
                        m.d.comb += [start_walk.eq(1), feeder.bias_read.eq(1),
                                     feeder.bias_address.eq(layer.weight_base + layer.products)]
                    current_row = Mux(first_product, next_row, group_row)
                    last_kernel_row = kernel_row + 1 == layer.kernel_height
                    last_channel = channel + 1 == layer.in_channels
                    with m.If(layer.reduce):
                        # Step k of position p reads word in_base + (p - first_position) + k*step_distance.
                        address = Mux(first_product, layer.in_base + next_p0 - layer.first_position, reduce_address)
                        m.d.comb += [feeder.row_address1.eq(address), feeder.row_read.eq(1)]
                        m.d.sync += reduce_address.eq(feeder.row_address1 + layer.step_distance)
                    with m.Elif(kernel_column == 0):
                        # Read the rows of the step after this one.
                        with m.If(~last_kernel_row):
                            read_rows(current_row, channel_base, kernel_row + 1)
                        with m.Elif(~last_channel):
                            read_rows(current_row, channel_base + layer.in_height, 0)
                        with m.Else():
                            read_rows(Mux(first_product, walk_row, next_row), 0, 0)   # the next group's first step
                    m.d.sync += product.eq(product + 1)
                    with m.If(kernel_column + 1 == layer.kernel_width):
                        m.d.sync += kernel_column.eq(0)
                        with m.If(last_kernel_row):
                            m.d.sync += [kernel_row.eq(0), channel.eq(channel + 1),
                                         channel_base.eq(channel_base + layer.in_height)]
                            with m.If(last_channel):
                                m.d.sync += [channel.eq(0), channel_base.eq(0)]
                        with m.Else():
                            m.d.sync += kernel_row.eq(kernel_row + 1)
                    with m.Else():
                        m.d.sync += kernel_column.eq(kernel_column + 1)
                    with m.If(last_product):
                        group_handed_over(issuing_group, issuing_last)
            if flat_stepper is not None:
                with m.State("FLAT"):
                    # A flat pass: its stepper drives the products and reads (the lane window's control always).
                    m.d.comb += [run.busy.eq(1), issue.eq(flat_stepper.feeder.issue), stall.eq(flat_stepper.stall)]
                    flat_reads()
                    with m.If(flat_stepper.group_done):
                        group_handed_over(flat_stepper.group, flat_stepper.last_group)
            with m.State("DRAIN"):
                m.d.comb += [run.busy.eq(1), run.events.draining.eq(1)]
                with m.If(~in_flight):
                    m.d.sync += run.done.eq(1)
                    m.next = "IDLE"
        return m

    def _write_grid(self, m, reset_walk, start_walk, group_size):
        """The second output grid (the descriptor's ``write_width``): beside the walk, the writer's row and column of
        the next group's first position, from 0 at a pass's start, on by ``P`` positions a group (one row down at
        most: the compiler keeps ``P <= write_width``).  Returns them (the group's ``oy0`` and ``ox0`` for the
        writer)."""
        width = self.run.descriptor.write_width
        walk_row, walk_column = Signal(GEOMETRY_BITS), Signal(GEOMETRY_BITS)
        next_row, next_column = Signal(GEOMETRY_BITS), Signal(GEOMETRY_BITS)
        origin_row, origin_column = Mux(reset_walk, 0, walk_row), Mux(reset_walk, 0, walk_column)
        moved = Signal(GEOMETRY_BITS + 1)
        m.d.comb += moved.eq(origin_column + group_size)
        wraps = moved >= width
        with m.If(start_walk):
            m.d.sync += [next_row.eq(origin_row), next_column.eq(origin_column), walk_row.eq(origin_row + wraps),
                         walk_column.eq(Mux(wraps, moved - width, moved))]
        return next_row, next_column

    def _flat_stepper(self, m, in_flight, second_staging):
        """The flat passes' stepper (:class:`~hw.dqn.flat_stepper.FlatStepper`) on the running descriptor: its
        lane-window control goes to the feeder; a flat product is marked for the feeder; a group's last product
        waits while another group is in flight, except where the second staging register takes it (neither the
        pass's first group nor its last)."""
        m.submodules.flat_stepper = stepper = FlatStepper(config=self._config)
        layer = self.run.descriptor
        first_group = (stepper.group.p0 == 0) & (stepper.group.flat_word == 0)
        staged = second_staging & ~first_group & ~stepper.last_group
        m.d.comb += [stepper.layer.eq(layer), stepper.may_finish.eq(~in_flight | staged),
                     self.feeder.product.flat.eq(self.feeder.issue & layer.flat)]
        wiring.connect(m, stepper.feeder.flat_lanes, wiring.flipped(self.feeder.flat_lanes))
        return stepper
