"""A component that hands an Avalon-MM master port through from its top-level ports, for testbenches that play the
master themselves (e.g. the SDRAM model's equivalence test, :mod:`testbench.shared.sdram_model_tb`)."""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.avalon_master import AvalonMMSignature
from nnaccel.hw.shared.parameters import check_int

__all__ = ["AvalonPassthrough"]


class AvalonPassthrough(wiring.Component):
    """``host`` (In :class:`AvalonMMSignature`: the master's requests come in on the ports ``host__address`` ...,
    the slave's answers go out on ``host__waitrequest`` ...) wired straight to ``avalon`` (Out, the master port),
    no latency.  ``accepted`` (Out, 32 bits) counts the requests (read bursts, write words) the slave accepted,
    up to the previous cycle: a check for the testbench, and a clock and reset like every DUT of
    :class:`testbench.shared.sdram_model.WithSdramModel`.  FPGA mapping: none (a testbench fixture)."""

    def __init__(self, *, data_bits=32, address_bits=26, burstcount_bits=8):
        for name, value, low, high in (("data_bits", data_bits, 8, 1024), ("address_bits", address_bits, 1, 64),
                                       ("burstcount_bits", burstcount_bits, 1, 32)):
            check_int(name, value, low, high)
        self._params = (data_bits, address_bits, burstcount_bits)
        signature = AvalonMMSignature(data_bits=data_bits, address_bits=address_bits, burstcount_bits=burstcount_bits)
        super().__init__({"host": In(signature), "avalon": Out(signature), "accepted": Out(32)})

    @property
    def module_name(self):
        return "avalon_passthrough_d{}_a{}_b{}".format(*self._params)

    def elaborate(self, platform):
        m = Module()
        wiring.connect(m, wiring.flipped(self.host), wiring.flipped(self.avalon))
        with m.If((self.avalon.read | self.avalon.write) & ~self.avalon.waitrequest):
            m.d.sync += self.accepted.eq(self.accepted + 1)
        return m
