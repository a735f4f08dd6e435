"""The reconfigurable ring: ``pes`` PEs in a ring, run as a systolic ring array (SRA) or as SIMD.

A sequencer fetches the program (:mod:`hw.pe_ring.isa`, assembled by :mod:`hw.pe_ring.assembler`) and
broadcasts each PE instruction to every PE; the ``mode`` instruction switches between SRA (each PE
instruction also moves every ring register ``x`` to the right-hand neighbour, PE ``pes - 1`` feeding
PE 0) and SIMD (the ring registers stay), without any change to the hardware.

Pipeline: fetch (synchronous program memory read) -> issue (controller instructions execute here;
the effective LM address ``addr + B[index]`` goes to every PE's LM read port) -> execute (all PEs).
Every instruction, PE or controller, takes one cycle; a taken ``bnz`` costs one more (the fetched
instruction behind it is dropped). ``cycles`` counts the cycles ``busy`` was high:
``instructions executed + taken branches + 1`` (the first fetch).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.pe_ring.pe import ProcessingElement, check_lm_depth, check_registers
from nnaccel.hw.pe_ring.pwl_activation import PWLTable
from nnaccel.hw.pe_ring.isa import ADDR_BITS, PE_OPCODES, WORD_BITS, Index, InstructionLayout, Opcode
from nnaccel.hw.shared.parameters import check_int

__all__ = ["PERing"]

CYCLE_COUNTER_BITS = 32


class PERing(wiring.Component):
    """``pes`` PEs (4 to 64) with ``registers`` registers and ``lm_depth`` LM words each, data in ``table.fmt``.

    Host ports (used while ``busy`` is low, except ``start``):

    * program memory: ``prog_we``, ``prog_addr``, ``prog_data`` (one :data:`~hw.pe_ring.isa.WORD_BITS` word);
    * local memories: ``lm_pe`` selects a PE, ``lm_addr``, ``lm_we``, ``lm_wdata`` write one word;
      ``lm_rdata`` is the word at the previous cycle's ``lm_pe`` / ``lm_addr``; ``result`` is the
      result-port register of PE ``lm_pe``;
    * control: ``start`` (pulse: run from address 0 in SIMD mode), ``busy``, ``done`` (high from the
      cycle after ``halt`` until the next start), ``cycles``.

    FPGA mapping: per PE one LM block RAM, one PWL-table block RAM and the ALU and PWL multipliers in
    DSP blocks (two blocks up to 18-bit formats; 74.7 for 16 PEs of Q15.16 in the Yosys estimate); the program memory ``program_depth`` x 36 bits block RAM; sequencer in ALMs. The
    broadcast instruction bus and the PE-to-neighbour links are the only inter-PE wiring.
    """

    def __init__(self, *, pes=4, table, registers=8, lm_depth=1024, program_depth=1024):
        check_int("pes", pes, 4, 64)
        if not isinstance(table, PWLTable):
            raise TypeError(f"table must be a PWLTable, not {table!r}")
        check_registers(registers)
        check_lm_depth(lm_depth)
        if (not isinstance(program_depth, int) or program_depth < 2 or program_depth > (1 << ADDR_BITS)
                or program_depth & (program_depth - 1)):
            raise ValueError(f"program_depth must be a power of two from 2 to {1 << ADDR_BITS}, not {program_depth!r}")
        self._pes, self._table, self._registers = pes, table, registers
        self._lm_depth, self._program_depth = lm_depth, program_depth
        fmt = table.fmt
        super().__init__({
            "prog_we": In(1), "prog_addr": In(range(program_depth)), "prog_data": In(WORD_BITS),
            "lm_pe": In(range(pes)), "lm_addr": In(range(lm_depth)), "lm_we": In(1),
            "lm_wdata": In(fmt.shape), "lm_rdata": Out(fmt.shape), "result": Out(fmt.shape),
            "start": In(1), "busy": Out(1), "done": Out(1), "cycles": Out(CYCLE_COUNTER_BITS),
        })

    @property
    def pes(self):
        return self._pes

    @property
    def table(self):
        return self._table

    @property
    def fmt(self):
        return self._table.fmt

    @property
    def registers(self):
        return self._registers

    @property
    def lm_depth(self):
        return self._lm_depth

    @property
    def program_depth(self):
        return self._program_depth

    @property
    def module_name(self):
        """Verilog module name: every parameter that changes the hardware."""
        return (f"pe_ring_n{self.pes}_{self.fmt.name}_r{self.registers}_lm{self.lm_depth}_p{self.program_depth}_"
                f"{self.table.name}{self.table.segments}")

    @property
    def verilog_cache_key(self):
        """Generating this design's Verilog takes most of a minute; ``sim.verilog`` caches it under this key
        (every parameter, the PWL table's slopes and intercepts included)."""
        return f"{self.module_name}|{self._table!r}"

    def elaborate(self, platform):
        m = Module()
        pes = [ProcessingElement(table=self._table, registers=self._registers, lm_depth=self._lm_depth)
               for _ in range(self._pes)]
        for index, pe in enumerate(pes):
            m.submodules[f"pe{index}"] = pe
        address_bits = (self._lm_depth - 1).bit_length()

        # ---- Fetch ---------------------------------------------------------------------------
        m.submodules.program = program = Memory(shape=WORD_BITS, depth=self._program_depth, init=[])
        program_write, program_read = program.write_port(), program.read_port()
        m.d.comb += [program_write.en.eq(self.prog_we & ~self.busy), program_write.addr.eq(self.prog_addr),
                     program_write.data.eq(self.prog_data)]
        pc = Signal(range(self._program_depth))
        fetched = Signal()                       # program_read.data holds an instruction to issue
        m.d.comb += program_read.addr.eq(pc)

        # ---- Issue: controller instructions, effective address ----------------------------------
        issue = InstructionLayout(program_read.data)
        issuing = self.busy & fetched
        sra = Signal()
        bases = [Signal(ADDR_BITS, name=f"base{k}") for k in range(2)]
        loops = [Signal(ADDR_BITS, name=f"loop{k}") for k in range(2)]
        remainders = [Signal(ADDR_BITS, name=f"remaining{k}") for k in range(2)]
        m.d.comb += [remaining.eq(loop - 1) for loop, remaining in zip(loops, remainders)]
        effective, offset = Signal(ADDR_BITS), Signal(ADDR_BITS)
        with m.Switch(issue.index):
            with m.Case(Index.B0):
                m.d.comb += offset.eq(bases[0])
            with m.Case(Index.B1):
                m.d.comb += offset.eq(bases[1])
            with m.Default():
                m.d.comb += offset.eq(0)
        m.d.comb += effective.eq(issue.addr + offset)

        valid, execute_sra = Signal(), Signal()
        execute = Signal(InstructionLayout)
        write_addr = Signal(range(self._lm_depth))
        is_pe_op = Signal()
        with m.Switch(issue.opcode):
            with m.Case(*PE_OPCODES):
                m.d.comb += is_pe_op.eq(1)
            with m.Default():
                pass
        m.d.sync += [valid.eq(issuing & is_pe_op), execute.eq(issue), execute_sra.eq(sra),
                     write_addr.eq(effective[:address_bits])]

        with m.If(self.start & ~self.busy):
            m.d.sync += [self.busy.eq(1), self.done.eq(0), pc.eq(0), fetched.eq(0), sra.eq(0),
                         self.cycles.eq(0)]
        with m.Elif(self.busy):
            m.d.sync += [self.cycles.eq(self.cycles + 1), pc.eq(pc + 1), fetched.eq(1)]
            with m.If(fetched):
                with m.Switch(issue.opcode):
                    with m.Case(Opcode.MODE):
                        m.d.sync += sra.eq(issue.a[0])
                    with m.Case(Opcode.HALT):
                        m.d.sync += [self.busy.eq(0), self.done.eq(1), fetched.eq(0)]
                    with m.Case(Opcode.SETB):
                        for k, base in enumerate(bases):
                            with m.If(issue.dst[0] == k):
                                m.d.sync += base.eq(issue.addr)
                    with m.Case(Opcode.ADDB):
                        for k, base in enumerate(bases):
                            with m.If(issue.dst[0] == k):
                                m.d.sync += base.eq(base + issue.addr)
                    with m.Case(Opcode.SETL):
                        for k, loop in enumerate(loops):
                            with m.If(issue.dst[0] == k):
                                m.d.sync += loop.eq(issue.addr)
                    with m.Case(Opcode.BNZ):
                        for k, (loop, remaining) in enumerate(zip(loops, remainders)):
                            with m.If(issue.dst[0] == k):
                                m.d.sync += loop.eq(remaining)
                                with m.If(remaining.any()):
                                    m.d.sync += [pc.eq(issue.addr), fetched.eq(0)]
                    with m.Default():
                        pass

        # ---- Execute: broadcast to the PEs -------------------------------------------------------
        host_selected = Signal(range(self._pes))
        m.d.sync += host_selected.eq(self.lm_pe)
        read_addr = Mux(self.busy, effective[:address_bits], self.lm_addr)
        host_write = [Signal(name=f"host_write{index}") for index in range(self._pes)]
        with m.Switch(self.lm_pe):
            for index, pe in enumerate(pes):
                with m.Case(index):
                    m.d.comb += [host_write[index].eq(~self.busy & self.lm_we), self.result.eq(pe.result)]
            with m.Default():
                pass
        with m.Switch(host_selected):
            for index, pe in enumerate(pes):
                with m.Case(index):
                    m.d.comb += self.lm_rdata.eq(pe.mem_rdata)
            with m.Default():
                pass
        for index, pe in enumerate(pes):
            m.d.comb += [
                pe.opcode.eq(execute.opcode), pe.dst.eq(execute.dst), pe.a.eq(execute.a), pe.b.eq(execute.b),
                pe.c.eq(execute.c), pe.valid.eq(valid), pe.sra.eq(execute_sra),
                pe.read_addr.eq(read_addr), pe.write_addr.eq(Mux(self.busy, write_addr, self.lm_addr)),
                pe.mem_we.eq(host_write[index]), pe.mem_wdata.eq(self.lm_wdata),
                pe.data_in.eq(pes[index - 1].data_out),
            ]
        return m
