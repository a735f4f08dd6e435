"""Assembler for the PE ring: readable programs -> instruction words (:mod:`hw.pe_ring.isa`).

Syntax, one instruction per line, ``;`` starts a comment, ``name:`` defines a label::

    mode sra | simd              switch the ring (PE instructions that follow run in that mode)
    add  dst, a, b               dst = a + b      (sub, mul the same)
    mac  dst, a, b, c            dst = c + a * b
    mov  dst, a                  dst = a + 0
    act  rN, a                   rN = pwl(a), ready one instruction later
    nop | halt
    setb k, imm | addb k, imm    address base register Bk (k = 0, 1)
    setl k, imm                  loop counter Lk
    bnz  k, label                Lk -= 1; branch to label while Lk != 0

Operands: ``r0``..``r11`` (up to the ring's register count), ``x``, ``in``, ``0``, ``res`` (destination
only) and memory ``m[addr]``, ``m[addr+b0]``, ``m[b1]``. Numbers are decimal or ``0x`` hex.
Every problem is an :class:`AssemblerError` naming the line: unknown instruction, wrong operand
count, register or address out of range, ``in`` used in SIMD mode (the mode is tracked in program
order, from SIMD at the start), an ACT result used or overwritten by the very next instruction,
two different memory addresses in one instruction, unknown or repeated labels.
"""

import re
from dataclasses import dataclass

from nnaccel.hw.pe_ring.config import check_registers
from nnaccel.hw.pe_ring.isa import ADDR_BITS, MAX_REGISTERS, Dest, Index, Opcode, Source, encode
from nnaccel.hw.shared.parameters import check_int

__all__ = ["AssemblerError", "Program", "RingAssembler"]

_ALU = {"add": Opcode.ADD, "sub": Opcode.SUB, "mul": Opcode.MUL}
_CONTROL_IMMEDIATE = {"setb": Opcode.SETB, "addb": Opcode.ADDB, "setl": Opcode.SETL}
_MEMORY = re.compile(r"^m\[\s*(?:(?P<a1>\w+)\s*(?:\+\s*(?P<b1>b[01]))?|(?P<b2>b[01])\s*(?:\+\s*(?P<a2>\w+))?)\s*\]$")
_LABEL = re.compile(r"^[A-Za-z_][\w.]*$")


class AssemblerError(ValueError):
    """A program the ring cannot run; the message starts with ``line N:`` and quotes the line."""


@dataclass(frozen=True)
class Program:
    words: tuple
    lines: tuple            # the source line of each word

    def __len__(self):
        return len(self.words)


@dataclass(frozen=True)
class _Operand:
    code: int
    addr: int = None
    index: Index = Index.NONE


