"""The CapsNet accelerator's convolution engine (step 1): int8 convolutions on an array of integer matrix modules."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.config import ACCUMULATOR_BITS, OPERAND_BITS, CapsNetConfig
from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.int_matrix_module import IntMatrixModule, requantize
from nnaccel.hw.capsnet.tile_handshake import TileHandshakeSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, reads_only, writes_only

__all__ = ["CapsNetConvEngine"]


class CapsNetConvEngine(wiring.Component):
    """``conv_modules`` integer matrix modules of ``conv_lanes`` lanes with ``conv_rows`` accumulators each, running
    one convolution layer (``models.capsnet.int8_layers.conv2d``: valid padding, any stride, bias, ReLU, requantize
    shift), with every input channel in the activation RAM or, in the *tiled* mode, streamed tile by tile.

    Mapping
    -------
    Module ``m`` computes output channel ``n = b*M + m`` (``M = conv_modules``, ``b`` the channel block); lane
    ``l`` computes output column ``ox = xb*L + l`` (``L = conv_lanes``, ``xb`` the column block); accumulator ``r``
    output row ``oy = g*R + r`` (``R = conv_rows``, ``g`` the row group).  A *pass* ``(b, g, xb)`` walks its
    *steps* (input channels ``c``), a step its products ``for kh: for kw: for r``: ``C*Kh*Kw*R`` product cycles.
    Passes run ``for b: for g: for xb``.  Product ``(c, kh, kw, r)`` multiplies module ``m``'s weight
    ``w[n, c, kh, kw]`` (slot ``m`` of a conv weight word) by the input elements ``x[c, (g*R + r)*stride + kh,
    ox*stride + kw]`` of all lanes; the accumulators start from the channel's bias (slot ``m`` of bias word
    ``bias_base + b``).  Rows past the output (``oy >= out_height``, in a last row group) are computed and not
    written.

    Addresses.  Input row: ``in_base + channel offset + (g*R + r)*stride + kh``, the channel offset ``c*in_height``
    (tiled: ``(c mod 2)*in_height``, two slots).  Weight: ``weight_base + b*products + (c*Kh + kh)*Kw + kw``
    (tiled: ``weight_base + ((b*C + c) mod 2)*kernel_words + kh*Kw + kw``).  Output row ``oy`` of channel ``n``:
    word ``out_base + b*block_rows + n_in_block*channel_words + oy`` (tiled, into a staging RAM: ``out_base +
    (j mod 2)*slot_words + m*channel_words + r``, ``j`` the pass's row group counted over the layer), elements
    ``xb*L .. xb*L + L - 1`` below ``out_width`` (a masked row write).

    Feeder: every product cycle reads its input row and its weight word (the RAMs' one cycle of latency is the
    pipeline's first stage); lane ``l`` takes element ``xb*column_step + kw + l*stride`` of the row.

    Result writer: the modules give their 32-bit sums (``requantized=False``), one row ``r`` per *finishing*
    product (the pass's last ``R``, kernel position ``(C-1, Kh-1, Kw-1)``); the writer takes one module per cycle
    (channels ``n < out_channels``) from the modules' result registers, requantizes its ``L`` sums (``L``
    requantizers shared by all modules) and writes them.  A finishing product waits (``stall``) while the writer
    is still writing the previous row, so the result registers hold until the writer is done with them.

    Tiled mode (``config.conv_tiled``)
    ----------------------------------
    A step's first product waits (``stall``) until ``tile_ready`` is high; ``tile_done`` is high on a step's last
    product (its tile slots may be written from the next cycle on); ``group_written`` is high on the cycle of the
    last write of a row group (the pass with the last column block), whose staging slot is then complete.  The
    user keeps ``tile_ready`` low until the step's tile is loaded and, for the first step of row group ``j``,
    until row group ``j - 2``'s staging slot is free.

    Ports
    -----
    control : In(:class:`~hw.capsnet.engine_control.EngineControlSignature` of the descriptor)
        ``run.start`` with ``layer`` (stable while busy); ``run.busy``; ``run.done`` (one cycle after the last
        write); ``events``: ``issue`` (a product issued), ``stall``, ``draining`` (waiting for the last writes).
    inputs : Out(BufferPortSignature(width=8*row_elements, depth=activation_depth, granularity=8))
        Activation reads (``read_data`` one cycle later, ``row_elements`` x int8, element 0 at the LSB); never
        writes.
    weights : Out(BufferPortSignature(width=8*conv_modules, depth=conv_weight_depth, granularity=8))
        Weight reads (slot ``m`` of a word: module ``m``'s int8 weight); never writes.
    biases : Out(BufferPortSignature(width=32*conv_modules, depth=bias_depth, granularity=8))
        Bias reads (slot ``m``: module ``m``'s int32 bias); never writes.
    outputs : Out(BufferPortSignature(width=8*row_elements, depth=activation_depth, granularity=8))
        Output row writes (``write_enable`` one bit per element); never reads.
    tiles : In(:class:`~hw.capsnet.tile_handshake.TileHandshakeSignature`)
        Tiled only: ``tile_ready`` from the port program, ``tile_done`` and ``group_written`` to it.

    Timing
    ------
    ``start`` on cycle ``s``: one idle cycle (``s + 1``), products from ``s + 2``, one per cycle except stalls; a
    finishing product on cycle ``t`` gives its row's results on ``t + 4`` (read, module latency 3), the writer
    writes ``min(M, out_channels - b*M)`` channels on ``t + 4 ..`` and the next finishing product may issue on the
    cycle after the last of them; ``done`` on the cycle after the last write.
    :class:`models.capsnet.conv_timing.ConvEngineTiming` computes every cycle.

    FPGA mapping (Cyclone V)
    ------------------------
    ``M*L`` multipliers (DSP blocks or ALMs, see :class:`~hw.capsnet.int_matrix_module.IntMatrixModule`) with
    ``R`` 32-bit accumulators each (a rotating ring), one ``row_elements``:1 byte mux per lane, an ``M``:1 mux of
    ``L x 32`` bits, ``L`` requantizers and a barrel shifter into the row word, counters and adders in ALMs.
    """

    def __init__(self, *, config=CapsNetConfig()):
        if not isinstance(config, CapsNetConfig):
            raise TypeError(f"config must be a CapsNetConfig, not {config!r}")
        self._config = config
        activations = BufferPortSignature(width=config.activation_word_bits, depth=config.activation_depth,
                                          granularity=OPERAND_BITS)
        super().__init__({
            "control": In(EngineControlSignature(descriptor_layout(config))),
            "inputs": Out(activations),
            "weights": Out(BufferPortSignature(width=config.conv_weight_word_bits, depth=config.conv_weight_depth,
                                               granularity=OPERAND_BITS)),
            "biases": Out(BufferPortSignature(width=config.bias_word_bits, depth=config.bias_depth,
                                              granularity=OPERAND_BITS)),
            "outputs": Out(activations),
            **({"tiles": In(TileHandshakeSignature())} if config.conv_tiled else {}),
        })

    @property
    def config(self):
        return self._config

    @property
    def module_name(self):
        return f"{self._config.name}_conv_engine"

    def elaborate(self, platform):
        m = Module()
        config = self._config
        modules, lanes, elements, rows = config.conv_modules, config.conv_lanes, config.row_elements, config.conv_rows
        tiled = config.conv_tiled
        run, layer, events = self.control.run, self.control.layer, self.control.events
        inputs, weights, biases, outputs = self.inputs, self.weights, self.biases, self.outputs
        for port in (inputs, weights, biases):
            reads_only(m, port)
        writes_only(m, outputs)
        address_bits = len(inputs.address)

        # ---- Walk state: pass (block, group, column block), step (channel), product (kh, kw, r) ------------
        # Counters as wide as the descriptor fields they run up to; word offsets as wide as an address (they
        # are only ever added into addresses, which wrap at that width).
        block, group = Signal.like(layer.channel_blocks), Signal.like(layer.row_groups)
        column_block = Signal.like(layer.column_blocks)
        channel = Signal.like(layer.channels)
        kernel_row, kernel_column = Signal.like(layer.kernel_height), Signal.like(layer.kernel_width)
        row = Signal(range(max(2, rows)))
        position = Signal.like(layer.products)                # (c, kh, kw) within the pass
        kernel_position = Signal.like(layer.kernel_words)     # (kh, kw) within the step
        channel_rows = Signal(address_bits)                   # channel offset of the input row
        group_input_row = Signal(address_bits)                # g * R * stride
        row_offset = Signal(address_bits)                     # r * stride
        block_weights = Signal(len(weights.address))      # weight_base + b * products
        block_rows = Signal(address_bits)                     # b * block_rows (output word offset)
        group_rows = Signal(address_bits)                     # g * R (output row of the group's first row)
        column_start = Signal.like(layer.column_step)         # xb * column_step
        column_element = Signal(range(elements))              # xb * L
        block_parity, tile_parity, staging_slot = Signal(), Signal(), Signal()
        in_flight = Signal()                                  # a finished row is not all written yet

        last_row = row == rows - 1
        last_column = kernel_column + 1 == layer.kernel_width
        last_kernel_row = kernel_row + 1 == layer.kernel_height
        last_channel = channel + 1 == layer.channels
        last_position = position + 1 == layer.products
        last_column_block = column_block + 1 == layer.column_blocks
        last_group = group + 1 == layer.row_groups
        last_block = block + 1 == layer.channel_blocks
        step_first = (kernel_row == 0) & (kernel_column == 0) & (row == 0)
        step_last = last_kernel_row & last_column & last_row
        finishing = last_position                             # the pass's last kernel position: its R products

        # ---- Reads of a product: its input row, its weight word; the lane taps one cycle later ---------------
        tap = Signal.like(column_start)
        lane_taps = [tap]
        for _ in range(1, lanes):
            lane_taps.append(lane_taps[-1] + layer.stride)
        vector = Cat(inputs.read_data.word_select(lane_tap[:len(tap)], OPERAND_BITS) for lane_tap in lane_taps)

        # ---- Matrix modules: scalar = slot m of the weight word, vector shared ---------------------------
        issued = Signal()                                     # the modules' operands of a product are on their inputs
        m.d.sync += issued.eq(events.issue)
        results, finished = [], []
        for index in range(modules):
            module = m.submodules[f"module{index}"] = IntMatrixModule(
                lanes=lanes, multipliers=config.conv_multipliers, count_bits=len(layer.products) + rows.bit_length(),
                requantized=False, rows=rows)
            m.d.comb += [
                module.operands.valid.eq(issued),
                module.operands.payload.scalar.eq(weights.read_data.word_select(index, OPERAND_BITS)),
                module.operands.payload.vector.eq(vector),
                module.operands.payload.bias.eq(biases.read_data.word_select(index, ACCUMULATOR_BITS)),
                module.operands.payload.count.eq(layer.products * rows),
            ]
            results.append(module.result.payload.as_value())
            finished.append(module.result.valid)
        row_finished = Cat(finished).all()                    # the modules run in lock step

        # ---- Sequencer -----------------------------------------------------------------------------------
        written_base = Signal(address_bits)                   # the row being written: its word offset ...
        written_element = Signal.like(column_element)         # ... its first element
        written_valid = Signal()                              # ... inside the output (oy < out_height)
        written_group_end = Signal()                          # ... the last row of a row group's last pass
        written_channels = Signal.like(layer.out_channels)   # channels of that block: min(M, out_channels - b*M)
        block_channel = Signal.like(layer.out_channels)       # b * M
        row_done = Signal()                                   # the writer wrote the row's last channel
        out_row = Signal(address_bits)                        # g * R + r

        with m.If(row_done):
            m.d.sync += in_flight.eq(0)
        m.d.comb += out_row.eq(group_rows + row)

        waits_for_tile = step_first & ~self.tiles.tile_ready if tiled else 0
        waits_for_writer = finishing & in_flight
        with m.FSM():
            with m.State("IDLE"):
                with m.If(run.start):
                    m.d.sync += [block.eq(0), group.eq(0), column_block.eq(0), channel.eq(0), kernel_row.eq(0),
                                 kernel_column.eq(0), row.eq(0), position.eq(0), kernel_position.eq(0),
                                 channel_rows.eq(0), group_input_row.eq(0), row_offset.eq(0),
                                 block_weights.eq(layer.weight_base), block_rows.eq(0), group_rows.eq(0),
                                 block_channel.eq(0), column_start.eq(0), column_element.eq(0), block_parity.eq(0),
                                 tile_parity.eq(0), staging_slot.eq(0)]
                    m.next = "PRIME"
            with m.State("PRIME"):
                m.d.comb += run.busy.eq(1)
                m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += run.busy.eq(1)
                with m.If(waits_for_tile | waits_for_writer):
                    m.d.comb += events.stall.eq(1)
                with m.Else():
                    m.d.comb += [
                        events.issue.eq(1), inputs.read_enable.eq(1), weights.read_enable.eq(1),
                        inputs.address.eq(layer.in_base + channel_rows + group_input_row + row_offset + kernel_row),
                        weights.address.eq(layer.weight_base + Mux(tile_parity, layer.kernel_words, 0)
                                               + kernel_position if tiled else block_weights + position),
                    ]
                    if tiled:
                        m.d.comb += self.tiles.tile_done.eq(step_last)
                    m.d.sync += tap.eq(column_start + kernel_column)
                    with m.If((position == 0) & (row == 0)):
                        m.d.comb += [biases.read_enable.eq(1), biases.address.eq(layer.bias_base + block)]
                    with m.If(finishing):
                        # This product finishes row r: hand the row to the writer.
                        m.d.sync += [in_flight.eq(1), written_element.eq(column_element),
                                     written_base.eq(Mux(staging_slot, layer.slot_words, 0) + row if tiled
                                                     else block_rows + out_row),
                                     written_valid.eq(out_row < layer.out_height),
                                     written_group_end.eq(last_row & last_column_block),
                                     written_channels.eq(Mux(layer.out_channels - block_channel < modules,
                                                             layer.out_channels - block_channel, modules))]
                    # Product (kh, kw, r): r innermost, then kw, kh; then the step (channel), then the pass.
                    with m.If(~last_row):
                        m.d.sync += [row.eq(row + 1), row_offset.eq(row_offset + layer.stride)]
                    with m.Else():
                        m.d.sync += [row.eq(0), row_offset.eq(0), position.eq(position + 1),
                                     kernel_position.eq(kernel_position + 1),
                                     kernel_column.eq(Mux(last_column, 0, kernel_column + 1))]
                        with m.If(last_column):
                            m.d.sync += kernel_row.eq(Mux(last_kernel_row, 0, kernel_row + 1))
                    with m.If(step_last):
                        m.d.sync += [kernel_position.eq(0), tile_parity.eq(~tile_parity), channel.eq(channel + 1),
                                     channel_rows.eq(Mux(channel_rows != 0, 0, layer.in_height) if tiled
                                                     else channel_rows + layer.in_height)]
                    with m.If(step_last & last_channel):
                        # The pass is done: the next column block, row group or channel block.
                        m.d.sync += [channel.eq(0), channel_rows.eq(0), position.eq(0), tile_parity.eq(block_parity)]
                        with m.If(~last_column_block):
                            m.d.sync += [column_block.eq(column_block + 1),
                                         column_start.eq(column_start + layer.column_step),
                                         column_element.eq(column_element + lanes)]
                        with m.Else():
                            m.d.sync += [column_block.eq(0), column_start.eq(0), column_element.eq(0),
                                         staging_slot.eq(~staging_slot)]
                            with m.If(~last_group):
                                m.d.sync += [group.eq(group + 1),
                                             group_input_row.eq(group_input_row + layer.stride * rows),
                                             group_rows.eq(group_rows + rows)]
                            with m.Else():
                                next_parity = block_parity ^ layer.channels[0]
                                m.d.sync += [group.eq(0), group_input_row.eq(0), group_rows.eq(0),
                                             block.eq(block + 1), block_weights.eq(block_weights + layer.products),
                                             block_rows.eq(block_rows + layer.block_rows),
                                             block_channel.eq(block_channel + modules),
                                             block_parity.eq(next_parity), tile_parity.eq(next_parity)]
                                with m.If(last_block):
                                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += [run.busy.eq(1), events.draining.eq(1)]
                with m.If(~in_flight):
                    m.d.comb += run.done.eq(1)
                    m.next = "IDLE"

        # ---- Result writer: one module (output channel) per cycle, requantized here ----------------------
        writing = Signal(range(modules + 1))                  # module being written
        channel_word = Signal(address_bits)                   # module * channel_words
        sums = Array(results)[writing]
        requantized = Cat(requantize(sums.word_select(lane, ACCUMULATOR_BITS).as_signed(), layer.shift, layer.relu)
                          for lane in range(lanes))
        column_mask = Cat(element < layer.out_width for element in range(elements))
        with m.FSM():
            with m.State("IDLE"):
                with m.If(row_finished):
                    m.d.sync += [writing.eq(0), channel_word.eq(0)]
                    m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += [
                    outputs.address.eq(layer.out_base + written_base + channel_word),
                    outputs.write_data.eq(requantized << (written_element * OPERAND_BITS)),
                    outputs.write_enable.eq(Mux(written_valid, (((1 << lanes) - 1) << written_element) & column_mask,
                                             0)),
                ]
                m.d.sync += [writing.eq(writing + 1), channel_word.eq(channel_word + layer.channel_words)]
                with m.If(writing + 1 == written_channels):
                    m.d.comb += row_done.eq(1)
                    if tiled:
                        m.d.comb += self.tiles.group_written.eq(written_group_end)
                    m.next = "IDLE"
        return m
