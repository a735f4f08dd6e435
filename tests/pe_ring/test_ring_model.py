"""models.pe_ring.ring: the instruction-set model's timing and mode rules (the RTL comparison is in test_pe_ring.py)."""

import numpy as np

from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.pe_ring.assembler import RingAssembler
from nnaccel.models.shared import fixed_point as fx
from nnaccel.models.pe_ring import pwl
from nnaccel.models.pe_ring.ring import RingModel

FMT = QFormat(width=16, frac_bits=10)
TABLE = pwl.sigmoid_table(fmt=FMT, segments=16)


def _run(text, lm=None, pes=4):
    model = RingModel(pes=pes, table=TABLE, lm_depth=64)
    words = RingAssembler(lm_depth=64).assemble(text).words
    return model.run(words, model.initial_state(lm))


def test_sra_moves_every_pe_instruction_simd_does_not():
    lm = np.zeros((4, 64), dtype=np.int64)
    lm[:, 0] = [10, 20, 30, 40]
    state = _run("mov x, m[0]\nnop\nmode sra\nnop\nnop\nmode simd\nnop\nhalt", lm)
    assert list(state.ring) == [30, 40, 10, 20]          # two PE instructions in SRA mode: two steps right


def test_partial_sums_circulate_home():
    lm = np.zeros((4, 64), dtype=np.int64)
    lm[:, 0] = fx.to_raw([1, 2, 3, 4], FMT)
    state = _run("mov r1, m[0]\nmov x, 0\nmode sra\n" + "add x, in, r1\n" * 4 + "halt", lm)
    assert np.array_equal(state.ring, np.full(4, fx.to_raw(10, FMT)))


def test_cycles_count_branches_and_first_fetch():
    state = _run("setl 0, 5\nloop: nop\nbnz 0, loop\nhalt")
    assert state.cycles == 1 + (1 + 5 * 2 + 1) + 4      # fetch + instructions + taken branches


def test_act_result_lands_one_instruction_later():
    lm = np.zeros((4, 64), dtype=np.int64)
    lm[:, 0] = fx.to_raw([-1, 0, 1, 9], FMT)
    state = _run("mov r1, m[0]\nact r2, r1\nnop\nmov m[1], r2\nhalt", lm)
    assert np.array_equal(state.lm[:, 1], pwl.evaluate(TABLE, lm[:, 0]))
