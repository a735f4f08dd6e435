"""hw.pe_ring.assembler: encoding of each instruction form and every error message."""

import pytest

from nnaccel.hw.pe_ring.assembler import AssemblerError, RingAssembler
from nnaccel.hw.pe_ring.isa import Dest, Index, Opcode, Source, decode, encode


def test_encodings():
    program = RingAssembler(registers=8, lm_depth=64).assemble("""
        mode sra            ; comment
        top: mac r1, x, m[5+b0], r1
        mov m[b1+7], in
        act r2, r1
        nop
        setl 1, 3
        bnz 1, top
        mul res, r3, 0
        halt""")
    fields = [decode(w) for w in program.words]
    assert fields[0] == decode(encode(opcode=Opcode.MODE, a=1))
    assert fields[1] == decode(encode(opcode=Opcode.MAC, dst=1, a=Source.X, b=Source.MEM, c=1, index=Index.B0, addr=5))
    assert fields[2] == decode(encode(opcode=Opcode.ADD, dst=Dest.MEM, a=Source.IN, b=Source.ZERO, index=Index.B1,
                                      addr=7))
    assert fields[3]["opcode"] == Opcode.ACT.value and fields[3]["dst"] == 2
    assert fields[6] == decode(encode(opcode=Opcode.BNZ, dst=1, addr=1))
    assert fields[7]["dst"] == Dest.RES.value and fields[8]["opcode"] == Opcode.HALT.value
    assert program.lines[1] == "top: mac r1, x, m[5+b0], r1"


@pytest.mark.parametrize("source, message", [
    ("frob r1, r2", r"line 1: unknown instruction 'frob' \('frob r1, r2'\)"),
    ("add r1, r2", r"line 1: add takes 3 operands, not 2 \('add r1, r2'\)"),
    ("nop\nadd r8, r1, r2", r"line 2: register 'r8' is out of range r0..r7 \('add r8, r1, r2'\)"),
    ("mov r1, m[64]", r"line 1: address 64 is out of range 0..63 \('mov r1, m\[64\]'\)"),
    ("mov r1, in", r"line 1: 'in' \(the left neighbour's ring register\) is only defined in SRA mode; "
                   r"switch with 'mode sra' first \('mov r1, in'\)"),
    ("mode sra\nmode simd\nadd x, in, r1", r"line 3: 'in' .* only defined in SRA mode"),
    ("act r1, r2\nadd r3, r1, r1", r"line 2: r1 is the result of 'act' on line 1, written one cycle later, so the "
                                   r"next instruction cannot use it; put another instruction between them"),
    ("act r1, r2\nmov r1, 0", r"line 2: r1 is the result of 'act' on line 1"),
    ("act x, r2", r"line 1: act writes a register, not 'x'"),
    ("add m[1], m[2], r1", r"line 1: an instruction reads or writes one memory address only"),
    ("bnz 0, nowhere", r"line 1: unknown label 'nowhere'"),
    ("a: nop\na: nop", r"line 2: label 'a' is already defined"),
    ("setl 2, 5", r"line 1: setl register number must be 0 or 1, not '2'"),
    ("setl 0, 0", r"line 1: a loop count must be at least 1"),
    ("setb 0, 99999", r"line 1: immediate '99999' is out of range 0..16383"),
    ("mode fast", r"line 1: mode must be 'sra' or 'simd', not 'fast'"),
    ("mov r1, m[3+b2]", r"line 1: bad memory operand 'm\[3\+b2\]'"),
    ("mov 0, r1", r"line 1: bad destination operand '0'"),
    ("mov r1, q", r"line 1: bad source operand 'q'"),
    ("mov r1, m[zz]", r"line 1: 'zz' is not a number"),
])
def test_errors(source, message):
    with pytest.raises(AssemblerError, match=f"^{message}"):
        RingAssembler(registers=8, lm_depth=64).assemble(source)


@pytest.mark.parametrize("kwargs, message", [
    ({"registers": 0}, "registers must be an integer from 1 to 12, not 0"),
    ({"registers": 13}, "registers must be an integer from 1 to 12, not 13"),
    ({"lm_depth": 1}, "lm_depth must be an integer from 2 to 16384, not 1"),
])
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        RingAssembler(**kwargs)
