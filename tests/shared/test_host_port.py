"""hw.shared.host_port.HostPortSignature: members and their flows, equality by data width, representation, the
Verilog port names of an accelerator's host port (no constant member: ``verilog.convert`` takes the component
without a port list)."""

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.host_port import ADDRESS_BITS, TARGET_BITS, HostPortSignature, ReadDataSignature


def test_members_from_the_host_side():
    assert dict(HostPortSignature(data_bits=96).members) == {
        "write": Out(1), "read": Out(1), "target": Out(3), "address": Out(20), "write_data": Out(96),
        "read_data": In(ReadDataSignature(96)), "busy": In(1), "done": In(1)}
    assert dict(ReadDataSignature(96).members) == {"valid": Out(1), "payload": Out(96)}
    assert (TARGET_BITS, ADDRESS_BITS) == (3, 20)


def test_equality_representation_and_verilog_names():
    port = HostPortSignature(data_bits=64)
    assert port == HostPortSignature(data_bits=64) and port != HostPortSignature(data_bits=65)
    assert hash(port) == hash(HostPortSignature(data_bits=64))
    assert port.data_bits == 64 and repr(port) == "HostPortSignature(data_bits=64)"
    # An accelerator's port, converted by Amaranth itself: its ports are the signature's members.
    text = verilog.convert(_Echo(port), name="echo", emit_src=False)
    header = text[text.index("module echo("):].split(");", 1)[0]
    assert sorted(name.strip() for name in header[len("module echo("):].split(",")) == sorted([
        "host__write", "host__read", "host__target", "host__address", "host__write_data", "host__read_data__valid",
        "host__read_data__payload", "host__busy", "host__done"])


class _Echo(wiring.Component):
    """A host port whose read answers with the write data, for the conversion above."""

    def __init__(self, port):
        super().__init__({"host": In(port)})

    def elaborate(self, platform):
        m = Module()
        host = self.host
        m.d.comb += [host.read_data.valid.eq(host.read), host.read_data.payload.eq(host.write_data + host.address),
                     host.busy.eq(host.write & (host.target == 1)), host.done.eq(host.write)]
        return m


@pytest.mark.parametrize("data_bits", [0, 2.5, True, None])
def test_rejects_bad_width(data_bits):
    with pytest.raises(ValueError, match=f"^data_bits must be a positive integer, not {data_bits!r}$"):
        HostPortSignature(data_bits=data_bits)
