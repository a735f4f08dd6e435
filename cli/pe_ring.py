"""EBP on the PE ring (``nnaccel run ebp``): PWL error table and plot, cycle table against the paper, training curves.

    nnaccel run ebp [--epochs 10] [--rtl] [--rtl64] [--only PART] [--out nnaccel-ebp]

Training runs the ring program on the instruction-set model (models.pe_ring.ring, equal to the RTL bit for bit
and cycle for cycle as tests/pe_ring/test_ring.py and tests/pe_ring/test_ebp.py check) and on the fixed-point golden
model, and compares both; ``--rtl`` / ``--rtl64`` also run the 16-5-1 / 64-64-1 training on the
Verilator-simulated ring and compare the weights read back with the golden model's.
Needs scikit-learn (digits) and matplotlib (plot).
"""

from pathlib import Path

import numpy as np

from hw.shared.fixed_point import QFormat
from hw.pe_ring.assembler import RingAssembler
from models.pe_ring import ebp
from models.pe_ring import pwl
from models.shared import fixed_point as fx
from models.pe_ring.ring import RingModel

CLOCK_MHZ = 50
PAPER_FORWARD_US = {(64, 64, 1): 2.8, (16, 5, 1): 0.7}
Q5_10, Q15_16 = QFormat(width=16, frac_bits=10), QFormat(width=32, frac_bits=16)
LM_DEPTH = 1024


def print_error_table():
    print("PWL approximation error (every representable input of the range, chord interpolation)")
    print(f"{'function':9} {'format':7} {'range':>6} {'segments':>8} {'max abs err':>12} {'mean abs err':>13}")
    for name, fmt_name, input_range, segments, worst, mean in pwl.error_table((Q5_10, Q15_16)):
        print(f"{name:9} {fmt_name:7} {input_range:>6.1f} {segments:>8} {worst:>12.3e} {mean:>13.3e}")


