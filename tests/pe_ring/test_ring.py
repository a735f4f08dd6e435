# amaranth: UnusedElaboratable=no
"""hw.pe_ring.ring (with its sequencer and PEs) through the host port against the instruction-set model
models.pe_ring.ring: every instruction form, loops, both modes, the program table, LM and result read-back, the
counters; the configuration's checks."""

import numpy as np
import pytest

from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.ring import PERing
from nnaccel.hw.pe_ring.assembler import RingAssembler
from nnaccel.models.pe_ring import pwl
from nnaccel.models.pe_ring.ring import RingModel
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.pe_ring.host import run_on_ring

FMT = QFormat(width=32, frac_bits=16)
TABLE = pwl.sigmoid_table(fmt=FMT)
RING = {"pes": 4, "registers": 8, "lm_depth": 1024, "program_depth": 1024}   # shared with tests/pe_ring/test_ebp.py

PROGRAM = """
    mov r0, m[0]              ; SIMD: register <- LM
    mov x, m[1]
    mode sra
    setb 0, 0
    setl 0, 3
loop: mac r1, x, m[2+b0], r1  ; SRA: MAC with the moving ring register
    addb 0, 1
    bnz 0, loop
    act r2, r1
    mac x, r1, m[8], in       ; circulate partial sums
    sub r3, r2, r0
    mode simd
    mul r4, r3, m[9]
    mov m[10], r3
    mov m[11], x
    add m[12], m[12], r4      ; read-modify-write of one LM word
    mov r5, m[12]             ; reads the word just written
    mul res, r3, r5
    mov r6, m[14]
    sub m[13], r0, r6         ; saturation: most negative minus a positive
    halt
"""


SECOND_PROGRAM = """
    mov r7, m[14]             ; a second program in the same START: the LM carries over
    add m[15], m[15], r7
    mov res, m[15]
    halt
"""


def test_ring_matches_model():
    """Two programs per START (the program table), two STARTs: LM, result registers and every counter against
    the instruction-set model and against figures counted by hand from the program texts."""
    rng = np.random.default_rng(7)
    config = RingConfig(table=TABLE, **RING)
    lm = np.zeros((config.pes, config.lm_depth), dtype=np.int64)
    lm[:, :16] = rng.integers(-3 << 16, 3 << 16, size=(config.pes, 16))
    lm[:, 0] = FMT.min_raw + rng.integers(0, 10, config.pes)
    lm[:, 14] = 5 << 16
    assembler = RingAssembler(registers=config.registers, lm_depth=config.lm_depth)
    first, second = assembler.assemble(PROGRAM).words, assembler.assemble(SECOND_PROGRAM).words
    model = RingModel(pes=config.pes, table=TABLE, registers=config.registers, lm_depth=config.lm_depth)
    state, model_cycles = model.initial_state(lm.copy()), []
    for program in (first, second) * 2:          # two STARTs of two programs
        state = model.run(program, state)
        model_cycles.append(state.cycles)
    reads = [(p, a) for p in range(config.pes) for a in range(16)]
    run = run_on_ring(PERing(config=config), first + second, lm, reads, starts=2, entries=(0, len(first)))
    final = state
    got = np.array([[run.lm[p, a] for a in range(16)] for p in range(config.pes)])
    assert np.array_equal(got, final.lm[:, :16])
    assert np.array_equal(run.results, final.result)
    assert np.all(final.lm[:, 13] == FMT.min_raw)
    # By hand: the first program has 21 words, its loop body (3 words) runs 3 times with 2 taken branches:
    # 27 instructions + 2 + 1 (first fetch) = 30 cycles, of which 16 issue a PE instruction (14 PE words, the mac
    # of the loop twice more). The second: 4 instructions + 1 = 5 cycles, 3 PE instructions.
    by_hand = [[30, 16, 14, 0], [5, 3, 2, 0]]
    assert model_cycles == [30, 5, 30, 5]
    assert run.counters.tolist() == [by_hand, by_hand]
    assert list(run.cycles) == [35, 35]


