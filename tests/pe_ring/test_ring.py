# amaranth: UnusedElaboratable=no
"""hw.pe_ring.ring (with hw.pe_ring.pe) against the instruction-set model models.pe_ring.ring: every instruction form, loops,
both modes, LM and result ports, cycle counts; parameter checks."""

import numpy as np
import pytest

from nnaccel.hw.shared.fixed_point import QFormat
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


def test_ring_matches_model():
    rng = np.random.default_rng(7)
    lm = np.zeros((RING["pes"], RING["lm_depth"]), dtype=np.int64)
    lm[:, :16] = rng.integers(-3 << 16, 3 << 16, size=(RING["pes"], 16))
    lm[:, 0] = FMT.min_raw + rng.integers(0, 10, RING["pes"])
    lm[:, 14] = 5 << 16
    words = RingAssembler(registers=RING["registers"], lm_depth=RING["lm_depth"]).assemble(PROGRAM).words
    model = RingModel(pes=RING["pes"], table=TABLE, registers=RING["registers"], lm_depth=RING["lm_depth"])
    expected = model.run(words, model.initial_state(lm.copy()))
    ring = PERing(table=TABLE, **RING)
    reads = [(p, a) for p in range(RING["pes"]) for a in range(16)]
    run = run_on_ring(ring, words, lm, reads, runs=2)
    got = np.array([[run.lm[p, a] for a in range(16)] for p in range(RING["pes"])])
    second = model.run(words, expected)          # the second start sees the first run's LM
    assert np.array_equal(got, second.lm[:, :16])
    assert np.array_equal(run.results, second.result)
    # instructions + taken branches + 1: the loop body (3 instructions) runs 3 times, 2 branches taken
    assert list(run.cycles) == [expected.cycles, second.cycles] == [(len(words) + 2 * 3) + 2 + 1] * 2
    assert np.all(second.lm[:, 13] == FMT.min_raw)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"pes": 3}, ValueError, "pes must be an integer from 4 to 64, not 3"),
    ({"pes": 65}, ValueError, "pes must be an integer from 4 to 64, not 65"),
    ({"table": None}, TypeError, "table must be a PWLTable, not None"),
    ({"registers": 13}, ValueError, "registers must be an integer from 1 to 12, not 13"),
    ({"lm_depth": 1000}, ValueError, "lm_depth must be a power of two from 16 to 16384, not 1000"),
    ({"program_depth": 3}, ValueError, "program_depth must be a power of two from 2 to 16384, not 3"),
])
def test_ring_parameter_errors(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        PERing(**{"pes": 4, "table": TABLE, **kwargs})


def test_ring_lint_clean():
    ring = PERing(table=TABLE, **RING)
    assert lint_verilog(ring, ring.module_name) == []