def plot_sigmoid(path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    table = pwl.sigmoid_table(fmt=Q5_10, segments=16)
    fine = pwl.sigmoid_table(fmt=Q5_10)
    x = np.arange(-10 * 1024, 10 * 1024, 8)
    real = fx.to_float(x, Q5_10)
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    top.plot(real, 1 / (1 + np.exp(-real)), "k-", label="exact sigmoid")
    top.plot(real, fx.to_float(pwl.evaluate(table, x), Q5_10), "r--", label="PWL, 16 segments (Q5.10)")
    top.legend()
    top.set_ylabel("y")
    bottom.plot(real, fx.to_float(pwl.evaluate(fine, x), Q5_10) - 1 / (1 + np.exp(-real)), "b-",
                label="PWL 256 segments - exact (Q5.10)")
    bottom.set_xlabel("x (range [-8, 8), saturating outside)")
    bottom.set_ylabel("error")
    bottom.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    print(f"plot: {path}")


def _cycles(program_text, layout, fmt):
    table = pwl.sigmoid_table(fmt=fmt)
    words = RingAssembler(lm_depth=LM_DEPTH).assemble(program_text).words
    model = RingModel(pes=layout.pes, table=table, lm_depth=LM_DEPTH)
    return model.run(words).cycles


def print_cycle_table():
    print(f"\nFeed-forward and training-step cycles (instruction-set model; equal to the RTL's cycle counter, "
          f"see tests/pe_ring/test_ring.py). busy = the ring's counter for the inference program; compute = busy "
          f"minus the first fetch and the halt. Time at {CLOCK_MHZ} MHz.")
    print("Table 1 (paper) summed over both layers, j = nodes of the layer: 'Table1 ff' is the SRA row with "
          "n_sra = MAC instructions per node (= laps x N); 'Table1 step' the SRA+SIMD row with the same n_sra and "
          "n_simd = update instructions per node (7 per weight and bias, 2 for eta * delta).")
    print(f"{'network':8} {'N':>3} {'ff busy':>7} {'ff compute':>10} {'compute us':>10} {'paper us':>8} "
          f"{'Table1 ff':>9} {'train step':>10} {'step us':>7} {'Table1 step':>11}")
    for shape in ((64, 64, 1), (16, 5, 1)):
        for pes in (4, 8, 16, 32, 64):
            layout = ebp.EBPLayout(inputs=shape[0], hidden=shape[1], outputs=shape[2], pes=pes, samples=1)
            if layout.size > LM_DEPTH:
                print(f"{'x'.join(map(str, shape)):8} {pes:>3}  (does not fit {LM_DEPTH} LM words)")
                continue
            busy = _cycles(ebp.forward_program(layout), layout, Q5_10)
            # one sample: the epoch program minus its prologue (4), loop branch (1), epilogue (2) and halt
            step = _cycles(ebp.ring_program(layout), layout, Q5_10) - 9
            layers = ((shape[0], shape[1]), (shape[1], shape[2]))
            table1 = sum(ebp.table1_cycles(_ceil(inputs, pes) * pes, 0, nodes, pes)[0] for inputs, nodes in layers)
            table1_step = sum(ebp.table1_cycles(_ceil(inputs, pes) * pes, 7 * (_ceil(inputs, pes) * pes + 1) + 2,
                                                nodes, pes)[2] for inputs, nodes in layers)
            compute = busy - 2
            print(f"{'x'.join(map(str, shape)):8} {pes:>3} {busy:>7} {compute:>10} {compute / CLOCK_MHZ:>10.2f} "
                  f"{PAPER_FORWARD_US[shape]:>8} {table1:>9} {step:>10} {step / CLOCK_MHZ:>7.2f} {table1_step:>11}")


def _ceil(a, b):
    return -(-a // b)


def _digits(side, classes=None):
    """scikit-learn's 8x8 digits scaled to [0, 1], average-pooled to side x side, optionally only the
    digits in ``classes``; target 1.0 for a 0."""
    from sklearn.datasets import load_digits
    digits = load_digits()
    keep = np.ones(len(digits.target), dtype=bool) if classes is None else np.isin(digits.target, classes)
    images = digits.images[keep] / 16.0
    if side != 8:
        factor = 8 // side
        images = images.reshape(-1, side, factor, side, factor).mean(axis=(2, 4))
    return images.reshape(len(images), -1), (digits.target[keep] == 0).astype(float)[:, None]


def train(shape, pes, samples, epochs, eta, alpha, *, classes=None, seed=0, rtl=False):
    """Train on the digits whose class is in ``classes`` (all if None), target 'is it a 0'; inputs are the
    8x8 images (64 inputs) or 4x4 average-pooled ones (16 inputs)."""
    inputs, hidden, outputs = shape
    fmt = Q15_16
    table = pwl.sigmoid_table(fmt=fmt)
    x, y = _digits(8 if inputs == 64 else 4, classes)
    task = "is it a 0" if classes is None else f"0 among {classes}"
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    train_idx, test_idx = order[:samples], order[samples:]
    params = (rng.normal(0, 0.3, (hidden, inputs)), np.zeros(hidden), rng.normal(0, 0.3, (outputs, hidden)),
              np.zeros(outputs))
    raw = tuple(fx.to_raw(p, fmt) for p in params)
    data, targets = fx.to_raw(x[train_idx], fmt), fx.to_raw(y[train_idx], fmt)
    layout = ebp.EBPLayout(inputs=inputs, hidden=hidden, outputs=outputs, pes=pes, samples=samples)
    lm = ebp.initial_lm(layout, raw, data, targets, fmt=fmt, eta=eta, alpha=alpha, lm_depth=LM_DEPTH)
    words = RingAssembler(lm_depth=LM_DEPTH).assemble(ebp.ring_program(layout)).words
    model = RingModel(pes=pes, table=table, lm_depth=LM_DEPTH)
    golden = ebp.FixedPointEBP(inputs=inputs, hidden=hidden, outputs=outputs, pes=pes, table=table, eta=eta,
                               alpha=alpha)
    reference = ebp.FloatEBP(eta=eta, alpha=alpha)
    state, golden_params, golden_prev = model.initial_state(lm.copy()), raw, raw
    float_params, float_prev = params, params
    print(f"\nTraining {'-'.join(map(str, shape))} on {pes} PEs, digits '{task}' ({inputs} inputs), "
          f"{samples} training samples, eta {eta}, alpha {alpha}, {fmt.name}")
    print(f"{'epoch':>5} {'ring loss':>10} {'golden loss':>11} {'bit-exact':>9} {'float64 loss':>12}")
    for epoch in range(epochs):
        state = model.run(words, state)
        golden_params, golden_prev, losses = golden.train_epoch(golden_params, golden_prev, data, targets)
        float_params, float_prev, float_loss = reference.train_epoch(float_params, float_prev, x[train_idx],
                                                                     y[train_idx])
        ring_params = ebp.read_weights(layout, state.lm)
        exact = all(np.array_equal(a, b) for a, b in zip(ring_params, golden_params)) and np.array_equal(
            state.lm[:, layout.LOSS], losses)
        ring_loss = fx.to_float(state.lm[:, layout.LOSS].sum(), fmt)
        print(f"{epoch + 1:>5} {ring_loss:>10.4f} {fx.to_float(losses.sum(), fmt):>11.4f} {str(exact):>9} "
              f"{float_loss:>12.4f}")

    def accuracy(predict):
        hits = [(predict(x[i]) > 0.5) == (y[i, 0] > 0.5) for i in test_idx]
        return float(np.mean(hits))

    fixed_accuracy = accuracy(lambda v: fx.to_float(golden.forward(golden_params, fx.to_raw(v, fmt))[1][0], fmt))
    float_accuracy = accuracy(lambda v: reference.forward(float_params, v)[1][0])
    print(f"test accuracy on {len(test_idx)} held-out digits: fixed point (ring) {fixed_accuracy:.4f}, "
          f"float64 {float_accuracy:.4f}")
    if rtl:
        from hw.pe_ring.ring import PERing
        from testbench.pe_ring.host import run_on_ring
        program_depth = max(1024, 1 << (len(words) - 1).bit_length())      # 1024 and 2048: the builds tests use
        ring = PERing(pes=pes, table=table, lm_depth=LM_DEPTH, program_depth=program_depth)
        reads = [(p, a) for p in range(pes) for a in range(layout.data)]
        run = run_on_ring(ring, words, lm, reads, runs=epochs)
        image = np.zeros_like(lm)
        for (p, a), value in run.lm.items():
            image[p, a] = value
        exact = all(np.array_equal(a, b) for a, b in zip(ebp.read_weights(layout, image), golden_params))
        print(f"RTL ({pes}-PE ring, Verilator): weights after {epochs} epochs equal the golden model: {exact}; "
              f"cycles per epoch {[int(c) for c in run.cycles]}; build {run.build_seconds:.0f} s, run {run.run_seconds:.0f} s")


def add_arguments(parser):
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--rtl", action="store_true", help="also train 16-5-1 on the Verilator-simulated ring")
    parser.add_argument("--rtl64", action="store_true",
                        help="also train 64-64-1 on a simulated 64-PE ring (the build takes about 20 minutes)")
    parser.add_argument("--only", choices=("pwl", "cycles", "16-5-1", "64-64-1"), help="run one part only")
    parser.add_argument("--out", type=Path, default=Path("nnaccel-ebp"), help="where the PWL plot is written")


def run(arguments):
    if arguments.epochs < 1:
        raise ValueError(f"--epochs must be at least 1, not {arguments.epochs}")
    arguments.out.mkdir(parents=True, exist_ok=True)
    parts = {arguments.only} if arguments.only else {"pwl", "cycles", "16-5-1", "64-64-1"}
    if "pwl" in parts:
        print_error_table()
        plot_sigmoid(arguments.out / "pwl_sigmoid.png")
    if "cycles" in parts:
        print_cycle_table()
    if "16-5-1" in parts:
        train((16, 5, 1), pes=4, samples=160, epochs=arguments.epochs, eta=0.5, alpha=0.3, classes=(0, 1),
              rtl=arguments.rtl)
    if "64-64-1" in parts:
        train((64, 64, 1), pes=64, samples=300, epochs=arguments.epochs, eta=0.5, alpha=0.3, rtl=arguments.rtl64)
    return 0
