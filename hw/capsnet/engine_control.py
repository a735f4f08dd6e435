"""What a CapsNet controller (a top's sequencer) and an engine it runs exchange: :class:`EngineControlSignature`."""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.run_control import COUNTER_EVENTS, StartSignature

__all__ = ["EngineControlSignature"]


class EngineControlSignature(wiring.Signature):
    """Running one layer on an engine, seen from the controller (the engine has it flipped, ``In(...)``).

    Members: ``run`` Out(:class:`~hw.shared.run_control.StartSignature`) (``start`` a one-cycle pulse, ``busy``,
    ``done`` a one-cycle pulse, as each engine documents); ``layer`` Out(descriptor_layout) (the layer's descriptor,
    stable while the engine is busy); ``events`` In(:data:`~hw.shared.run_control.COUNTER_EVENTS`) (this cycle's
    counter events: a product issued, a product waiting, draining the last results).
    """

    def __init__(self, descriptor_layout):
        if not isinstance(descriptor_layout, data.Layout):
            raise TypeError(f"descriptor_layout must be a data.Layout, not {descriptor_layout!r}")
        self._descriptor_layout = descriptor_layout
        super().__init__({"run": Out(StartSignature()), "layer": Out(descriptor_layout), "events": In(COUNTER_EVENTS)})

    @property
    def descriptor_layout(self):
        return self._descriptor_layout

    def __eq__(self, other):
        return isinstance(other, EngineControlSignature) and other._descriptor_layout == self._descriptor_layout

    def __hash__(self):
        return hash((EngineControlSignature, self._descriptor_layout))

    def __repr__(self):
        return f"EngineControlSignature({self._descriptor_layout!r})"