class RingAssembler:
    """Assembles programs for a ring with ``registers`` registers per PE and ``lm_depth`` words of local memory."""

    def __init__(self, *, registers=8, lm_depth=1024):
        check_registers(registers)
        check_int("lm_depth", lm_depth, 2, 1 << ADDR_BITS)
        self._registers = registers
        self._lm_depth = lm_depth

    @property
    def registers(self):
        return self._registers

    @property
    def lm_depth(self):
        return self._lm_depth

    def assemble(self, text):
        """A :class:`Program` for the program ``text``; raises :class:`AssemblerError`."""
        statements, labels = [], {}
        for number, raw in enumerate(text.splitlines(), start=1):
            line = raw.split(";", 1)[0].strip()
            while line and ":" in line.split()[0]:
                label, line = (part.strip() for part in line.split(":", 1))
                if not _LABEL.match(label):
                    raise AssemblerError(f"line {number}: {label!r} is not a valid label ({raw.strip()!r})")
                if label in labels:
                    raise AssemblerError(f"line {number}: label {label!r} is already defined")
                labels[label] = len(statements)
            if line:
                statements.append((number, raw.strip(), line))
        words, lines = [], []
        mode_sra = False
        previous_act = None          # (line number, register) of an ACT just before
        for number, raw, line in statements:
            mnemonic, _, rest = line.partition(" ")
            mnemonic = mnemonic.lower()
            operands = [o.strip() for o in rest.split(",")] if rest.strip() else []
            try:
                fields, reads, writes = self._instruction(mnemonic, operands, labels, mode_sra)
            except AssemblerError as error:
                raise AssemblerError(f"line {number}: {error} ({raw!r})") from None
            if previous_act is not None:
                act_line, register = previous_act
                if register in reads or register in writes:
                    raise AssemblerError(
                        f"line {number}: r{register} is the result of 'act' on line {act_line}, written one cycle "
                        f"later, so the next instruction cannot use it; put another instruction between them "
                        f"({raw!r})")
            previous_act = (number, fields["dst"]) if fields["opcode"] == Opcode.ACT else None
            if fields["opcode"] == Opcode.MODE:
                mode_sra = bool(fields["a"])
            words.append(encode(**fields))
            lines.append(raw)
        return Program(words=tuple(words), lines=tuple(lines))

    # ---- one instruction ---------------------------------------------------------------------

    def _instruction(self, mnemonic, operands, labels, mode_sra):
        """(fields, registers read, registers written)."""
        if mnemonic in ("nop", "halt"):
            self._count(mnemonic, operands, 0)
            return {"opcode": Opcode.NOP if mnemonic == "nop" else Opcode.HALT}, set(), set()
        if mnemonic == "mode":
            self._count(mnemonic, operands, 1)
            if operands[0].lower() not in ("sra", "simd"):
                raise AssemblerError(f"mode must be 'sra' or 'simd', not {operands[0]!r}")
            return {"opcode": Opcode.MODE, "a": int(operands[0].lower() == "sra")}, set(), set()
        if mnemonic in _CONTROL_IMMEDIATE or mnemonic == "bnz":
            self._count(mnemonic, operands, 2)
            k = self._number(operands[0])
            if k not in (0, 1):
                raise AssemblerError(f"{mnemonic} register number must be 0 or 1, not {operands[0]!r}")
            if mnemonic == "bnz":
                if operands[1] not in labels:
                    raise AssemblerError(f"unknown label {operands[1]!r}")
                return {"opcode": Opcode.BNZ, "dst": k, "addr": labels[operands[1]]}, set(), set()
            value = self._number(operands[1])
            if not 0 <= value < (1 << ADDR_BITS):
                raise AssemblerError(f"immediate {operands[1]!r} is out of range 0..{(1 << ADDR_BITS) - 1}")
            if mnemonic == "setl" and value == 0:
                raise AssemblerError("a loop count must be at least 1")
            return {"opcode": _CONTROL_IMMEDIATE[mnemonic], "dst": k, "addr": value}, set(), set()

        if mnemonic in _ALU or mnemonic == "mac":
            expected = 4 if mnemonic == "mac" else 3
            opcode = Opcode.MAC if mnemonic == "mac" else _ALU[mnemonic]
        elif mnemonic == "mov":
            expected, opcode = 2, Opcode.ADD
        elif mnemonic == "act":
            expected, opcode = 2, Opcode.ACT
        else:
            raise AssemblerError(f"unknown instruction {mnemonic!r}")
        self._count(mnemonic, operands, expected)
        dst = self._destination(operands[0])
        sources = [self._source(o, mode_sra) for o in operands[1:]]
        if opcode == Opcode.ACT and dst.code >= MAX_REGISTERS:
            raise AssemblerError(f"act writes a register, not {operands[0]!r}")
        addresses = {(o.addr, o.index) for o in [dst, *sources] if o.addr is not None}
        if len(addresses) > 1:
            raise AssemblerError("an instruction reads or writes one memory address only")
        addr, index = next(iter(addresses)) if addresses else (0, Index.NONE)
        fields = {"opcode": opcode, "dst": dst.code, "index": index, "addr": addr}
        for name, source in zip("abc", sources):
            fields[name] = source.code
        reads = {s.code for s in sources if s.code < MAX_REGISTERS}
        writes = {dst.code} if dst.code < MAX_REGISTERS else set()
        return fields, reads, writes

    @staticmethod
    def _count(mnemonic, operands, expected):
        if len(operands) != expected:
            raise AssemblerError(f"{mnemonic} takes {expected} operand{'s' if expected != 1 else ''}, "
                                 f"not {len(operands)}")

    @staticmethod
    def _number(text):
        try:
            return int(text, 0)
        except ValueError:
            raise AssemblerError(f"{text!r} is not a number") from None

    def _register(self, text):
        number = self._number(text[1:])
        if not 0 <= number < self._registers:
            raise AssemblerError(f"register {text!r} is out of range r0..r{self._registers - 1}")
        return number

    def _memory(self, text):
        match = _MEMORY.match(text.replace(" ", ""))
        if not match:
            raise AssemblerError(f"bad memory operand {text!r}: write m[addr], m[addr+b0] or m[b1]")
        address_text = match.group("a1") or match.group("a2")
        base = match.group("b1") or match.group("b2")
        addr = self._number(address_text) if address_text else 0
        if not 0 <= addr < self._lm_depth:
            raise AssemblerError(f"address {addr} is out of range 0..{self._lm_depth - 1}")
        return _Operand(Source.MEM.value, addr, {None: Index.NONE, "b0": Index.B0, "b1": Index.B1}[base])

    def _source(self, text, mode_sra):
        lowered = text.lower()
        if lowered == "in":
            if not mode_sra:
                raise AssemblerError("'in' (the left neighbour's ring register) is only defined in SRA mode; "
                                     "switch with 'mode sra' first")
            return _Operand(Source.IN.value)
        if lowered in ("x", "0"):
            return _Operand(Source.X.value if lowered == "x" else Source.ZERO.value)
        if lowered.startswith("m["):
            return self._memory(lowered)
        if re.fullmatch(r"r\d+", lowered):
            return _Operand(self._register(lowered))
        raise AssemblerError(f"bad source operand {text!r}")

    def _destination(self, text):
        lowered = text.lower()
        named = {"x": Dest.X, "res": Dest.RES}
        if lowered in named:
            return _Operand(named[lowered].value)
        if lowered.startswith("m["):
            memory = self._memory(lowered)
            return _Operand(Dest.MEM.value, memory.addr, memory.index)
        if re.fullmatch(r"r\d+", lowered):
            return _Operand(self._register(lowered))
        raise AssemblerError(f"bad destination operand {text!r}")
