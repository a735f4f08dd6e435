"""One processing element (PE) of the ring: fixed-point ALU, PWL activation, register file, local memory.

The PE is the execute stage of the ring's pipeline: the ring controller broadcasts the decoded
instruction (:mod:`hw.pe_ring.isa`) and the local-memory addresses, every PE executes it on its own data.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.fixed_point import AluOp, FixedPointALU
from nnaccel.hw.shared.parameters import check_int
from nnaccel.hw.pe_ring.pwl_activation import PWLActivation, PWLTable
from nnaccel.hw.pe_ring.isa import ADDR_BITS, MAX_REGISTERS, Dest, InstructionLayout, Opcode, Source

__all__ = ["ProcessingElement"]

_ALU_OPS = {Opcode.ADD: AluOp.ADD, Opcode.SUB: AluOp.SUB, Opcode.MUL: AluOp.MUL, Opcode.MAC: AluOp.MAC}


def check_lm_depth(lm_depth):
    if not isinstance(lm_depth, int) or lm_depth < 16 or lm_depth > (1 << ADDR_BITS) or lm_depth & (lm_depth - 1):
        raise ValueError(f"lm_depth must be a power of two from 16 to {1 << ADDR_BITS}, not {lm_depth!r}")


def check_registers(registers):
    check_int("registers", registers, 1, MAX_REGISTERS)


class ProcessingElement(wiring.Component):
    """A PE: ``registers`` registers, ``lm_depth`` words of local memory (LM), data in ``table.fmt``.

    Ports (the paper's four, plus the instruction bus):

    * instruction bus: ``opcode``, ``dst``, ``a``, ``b``, ``c`` (fields of :mod:`hw.pe_ring.isa`),
      ``valid`` (execute this cycle), ``sra`` (the ring moves this cycle), ``read_addr`` (LM address
      of the *next* instruction: the LM read is synchronous), ``write_addr`` (LM address of this one);
    * data in / data out: ``data_in`` (the left neighbour's ``data_out``), ``data_out`` (the ring
      register ``x``);
    * memory port: ``mem_we``, ``mem_wdata`` (write at ``write_addr``), ``mem_rdata`` (the word at the
      previous cycle's ``read_addr``), the host's access to the LM while the ring is idle;
    * result: ``result``, the register written by destination ``res``.

    Timing: every instruction executes in one cycle (operands read, result written at the clock
    edge), one instruction per cycle; ``act`` writes its register one cycle later (the PWL unit's
    latency). An LM word written by an instruction is read back by the next one (write-first read port).
    FPGA mapping: the LM is one block RAM (1 K x 16 bit: one M20K or two M10K; simple dual port),
    the PWL table another; the ALU multiplier and the PWL multiplier in DSP blocks (one each up to
    18-bit formats; at 32 bits Yosys' Cyclone V mapping uses about 4.7 DSP blocks per PE, see
    `nnaccel synth pe_ring`); registers and multiplexers ALMs.
    """

    def __init__(self, *, table, registers=8, lm_depth=1024):
        if not isinstance(table, PWLTable):
            raise TypeError(f"table must be a PWLTable, not {table!r}")
        check_registers(registers)
        check_lm_depth(lm_depth)
        self._table, self._registers, self._lm_depth = table, registers, lm_depth
        fmt = table.fmt
        address = range(lm_depth)
        super().__init__({
            "opcode": In(Opcode), **{field: In(InstructionLayout[field].shape) for field in ("dst", "a", "b", "c")},
            "valid": In(1), "sra": In(1), "read_addr": In(address), "write_addr": In(address),
            "data_in": In(fmt.shape), "data_out": Out(fmt.shape),
            "mem_we": In(1), "mem_wdata": In(fmt.shape), "mem_rdata": Out(fmt.shape),
            "result": Out(fmt.shape),
        })

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

    def elaborate(self, platform):
        m = Module()
        fmt = self.fmt
        m.submodules.alu = alu = FixedPointALU(fmt=fmt)
        m.submodules.pwl = pwl = PWLActivation(table=self._table)
        m.submodules.lm = lm = Memory(shape=fmt.shape, depth=self._lm_depth, init=[])
        lm_write = lm.write_port()
        lm_read = lm.read_port(transparent_for=(lm_write,))
        registers = [Signal(fmt.shape, name=f"r{i}") for i in range(self._registers)]
        ring = self.data_out
        m.d.comb += [lm_read.addr.eq(self.read_addr), self.mem_rdata.eq(lm_read.data)]

        # ---- Operands ----------------------------------------------------------------------
        def operand(select, name):
            value = Signal(fmt.shape, name=name)
            with m.Switch(select):
                for number, register in enumerate(registers):
                    with m.Case(number):
                        m.d.comb += value.eq(register)
                with m.Case(Source.X):
                    m.d.comb += value.eq(ring)
                with m.Case(Source.IN):
                    m.d.comb += value.eq(self.data_in)
                with m.Case(Source.MEM):
                    m.d.comb += value.eq(lm_read.data)
                with m.Default():       # Source.ZERO, and register numbers beyond the file
                    m.d.comb += value.eq(0)
            return value

        m.d.comb += [alu.a.eq(operand(self.a, "operand_a")), alu.b.eq(operand(self.b, "operand_b")),
                     alu.c.eq(operand(self.c, "operand_c"))]
        arithmetic, activation = Signal(), Signal()
        with m.Switch(self.opcode):
            for opcode, alu_op in _ALU_OPS.items():
                with m.Case(opcode):
                    m.d.comb += [alu.op.eq(alu_op), arithmetic.eq(self.valid)]
            with m.Case(Opcode.ACT):
                m.d.comb += activation.eq(self.valid)
            with m.Default():
                pass

        # ---- Write back the ALU result -----------------------------------------------------
        writes_ring = Signal()
        with m.If(arithmetic):
            with m.Switch(self.dst):
                for number, register in enumerate(registers):
                    with m.Case(number):
                        m.d.sync += register.eq(alu.y)
                with m.Case(Dest.MEM):
                    m.d.comb += [lm_write.en.eq(1), lm_write.data.eq(alu.y)]
                with m.Case(Dest.RES):
                    m.d.sync += self.result.eq(alu.y)
                with m.Case(Dest.X):
                    m.d.comb += writes_ring.eq(1)
                with m.Default():
                    pass
        with m.Elif(self.mem_we):
            m.d.comb += [lm_write.en.eq(1), lm_write.data.eq(self.mem_wdata)]
        m.d.comb += lm_write.addr.eq(self.write_addr)

        # ---- Ring register: written, or moved along in SRA mode ------------------------------
        with m.If(writes_ring):
            m.d.sync += ring.eq(alu.y)
        with m.Elif(self.valid & self.sra):
            m.d.sync += ring.eq(self.data_in)

        # ---- Activation: PWL latency 1, the register is written one cycle later -------------
        act_dst = Signal.like(self.dst)
        m.d.comb += [pwl.x.payload.eq(alu.a), pwl.x.valid.eq(activation)]
        m.d.sync += act_dst.eq(self.dst)
        with m.If(pwl.y.valid):
            with m.Switch(act_dst):
                for number, register in enumerate(registers):
                    with m.Case(number):
                        m.d.sync += register.eq(pwl.y.payload)
                with m.Default():
                    pass
        return m
