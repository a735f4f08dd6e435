"""One processing element (PE) of the ring: fixed-point ALU, PWL activation, register file, local memory.

The PE is the execute stage of the ring's pipeline: the ring controller broadcasts the decoded
instruction (:mod:`hw.pe_ring.isa`) and the local-memory addresses, every PE executes it on its own data.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.isa import Dest, Opcode, Source
from nnaccel.hw.pe_ring.pwl_activation import PWLActivation
from nnaccel.hw.pe_ring.signatures import IssueSignature, RingLinkSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.fixed_point import AluOp, FixedPointALU

__all__ = ["ProcessingElement"]

_ALU_OPS = {Opcode.ADD: AluOp.ADD, Opcode.SUB: AluOp.SUB, Opcode.MUL: AluOp.MUL, Opcode.MAC: AluOp.MAC}


class ProcessingElement(wiring.Component):
    """A PE of a ring of :class:`~hw.pe_ring.config.RingConfig` ``config``: ``config.registers`` registers,
    ``config.lm_depth`` words of local memory (LM), data in ``config.fmt``.

    Ports (the paper's four, plus the instruction bus):

    * ``issue``: In(:class:`~hw.pe_ring.signatures.IssueSignature`), the sequencer's broadcast: the instruction,
      ``valid`` (execute it this cycle), ``sra`` (the ring moves this cycle), ``read_address`` (LM address of the
      *next* instruction: the LM read is synchronous), ``write_address`` (LM address of this one), ``busy``;
    * data in / data out: ``left`` (In :class:`~hw.pe_ring.signatures.RingLinkSignature`, the left neighbour's
      ring register), ``right`` (Out, this PE's ring register ``x``);
    * ``memory``: In(:class:`~hw.shared.dual_port_buffer.BufferPortSignature` of ``fmt.width`` x ``lm_depth``),
      the host's access to the LM while ``issue.busy`` is low: a write at ``address``, or ``read_data`` the word
      at the ``address`` of the previous cycle's ``read_enable``;
    * ``result``: Out(fmt.shape), the register written by destination ``res``.

    Timing: every instruction executes in one cycle (operands read, result written at the clock
    edge), one instruction per cycle; ``act`` writes its register one cycle later (the PWL unit's
    latency). An LM word written by an instruction is read back by the next one (write-first read port).
    FPGA mapping: the LM is one block RAM (1 K x 16 bit: one M20K or two M10K; simple dual port),
    the PWL table another; the ALU multiplier and the PWL multiplier in DSP blocks (one each up to
    18-bit formats; at 32 bits Yosys' Cyclone V mapping uses about 4.7 DSP blocks per PE, see
    `nnaccel synth pe_ring`); registers and multiplexers ALMs.
    """

    def __init__(self, *, config):
        if not isinstance(config, RingConfig):
            raise TypeError(f"config must be a RingConfig, not {config!r}")
        self._config = config
        fmt = config.fmt
        super().__init__({
            "issue": In(IssueSignature(lm_depth=config.lm_depth)),
            "left": In(RingLinkSignature(fmt.shape)), "right": Out(RingLinkSignature(fmt.shape)),
            "memory": In(BufferPortSignature(width=fmt.width, depth=config.lm_depth)),
            "result": Out(fmt.shape),
        })

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config, issue, host = self._config, self.issue, self.memory
        fmt = config.fmt
        instruction = issue.instruction
        m.submodules.alu = alu = FixedPointALU(fmt=fmt)
        m.submodules.pwl = pwl = PWLActivation(table=config.table)
        m.submodules.lm = lm = Memory(shape=fmt.shape, depth=config.lm_depth, init=[])
        lm_write = lm.write_port()
        lm_read = lm.read_port(transparent_for=(lm_write,))
        registers = [Signal(fmt.shape, name=f"r{i}") for i in range(config.registers)]
        ring = self.right.data

        # ---- Local memory: the instruction stream's while a program runs, the host's otherwise --------------
        m.d.comb += [lm_read.addr.eq(Mux(issue.busy, issue.read_address, host.address)),
                     lm_read.en.eq(issue.busy | host.read_enable), host.read_data.eq(lm_read.data),
                     lm_write.addr.eq(Mux(issue.busy, issue.write_address, host.address))]

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
                    m.d.comb += value.eq(self.left.data)
                with m.Case(Source.MEM):
                    m.d.comb += value.eq(lm_read.data)
                with m.Default():       # Source.ZERO, and register numbers beyond the file
                    m.d.comb += value.eq(0)
            return value

        m.d.comb += [alu.a.eq(operand(instruction.a, "operand_a")), alu.b.eq(operand(instruction.b, "operand_b")),
                     alu.c.eq(operand(instruction.c, "operand_c"))]
        arithmetic, activation = Signal(), Signal()
        with m.Switch(instruction.opcode):
            for opcode, alu_op in _ALU_OPS.items():
                with m.Case(opcode):
                    m.d.comb += [alu.op.eq(alu_op), arithmetic.eq(issue.valid)]
            with m.Case(Opcode.ACT):
                m.d.comb += activation.eq(issue.valid)
            with m.Default():
                pass

        # ---- Write back the ALU result -----------------------------------------------------
        writes_ring = Signal()
        with m.If(arithmetic):
            with m.Switch(instruction.dst):
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
        with m.Elif(host.write_enable):
            m.d.comb += [lm_write.en.eq(1), lm_write.data.eq(host.write_data)]

        # ---- Ring register: written, or moved along in SRA mode ------------------------------
        with m.If(writes_ring):
            m.d.sync += ring.eq(alu.y)
        with m.Elif(issue.valid & issue.sra):
            m.d.sync += ring.eq(self.left.data)

        # ---- Activation: PWL latency 1, the register is written one cycle later -------------
        act_dst = Signal.like(instruction.dst)
        # The PWL unit's input stream is operand a, valid when an `act` executes (a decode, not a plain connection).
        m.d.comb += [pwl.x.payload.eq(alu.a), pwl.x.valid.eq(activation)]
        m.d.sync += act_dst.eq(instruction.dst)
        with m.If(pwl.y.valid):
            with m.Switch(act_dst):
                for number, register in enumerate(registers):
                    with m.Case(number):
                        m.d.sync += register.eq(pwl.y.payload)
                with m.Default():
                    pass
        return m
