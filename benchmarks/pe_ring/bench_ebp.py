"""EBP training on the simulated PE ring: cycles per epoch (RTL counters, instruction-set model, the paper's Table 1),
simulated cycles per second and wall time.

    python benchmarks/pe_ring/bench_ebp.py [--epochs 3] [--pes 4] [--samples 160]

Trains the 16-5-1 digit task of ``nnaccel run ebp`` ('0 among (0, 1)', 4 x 4 pooled digits) on a ``--pes``-PE ring
of Q15.16 with 1 K-word local memories, one START per epoch, and prints per epoch the ring's TOTAL_CYCLES and its
counters (cycles a PE instruction issued, the other busy cycles), the instruction-set model's cycles for the same
epoch, and the paper's Table 1 estimate (SRA + SIMD rows for both layers, times the samples); then the build and
simulation wall times and the simulated cycles per second.  Checks the weights and losses read back after every epoch against the golden model.
"""

import argparse
import time

import numpy as np

from nnaccel.hw.pe_ring.assembler import RingAssembler
from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.ring import PERing
from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.models.pe_ring import ebp, pwl
from nnaccel.models.pe_ring.data_set import digits_task
from nnaccel.models.pe_ring.ring import RingModel
from nnaccel.models.shared import fixed_point as fx
from nnaccel.testbench.pe_ring.host import run_on_ring

FMT = QFormat(width=32, frac_bits=16)
ETA, ALPHA, HIDDEN = 0.5, 0.3, 5


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--pes", type=int, default=4)
    parser.add_argument("--samples", type=int, default=160)
    arguments = parser.parse_args()
    data = digits_task(4, classes=(0, 1))
    config = RingConfig(table=pwl.sigmoid_table(fmt=FMT), pes=arguments.pes)
    rng = np.random.default_rng(0)
    inputs, samples = data.features.shape[1], arguments.samples
    params = tuple(fx.to_raw(p, FMT) for p in (rng.normal(0, 0.3, (HIDDEN, inputs)), np.zeros(HIDDEN),
                                                rng.normal(0, 0.3, (1, HIDDEN)), np.zeros(1)))
    x, y = fx.to_raw(data.features[:samples], FMT), fx.to_raw(data.labels[:samples, None], FMT)
    layout = ebp.EBPLayout(inputs=inputs, hidden=HIDDEN, outputs=1, pes=config.pes, samples=samples)
    lm = ebp.initial_lm(layout, params, x, y, fmt=FMT, eta=ETA, alpha=ALPHA, lm_depth=config.lm_depth)
    words = RingAssembler(registers=config.registers, lm_depth=config.lm_depth).assemble(ebp.ring_program(layout)).words
    model = RingModel(pes=config.pes, table=config.table, registers=config.registers, lm_depth=config.lm_depth)
    state, model_cycles = model.initial_state(lm.copy()), []
    for _ in range(arguments.epochs):
        state = model.run(words, state)
        model_cycles.append(state.cycles)
    golden = ebp.FixedPointEBP(inputs=inputs, hidden=HIDDEN, outputs=1, pes=config.pes, table=config.table, eta=ETA,
                               alpha=ALPHA)
    golden_epochs, golden_params, previous = [], params, params
    for _ in range(arguments.epochs):
        golden_params, previous, losses = golden.train_epoch(golden_params, previous, x, y)
        golden_epochs.append((golden_params, losses))

    start = time.perf_counter()
    run = run_on_ring(PERing(config=config), words, lm, [(p, a) for p in range(config.pes) for a in range(layout.data)],
                      starts=arguments.epochs)
    wall = time.perf_counter() - start
    exact = []
    for epoch, (params_after, losses) in enumerate(golden_epochs):
        image = run.lm_image(epoch, lm.shape)
        exact.append(all(np.array_equal(a, b) for a, b in zip(ebp.read_weights(layout, image), params_after))
                     and np.array_equal(image[:, layout.LOSS], losses))
    table1 = ebp.table1_layer_cycles(layout, 2) * samples      # Table 1 (SRA + SIMD) per step, per epoch
    print(f"16-{HIDDEN}-1 on {config.pes} PEs ({config.name}), {samples} samples per epoch")
    print(f"{'epoch':>5} {'RTL cycles':>10} {'PE instr':>9} {'other':>7} {'model':>8} {'Table 1':>8} {'bit-exact':>9}")
    for epoch, (total, counters) in enumerate(zip(run.cycles, run.counters)):
        print(f"{epoch + 1:>5} {int(total):>10} {int(counters[0][1]):>9} {int(counters[0][2]):>7} "
              f"{model_cycles[epoch]:>8} {table1:>8} {str(exact[epoch]):>9}")
    simulated = int(run.cycles.sum())
    print(f"weights and losses equal the golden model's after every epoch: {all(exact)}")
    print(f"build {run.build_seconds:.1f} s, simulation {run.run_seconds:.1f} s ({simulated / run.run_seconds:,.0f} "
          f"simulated cycles/s), wall {wall:.1f} s")


if __name__ == "__main__":
    main()
