"""Named interfaces between the DQN accelerator's blocks (only its own blocks speak them; the ones several systems
speak live in ``hw/shared``: ``run_control``, ``dual_port_buffer.BufferPortSignature``).

Each is a ``wiring.Signature`` seen from the block that drives it (the sequencer for all three); the other side
has it flipped (``In(...)``) and the top joins the two with ``wiring.connect``.
"""

from amaranth.hdl import signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import check_config
from nnaccel.hw.dqn.descriptor import GEOMETRY_BITS, descriptor_layout, group_layout, tap_columns
from nnaccel.hw.dqn.matrix_module import COUNT_BITS

__all__ = ["FeederControlSignature", "ResultGroupSignature", "ActivationSelectSignature", "FlatLaneControlSignature",
           "product_layout"]


def product_layout(config):
    """What the matrix modules need to know of a product besides its operands: ``vector_from_activations`` (take
    the vector from the activation RAM's word, a reduction step, rather than from the weight RAM), and the
    accumulation's ``count`` (products, sampled with its first product) and ``relu``; with
    ``config.max_pooling`` also ``maximum`` (the accumulation is a maximum: a max-pooling pass); with
    ``config.flat_slots`` also ``flat`` (the vector from the flat map's lane window, the scalar slot ``m``'s first
    weight: a flat pass)."""
    fields = {"vector_from_activations": 1, "count": COUNT_BITS, "relu": 1}
    return data.StructLayout(fields | ({"maximum": 1} if check_config(config).max_pooling else {})
                             | ({"flat": 1} if config.flat_slots else {}))


class _ConfigSignature(wiring.Signature):
    """A signature whose members follow from a :class:`DqnConfig`: equal when the configurations are."""

    def __init__(self, config, members):
        self._config = check_config(config)
        super().__init__(members)

    def __eq__(self, other):
        return type(other) is type(self) and other._config == self._config

    def __hash__(self):
        return hash((type(self), self._config))

    def __repr__(self):
        return f"{type(self).__name__}({self._config!r})"


class FeederControlSignature(_ConfigSignature):
    """The sequencer's control of the window feeder for one product, all on the cycle the product issues.

    Members (``Out`` from the sequencer): ``issue`` (1: a product issues; the matrix modules take it on the next
    cycle) with ``product`` (:func:`product_layout`); the row registers' ``load`` (both rows from the RAM words
    read now), ``shift`` (one element down) and ``unit_scalar`` (the next scalars are 1.0: a reduction's
    products); each module's tap,
    ``tap_slot`` (``modules`` bits: row 0 or 1) and ``tap_column`` (``modules`` x column of the row register,
    whose first ``pad_columns`` elements are zeros: the window's first column); the reads the feeder does for the
    sequencer: ``row_address0`` / ``row_address1`` with ``row_read`` (the input RAM's ports 0 and 1) and
    ``row_zero0`` / ``row_zero1`` (the row read lies outside the image: it loads as zeros), ``row_width`` (the
    layer's input width: elements at and past it load as zeros; stable through a layer), ``weight_address``
    with ``weight_read`` (the weight RAM's port 0) and ``bias_address`` with ``bias_read`` (its port 1: the bias
    row, the accumulations' seed, read with a group's first product).  With ``config.flat_slots`` also
    ``flat_lanes`` (:class:`FlatLaneControlSignature`, the lane window's control as the flat pass sequences it; the
    feeder delays ``load`` and ``set_lanes`` by the RAMs' read cycle and takes the lanes' rows and columns from the
    words read on the weight RAM's two ports).
    """

    def __init__(self, config):
        activation_address = (check_config(config).activation_depth - 1).bit_length()
        super().__init__(config, {
            "issue": Out(1), "product": Out(product_layout(config)),
            "load": Out(1), "shift": Out(1), "unit_scalar": Out(1),
            "tap_slot": Out(config.modules),
            "tap_column": Out(data.ArrayLayout(range(tap_columns(config)), config.modules)),
            "row_address0": Out(activation_address), "row_address1": Out(activation_address), "row_read": Out(1),
            "row_zero0": Out(1), "row_zero1": Out(1), "row_width": Out(range(config.row_elements + 1)),
            "weight_address": Out(range(config.weight_address_depth)), "weight_read": Out(1),
            "bias_address": Out(range(config.weight_address_depth)), "bias_read": Out(1),
        } | ({"flat_lanes": Out(FlatLaneControlSignature(config, config.flat_window_words, config.flat_slots))}
             if config.flat_slots else {}))



