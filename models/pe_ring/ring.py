"""Instruction-set model of :class:`hw.pe_ring.ring.PERing`: runs assembled programs on NumPy state, bit for bit.

All PEs are one NumPy vector per register, so a program step is a handful of array operations.
The cycle count follows the hardware: ``instructions executed + taken branches + 1``.
"""

from dataclasses import dataclass, field

import numpy as np

from nnaccel.hw.pe_ring.isa import MAX_REGISTERS, Dest, Index, Opcode, Source, decode
from nnaccel.models.shared import fixed_point as fx
from nnaccel.models.pe_ring import pwl

__all__ = ["RingState", "RingModel"]

_ADD, _SUB, _MUL, _MAC, _ACT = (Opcode.ADD.value, Opcode.SUB.value, Opcode.MUL.value, Opcode.MAC.value,
                                Opcode.ACT.value)
_MODE, _SETB, _ADDB, _SETL, _BNZ, _HALT = (Opcode.MODE.value, Opcode.SETB.value, Opcode.ADDB.value,
                                          Opcode.SETL.value, Opcode.BNZ.value, Opcode.HALT.value)
_SOURCE_X, _SOURCE_IN, _SOURCE_MEM = Source.X.value, Source.IN.value, Source.MEM.value
_DEST_X, _DEST_MEM, _DEST_RES = Dest.X.value, Dest.MEM.value, Dest.RES.value
_INDEX = {Index.NONE.value: None, Index.B0.value: 0, Index.B1.value: 1}


@dataclass
class RingState:
    """Architectural state: ``registers[r, pe]``, ``ring[pe]`` (x), ``result[pe]``, ``lm[pe, addr]`` (raw ints)."""
    registers: np.ndarray
    ring: np.ndarray
    result: np.ndarray
    lm: np.ndarray
    cycles: int = 0
    instructions: int = 0
    trace: list = field(default_factory=list)


class RingModel:
    """The ring's behaviour for ``pes`` PEs, ``registers`` registers, ``lm_depth`` LM words and a PWL ``table``."""

    def __init__(self, *, pes, table, registers=8, lm_depth=1024):
        self.pes, self.table, self.registers, self.lm_depth = pes, table, registers, lm_depth
        self.fmt = table.fmt
        self._left = (np.arange(pes) - 1) % pes          # PE p's data-in comes from PE p - 1

    def initial_state(self, lm=None):
        zeros = np.zeros(self.pes, dtype=np.int64)
        memory = np.zeros((self.pes, self.lm_depth), dtype=np.int64) if lm is None else np.array(lm, dtype=np.int64)
        return RingState(registers=np.zeros((self.registers, self.pes), dtype=np.int64), ring=zeros.copy(),
                         result=zeros.copy(), lm=memory)

    def run(self, words, state=None, *, max_cycles=10_000_000):
        """Execute ``words`` from address 0 until ``halt``; returns the final :class:`RingState`."""
        state = self.initial_state() if state is None else state
        pes = np.arange(self.pes)
        decoded = [decode(word) for word in words]
        bases, loops = [0, 0], [0, 0]
        sra = False
        pending_act = None                  # (register, values) written at the end of the next cycle
        pc, cycles = 0, 1                   # the first fetch
        while True:
            if cycles > max_cycles:
                raise RuntimeError(f"program did not halt within {max_cycles} cycles")
            fields = decoded[pc]
            opcode = fields["opcode"]
            cycles += 1
            state.instructions += 1
            pc += 1
            act_now, pending_act = pending_act, None
            if opcode == _HALT:
                if act_now is not None:
                    state.registers[act_now[0]] = act_now[1]
                break
            if opcode == _MODE:
                sra = bool(fields["a"] & 1)
            elif opcode == _SETB:
                bases[fields["dst"] & 1] = fields["addr"]
            elif opcode == _ADDB:
                k = fields["dst"] & 1
                bases[k] = (bases[k] + fields["addr"]) & 0x3FFF
            elif opcode == _SETL:
                loops[fields["dst"] & 1] = fields["addr"]
            elif opcode == _BNZ:
                k = fields["dst"] & 1
                loops[k] = (loops[k] - 1) & 0x3FFF
                if loops[k] != 0:
                    pc = fields["addr"]
                    cycles += 1
            else:
                address = self._address(fields, bases)
                if opcode == _ACT:
                    operand = self._operand(state, fields["a"], address)
                    pending_act = (fields["dst"], pwl.evaluate(self.table, operand))
                self._execute(state, fields, opcode, sra, address, pes)
            if act_now is not None:
                state.registers[act_now[0]] = act_now[1]
        state.cycles = cycles
        return state

    def _address(self, fields, bases):
        base = _INDEX[fields["index"]]
        offset = 0 if base is None else bases[base]
        return ((fields["addr"] + offset) & 0x3FFF) % self.lm_depth

    def _operand(self, state, code, address):
        if code < MAX_REGISTERS:
            return state.registers[code].copy()
        if code == _SOURCE_X:
            return state.ring.copy()
        if code == _SOURCE_IN:
            return state.ring[self._left]
        if code == _SOURCE_MEM:
            return state.lm[:, address].copy()
        return np.zeros(self.pes, dtype=np.int64)

    def _execute(self, state, fields, opcode, sra, address, pes):
        fmt = self.fmt
        dst = fields["dst"]
        neighbour = state.ring[self._left] if sra else None
        writes_ring = False
        if opcode in (_ADD, _SUB, _MUL, _MAC):
            a = self._operand(state, fields["a"], address)
            b = self._operand(state, fields["b"], address)
            if opcode == _ADD:
                y = fx.add(a, b, fmt)
            elif opcode == _SUB:
                y = fx.sub(a, b, fmt)
            elif opcode == _MUL:
                y = fx.mul(a, b, fmt)
            else:
                y = fx.mac(self._operand(state, fields["c"], address), a, b, fmt)
            y = np.asarray(y, dtype=np.int64)
            if dst < self.registers:
                state.registers[dst] = y
            elif dst == _DEST_MEM:
                state.lm[pes, address] = y
            elif dst == _DEST_RES:
                state.result = y
            elif dst == _DEST_X:
                state.ring = y
                writes_ring = True
        if sra and not writes_ring:
            state.ring = neighbour
