"""hw.shared.host_port.HostPortSignature: members and their flows, equality by data width, representation, the
Verilog port names of an accelerator's host port (hw.shared.verilog_ports)."""

import pytest
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.host_port import ADDRESS_BITS, TARGET_BITS, HostPortSignature
from nnaccel.hw.shared.verilog_ports import verilog_ports


def test_members_from_the_host_side():
    assert dict(HostPortSignature(data_bits=96).members) == {
        "write": Out(1), "read": Out(1), "target": Out(3), "address": Out(20), "write_data": Out(96),
        "read_data": In(stream.Signature(96, always_ready=True)), "busy": In(1), "done": In(1)}
    assert (TARGET_BITS, ADDRESS_BITS) == (3, 20)


def test_equality_representation_and_verilog_names():
    port = HostPortSignature(data_bits=64)
    assert port == HostPortSignature(data_bits=64) and port != HostPortSignature(data_bits=65)
    assert hash(port) == hash(HostPortSignature(data_bits=64))
    assert port.data_bits == 64 and repr(port) == "HostPortSignature(data_bits=64)"
    # An accelerator's port: the read data's constant ready is no Verilog port.
    accelerator_side = wiring.Signature({"host": In(port)}).create()
    assert [(name, member.flow) for name, member, _ in verilog_ports(accelerator_side)] == [
        ("host__write", In), ("host__read", In), ("host__target", In), ("host__address", In),
        ("host__write_data", In), ("host__read_data__payload", Out), ("host__read_data__valid", Out),
        ("host__busy", Out), ("host__done", Out)]


@pytest.mark.parametrize("data_bits", [0, 2.5, True, None])
def test_rejects_bad_width(data_bits):
    with pytest.raises(ValueError, match=f"^data_bits must be a positive integer, not {data_bits!r}$"):
        HostPortSignature(data_bits=data_bits)