class ResultGroupSignature(_ConfigSignature):
    """A group of output positions handed from the sequencer to the result writer, and the writer's answer.

    Members: ``group`` Out(:func:`~hw.dqn.descriptor.group_layout`: ``p0``, ``oy0``, ``ox0``) and ``layer``
    Out(the descriptor of the layer it belongs to), both stable from the group's last product until ``written``;
    ``written`` In(1), a pulse when the writer has written the group's results.
    """

    def __init__(self, config):
        check_config(config)
        super().__init__(config, {"group": Out(group_layout(config)), "layer": Out(descriptor_layout(config)),
                          "written": In(1)})



class ActivationSelectSignature(wiring.Signature):
    """Which activation RAM the running layer reads and which it writes: ``busy`` Out(1) (a run owns the RAMs;
    otherwise the host does), ``read_ram`` Out(1) (the RAM whose ports take this cycle's read addresses),
    ``in_ram`` Out(1) (the RAM whose read data the layer takes: ``read_ram`` one cycle later), ``out_ram`` Out(1)
    (RAM 0 or 1; the same one in a reduction layer, which reads on port 1 only)."""

    def __init__(self):
        super().__init__({"busy": Out(1), "read_ram": Out(1), "in_ram": Out(1), "out_ram": Out(1)})

    def __eq__(self, other):
        return type(other) is ActivationSelectSignature

    def __hash__(self):
        return hash(ActivationSelectSignature)

    def __repr__(self):
        return "ActivationSelectSignature()"



class FlatLaneControlSignature(_ConfigSignature):
    """The control of the flat map's lane window (:class:`~hw.dqn.flat_lane_window.FlatLaneWindow`) for one step.

    Members (``Out`` from the side that sequences the steps): ``load`` with ``load_index`` ``k`` (the two words read
    on the activation RAM's ports 0 and 1 are words ``2k`` and ``2k + 1`` of the slots' back windows taken in order,
    ``window_words`` a slot: word ``j`` is word ``j % window_words`` of slot ``j // window_words``; the next group's
    windows, loaded during this group's steps); ``swap`` (every slot's back window becomes its
    front window, the one the steps read: with a group's last step); ``shifts`` (per slot, the window element under
    the slot's first lane this step); ``set_lanes`` with ``lane_rows`` / ``lane_columns`` (each lane's output row
    and column, ``modules * lanes`` of each) and ``advance`` with ``advance_rows`` / ``advance_columns`` /
    ``out_width`` (move every lane on by ``advance_rows * out_width + advance_columns`` positions: the channel's
    next group); ``row_low``, ``row_high``, ``column_low``, ``column_high`` (signed: a lane at ``(oy, ox)`` takes
    its element iff ``row_low <= oy < row_high`` and ``column_low <= ox < column_high``, ``+0`` otherwise).
    """

    def __init__(self, config, window_words, slots):
        check_config(config)
        group_lanes = config.modules * config.lanes
        coordinates = data.ArrayLayout(GEOMETRY_BITS, group_lanes)
        bound = signed(GEOMETRY_BITS + 2)
        self._window_words, self._slots = window_words, slots
        shift = range(window_words * config.row_elements - group_lanes // slots + 1)
        super().__init__(config, {
            "load": Out(1), "load_index": Out(range(slots * window_words // 2)), "swap": Out(1),
            "shifts": Out(data.ArrayLayout(shift, slots)),
            "set_lanes": Out(1), "lane_rows": Out(coordinates), "lane_columns": Out(coordinates),
            "advance": Out(1), "advance_rows": Out(GEOMETRY_BITS), "advance_columns": Out(GEOMETRY_BITS),
            "out_width": Out(GEOMETRY_BITS),
            "row_low": Out(bound), "row_high": Out(bound), "column_low": Out(bound), "column_high": Out(bound),
        })

    def __eq__(self, other):
        return super().__eq__(other) and (other._window_words, other._slots) == (self._window_words, self._slots)

    def __hash__(self):
        return hash((super().__hash__(), self._window_words, self._slots))

    def __repr__(self):
        return f"FlatLaneControlSignature({self._config!r}, window_words={self._window_words}, slots={self._slots})"
