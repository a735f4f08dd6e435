"""A design under test with the DE1-SoC SDRAM model on its Avalon-MM master port, for simulation.

:class:`WithSdramModel` is the top :func:`sim.harness.simulate` builds when a test wants the SDRAM inside the
simulator (``sdram_model.v`` beside this file, cycle-identical to :class:`models.shared.sdram.SdramModel`) rather
than served by the Python slave :mod:`testbench.shared.avalon_sdram` from cocotb on every cycle.  The cocotb
test module reaches the model's memory through :mod:`testbench.shared.sdram_backdoor`.
"""

from pathlib import Path

from amaranth.hdl import ClockSignal, Instance, Module, ResetSignal, Shape
from amaranth.lib import wiring

from nnaccel.hw.shared.avalon_master import AvalonMMSignature
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, SdramTiming

__all__ = ["WithSdramModel", "SDRAM_MODEL_SOURCE", "SDRAM_INSTANCE_NAME"]

SDRAM_MODEL_SOURCE = Path(__file__).with_name("sdram_model.v")
SDRAM_INSTANCE_NAME = "sdram"             # the model's instance in the top: ``dut.sdram`` in a cocotb test module


def _log2_ceiling(value):
    return max(0, (value - 1).bit_length())


class WithSdramModel(wiring.Component):
    """``dut`` with the SDRAM model (``sdram_model.v``) serving its ``avalon`` member.

    Ports: every member of ``dut``'s signature except ``avalon`` (an Out :class:`AvalonMMSignature`), named as on
    ``dut`` itself, so a cocotb test module written for ``dut`` drives this top unchanged; ``clk`` and ``rst`` go
    to both.  Timing: the model's, :class:`SdramTiming` ``timing`` (its ``command_latency`` at least 1).  The
    model's memory holds ``memory_bytes`` (rounded up to a power of two; default: the whole SDRAM), addressed by
    the low bits of the Avalon address.  ``dut`` is a submodule named ``dut``, its members joined to this top's
    with ``wiring.connect`` (a plain signal member by
    assignment); :attr:`simulation_sources` is the model's Verilog, which :func:`sim.harness.simulate`
    compiles with the top.  FPGA mapping: none (a simulation top).
    """

    def __init__(self, dut, *, timing=DE1_SOC_SDRAM, memory_bytes=None):
        avalon = dut.signature.members.get("avalon") if isinstance(dut, wiring.Component) else None
        if avalon is None or avalon.flow != wiring.Out or not isinstance(avalon.signature, AvalonMMSignature):
            raise TypeError(f"dut must be a component with an Avalon-MM master member 'avalon', not {dut!r}")
        if not isinstance(timing, SdramTiming):
            raise TypeError(f"timing must be an SdramTiming, not {timing!r}")
        if timing.command_latency < 1:
            raise ValueError(f"the SDRAM model needs timing.command_latency >= 1, not {timing.command_latency!r}")
        if timing.data_bits & (timing.data_bits - 1):
            raise ValueError(f"the SDRAM model needs timing.data_bits a power of two, not {timing.data_bits!r}")
        data_bits, address_bits, burstcount_bits = (Shape.cast(avalon.signature.members[name].shape).width
                                                    for name in ("writedata", "address", "burstcount"))
        if data_bits % timing.data_bits:
            raise ValueError(f"the Avalon port's {data_bits} bits are not a multiple of the SDRAM's "
                             f"{timing.data_bits}")
        word_bytes = data_bits // 8
        if memory_bytes is None:
            memory_bytes = timing.size_bytes
        if not isinstance(memory_bytes, int) or isinstance(memory_bytes, bool) or \
                not word_bytes <= memory_bytes <= timing.size_bytes:
            raise ValueError(f"memory_bytes must be an integer from {word_bytes} to the SDRAM's "
                             f"{timing.size_bytes}, not {memory_bytes!r}")
        self._dut, self._timing = dut, timing
        max_burst = 1 << (burstcount_bits - 1)
        outstanding_words = timing.queue_depth * max_burst + timing.cas_latency + timing.read_return_cycles + 8
        self._parameters = {
            "PORT_BITS": data_bits, "ADDRESS_BITS": address_bits, "BURSTCOUNT_BITS": burstcount_bits,
            "DATA_BITS": timing.data_bits, "BANK_BITS": _log2_ceiling(timing.banks),
            "COLUMN_BITS": _log2_ceiling(timing.columns), "CAS_LATENCY": timing.cas_latency, "TRCD": timing.trcd,
            "TRP": timing.trp, "TRAS": timing.tras, "TWR": timing.twr, "TRFC": timing.trfc,
            "REFRESH_INTERVAL": timing.refresh_interval, "COMMAND_LATENCY": timing.command_latency,
            "READ_RETURN_CYCLES": timing.read_return_cycles, "QUEUE_DEPTH": timing.queue_depth,
            "MEMORY_WORDS_LOG2": _log2_ceiling(memory_bytes // word_bytes),
            "RESPONSE_WORDS_LOG2": _log2_ceiling(outstanding_words),
        }
        super().__init__(wiring.Signature({name: member for name, member in dut.signature.members.items()
                                           if name != "avalon"}))

    @property
    def timing(self):
        return self._timing

    @property
    def memory_words(self):
        """Words (of the Avalon port's width) the model's memory holds."""
        return 1 << self._parameters["MEMORY_WORDS_LOG2"]

    @property
    def model_parameters(self):
        """The Verilog parameters of the ``sdram_model`` instance."""
        return dict(self._parameters)

    @property
    def simulation_sources(self):
        return (SDRAM_MODEL_SOURCE,)

    def elaborate(self, platform):
        m = Module()
        m.submodules.dut = dut = self._dut
        for name, member in self.signature.members.items():
            outer, inner = getattr(self, name), getattr(dut, name)
            if member.is_signature:
                wiring.connect(m, wiring.flipped(outer), inner)
            elif member.flow == wiring.In:
                m.d.comb += inner.eq(outer)
            else:
                m.d.comb += outer.eq(inner)
        avalon = dut.avalon
        m.submodules[SDRAM_INSTANCE_NAME] = Instance(
            "sdram_model", **{f"p_{name}": value for name, value in self._parameters.items()},
            i_clk=ClockSignal(), i_rst=ResetSignal(), i_address=avalon.address, i_burstcount=avalon.burstcount,
            i_read=avalon.read, i_write=avalon.write, i_writedata=avalon.writedata, i_byteenable=avalon.byteenable,
            o_waitrequest=avalon.waitrequest, o_readdata=avalon.readdata, o_readdatavalid=avalon.readdatavalid)
        return m
