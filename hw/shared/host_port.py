"""The host port the accelerators share (DQN, CapsNet): one request per cycle over a wide data port.

:class:`HostPortSignature` is described from the host's side (the initiator, as Amaranth bus signatures are);
an accelerator has ``host: In(HostPortSignature(data_bits=...))``, which gives the Verilog ports ``host__write``,
``host__read``, ``host__target``, ``host__address``, ``host__write_data``, ``host__read_data__payload``,
``host__read_data__valid``, ``host__busy`` and ``host__done``.  :mod:`hw.shared.host_control` implements the
accelerator's side; ``testbench.shared.host_driver.HostDriver`` drives it for both testbenches.
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.parameters import check_positive

__all__ = ["HostPortSignature", "ReadDataSignature", "HostPortAccelerator", "ADDRESS_BITS", "TARGET_BITS"]

TARGET_BITS = 3         # up to 8 targets: CONTROL, DESCRIPTORS and the system's memories
ADDRESS_BITS = 20       # word address inside a target: 1 M words, beyond the deepest RAM of either accelerator


class ReadDataSignature(wiring.Signature):
    """A word with a valid flag that the receiver always takes: ``valid`` Out(1), ``payload`` Out(data_bits), seen
    from the sender.

    The members of an always-ready ``lib.stream`` without its ``ready``: a stream's ``ready`` would be the constant
    1, which Amaranth 0.5 cannot make a top-level port (``verilog.convert`` of a component whose signature holds a
    constant fails, amaranth-lang/amaranth issue 1574), and this signature is on every accelerator's top.
    """

    def __init__(self, data_bits):
        check_positive("data_bits", data_bits)
        self._data_bits = data_bits
        super().__init__({"valid": Out(1), "payload": Out(data_bits)})

    def __eq__(self, other):
        return type(other) is type(self) and other._data_bits == self._data_bits

    def __hash__(self):
        return hash((type(self), self._data_bits))

    def __repr__(self):
        return f"ReadDataSignature({self._data_bits})"


class HostPortSignature(wiring.Signature):
    """A ``data_bits``-wide host port: one request per cycle, reads answered on the next cycle.

    Members (flows from the host's side)
    ------------------------------------
    write, read : Out(1)
        A write or a read request this cycle (not both).
    target : Out(TARGET_BITS)
        What the request addresses: a register file or a memory, numbered by the accelerator
        (:class:`hw.shared.host_control.HostTarget` and the system's memory targets).
    address : Out(ADDRESS_BITS)
        The word inside the target.
    write_data : Out(data_bits)
        The word a write stores (a narrower target takes its low bits).
    read_data : In(:class:`ReadDataSignature`)
        The answer to a read: ``valid`` on the cycle after the ``read`` request, with the word in ``payload`` (a
        narrower target's word zero-extended).  The host takes it on that cycle (no ``ready``).
    busy, done : In(1)
        The accelerator runs (it ignores memory requests then); it finished a run (high until the next start).
    """

    def __init__(self, *, data_bits):
        check_positive("data_bits", data_bits)
        self._data_bits = data_bits
        super().__init__({
            "write": Out(1), "read": Out(1), "target": Out(TARGET_BITS), "address": Out(ADDRESS_BITS),
            "write_data": Out(data_bits),
            "read_data": In(ReadDataSignature(data_bits)),
            "busy": In(1), "done": In(1),
        })

    @property
    def data_bits(self):
        return self._data_bits

    def __eq__(self, other):
        return type(other) is type(self) and other.data_bits == self.data_bits

    def __hash__(self):
        return hash((type(self), self._data_bits))

    def __repr__(self):
        return f"HostPortSignature(data_bits={self._data_bits})"


class HostPortAccelerator(wiring.Component):
    """What every accelerator on a host port has in common: its configuration (checked to be a ``config_type``),
    the ``host`` port (an ``In(HostPortSignature(...))`` of ``host_data_bits``, by default the configuration's,
    plus ``ports``), the Verilog module
    named after the configuration and the Verilog cached under the configuration's ``repr`` (generating a large
    design's Verilog takes a minute; ``sim.verilog`` keeps it under ``verilog_cache_key``).  No hardware of its
    own: each subclass's docstring gives its ports, timing and FPGA mapping."""

    def __init__(self, config, config_type, *, host_data_bits=None, ports=None):
        if not isinstance(config, config_type):
            raise TypeError(f"config must be a {config_type.__name__}, not {config!r}")
        self._config = config
        data_bits = config.host_data_bits if host_data_bits is None else host_data_bits
        super().__init__({"host": In(HostPortSignature(data_bits=data_bits)), **(ports or {})})

    @property
    def config(self):
        return self._config

    @property
    def module_name(self):
        return self._config.module_name

    @property
    def verilog_cache_key(self):
        return repr(self._config)

