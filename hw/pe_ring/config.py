"""Configuration of the PE ring (SPEC section 2): one object from which every size of the ring derives.

The hardware (:class:`hw.pe_ring.ring.PERing` and its blocks), the testbench and the job read the same object, so
they never disagree on a depth, a width or a register count.  The assembler (:mod:`hw.pe_ring.assembler`) checks
its register count with :func:`check_registers`, the one place that knows the register file's limits.
"""

from dataclasses import dataclass

from nnaccel.hw.pe_ring.isa import ADDR_BITS, MAX_REGISTERS, WORD_BITS
from nnaccel.hw.pe_ring.pwl_activation import PWLTable
from nnaccel.hw.shared.host_control import COUNTER_BITS
from nnaccel.hw.shared.parameters import check_int, check_power_of_two

__all__ = ["RingConfig", "check_registers"]


def check_registers(registers):
    """``registers`` if a register file of that many registers fits the instruction set's operand codes."""
    return check_int("registers", registers, 1, MAX_REGISTERS)


@dataclass(frozen=True)
class RingConfig:
    """Sizes of a PE ring instance.

    table
        The PWL activation table (:class:`~hw.pe_ring.pwl_activation.PWLTable`); its format ``table.fmt`` is the
        data format of every register, local-memory word and ring link.
    pes
        Processing elements in the ring (4 to 64).
    registers
        Registers per PE (1 to 12: the operand codes 0-11 of :mod:`hw.pe_ring.isa`).
    lm_depth
        Words of each PE's local memory (LM), a power of two from 16 to ``2**ADDR_BITS``.
    program_depth
        Words of the program memory, a power of two from 2 to ``2**ADDR_BITS``.
    max_programs
        Entries of the program table: START ``n`` runs the programs whose entry addresses the table's entries
        ``0 .. n-1`` hold, one after another, each with its own counters (2 to 16).
    """

    table: PWLTable
    pes: int = 4
    registers: int = 8
    lm_depth: int = 1024
    program_depth: int = 1024
    max_programs: int = 4

    def __post_init__(self):
        if not isinstance(self.table, PWLTable):
            raise TypeError(f"table must be a PWLTable, not {self.table!r}")
        check_int("pes", self.pes, 4, 64)
        check_registers(self.registers)
        check_power_of_two("lm_depth", self.lm_depth, 16, 1 << ADDR_BITS)
        check_power_of_two("program_depth", self.program_depth, 2, 1 << ADDR_BITS)
        check_int("max_programs", self.max_programs, 2, 16)

    @property
    def fmt(self):
        """The data format (a :class:`~hw.shared.fixed_point.QFormat`)."""
        return self.table.fmt

    @property
    def lm_address_bits(self):
        return (self.lm_depth - 1).bit_length()

    @property
    def pe_bits(self):
        """Bits of a PE number (the host addresses PE ``p``'s LM word ``a`` at ``p * lm_depth + a``)."""
        return (self.pes - 1).bit_length()

    @property
    def host_data_bits(self):
        """The host port's width: the widest of an instruction word, a data word and a counter (40 bits)."""
        return max(WORD_BITS, self.fmt.width, COUNTER_BITS)

    @property
    def name(self):
        """Every parameter that changes the hardware (the Verilog module name)."""
        return (f"pe_ring_n{self.pes}_{self.fmt.name}_r{self.registers}_lm{self.lm_depth}_p{self.program_depth}_"
                f"t{self.max_programs}_{self.table.name}{self.table.segments}")

    @property
    def module_name(self):
        return self.name
