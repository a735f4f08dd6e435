"""Window feeder of the DQN accelerator: fetches a product's rows and weights and gives each matrix module its
operands (the scalar from row shift registers, the vector from the weight RAM or the input word)."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.dqn.descriptor import GEOMETRY_BITS, tap_columns
from nnaccel.hw.dqn.flat_lane_window import FlatLaneWindow
from nnaccel.hw.dqn.interfaces import FeederControlSignature, product_layout
from nnaccel.hw.dqn.matrix_module import COUNT_BITS, operand_layout
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature

__all__ = ["WindowFeeder"]


class WindowFeeder(DqnBlock):
    """Two row registers of ``pad_columns + row_elements`` elements, shifting one element per product, tapped per
    module.

    A convolution step ``(c, kh)`` needs, for each output position of the group, the input row
    ``oy*stride_y + kh - pad_top`` of channel ``c``; a group's positions lie on at most two output rows, so two
    rows (slots 0 and 1) serve all modules.  Module ``m`` reads element ``tap_column[m]`` of slot
    ``tap_slot[m]``: the window's first column, ``ox*stride_x + pad_columns - pad_left``.  Zero padding: a row
    register holds ``pad_columns`` zero elements in front of the row; the row's elements at and past
    ``row_width`` load as zeros (so whatever the RAM word holds past the row never matters, and the right border
    is zeros), as does a whole row whose read came with ``row_zero0/1`` (a row above or below the image); the
    shifts bring zeros in from the top.  Loading a row puts the step's ``kw = 0`` elements
    under the taps; each shift moves the next column under them, so the taps stay fixed for a whole
    group and the registers shift by one element per cycle (the thesis' shift-register feeder,
    with the window start chosen by the tap instead of by further shifts).  Module ``m``'s vector is slot ``m``
    of the weight word, or in a reduction step (``vector_from_activations``) elements ``m*lanes ..`` of the
    input word read on ``rows1`` (modules whose lanes lie past the word never take part in a reduction).  Its
    seed (sampled by the module with an accumulation's first product) is slot ``m`` of the bias row read on
    ``biases``.

    Ports
    -----
    control : In(:class:`~hw.dqn.interfaces.FeederControlSignature`), from the sequencer: ``issue`` with
        ``product``; ``load`` (copy both rows read into the registers), ``shift`` (shift both registers down one
        element), ``unit_scalar`` (the next scalars are all 1.0); ``tap_slot``, ``tap_column``; ``row_width`` and, with
        each read, ``row_zero0/1``; the reads below.
    rows0, rows1 : Out(BufferPortSignature) of the activation RAMs (``row_elements`` x width words): reads of
        ``row_address0`` / ``row_address1`` on ``row_read`` (the layer's input RAM, ports 0 and 1).
    weights : Out(BufferPortSignature) of the weight RAM (``modules * lanes`` x width words): reads of
        ``weight_address`` on ``weight_read``.
    biases : Out(BufferPortSignature) of the weight RAM's second port: reads of ``bias_address`` on ``bias_read``.
    operands : Out(always-ready stream of :func:`~hw.dqn.matrix_module.operand_layout`) x ``modules``: module
        ``m``'s product: ``scalar``, ``vector``, ``seed``, ``count``, ``relu`` (and ``maximum`` with
        ``config.max_pooling``).

    The flat map (``config.flat_slots``): a :class:`~hw.dqn.flat_lane_window.FlatLaneWindow` of
    ``flat_window_words`` words per channel slot takes the words read on ``rows0`` / ``rows1`` (``flat_lanes.load``
    and ``load_index``, one cycle after the read) and, on ``flat_lanes.set_lanes`` one cycle after the read, the
    lanes' output rows and columns from the words read on ``weights`` and ``biases`` (lane ``i``: element ``i``, low
    12 bits).  A flat product
    (``product.flat``) gives module ``m`` the window's vector ``m`` and the first element of weight slot ``m`` as its
    scalar.

    Timing: a product issued on cycle n (``issue``) is a valid ``operands`` beat on cycle n+1, with the scalars
    of ``load``/``shift``/``unit_scalar`` of cycle n (one register stage) and the words read on cycle n (the RAMs'
    one-cycle reads; the bias row read with a group's first product holds until the next group's).  Throughput: one
    product per cycle, no stall.

    FPGA: 2 x (``pad_columns + row_elements``) x width flip-flops (2 x 88 x 32 = 5,632 for the default
    configuration) with a 3:1 input mux each and a zeroing AND per loaded element, per module a 2 x
    (``pad_columns + row_elements``):1 mux of width bits and a 2:1 vector mux (ALMs); the seeds are wires.
    """

    def __init__(self, *, config=DqnConfig()):
        check_config(config)
        rows = BufferPortSignature(width=config.activation_word_bits, depth=config.activation_depth,
                                   granularity=config.fmt.width)
        operands = stream.Signature(operand_layout(config.lanes, config.fmt, COUNT_BITS, config.max_pooling),
                                    always_ready=True)
        super().__init__(config, {
            "control": In(FeederControlSignature(config)),
            "rows0": Out(rows), "rows1": Out(rows),
            "weights": Out(BufferPortSignature(width=config.weight_word_bits, depth=config.weight_address_depth)),
            "biases": Out(BufferPortSignature(width=config.weight_word_bits, depth=config.weight_address_depth)),
            "operands": Out(operands).array(config.modules),
        })

    def elaborate(self, platform):
        m = Module()
        config, control = self._config, self.control
        width, elements = config.fmt.width, config.row_elements
        m.d.comb += [self.rows0.address.eq(control.row_address0), self.rows0.read_enable.eq(control.row_read),
                     self.rows1.address.eq(control.row_address1), self.rows1.read_enable.eq(control.row_read),
                     self.weights.address.eq(control.weight_address),
                     self.weights.read_enable.eq(control.weight_read),
                     self.biases.address.eq(control.bias_address), self.biases.read_enable.eq(control.bias_read)]

        # Each register: pad_columns zeros, then the row as loaded (zeros at and past row_width, all zeros for a
        # row outside the image: the flags are taken with the read, the data arrives on the next cycle).
        register_elements = tap_columns(config)
        registers = [Signal(register_elements * width, name=f"row_register{slot}") for slot in range(2)]
        zero_flags = [Signal(name=f"row_zero{slot}") for slot in range(2)]
        for register, rows, zero, read_zero in zip(registers, (self.rows0, self.rows1), zero_flags,
                                                    (control.row_zero0, control.row_zero1)):
            with m.If(control.row_read):
                m.d.sync += zero.eq(read_zero)
            loaded = Cat(Mux(~zero & (element < control.row_width), rows.read_data.word_select(element, width), 0)
                         for element in range(elements))
            with m.If(control.load):
                m.d.sync += register.eq(Cat(Const(0, config.pad_columns * width), loaded))
            with m.Elif(control.shift):
                m.d.sync += register.eq(register >> width)
        unit_scalar, valid = Signal(), Signal()
        product = Signal(product_layout(config))
        m.d.sync += [unit_scalar.eq(control.unit_scalar), valid.eq(control.issue), product.eq(control.product)]

        window = self._flat_window(m) if config.flat_slots else None
        one = Const(config.fmt.bias << config.fmt.mantissa_bits, width)
        slot_elements = [Array(register.word_select(e, width) for e in range(register_elements))
                         for register in registers]
        vector_bits = config.lanes * width
        for module, operands in enumerate(self.operands):
            column = control.tap_column[module]
            tapped = Mux(control.tap_slot[module], slot_elements[1][column], slot_elements[0][column])
            weight_slot = self.weights.read_data[module * vector_bits:(module + 1) * vector_bits]
            bias_slot = self.biases.read_data[module * vector_bits:(module + 1) * vector_bits]
            if (module + 1) * config.lanes <= elements:
                input_lanes = self.rows1.read_data[module * vector_bits:(module + 1) * vector_bits]
                vector = Mux(product.vector_from_activations, input_lanes, weight_slot)
            else:
                vector = weight_slot
            if window is not None:        # a flat product: the lane window's vector, the slot's weight as the scalar
                vector = Mux(product.flat, window.vectors[module], vector)
                tapped = Mux(product.flat, weight_slot[:width], tapped)
            m.d.comb += [operands.valid.eq(valid), operands.payload.scalar.eq(Mux(unit_scalar, one, tapped)),
                         operands.payload.vector.eq(vector), operands.payload.seed.eq(bias_slot),
                         operands.payload.count.eq(product.count),
                         operands.payload.relu.eq(product.relu)]
            if config.max_pooling:
                m.d.comb += operands.payload.maximum.eq(product.maximum)
        return m

    def _flat_window(self, m):
        """The flat map's lane window, its loads and lane coordinates taken one cycle after their reads."""
        config, control = self._config, self.control.flat_lanes
        m.submodules.flat_window = window = FlatLaneWindow(config=config, window_words=config.flat_window_words,
                                                           slots=config.flat_slots)
        load, load_index, set_lanes = Signal(), Signal.like(control.load_index), Signal()
        m.d.sync += [load.eq(control.load), load_index.eq(control.load_index), set_lanes.eq(control.set_lanes)]
        lanes = window.control
        for name in ("swap", "shifts", "advance", "advance_rows", "advance_columns", "out_width", "row_low", "row_high",
                     "column_low", "column_high"):
            m.d.comb += getattr(lanes, name).eq(getattr(control, name))
        width = config.fmt.width
        m.d.comb += [lanes.load.eq(load), lanes.load_index.eq(load_index), lanes.set_lanes.eq(set_lanes),
                     window.words[0].eq(self.rows0.read_data), window.words[1].eq(self.rows1.read_data)]
        for lane in range(config.macs):
            m.d.comb += [lanes.lane_rows[lane].eq(self.weights.read_data[lane * width:lane * width + GEOMETRY_BITS]),
                         lanes.lane_columns[lane].eq(self.biases.read_data[lane * width:lane * width + GEOMETRY_BITS])]
        return window
