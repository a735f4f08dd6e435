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
    counter events: a product issued, a product waiting, draining the last results; only with ``events``, for a
    block whose cycles the counters count).
    """

    def __init__(self, descriptor_layout, *, events=True):
        if not isinstance(descriptor_layout, data.Layout):
            raise TypeError(f"descriptor_layout must be a data.Layout, not {descriptor_layout!r}")
        if not isinstance(events, bool):
            raise TypeError(f"events must be a bool, not {events!r}")
        self._descriptor_layout, self._events = descriptor_layout, events
        super().__init__({"run": Out(StartSignature()), "layer": Out(descriptor_layout),
                          **({"events": In(COUNTER_EVENTS)} if events else {})})

    @property
    def descriptor_layout(self):
        return self._descriptor_layout

    @property
    def events(self):
        return self._events

    def __eq__(self, other):
        return (isinstance(other, EngineControlSignature) and other._descriptor_layout == self._descriptor_layout
                and other._events == self._events)

    def __hash__(self):
        return hash((EngineControlSignature, self._descriptor_layout, self._events))

    def __repr__(self):
        return f"EngineControlSignature({self._descriptor_layout!r}, events={self._events})"