@pytest.mark.parametrize("kwargs, error, message", [
    ({"pes": 3}, ValueError, "pes must be an integer from 4 to 64, not 3"),
    ({"pes": 65}, ValueError, "pes must be an integer from 4 to 64, not 65"),
    ({"table": None}, TypeError, "table must be a PWLTable, not None"),
    ({"registers": 13}, ValueError, "registers must be an integer from 1 to 12, not 13"),
    ({"registers": True}, ValueError, "registers must be an integer from 1 to 12, not True"),
    ({"lm_depth": 1000}, ValueError, "lm_depth must be a power of two from 16 to 16384, not 1000"),
    ({"lm_depth": 8}, ValueError, "lm_depth must be a power of two from 16 to 16384, not 8"),
    ({"program_depth": 3}, ValueError, "program_depth must be a power of two from 2 to 16384, not 3"),
    ({"max_programs": 1}, ValueError, "max_programs must be an integer from 2 to 16, not 1"),
])
def test_config_errors(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        RingConfig(**{"pes": 4, "table": TABLE, **kwargs})


def test_config_sizes():
    config = RingConfig(table=TABLE, pes=6, lm_depth=256)
    assert (config.fmt, config.lm_address_bits, config.pe_bits, config.host_data_bits) == (FMT, 8, 3, 40)
    assert config.name == "pe_ring_n6_q15_16_r8_lm256_p1024_t4_sigmoid256"


def test_ring_takes_a_config():
    with pytest.raises(TypeError, match="^config must be a RingConfig, not 4$"):
        PERing(config=4)


def test_ring_lint_clean():
    ring = PERing(config=RingConfig(table=TABLE, **RING))
    assert lint_verilog(ring, ring.module_name) == []


TINY_PROGRAM = """
    mov x, m[0]
    mode sra
    setl 0, 3
loop: mac r1, x, m[1], r1     ; SRA: the ring moves under the MAC
    bnz 0, loop
    act r2, r1
    mode simd
    mov m[2], r2
    mov res, r1
    halt
"""


def test_reduced_ring_on_amaranth_simulator():
    """hw/ stands alone: a 4-PE ring of 16-word memories runs on Amaranth's own simulator, driven through its host
    port, bit-exact with the instruction-set model, with TOTAL_CYCLES = 3 + 3 x 2 (loop) + 5 instructions + 2 taken
    branches + 1 = 17 (counted by hand)."""
    from amaranth.sim import Simulator

    from nnaccel.hw.pe_ring.ring import RingMemory
    from nnaccel.hw.shared.host_control import ControlRegister, HostTarget

    q5_10 = QFormat(width=16, frac_bits=10)
    config = RingConfig(table=pwl.sigmoid_table(fmt=q5_10, segments=16), pes=4, lm_depth=16, program_depth=16)
    words = RingAssembler(registers=config.registers, lm_depth=config.lm_depth).assemble(TINY_PROGRAM).words
    lm = np.random.default_rng(3).integers(-2 << 10, 2 << 10, size=(config.pes, config.lm_depth))
    model = RingModel(pes=config.pes, table=config.table, registers=config.registers, lm_depth=config.lm_depth)
    expected = model.run(words, model.initial_state(lm.copy()))
    ring = PERing(config=config)
    host = ring.host
    observed = {}

    async def testbench(ctx):
        async def write(target, address, value):
            ctx.set(host.target, target)
            ctx.set(host.address, address)
            ctx.set(host.write_data, int(value) & ((1 << config.host_data_bits) - 1))
            ctx.set(host.write, 1)
            await ctx.tick()
            ctx.set(host.write, 0)

        async def read(target, address):
            ctx.set(host.target, target)
            ctx.set(host.address, address)
            ctx.set(host.read, 1)
            await ctx.tick()
            ctx.set(host.read, 0)
            assert ctx.get(host.read_data.valid)
            return ctx.get(host.read_data.payload)

        await write(HostTarget.DESCRIPTORS, 0, 0)
        for address, word in enumerate(words):
            await write(RingMemory.PROGRAM, address, word)
        for (pe, address), value in np.ndenumerate(lm):
            await write(RingMemory.LOCAL_MEMORY, pe * config.lm_depth + address, value & 0xFFFF)
        await write(HostTarget.CONTROL, ControlRegister.START, 1)
        await ctx.tick().until(host.done)
        observed["cycles"] = await read(HostTarget.CONTROL, ControlRegister.TOTAL_CYCLES)
        observed["lm"] = [[q5_10.from_bits(await read(RingMemory.LOCAL_MEMORY, pe * config.lm_depth + address))
                           for address in range(config.lm_depth)] for pe in range(config.pes)]
        observed["results"] = [q5_10.from_bits(await read(RingMemory.RESULTS, pe)) for pe in range(config.pes)]

    simulator = Simulator(ring)
    simulator.add_clock(1e-8)
    simulator.add_testbench(testbench)
    simulator.run()
    assert observed["cycles"] == expected.cycles == 17
    assert np.array_equal(observed["lm"], expected.lm)
    assert np.array_equal(observed["results"], expected.result)
