"""The on-chip CapsNet accelerator's layer sequencer: runs the descriptor table's layers one after the other."""

import enum

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.config import CapsNetConfig
from nnaccel.hw.capsnet.descriptor import LayerKind, descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.shared.run_control import RunSignature

__all__ = ["CapsNetLayerSequencer", "EngineOwner"]


class EngineOwner(enum.IntEnum):
    """What :attr:`CapsNetLayerSequencer.activation_owner` gives: who uses the activation RAMs' shared port."""
    CONV = 0
    MATVEC = 1
    HOST = 2


class CapsNetLayerSequencer(wiring.Component):
    """Runs layers ``0 .. layer_count - 1`` of a START, each on the engine its descriptor's ``kind`` names.

    Ports
    -----
    run : In(RunSignature(max_layers=config.max_layers, descriptor_layout=descriptor_layout(config)))
        From :class:`~hw.shared.host_control.HostControl`: ``start`` with ``layer_count``, the current layer's
        ``descriptor``; to it ``busy``, ``done`` (high from the end of a run to the next START), ``layer_index`` and
        ``events`` (the engines' events, OR-ed: one engine runs at a time).
    conv, matvec : Out(EngineControlSignature(descriptor_layout(config)))
        To the engines: ``run.start`` (the layer's LAUNCH cycle), ``layer`` (the current descriptor); from them
        ``run.busy``, ``run.done`` and ``events``.
    activation_owner : Out(range(3))
        Who uses the activation RAMs' shared port (:class:`EngineOwner`): the engine while it runs, else the host.

    Timing: START on cycle ``s``: LAUNCH on ``s + 1`` (the engine's ``start``); the cycle after the engine's
    ``done``, the next layer's LAUNCH, or ``done`` after the last layer.  ``busy`` from LAUNCH to the last
    engine's ``done``.

    FPGA mapping (Cyclone V): a three-state machine, the layer index and count registers in ALMs.
    """

    def __init__(self, *, config=CapsNetConfig()):
        if not isinstance(config, CapsNetConfig):
            raise TypeError(f"config must be a CapsNetConfig, not {config!r}")
        layout = descriptor_layout(config)
        engine = EngineControlSignature(layout)
        super().__init__({"run": In(RunSignature(max_layers=config.max_layers, descriptor_layout=layout)),
                          "conv": Out(engine), "matvec": Out(engine), "activation_owner": Out(range(3))})

    def elaborate(self, platform):
        m = Module()
        run, conv, matvec = self.run, self.conv, self.matvec
        layer_count = Signal.like(run.layer_count)
        done = Signal()
        layer = run.descriptor
        is_conv = layer.kind == LayerKind.CONV
        m.d.comb += [
            run.done.eq(done), conv.layer.eq(layer), matvec.layer.eq(layer),
            run.events.issue.eq(conv.events.issue | matvec.events.issue), run.events.stall.eq(conv.events.stall),
            run.events.draining.eq(conv.events.draining | matvec.events.draining),
            self.activation_owner.eq(Mux(conv.run.busy, EngineOwner.CONV,
                                         Mux(matvec.run.busy, EngineOwner.MATVEC, EngineOwner.HOST))),
        ]
        engine_done = Mux(is_conv, conv.run.done, matvec.run.done)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(run.start):
                    m.d.sync += [run.layer_index.eq(0), layer_count.eq(run.layer_count), done.eq(0)]
                    m.next = "LAUNCH"
            with m.State("LAUNCH"):
                m.d.comb += [run.busy.eq(1), conv.run.start.eq(is_conv), matvec.run.start.eq(~is_conv)]
                m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += run.busy.eq(1)
                with m.If(engine_done):
                    with m.If(run.layer_index + 1 >= layer_count):
                        m.d.sync += done.eq(1)
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += run.layer_index.eq(run.layer_index + 1)
                        m.next = "LAUNCH"
        return m
