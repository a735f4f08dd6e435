"""Design under test for ``testbench.conv_feeder_tb``: a ``ConvFeeder`` on both ports of a ``DualPortBuffer``
holding the image, and :func:`run_feeder`, which simulates it (used by the tests and the benchmark)."""

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.conv_feeder import ConvFeeder
from hw.dual_port_buffer import DualPortBuffer
from sim.harness import simulate

__all__ = ["FeederWithImage", "run_feeder", "feeder_module_name", "geometry_kwargs"]

OBSERVED = ("busy", "out_valid", "scalars", "weight_index", "first", "last", "output_row", "head_count", "active")


def geometry_kwargs(geometry):
    """``ConvFeeder`` / ``ConvGeometry`` keyword arguments from ``(channels, image_size, kernel_size, stride,
    positions)``."""
    return dict(zip(("channels", "image_size", "kernel_size", "stride", "positions"), geometry))


def feeder_module_name(geometry):
    """Verilog module name for a ``(channels, image_size, kernel_size, stride, positions)`` geometry."""
    return "conv_feeder_c{}_i{}_k{}_s{}_p{}".format(*geometry)


class FeederWithImage(wiring.Component):
    """``start`` in; the feeder's ``busy`` and output ports out; ``image_bits`` (raw, (channels, size, size)) in
    the buffer's initial contents, one image row per word."""

    def __init__(self, feeder, image_bits):
        channels, image_size = feeder.channels, feeder.image_size
        self._feeder = feeder
        self._buffer = DualPortBuffer(width=image_size * feeder.fmt.width, depth=channels * image_size,
                                      init=np.asarray(image_bits).reshape(channels * image_size, image_size))
        members = feeder.signature.members
        super().__init__({"start": In(1), **{name: Out(members[name].shape) for name in OBSERVED}})

    def elaborate(self, platform):
        m = Module()
        m.submodules.feeder = feeder = self._feeder
        m.submodules.buffer = buffer = self._buffer
        wiring.connect(m, feeder.upper, buffer.a)
        wiring.connect(m, feeder.lower, buffer.b)
        m.d.comb += feeder.start.eq(self.start)
        m.d.comb += [getattr(self, name).eq(getattr(feeder, name)) for name in OBSERVED]
        return m


def run_feeder(geometry, image_bits, *, beats, runs=1, start_cycle=3, simulator="verilator"):
    """Simulate a feeder of ``geometry`` on ``image_bits``; returns the :class:`sim.harness.SimResult` whose
    outputs ``testbench.conv_feeder_tb`` describes."""
    feeder = ConvFeeder(**geometry_kwargs(geometry))
    return simulate(FeederWithImage(feeder, image_bits), name=feeder_module_name(geometry),
                    test_module="testbench.conv_feeder_tb", simulator=simulator,
                    config={"positions": feeder.positions, "bits": feeder.fmt.width, "start_cycle": start_cycle,
                            "runs": runs, "beats": beats, "timeout": beats + 20})
