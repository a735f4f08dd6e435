"""hw.pe_ring.isa: field packing matches the Amaranth layout the hardware decodes."""

import pytest

from nnaccel.hw.pe_ring.isa import WORD_BITS, Dest, Index, InstructionLayout, Opcode, Source, decode, encode


def test_word_layout_matches_struct():
    word = encode(opcode=Opcode.MAC, dst=3, a=Source.X, b=Source.MEM, c=Source.IN, index=Index.B1, addr=0x2ABC)
    fields = decode(word)
    assert WORD_BITS == 36 and word < (1 << WORD_BITS)
    assert fields == {"opcode": Opcode.MAC.value, "dst": 3, "a": Source.X.value, "b": Source.MEM.value,
                      "c": Source.IN.value, "index": Index.B1.value, "addr": 0x2ABC}
    offsets = {name: InstructionLayout[name].offset for name in fields}
    assert all((word >> offsets[name]) & ((1 << InstructionLayout[name].width) - 1) == value
               for name, value in fields.items())


def test_defaults_and_range():
    assert decode(encode(opcode=Opcode.NOP))["dst"] == Dest.NONE.value
    with pytest.raises(ValueError, match=r"^field addr = 16384 does not fit 14 bits$"):
        encode(opcode=Opcode.NOP, addr=1 << 14)
