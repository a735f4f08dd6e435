"""A deep dual-port RAM built from banks of one :class:`~hw.shared.dual_port_buffer.DualPortBuffer` design.

Amaranth writes a memory's initial contents into the Verilog word by word, and converting one memory takes time
that grows faster than its depth (a 32,768 x 256-bit buffer: about 70 s; 4,096 words: 4 s).  The CapsNet
accelerator's weight RAMs hold up to 166,536 words, so they are built from banks of ``bank_depth`` words: identical
banks, which a build that generates each distinct module once (``hw.shared.stand_in``) converts once.  The
behaviour is the one of a single :class:`~hw.shared.dual_port_buffer.DualPortBuffer` of the whole depth
(the FPGA builds deep RAMs from M10K blocks in the same way).
"""

from amaranth.hdl import Array, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer
from nnaccel.hw.shared.parameters import check_positive

__all__ = ["instantiate_banked_buffer", "bank_count"]


def bank_count(depth, bank_depth):
    return -(-depth // bank_depth)


def instantiate_banked_buffer(m, *, width, depth, bank_depth=4096, granularity=None, instance_name):
    """Add to ``m`` a ``ceil(depth / bank_depth) * bank_depth`` x ``width`` dual-port RAM and return its interface.

    The interface has the signature of ``DualPortBuffer(width=width, depth=banks * bank_depth,
    granularity=granularity)`` (ports ``a``, ``b``; drive ``address``, ``read_enable``, ``write_enable``,
    ``write_data``, read ``read_data``) and the same timing: one-cycle reads whose data holds until the next read of
    that port.  Bank ``k`` holds words ``k*bank_depth ..``; each port keeps the bank of its last read to select
    the read data.  ``bank_depth`` must be a power of two; bank ``k`` is the submodule ``{instance_name}_bank{k}``.
    """
    check_positive("depth", depth)
    check_positive("bank_depth", bank_depth)
    if bank_depth & (bank_depth - 1):
        raise ValueError(f"bank_depth must be a power of two, not {bank_depth!r}")
    banks = bank_count(depth, bank_depth)
    bank_depth = min(bank_depth, depth) if banks == 1 else bank_depth
    port = BufferPortSignature(width=width, depth=banks * bank_depth, granularity=granularity)
    interface = wiring.Signature({"a": In(port), "b": In(port)}).create(path=(instance_name,))
    bank_interfaces = []
    for index in range(banks):
        m.submodules[f"{instance_name}_bank{index}"] = bank = DualPortBuffer(width=width, depth=bank_depth,
                                                                             granularity=granularity)
        bank_interfaces.append(bank)
    offset_bits = (bank_depth - 1).bit_length()
    for name in ("a", "b"):
        whole = getattr(interface, name)
        if banks == 1:
            wiring.connect(m, wiring.flipped(whole), getattr(bank_interfaces[0], name))
            continue
        bank = whole.address[offset_bits:]
        read_bank = Signal(range(banks), name=f"{instance_name}_{name}_read_bank")
        with m.If(whole.read_enable):
            m.d.sync += read_bank.eq(bank)
        for index, bank_interface in enumerate(bank_interfaces):
            selected = bank == index
            bank_port = getattr(bank_interface, name)
            m.d.comb += [bank_port.address.eq(whole.address[:offset_bits]), bank_port.write_data.eq(whole.write_data),
                         bank_port.read_enable.eq(whole.read_enable & selected),
                         bank_port.write_enable.eq(Mux(selected, whole.write_enable, 0))]
        m.d.comb += whole.read_data.eq(Array(getattr(bank_interface, name).read_data
                                             for bank_interface in bank_interfaces)[read_bank])
    return interface
