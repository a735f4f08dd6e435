"""The CapsNet accelerator's matrix-vector engine (step 2): the prediction vectors u_hat_j|i = W_ij u_i."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.config import OPERAND_BITS, CapsNetConfig
from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.int_matrix_module import INT_MATRIX_MODULE_LATENCY, IntMatrixModule, requantize
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, reads_only, writes_only

__all__ = ["CapsNetMatvecEngine", "matvec_result_latency"]


def matvec_result_latency(config):
    """Cycles from the cycle after a matrix-vector product's last operand read to its prediction write:
    :data:`INT_MATRIX_MODULE_LATENCY`, plus ``matvec_requantize_cycles`` when the requantizers are shared."""
    shared = config.matvec_requantize_cycles
    return INT_MATRIX_MODULE_LATENCY + (shared if shared > 1 else 0)


class CapsNetMatvecEngine(wiring.Component):
    """One integer matrix module of ``matvec_lanes`` lanes computing a batch of int8 matrix-vector products
    (``models.capsnet.int8_layers.matvec`` without bias): ``u_hat[i, j] = requantize(W[i, j] @ u[i])``, ``W[i, j]`` of
    ``rows <= matvec_lanes`` x ``N``.

    Input capsules
    --------------
    Capsule ``i = (t*H + y)*W + x`` (``t < capsule_types``, ``y < grid_height``, ``x < grid_width``) has ``N =
    in_dims`` elements; element ``k`` is element ``column_base + x`` of activation word ``in_base + t*type_words +
    k*dim_words + y`` (``column_base``: 0, or the first column of a tile of a grid row), i.e. the PrimaryCaps
    convolution output read in place (channel-major image layout: ``type_words = N*H``, ``dim_words = H`` when
    channel ``t*N + k`` holds dimension ``k`` of capsule type ``t``).

    Order and memories
    ------------------
    ``for i: for j < out_capsules: for k < N``: one product per cycle, the scalar ``u[i, k]`` times the vector
    ``W[i, j][:, k]`` (matrix-vector weight word ``matvec_weight_base + (i*J + j)*N + k``, lane ``r`` = row
    ``r``: the weight words are read in address order).  Result ``(i, j)`` goes to prediction word
    ``prediction_base + i*J + j`` (lane ``r`` = row ``r``), written when the module's result is valid: results come
    in issue order, so a counter gives the address.  The accumulators start from 0; shift and ReLU come from the
    descriptor.

    Ports
    -----
    control : In(:class:`~hw.capsnet.engine_control.EngineControlSignature` of the descriptor)
        ``run.start`` with ``layer``; ``run.busy``, ``run.done`` (``done`` on the cycle of the last write);
        ``events``: ``issue``, ``draining`` (``stall`` never: the engine does not wait).
    inputs : Out(BufferPortSignature(width=8*row_elements, depth=activation_depth, granularity=8))
        Activation reads (``read_data`` one cycle later, ``row_elements`` x int8); never writes.
    weights : Out(BufferPortSignature(width=8*matvec_lanes, depth=matvec_weight_depth, granularity=8))
        Weight reads (lane ``r`` = row ``r``); never writes.
    predictions : Out(BufferPortSignature(width=8*matvec_lanes, depth=prediction_depth, granularity=8))
        Prediction vector writes (every lane; ``write_enable`` all ones); never reads.

    Requantization
    --------------
    With ``matvec_requantize_cycles = P = 1`` every lane has its requantizer (in the matrix module).  With ``P > 1``
    the module gives 32-bit sums and ``matvec_lanes / P`` shared requantizers take ``P`` cycles per result, lanes
    ``p*Q .. p*Q + Q - 1`` on the result's ``p``-th cycle (``Q = matvec_lanes / P``), shifted into the prediction
    word, which is written on the cycle after the last part.  The module holds a result until the next one, which
    comes ``N`` cycles later: the descriptor's ``in_dims`` must be at least ``P`` (the compiler checks it).

    Timing
    ------
    ``capsules * out_capsules * N`` product cycles, no stall, plus 1 + :func:`matvec_result_latency` cycles of
    drain (1 + 3, or 1 + 3 + P with shared requantizers).  (Full CapsNet: 1152 * 10 * 8 = 92,160 cycles.)

    FPGA mapping (Cyclone V)
    ------------------------
    ``matvec_lanes`` multipliers (DSP blocks or ALMs), ``matvec_lanes / P`` requantizers (each a 33-bit rounding
    adder, a barrel shifter and saturation, with a P:1 multiplexer of 32-bit sums in front when shared), a
    ``row_elements``:1 byte mux for the scalar, counters in ALMs.  The weights (1.47 M for the full CapsNet) would
    stream from SDRAM on the board: one ``matvec_lanes``-byte word per cycle (1.6 GB/s at 100 MHz for 16 lanes);
    here they are a block RAM.
    """

    def __init__(self, *, config=CapsNetConfig()):
        if not isinstance(config, CapsNetConfig):
            raise TypeError(f"config must be a CapsNetConfig, not {config!r}")
        self._config = config
        super().__init__({
            "control": In(EngineControlSignature(descriptor_layout(config))),
            "inputs": Out(BufferPortSignature(width=config.activation_word_bits, depth=config.activation_depth,
                                              granularity=OPERAND_BITS)),
            "weights": Out(BufferPortSignature(width=config.matvec_word_bits, depth=config.matvec_weight_depth,
                                               granularity=OPERAND_BITS)),
            "predictions": Out(BufferPortSignature(width=config.matvec_word_bits, depth=config.prediction_depth,
                                                   granularity=OPERAND_BITS)),
        })

    @property
    def config(self):
        return self._config

    @property
    def module_name(self):
        return f"{self._config.name}_matvec_engine"

    def elaborate(self, platform):
        m = Module()
        run, layer, events = self.control.run, self.control.layer, self.control.events
        inputs, weights, predictions = self.inputs, self.weights, self.predictions
        reads_only(m, inputs)
        reads_only(m, weights)
        writes_only(m, predictions)
        address_bits = len(inputs.address)

        # ---- Walk: capsule (t, y, x), output capsule j, dimension k ------------------------------------------
        # Counters as wide as the descriptor fields they run up to; word offsets as wide as an address (they
        # are only ever added into the read address, which wraps at that width).
        capsule_type, grid_row = Signal.like(layer.capsule_types), Signal.like(layer.grid_height)
        grid_column = Signal.like(layer.grid_width)
        out_capsule, dimension = Signal.like(layer.out_capsules), Signal.like(layer.in_dims)
        type_offset, dimension_offset = Signal(address_bits), Signal(address_bits)
        element = Signal(range(self._config.row_elements))     # element of the word read last cycle
        latency = matvec_result_latency(self._config)
        drain = Signal(range(latency + 1))
        last_dimension = dimension + 1 == layer.in_dims
        last_out_capsule = out_capsule + 1 == layer.out_capsules
        last_column = grid_column + 1 == layer.grid_width
        last_row = grid_row + 1 == layer.grid_height
        last_type = capsule_type + 1 == layer.capsule_types

        issuing, draining = Signal(), Signal()
        # One assignment of the whole event word: the engine never waits (stall 0).
        m.d.comb += events.eq(Cat(issuing, Const(0, 1), draining))

        m.d.comb += inputs.address.eq(layer.in_base + type_offset + dimension_offset + grid_row)
        with m.If(issuing):
            m.d.sync += [weights.address.eq(weights.address + 1), element.eq(layer.column_base + grid_column),
                         dimension.eq(dimension + 1), dimension_offset.eq(dimension_offset + layer.dim_words)]
            with m.If(last_dimension):
                m.d.sync += [dimension.eq(0), dimension_offset.eq(0), out_capsule.eq(out_capsule + 1)]
                with m.If(last_out_capsule):
                    m.d.sync += [out_capsule.eq(0), grid_column.eq(grid_column + 1)]
                    with m.If(last_column):
                        m.d.sync += [grid_column.eq(0), grid_row.eq(grid_row + 1)]
                        with m.If(last_row):
                            m.d.sync += [grid_row.eq(0), capsule_type.eq(capsule_type + 1),
                                         type_offset.eq(type_offset + layer.type_words)]

        with m.FSM():
            with m.State("IDLE"):
                with m.If(run.start):
                    m.d.sync += [capsule_type.eq(0), grid_row.eq(0), grid_column.eq(0), out_capsule.eq(0),
                                 dimension.eq(0), type_offset.eq(0), dimension_offset.eq(0),
                                 weights.address.eq(layer.matvec_weight_base),
                                 predictions.address.eq(layer.prediction_base)]
                    m.next = "RUN"
            with m.State("RUN"):
                m.d.comb += [run.busy.eq(1), issuing.eq(1), inputs.read_enable.eq(1), weights.read_enable.eq(1)]
                with m.If(last_dimension & last_out_capsule & last_column & last_row & last_type):
                    m.d.sync += drain.eq(0)
                    m.next = "DRAIN"
            with m.State("DRAIN"):
                m.d.comb += [run.busy.eq(1), draining.eq(1)]
                m.d.sync += drain.eq(drain + 1)
                with m.If(drain == latency):
                    m.d.comb += run.done.eq(1)
                    m.next = "IDLE"

        # ---- The matrix module and the prediction writes ----------------------------------------------------
        config = self._config
        shared = config.matvec_requantize_cycles > 1
        m.submodules.module = module = IntMatrixModule(lanes=config.matvec_lanes, multipliers=config.matvec_multipliers,
                                                       count_bits=len(layer.in_dims), requantized=not shared)
        operands = module.operands.payload
        issued = Signal()                                     # the module's operands of a product are on its inputs
        m.d.sync += issued.eq(issuing)
        m.d.comb += [
            module.operands.valid.eq(issued),
            operands.scalar.eq(inputs.read_data.word_select(element, OPERAND_BITS)),
            operands.vector.eq(weights.read_data),
            operands.bias.eq(0),
            operands.count.eq(layer.in_dims),
        ]
        if shared:
            vector, write = self._requantize_shared(m, module.result, layer)
        else:
            m.d.comb += [operands.shift.eq(layer.shift), operands.relu.eq(layer.relu)]
            vector, write = module.result.payload, module.result.valid
        m.d.comb += [predictions.write_data.eq(vector),
                     predictions.write_enable.eq(write.replicate(len(predictions.write_enable)))]
        with m.If(write):
            m.d.sync += predictions.address.eq(predictions.address + 1)
        return m

    def _requantize_shared(self, m, result, layer):
        """The shared requantizers on the module's 32-bit sums: part ``p`` (lanes ``p*Q ..``) on the ``p``-th cycle
        of a result, shifted into the prediction word from the top; the word and its write pulse on the cycle after
        the last part."""
        passes = self._config.matvec_requantize_cycles
        per_pass = self._config.matvec_lanes // passes
        part = Signal(range(passes))
        requantizing, complete = Signal(), Signal()
        vector = Signal(self._config.matvec_word_bits)
        active = result.valid | requantizing
        current = Mux(result.valid, 0, part)
        sums = [result.payload[lane].as_signed() for lane in range(self._config.matvec_lanes)]   # unsigned lanes
        requantized = [requantize(Array(sums[lane::per_pass])[current], layer.shift, layer.relu)
                       for lane in range(per_pass)]
        part_bits = per_pass * OPERAND_BITS
        m.d.sync += complete.eq(active & (current == passes - 1))
        with m.If(active):
            m.d.sync += [vector.eq(Cat(vector[part_bits:], *requantized)), part.eq(current + 1),
                         requantizing.eq(current != passes - 1)]
        return vector, complete
