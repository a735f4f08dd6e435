"""Instruction set of the PE ring (:class:`hw.pe_ring.ring.PERing`): encoding shared by hardware, assembler and model.

One instruction is a 36-bit word, fields from the least significant bit::

    bits  0-3   opcode   (Opcode)
    bits  4-7   dst      destination (Dest) -- or, for controller ops, a register number k
    bits  8-11  a        first source (Source)
    bits 12-15  b        second source (Source)
    bits 16-19  c        third source (Source, MAC addend)
    bits 20-21  index    0: address as written, 1: address + B0, 2: address + B1
    bits 22-35  addr     14-bit local-memory address, or the immediate of a controller op

PE operations (every PE executes the same one; one cycle each, throughput one per cycle):

========  ==========================  =====================================================
opcode    effect                      notes
========  ==========================  =====================================================
NOP       nothing                     the ring still shifts in SRA mode
ADD       dst = a + b                 saturating
SUB       dst = a - b                 saturating
MUL       dst = a * b                 rounded half up, saturating
MAC       dst = c + a * b             product rounded and saturated, then saturating add
ACT       dst = pwl(a)                dst must be a register; written one cycle later
========  ==========================  =====================================================

Sources: registers ``r0``.. ``r11``, ``x`` (this PE's ring register, its data-out port), ``in`` (the
left neighbour's ring register, the data-in port; SRA mode only), ``m`` (the local memory word at the
instruction's address), ``0``. Destinations: registers, ``x``, ``m``, ``res`` (the result port
register), or none. In SRA mode every PE instruction also moves the ring one step (``x <= in``)
unless it writes ``x``; in SIMD mode ``x`` changes only when written.

Controller operations (executed by the sequencer, the PEs see a bubble): MODE (a = 0 SIMD,
1 SRA), SETB k, imm / ADDB k, imm (address base registers B0, B1), SETL k, imm (loop counters
L0, L1), BNZ k, target (decrement Lk, branch if not zero; a taken branch costs one extra cycle),
HALT.
"""

from amaranth.lib import data, enum

__all__ = ["WORD_BITS", "ADDR_BITS", "MAX_REGISTERS", "Opcode", "Source", "Dest", "Index", "InstructionLayout",
           "PE_OPCODES", "encode", "decode"]

ADDR_BITS = 14
MAX_REGISTERS = 12


class Opcode(enum.Enum, shape=4):
    NOP = 0
    ADD = 1
    SUB = 2
    MUL = 3
    MAC = 4
    ACT = 5
    MODE = 8
    SETB = 9
    ADDB = 10
    SETL = 11
    BNZ = 12
    HALT = 15


PE_OPCODES = (Opcode.NOP, Opcode.ADD, Opcode.SUB, Opcode.MUL, Opcode.MAC, Opcode.ACT)


class Source(enum.Enum, shape=4):
    """Operand codes 0-11 are registers; the rest are named here."""
    X = 12
    IN = 13
    MEM = 14
    ZERO = 15


class Dest(enum.Enum, shape=4):
    """Destination codes 0-11 are registers; the rest are named here."""
    X = 12
    MEM = 13
    RES = 14
    NONE = 15


class Index(enum.Enum, shape=2):
    NONE = 0
    B0 = 1
    B1 = 2


InstructionLayout = data.StructLayout({
    "opcode": 4, "dst": 4, "a": 4, "b": 4, "c": 4, "index": 2, "addr": ADDR_BITS,
})
WORD_BITS = InstructionLayout.size

_FIELDS = (("opcode", 0, 4), ("dst", 4, 4), ("a", 8, 4), ("b", 12, 4), ("c", 16, 4), ("index", 20, 2),
           ("addr", 22, ADDR_BITS))


def encode(*, opcode, dst=Dest.NONE.value, a=Source.ZERO.value, b=Source.ZERO.value, c=Source.ZERO.value,
           index=Index.NONE.value, addr=0):
    """The instruction word (int) for integer field values (enums accepted)."""
    values = {"opcode": opcode, "dst": dst, "a": a, "b": b, "c": c, "index": index, "addr": addr}
    word = 0
    for name, low, width in _FIELDS:
        value = values[name].value if isinstance(values[name], enum.Enum) else values[name]
        if not 0 <= value < (1 << width):
            raise ValueError(f"field {name} = {value!r} does not fit {width} bits")
        word |= value << low
    return word


def decode(word):
    """Field name -> integer value of an instruction word."""
    return {name: (int(word) >> low) & ((1 << width) - 1) for name, low, width in _FIELDS}
