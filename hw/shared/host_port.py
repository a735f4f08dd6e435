"""The host port the accelerators share (DQN, CapsNet): one request per cycle over a wide data port.

Members (from the accelerator's point of view): ``host_write``, ``host_read`` (In 1: the request),
``host_target`` (In 3: which register file or memory), ``host_address`` (In 20), ``host_write_data``
(In ``data_bits``), ``host_read_data`` (Out ``data_bits``) with ``host_read_valid`` (Out 1) on the cycle after
``host_read``; ``busy`` and ``done`` (Out 1).  Each accelerator documents its targets and registers;
``testbench.dqn.accelerator_tb.HostDriver`` drives this port for both.
"""

from amaranth.lib.wiring import In, Out

__all__ = ["HOST_ADDRESS_BITS", "host_port_members"]

HOST_ADDRESS_BITS = 20


def host_port_members(data_bits):
    """The port's signature members for a ``data_bits``-wide data port."""
    return {
        "host_write": In(1), "host_read": In(1), "host_target": In(3), "host_address": In(HOST_ADDRESS_BITS),
        "host_write_data": In(data_bits), "host_read_data": Out(data_bits), "host_read_valid": Out(1),
        "busy": Out(1), "done": Out(1),
    }
