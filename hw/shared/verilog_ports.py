"""The Verilog ports of a component: its signature's members that are signals, named as Amaranth names them.

A stream that is always ready (``stream.Signature(shape, always_ready=True)``, the streams between the blocks of
this project: none of them can stall) has ``ready`` as the constant 1, not a signal.  The constant is part of the
interface in Python and is no port in Verilog; Amaranth 0.5's default port list for a component would offer it
as one and fail (amaranth-lang/amaranth issue 1574).  Every place that lists a component's ports (Verilog
generation, separately generated modules, wave files, FPGA projects) takes them from :func:`verilog_ports`.
"""

from amaranth.hdl import Const, ValueCastable

__all__ = ["verilog_ports"]


def verilog_ports(interface):
    """``[(name, member, value)]`` of ``interface`` (a component or an interface created from a signature): every
    member of its signature except the constant ones, ``name`` the Verilog port name (``path`` joined with
    ``__``: ``operands__payload``), ``value`` the member's value as an Amaranth value."""
    ports = []
    for path, member, value in interface.signature.flatten(interface):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if isinstance(value, Const):
            continue
        ports.append(("__".join(str(part) for part in path), member, value))
    return ports

