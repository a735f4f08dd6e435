"""The CapsNet accelerator's convolution engine (step 1): int8 convolutions on an array of integer matrix modules."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from hw.capsnet.config import ACCUMULATOR_BITS, OPERAND_BITS, CapsNetConfig
from hw.capsnet.descriptor import descriptor_layout
from hw.capsnet.int_matrix_module import IntMatrixModule, requantize

__all__ = ["CapsNetConvEngine"]


class CapsNetConvEngine(wiring.Component):
    """``conv_modules`` integer matrix modules of ``conv_lanes`` lanes running one convolution layer
    (``models.capsnet.int8_layers.conv2d``: valid padding, any stride, bias, ReLU, requantize shift).

    Mapping
    -------
    Module ``m`` computes output channel ``n = b*M + m`` (``M = conv_modules``, ``b`` the channel block); lane
    ``l`` computes output column ``ox = xb*L + l`` (``L = conv_lanes``, ``xb`` the column block) of output row
    ``oy``.  A *group* ``(b, oy, xb)`` is ``products = C*Kh*Kw`` product cycles; groups run block-major:
    ``for b: for oy: for xb``.  Product ``k = (c*Kh + kh)*Kw + kw`` multiplies module ``m``'s weight
    ``w[n, c, kh, kw]`` (its scalar: slot ``m`` of conv weight word ``weight_base + b*products + k``) by the
    input elements ``x[c, oy*stride + kh, ox*stride + kw]`` of all lanes (the shared vector).  The accumulators
    start from the channel's bias (slot ``m`` of bias word ``bias_base + b``).

    Row feeder: the input row ``(c, oy*stride + kh)`` (activation word ``in_base + c*in_height + oy*stride + kh``)
    is loaded into a row register on the step's first product (``kw = 0``) and shifted by one element per
    product; lane ``l`` taps element ``xb*column_step + l*stride`` (``column_step = L*stride``), fixed for the
    group.  The next step's row is read on the last product of the current one, so steps follow without a
    bubble.

    Result writer: the modules give their 32-bit sums (``requantized=False``); when they finish a group, the
    writer takes one module per cycle (channels ``n < out_channels``) straight from the modules' result
    registers, requantizes its ``L`` sums (``L`` requantizers shared by all modules, instead of one per MAC) and
    writes them as a masked row write: word ``out_base + n*out_height + oy``, elements ``xb*L .. xb*L + L - 1``
    below ``out_width``.  A group's last product waits (``stall``) while the previous group is still being
    written, so the result registers hold until the writer is done with them.

    Ports
    -----
    ``start`` (In 1) with ``layer`` (In, the descriptor, stable while busy); ``busy`` (Out 1); ``done`` (Out 1, one
    cycle after the last write); activation reads ``row_address``, ``row_read``, ``row_data`` (one cycle later,
    ``row_elements`` x int8); weight reads ``weight_address``, ``weight_read``, ``weight_data`` (``conv_modules`` x
    int8); bias reads ``bias_address``, ``bias_read``, ``bias_data`` (``conv_modules`` x int32); output writes
    ``write_address``, ``write_data`` (``row_elements`` x int8), ``write_enable`` (one bit per element);
    counter events ``issue`` (products issued this cycle), ``stall``, ``draining`` (waiting for the last writes).

    Timing
    ------
    Per layer: 1 cycle to read the first row, ``groups * products`` product cycles (``groups = channel_blocks *
    out_height * column_blocks``), stalls when ``products < min(M, out_channels) + 5``, then the drain: 1 (read
    to module) + 3 (module latency) + the last group's writes + 1.

    FPGA mapping (Cyclone V)
    ------------------------
    ``M*L`` multipliers (DSP blocks or ALMs, see :class:`~hw.capsnet.int_matrix_module.IntMatrixModule`) with their
    32-bit accumulators, a ``row_elements x 8``-bit row register with one ``row_elements``:1 byte mux per lane,
    an ``M``:1 mux of ``L x 32`` bits, ``L`` requantizers and a barrel shifter into the row word, counters and
    adders in ALMs.
    """

    def __init__(self, *, config=CapsNetConfig()):
        if not isinstance(config, CapsNetConfig):
            raise TypeError(f"config must be a CapsNetConfig, not {config!r}")
        self._config = config
        activation_address = range(config.activation_depth)
        row = data.ArrayLayout(signed(OPERAND_BITS), config.row_elements)
        super().__init__({
            "start": In(1), "layer": In(descriptor_layout(config)), "busy": Out(1), "done": Out(1),
            "row_address": Out(activation_address), "row_read": Out(1), "row_data": In(row),
            "weight_address": Out(range(config.conv_weight_depth)), "weight_read": Out(1),
            "weight_data": In(data.ArrayLayout(signed(OPERAND_BITS), config.conv_modules)),
            "bias_address": Out(range(config.bias_depth)), "bias_read": Out(1),
            "bias_data": In(data.ArrayLayout(signed(ACCUMULATOR_BITS), config.conv_modules)),
            "write_address": Out(activation_address), "write_data": Out(row),
            "write_enable": Out(config.row_elements),
            "issue": Out(1), "stall": Out(1), "draining": Out(1),
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
        modules, lanes, elements = config.conv_modules, config.conv_lanes, config.row_elements
        layer = self.layer
        address_bits = len(self.row_address)

        # ---- Walk state: group (block, oy, xb) and step (c, kh, kw); c only as c * in_height -----------
        # Counters as wide as the descriptor fields they run up to; word offsets as wide as an address (they
        # are only ever added into addresses, which wrap at that width).
        block, out_row = Signal.like(layer.channel_blocks), Signal.like(layer.out_height)
        column_block = Signal.like(layer.column_blocks)
        kernel_row, kernel_column = Signal.like(layer.kernel_height), Signal.like(layer.kernel_width)
        product = Signal.like(layer.products)                 # k within the group
        channel_rows = Signal(address_bits)                   # c * in_height
        input_row = Signal(address_bits)                      # oy * stride
        block_weights = Signal(len(self.weight_address))      # weight_base + b * products
        block_rows = Signal(address_bits)                     # b * M * out_height (output word offset)
        column_start = Signal.like(layer.column_step)         # xb * column_step
        column_element = Signal(range(elements))              # xb * L
        in_flight = Signal()                                  # a group's results are not all written yet

        last_column = kernel_column + 1 == layer.kernel_width
        last_kernel_row = kernel_row + 1 == layer.kernel_height
        last_product = product + 1 == layer.products
        last_column_block = column_block + 1 == layer.column_blocks
        last_out_row = out_row + 1 == layer.out_height
        last_block = block + 1 == layer.channel_blocks

        def read_row(channel_offset, row_offset, kernel_offset):
            m.d.comb += [self.row_address.eq(layer.in_base + channel_offset + row_offset + kernel_offset),
                         self.row_read.eq(1)]

        # ---- Row feeder ----------------------------------------------------------------------------------
        row_register = Signal(elements * OPERAND_BITS)
        load, shift = Signal(), Signal()
        with m.If(load):
            m.d.sync += row_register.eq(self.row_data)
        with m.Elif(shift):
            m.d.sync += row_register.eq(row_register >> OPERAND_BITS)
        tap_start = Signal.like(column_start)                 # the group's xb * column_step, set on its first product
        lane_taps = [tap_start]
        for _ in range(1, lanes):
            lane_taps.append(lane_taps[-1] + layer.stride)
        vector = Cat(row_register.word_select(tap[:len(tap_start)], OPERAND_BITS) for tap in lane_taps)

        # ---- Matrix modules: scalar = slot m of the weight word, vector shared ---------------------------
        issued = Signal()                                     # the modules' operands of a product are on their inputs
        m.d.sync += issued.eq(self.issue)
        results, finished = [], []
        for index in range(modules):
            module = m.submodules[f"module{index}"] = IntMatrixModule(
                lanes=lanes, multipliers=config.conv_multipliers, count_bits=len(layer.products), requantized=False)
            m.d.comb += [
                module.operands.valid.eq(issued),
                module.operands.payload.scalar.eq(self.weight_data[index]),
                module.operands.payload.vector.eq(vector),
                module.operands.payload.bias.eq(self.bias_data[index]),
                module.operands.payload.count.eq(layer.products),
            ]
            results.append(module.result.payload.as_value())
            finished.append(module.result.valid)
        group_finished = Cat(finished).all()                  # the modules run in lock step

        # ---- Sequencer -----------------------------------------------------------------------------------
        written_rows = Signal.like(block_rows)                # the group being written: block rows, oy, xb * L
        written_row, written_element = Signal.like(out_row), Signal.like(column_element)
        written_channels = Signal.like(layer.out_channels)   # channels of that block: min(M, out_channels - b*M)
        block_channel = Signal.like(layer.out_channels)       # b * M
        group_done = Signal()                                 # the writer wrote the group's last channel

        with m.If(group_done):
            m.d.sync += in_flight.eq(0)

        with m.FSM():
            with m.State("IDLE"):
                with m.If(self.start):
                    m.d.sync += [block.eq(0), out_row.eq(0), column_block.eq(0), kernel_row.eq(0),
                                 kernel_column.eq(0), product.eq(0), channel_rows.eq(0), input_row.eq(0),
                                 block_weights.eq(layer.weight_base), block_rows.eq(0), block_channel.eq(0),
                                 column_start.eq(0), column_element.eq(0)]
                    m.next = "PRIME"
            with m.State("PRIME"):
                m.d.comb += self.busy.eq(1)
                read_row(0, 0, 0)
                m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += self.busy.eq(1)
                with m.If(last_product & in_flight):
                    m.d.comb += self.stall.eq(1)
                with m.Else():
                    m.d.comb += [self.issue.eq(1), self.weight_read.eq(1),
                                 self.weight_address.eq(block_weights + product),
                                 load.eq(kernel_column == 0), shift.eq(kernel_column != 0)]
                    with m.If(product == 0):
                        m.d.comb += [self.bias_read.eq(1), self.bias_address.eq(layer.bias_base + block)]
                        m.d.sync += tap_start.eq(column_start)
                    m.d.sync += product.eq(product + 1)
                    # Step (c, kh, kw) and the row of the next step.
                    with m.If(last_column):
                        m.d.sync += kernel_column.eq(0)
                        with m.If(~last_kernel_row):
                            read_row(channel_rows, input_row, kernel_row + 1)
                            m.d.sync += kernel_row.eq(kernel_row + 1)
                        with m.Elif(~last_product):
                            read_row(channel_rows + layer.in_height, input_row, 0)
                            m.d.sync += [kernel_row.eq(0), channel_rows.eq(channel_rows + layer.in_height)]
                    with m.Else():
                        m.d.sync += kernel_column.eq(kernel_column + 1)
                    with m.If(last_product):
                        # The group is complete: hand it to the writer, move to the next group.
                        m.d.sync += [in_flight.eq(1), product.eq(0), kernel_row.eq(0), channel_rows.eq(0),
                                     written_rows.eq(block_rows), written_row.eq(out_row),
                                     written_element.eq(column_element),
                                     written_channels.eq(Mux(layer.out_channels - block_channel < modules,
                                                             layer.out_channels - block_channel, modules))]
                        with m.If(~last_column_block):
                            read_row(0, input_row, 0)
                            m.d.sync += [column_block.eq(column_block + 1),
                                         column_start.eq(column_start + layer.column_step),
                                         column_element.eq(column_element + lanes)]
                        with m.Else():
                            m.d.sync += [column_block.eq(0), column_start.eq(0), column_element.eq(0)]
                            with m.If(~last_out_row):
                                read_row(0, input_row + layer.stride, 0)
                                m.d.sync += [out_row.eq(out_row + 1), input_row.eq(input_row + layer.stride)]
                            with m.Else():
                                read_row(0, 0, 0)
                                m.d.sync += [out_row.eq(0), input_row.eq(0), block.eq(block + 1),
                                             block_weights.eq(block_weights + layer.products),
                                             block_rows.eq(block_rows + layer.block_rows),
                                             block_channel.eq(block_channel + modules)]
                                with m.If(last_block):
                                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += [self.busy.eq(1), self.draining.eq(1)]
                with m.If(~in_flight):
                    m.d.comb += self.done.eq(1)
                    m.next = "IDLE"

        # ---- Result writer: one module (output channel) per cycle, requantized here ----------------------
        writing = Signal(range(modules + 1))                  # module being written
        channel_word = Signal.like(written_rows)              # (module) * out_height + block rows
        sums = Array(results)[writing]
        requantized = Cat(requantize(sums.word_select(lane, ACCUMULATOR_BITS).as_signed(), layer.shift, layer.relu)
                          for lane in range(lanes))
        column_mask = Cat(element < layer.out_width for element in range(elements))
        with m.FSM():
            with m.State("IDLE"):
                with m.If(group_finished):
                    m.d.sync += [writing.eq(0), channel_word.eq(written_rows)]
                    m.next = "WRITE"
            with m.State("WRITE"):
                m.d.comb += [
                    self.write_address.eq(layer.out_base + channel_word + written_row),
                    self.write_data.eq(requantized << (written_element * OPERAND_BITS)),
                    self.write_enable.eq((((1 << lanes) - 1) << written_element) & column_mask),
                ]
                m.d.sync += [writing.eq(writing + 1), channel_word.eq(channel_word + layer.out_height)]
                with m.If(writing + 1 == written_channels):
                    m.d.comb += group_done.eq(1)
                    m.next = "IDLE"
        return m
