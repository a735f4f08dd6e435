"""Named interfaces for running a block: the host control block's ``run`` port to a system's sequencer, a plain
start/busy/done handshake between a controller and a block it starts, and a host memory port.

Each is a ``wiring.Signature`` seen from the initiator (the side that has it as ``Out``): the controller for
:class:`RunSignature` and :class:`StartSignature`, the host control block for :class:`HostMemorySignature`.
The block being driven has the flipped signature (``In(...)``); the top joins the two with ``wiring.connect``.
"""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.parameters import check_positive

__all__ = ["COUNTER_EVENTS", "RunSignature", "StartSignature", "HostMemorySignature"]

# The per-cycle events the performance counters count (besides a layer's cycles).
COUNTER_EVENTS = data.StructLayout({"issue": 1, "stall": 1, "draining": 1})


class StartSignature(wiring.Signature):
    """Start a block and see it work: ``start`` Out(1) (a one-cycle pulse), ``busy`` In(1) (the block is running),
    ``done`` In(1) (one-cycle pulse, or a level until the next ``start``, as the block documents)."""

    def __init__(self):
        super().__init__({"start": Out(1), "busy": In(1), "done": In(1)})

    def __eq__(self, other):
        return type(other) is StartSignature

    def __hash__(self):
        return hash(StartSignature)

    def __repr__(self):
        return "StartSignature()"


class RunSignature(wiring.Signature):
    """What the host control block and a system's sequencer exchange, seen from the host control block.

    Members: ``start`` Out(1) and ``layer_count`` Out(range(max_layers + 1)) (a START write: run layers
    ``0 .. layer_count - 1``); ``descriptor`` Out(descriptor_layout) (the table entry ``layer_index`` selects);
    ``busy``, ``done`` In(1); ``layer_index`` In(range(max_layers)) (the layer running now; its counters count);
    ``events`` In(:data:`COUNTER_EVENTS`) (this cycle's counter events).
    """

    def __init__(self, *, max_layers, descriptor_layout):
        check_positive("max_layers", max_layers)
        if not isinstance(descriptor_layout, data.Layout):
            raise TypeError(f"descriptor_layout must be a data.Layout, not {descriptor_layout!r}")
        self._max_layers, self._descriptor_layout = max_layers, descriptor_layout
        super().__init__({
            "start": Out(1), "layer_count": Out(range(max_layers + 1)), "descriptor": Out(descriptor_layout),
            "busy": In(1), "done": In(1), "layer_index": In(range(max_layers)), "events": In(COUNTER_EVENTS),
        })

    @property
    def max_layers(self):
        return self._max_layers

    @property
    def descriptor_layout(self):
        return self._descriptor_layout

    def __eq__(self, other):
        return (isinstance(other, RunSignature) and other._max_layers == self._max_layers
                and other._descriptor_layout == self._descriptor_layout)

    def __hash__(self):
        return hash((RunSignature, self._max_layers, self._descriptor_layout))

    def __repr__(self):
        return f"RunSignature(max_layers={self._max_layers}, descriptor_layout={self._descriptor_layout!r})"


class HostMemorySignature(wiring.Signature):
    """The host's access to one memory, seen from the host control block.

    Members: ``address`` Out(address_bits), ``write_data`` Out(width), ``write`` Out(1) and ``read`` Out(1) (the
    host writes / reads this memory this cycle, only while the system is idle), ``read_data`` In(width) (the
    word, on the cycle after ``read``).
    """

    def __init__(self, *, width, address_bits):
        check_positive("width", width)
        check_positive("address_bits", address_bits)
        self._width, self._address_bits = width, address_bits
        super().__init__({"address": Out(address_bits), "write_data": Out(width), "write": Out(1), "read": Out(1),
                          "read_data": In(width)})

    @property
    def width(self):
        return self._width

    @property
    def address_bits(self):
        return self._address_bits

    def __eq__(self, other):
        return (isinstance(other, HostMemorySignature) and other._width == self._width
                and other._address_bits == self._address_bits)

    def __hash__(self):
        return hash((HostMemorySignature, self._width, self._address_bits))

    def __repr__(self):
        return f"HostMemorySignature(width={self._width}, address_bits={self._address_bits})"
