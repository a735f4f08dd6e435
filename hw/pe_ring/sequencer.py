"""The PE ring's sequencer: program memory, fetch, the controller instructions, issue to every PE."""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.isa import ADDR_BITS, PE_OPCODES, WORD_BITS, Index, InstructionLayout, Opcode
from nnaccel.hw.pe_ring.signatures import IssueSignature
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.run_control import RunSignature

__all__ = ["RingSequencer", "program_entry_layout"]


def program_entry_layout(config):
    """An entry of the ring's program table (the descriptor of :class:`~hw.shared.host_control.HostControl`): the
    program memory address a program starts at."""
    return data.StructLayout({"entry": range(config.program_depth)})


class RingSequencer(wiring.Component):
    """Fetches the programs of a ring of :class:`~hw.pe_ring.config.RingConfig` ``config`` and issues each PE
    instruction to every PE; executes the controller instructions itself.

    Ports:

    * ``run``: In(:class:`~hw.shared.run_control.RunSignature` of ``config.max_programs`` entries of
      :func:`program_entry_layout`): ``start`` with ``layer_count`` = n (n >= 1) runs the programs at the entry
      addresses of table entries ``0 .. n-1`` one after another, each to its ``halt`` and each starting in SIMD
      mode; ``layer_index`` is the program running; ``busy``; ``done`` is high from the cycle after the last
      ``halt`` until the next start; ``events``: ``issue`` (a PE instruction issues), ``stall`` (a busy cycle
      without one: a fetch bubble, a controller instruction), ``draining`` (never: nothing is in flight at ``halt``);
    * ``program``: In(:class:`~hw.shared.dual_port_buffer.BufferPortSignature` of ``WORD_BITS`` x
      ``program_depth``), the host's access to the program memory while the ring is idle;
    * ``issue``: Out(:class:`~hw.pe_ring.signatures.IssueSignature`), the broadcast to the PEs.

    Timing (pipeline fetch -> issue -> execute): fetch is the synchronous program-memory read; at issue the
    controller instructions execute and the effective LM address ``addr + B[index]`` goes to every PE's LM read
    port; a PE instruction executes in the PEs on the next cycle.  Every instruction, PE or controller, takes one
    cycle; a taken ``bnz`` one more (the instruction fetched behind it is dropped); a program takes ``instructions
    executed + taken branches + 1`` (its first fetch) cycles.
    FPGA mapping: the program memory ``program_depth`` x 36 bits is block RAM (1 K words: two M20K or four M10K),
    the base and loop registers, the program counter and the decode ALMs.
    """

    def __init__(self, *, config):
        if not isinstance(config, RingConfig):
            raise TypeError(f"config must be a RingConfig, not {config!r}")
        self._config = config
        super().__init__({
            "run": In(RunSignature(max_layers=config.max_programs, descriptor_layout=program_entry_layout(config))),
            "program": In(BufferPortSignature(width=WORD_BITS, depth=config.program_depth)),
            "issue": Out(IssueSignature(lm_depth=config.lm_depth)),
        })

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config, run, host, issue = self._config, self.run, self.program, self.issue
        busy = Signal()
        m.d.comb += [run.busy.eq(busy), issue.busy.eq(busy)]

        # ---- Fetch: from the program's entry on its first cycle, else from the program counter ----------------
        m.submodules.program = program = Memory(shape=WORD_BITS, depth=config.program_depth, init=[])
        program_write, program_read = program.write_port(), program.read_port()
        pc = Signal(range(config.program_depth))
        entering = Signal()                      # the first cycle of a program: fetch its entry address
        fetched = Signal()                       # program_read.data holds an instruction to issue
        fetch_address = Mux(entering, run.descriptor.entry, pc)
        m.d.comb += [program_write.en.eq(host.write_enable), program_write.addr.eq(host.address),
                     program_write.data.eq(host.write_data),
                     program_read.addr.eq(Mux(busy, fetch_address, host.address)),
                     program_read.en.eq(busy | host.read_enable), host.read_data.eq(program_read.data)]

        # ---- Issue: controller instructions, effective address ----------------------------------------------
        fields = InstructionLayout(program_read.data)
        issuing = busy & fetched
        sra = Signal()
        bases = [Signal(ADDR_BITS, name=f"base{k}") for k in range(2)]
        loops = [Signal(ADDR_BITS, name=f"loop{k}") for k in range(2)]
        remainders = [Signal(ADDR_BITS, name=f"remaining{k}") for k in range(2)]
        m.d.comb += [remaining.eq(loop - 1) for loop, remaining in zip(loops, remainders)]
        effective, offset = Signal(ADDR_BITS), Signal(ADDR_BITS)
        with m.Switch(fields.index):
            with m.Case(Index.B0):
                m.d.comb += offset.eq(bases[0])
            with m.Case(Index.B1):
                m.d.comb += offset.eq(bases[1])
            with m.Default():
                m.d.comb += offset.eq(0)
        m.d.comb += [effective.eq(fields.addr + offset), issue.read_address.eq(effective[:config.lm_address_bits])]

        is_pe_op = Signal()
        with m.Switch(fields.opcode):
            with m.Case(*PE_OPCODES):
                m.d.comb += is_pe_op.eq(1)
            with m.Default():
                pass
        instruction = issue.instruction
        m.d.sync += [issue.valid.eq(issuing & is_pe_op), issue.sra.eq(sra),
                     instruction.opcode.eq(fields.opcode), instruction.dst.eq(fields.dst), instruction.a.eq(fields.a),
                     instruction.b.eq(fields.b), instruction.c.eq(fields.c),
                     issue.write_address.eq(effective[:config.lm_address_bits])]
        m.d.comb += [run.events.issue.eq(issuing & is_pe_op), run.events.stall.eq(busy & ~(issuing & is_pe_op)),
                     run.events.draining.eq(Const(0))]

        # ---- Control: programs in turn, the controller instructions ----------------------------------------
        programs = Signal.like(run.layer_count)
        program_index = run.layer_index
        with m.If(run.start & (run.layer_count != 0)):
            m.d.sync += [busy.eq(1), run.done.eq(0), entering.eq(1), fetched.eq(0), sra.eq(0),
                         program_index.eq(0), programs.eq(run.layer_count)]
        with m.Elif(busy):
            m.d.sync += [pc.eq(fetch_address + 1), fetched.eq(1), entering.eq(0)]
            with m.If(fetched):
                with m.Switch(fields.opcode):
                    with m.Case(Opcode.MODE):
                        m.d.sync += sra.eq(fields.a[0])
                    with m.Case(Opcode.HALT):
                        m.d.sync += fetched.eq(0)
                        with m.If(program_index + 1 < programs):
                            m.d.sync += [program_index.eq(program_index + 1), entering.eq(1), sra.eq(0)]
                        with m.Else():
                            m.d.sync += [busy.eq(0), run.done.eq(1)]
                    with m.Case(Opcode.SETB):
                        for k, base in enumerate(bases):
                            with m.If(fields.dst[0] == k):
                                m.d.sync += base.eq(fields.addr)
                    with m.Case(Opcode.ADDB):
                        for k, base in enumerate(bases):
                            with m.If(fields.dst[0] == k):
                                m.d.sync += base.eq(base + fields.addr)
                    with m.Case(Opcode.SETL):
                        for k, loop in enumerate(loops):
                            with m.If(fields.dst[0] == k):
                                m.d.sync += loop.eq(fields.addr)
                    with m.Case(Opcode.BNZ):
                        for k, (loop, remaining) in enumerate(zip(loops, remainders)):
                            with m.If(fields.dst[0] == k):
                                m.d.sync += loop.eq(remaining)
                                with m.If(remaining.any()):
                                    m.d.sync += [pc.eq(fields.addr), fetched.eq(0)]
                    with m.Default():
                        pass
        return m
