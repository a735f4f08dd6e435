# amaranth: UnusedElaboratable=no
"""models.pe_ring.ebp: the ring program (run on models.pe_ring.ring and on the RTL ring) against the fixed-point golden
model, bit for bit; the float64 reference learns the same task."""

import numpy as np
import pytest

from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.ring import PERing
from nnaccel.hw.pe_ring.assembler import RingAssembler
from nnaccel.models.pe_ring import ebp
from nnaccel.models.pe_ring import pwl
from nnaccel.models.shared import fixed_point as fx
from nnaccel.models.pe_ring.ring import RingModel
from nnaccel.testbench.pe_ring.host import run_on_ring

FMT = QFormat(width=32, frac_bits=16)
TABLE = pwl.sigmoid_table(fmt=FMT)
RING = {"pes": 4, "registers": 8, "lm_depth": 1024, "program_depth": 1024}   # the build of tests/pe_ring/test_ring.py
ETA, ALPHA = 0.5, 0.3


def _task(inputs, hidden, outputs, samples, seed):
    rng = np.random.default_rng(seed)
    data = rng.uniform(0, 1, (samples, inputs))
    targets = (data[:, [k % inputs for k in range(outputs)]] > 0.5).astype(float)
    targets[:, 0] = data[:, :inputs // 2].sum(1) > data[:, inputs // 2:].sum(1)
    params = (rng.normal(0, 0.5, (hidden, inputs)), np.zeros(hidden), rng.normal(0, 0.5, (outputs, hidden)),
              np.zeros(outputs))
    return data, targets, params


def _setup(inputs, hidden, outputs, pes, samples, seed=0):
    data, targets, params = _task(inputs, hidden, outputs, samples, seed)
    raw = tuple(fx.to_raw(p, FMT) for p in params)
    layout = ebp.EBPLayout(inputs=inputs, hidden=hidden, outputs=outputs, pes=pes, samples=samples)
    lm = ebp.initial_lm(layout, raw, fx.to_raw(data, FMT), fx.to_raw(targets, FMT), fmt=FMT, eta=ETA, alpha=ALPHA,
                        lm_depth=RING["lm_depth"])
    words = RingAssembler(registers=8, lm_depth=RING["lm_depth"]).assemble(ebp.ring_program(layout)).words
    golden = ebp.FixedPointEBP(inputs=inputs, hidden=hidden, outputs=outputs, pes=pes, table=TABLE, eta=ETA,
                               alpha=ALPHA)
    return layout, lm, words, golden, raw, fx.to_raw(data, FMT), fx.to_raw(targets, FMT)


@pytest.mark.parametrize("shape", [(6, 5, 1, 4), (8, 8, 2, 4), (16, 5, 1, 8), (9, 13, 5, 4)],
                         ids=["6-5-1_n4", "8-8-2_n4", "16-5-1_n8", "9-13-5_n4"])
def test_program_on_model_matches_golden(shape):
    inputs, hidden, outputs, pes = shape
    layout, lm, words, golden, params, data, targets = _setup(inputs, hidden, outputs, pes, samples=6)
    ring = RingModel(pes=pes, table=TABLE, registers=8, lm_depth=RING["lm_depth"])
    state = ring.initial_state(lm)
    previous = params
    for _ in range(2):
        state = ring.run(words, state)
        params, previous, losses = golden.train_epoch(params, previous, data, targets)
        for got, expected in zip(ebp.read_weights(layout, state.lm), params):
            assert np.array_equal(got, expected)
        assert np.array_equal(state.lm[:, layout.LOSS], losses)


def _check_rtl_against_golden(run, layout, lm, golden, params, data, targets, epochs):
    """The ring's local memories after every RTL epoch hold the golden model's weights and losses, bit for bit."""
    previous = params
    for epoch in range(epochs):
        params, previous, losses = golden.train_epoch(params, previous, data, targets)
        image = run.lm_image(epoch, lm.shape)
        for got, expected in zip(ebp.read_weights(layout, image), params):
            assert np.array_equal(got, expected)
        assert np.array_equal(image[:, layout.LOSS], losses)


def test_training_on_rtl_matches_golden():
    epochs = 2
    layout, lm, words, golden, params, data, targets = _setup(16, 5, 1, RING["pes"], samples=12)
    reads = [(p, a) for p in range(RING["pes"]) for a in range(layout.data)]
    run = run_on_ring(PERing(config=RingConfig(table=TABLE, **RING)), words, lm, reads, starts=epochs)
    _check_rtl_against_golden(run, layout, lm, golden, params, data, targets, epochs)
    model = RingModel(pes=RING["pes"], table=TABLE, registers=8, lm_depth=RING["lm_depth"])
    assert run.cycles[0] == model.run(words, model.initial_state(lm)).cycles


def test_float_reference_learns():
    data, targets, params = _task(16, 5, 1, 64, seed=3)
    reference = ebp.FloatEBP(eta=ETA, alpha=ALPHA)
    previous = params
    losses = []
    for _ in range(30):
        params, previous, loss = reference.train_epoch(params, previous, data, targets)
        losses.append(loss)
    assert losses[-1] < 0.5 * losses[0]


def test_layout_too_large():
    layout = ebp.EBPLayout(inputs=64, hidden=64, outputs=1, pes=4, samples=10)
    with pytest.raises(ValueError, match=r"^the network and 10 samples need \d+ LM words, more than lm_depth = 1024$"):
        ebp.initial_lm(layout, None, None, None, fmt=FMT, eta=0.1, alpha=0.1, lm_depth=1024)


def test_table1():
    assert ebp.table1_cycles(64, 10, 64, 64) == (127, 10, 137)
    assert ebp.table1_cycles(16, 10, 5, 4) == (62, 20, 82)


@pytest.mark.parametrize("shape", [(16, 5, 1, 8), (8, 8, 2, 4), (9, 13, 5, 4)], ids=["16-5-1_n8", "8-8-2_n4", "9-13-5_n4"])
def test_forward_program_matches_golden(shape):
    inputs, hidden, outputs, pes = shape
    layout, lm, _, golden, params, data, _ = _setup(inputs, hidden, outputs, pes, samples=1)
    words = RingAssembler(registers=8, lm_depth=RING["lm_depth"]).assemble(ebp.forward_program(layout)).words
    ring = RingModel(pes=pes, table=TABLE, registers=8, lm_depth=RING["lm_depth"])
    state = ring.run(words, ring.initial_state(lm))
    _, expected = golden.forward(params, data[0])
    got = [state.lm[k % pes, layout.output_out + k // pes] for k in range(outputs)]
    assert np.array_equal(got, expected)


@pytest.mark.extended
def test_digits_64_64_1_on_rtl():
    """The paper's 64-64-1 network on a 64-PE ring: 3 epochs over 100 digits ('is it a 0'), RTL = golden."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    samples, epochs, pes = 100, 3, 64
    x = fx.to_raw(digits.images[:samples].reshape(samples, 64) / 16.0, FMT)
    y = fx.to_raw((digits.target[:samples] == 0).astype(float)[:, None], FMT)
    rng = np.random.default_rng(5)
    params = tuple(fx.to_raw(p, FMT) for p in (rng.normal(0, 0.3, (64, 64)), np.zeros(64),
                                                rng.normal(0, 0.3, (1, 64)), np.zeros(1)))
    layout = ebp.EBPLayout(inputs=64, hidden=64, outputs=1, pes=pes, samples=samples)
    lm = ebp.initial_lm(layout, params, x, y, fmt=FMT, eta=ETA, alpha=ALPHA, lm_depth=1024)
    words = RingAssembler(registers=8, lm_depth=1024).assemble(ebp.ring_program(layout)).words
    golden = ebp.FixedPointEBP(inputs=64, hidden=64, outputs=1, pes=pes, table=TABLE, eta=ETA, alpha=ALPHA)
    reads = [(p, a) for p in range(pes) for a in range(layout.data)]
    config = RingConfig(table=TABLE, pes=pes, registers=8, lm_depth=1024, program_depth=2048)
    run = run_on_ring(PERing(config=config), words, lm, reads, starts=epochs)
    _check_rtl_against_golden(run, layout, lm, golden, params, x, y, epochs)
    print(f"64-PE ring: build {run.build_seconds:.0f} s, run {run.run_seconds:.0f} s, cycles per epoch {[int(c) for c in run.cycles]}")
