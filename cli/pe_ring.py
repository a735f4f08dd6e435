"""EBP on the PE ring (``nnaccel run ebp``): PWL error table (and plot with ``--out``), cycle table against the paper, training curves.

    nnaccel run ebp [--epochs 10] [--rtl] [--rtl64] [--only PART | --data FILE [--hidden N]] [--out DIR] [--json F]

Training runs the ring program on the instruction-set model (models.pe_ring.ring, equal to the RTL bit for bit
and cycle for cycle as tests/pe_ring/test_ring.py and tests/pe_ring/test_ebp.py check) and on the fixed-point golden
model, and compares both after every epoch; ``--rtl`` / ``--rtl64`` also run the 4-PE (16-5-1 or ``--data``) /
64-64-1 training on the Verilator-simulated ring (one START per epoch on its host port) and compare the weights and
losses read back after every epoch with the golden model's.
The built-in tasks are scikit-learn's digits; ``--data`` trains an F-H-1 network on a user's data set
(:mod:`models.pe_ring.data_set`) on 4 PEs, with as many training samples as the local memory holds.
Needs scikit-learn (digits) and matplotlib (the plot, drawn only into ``--out DIR``).
"""


import numpy as np

from nnaccel.hw.shared.fixed_point import QFormat
from nnaccel.hw.pe_ring.assembler import RingAssembler
from nnaccel.models.pe_ring import ebp
from nnaccel.models.pe_ring import pwl
from nnaccel.models.pe_ring.data_set import digits_task, load_data_set
from nnaccel.models.pe_ring.ring import RingModel
from nnaccel.models.shared import fixed_point as fx
from nnaccel.models.shared.input_files import InputError

from nnaccel.cli.report import (EXIT_DONE, EXIT_MISMATCH, add_json_argument, json_float, make_output_directory,
                                output_directory, positive_int, progress, write_json, writing)

__all__ = ["add_arguments", "run", "train", "ring_capacity", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.ebp/1"
CLOCK_MHZ = 50
PAPER_FORWARD_US = {(64, 64, 1): 2.8, (16, 5, 1): 0.7}
Q5_10, Q15_16 = QFormat(width=16, frac_bits=10), QFormat(width=32, frac_bits=16)
LM_DEPTH = 1024
DATA_PES, DATA_HIDDEN = 4, 5      # the ring --data (and 16-5-1) trains on: the 4-PE build the tests share


def pwl_rows():
    """The PWL approximation errors, printed and returned as JSON rows."""
    rows = [{"function": name, "format": fmt_name, "range": input_range, "segments": segments, "max_abs_error": worst,
             "mean_abs_error": mean}
            for name, fmt_name, input_range, segments, worst, mean in pwl.error_table((Q5_10, Q15_16))]
    print("PWL approximation error (every representable input of the range, chord interpolation)")
    print(f"{'function':9} {'format':7} {'range':>6} {'segments':>8} {'max abs err':>12} {'mean abs err':>13}")
    for row in rows:
        print(f"{row['function']:9} {row['format']:7} {row['range']:>6.1f} {row['segments']:>8} "
              f"{row['max_abs_error']:>12.3e} {row['mean_abs_error']:>13.3e}")
    return rows


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


def cycle_rows():
    """Feed-forward and training-step cycles per network and ring size, printed and returned as JSON rows."""
    print(f"\nFeed-forward and training-step cycles (instruction-set model; equal to the RTL's cycle counter, "
          f"see tests/pe_ring/test_ring.py). busy = the ring's counter for the inference program; compute = busy "
          f"minus the first fetch and the halt. Time at {CLOCK_MHZ} MHz.")
    print("Table 1 (paper) summed over both layers, j = nodes of the layer: 'Table1 ff' is the SRA row with "
          "n_sra = MAC instructions per node (= laps x N); 'Table1 step' the SRA+SIMD row with the same n_sra and "
          "n_simd = update instructions per node (7 per weight and bias, 2 for eta * delta).")
    print(f"{'network':8} {'N':>3} {'ff busy':>7} {'ff compute':>10} {'compute us':>10} {'paper us':>8} "
          f"{'Table1 ff':>9} {'train step':>10} {'step us':>7} {'Table1 step':>11}")
    rows = []
    for shape in ((64, 64, 1), (16, 5, 1)):
        network = "-".join(map(str, shape))
        for pes in (4, 8, 16, 32, 64):
            layout = ebp.EBPLayout(inputs=shape[0], hidden=shape[1], outputs=shape[2], pes=pes, samples=1)
            if layout.size > LM_DEPTH:
                print(f"{'x'.join(map(str, shape)):8} {pes:>3}  (does not fit {LM_DEPTH} LM words)")
                rows.append({"network": network, "pes": pes, "fits": False})
                continue
            busy = _cycles(ebp.forward_program(layout), layout, Q5_10)
            # one sample: the epoch program minus its prologue (4), loop branch (1), epilogue (2) and halt
            step = _cycles(ebp.ring_program(layout), layout, Q5_10) - 9
            table1, table1_step = ebp.table1_layer_cycles(layout, 0), ebp.table1_layer_cycles(layout, 2)
            compute = busy - 2
            print(f"{'x'.join(map(str, shape)):8} {pes:>3} {busy:>7} {compute:>10} {compute / CLOCK_MHZ:>10.2f} "
                  f"{PAPER_FORWARD_US[shape]:>8} {table1:>9} {step:>10} {step / CLOCK_MHZ:>7.2f} {table1_step:>11}")
            rows.append({"network": network, "pes": pes, "fits": True, "forward_busy_cycles": busy,
                         "forward_compute_cycles": compute, "forward_compute_us": compute / CLOCK_MHZ,
                         "paper_forward_us": PAPER_FORWARD_US[shape], "table1_forward_cycles": table1,
                         "train_step_cycles": step, "train_step_us": step / CLOCK_MHZ,
                         "table1_train_step_cycles": table1_step})
    return rows


def ring_capacity(inputs, hidden, pes=DATA_PES):
    """How many training samples an ``inputs``-``hidden``-1 network leaves room for in the LM (0: none)."""
    layout = ebp.EBPLayout(inputs=inputs, hidden=hidden, outputs=1, pes=pes, samples=0)
    return max(0, (LM_DEPTH - layout.size) // layout.sample_stride)


def _fitting_features(hidden, pes=DATA_PES):
    inputs = 1
    while ring_capacity(inputs + 1, hidden, pes) >= 1:
        inputs += 1
    return inputs


def train(data, *, hidden, pes, samples, epochs, eta, alpha, seed=0, rtl=False):
    """Train an F-``hidden``-1 network on ``samples`` of ``data`` (the rest held out) on the instruction-set model
    of a ``pes``-PE ring, the fixed-point golden model and the float64 reference; optionally on the simulated RTL.
    Prints the epochs and returns them as a JSON-ready dict (``bit_exact``: ring, and RTL if run, equal the golden
    model after every epoch)."""
    inputs, outputs = data.features.shape[1], 1
    fmt = Q15_16
    table = pwl.sigmoid_table(fmt=fmt)
    x, y = data.features, data.labels[:, None]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(x))
    train_idx, test_idx = order[:samples], order[samples:]
    params = (rng.normal(0, 0.3, (hidden, inputs)), np.zeros(hidden), rng.normal(0, 0.3, (outputs, hidden)),
              np.zeros(outputs))
    raw = tuple(fx.to_raw(p, fmt) for p in params)
    train_data, targets = fx.to_raw(x[train_idx], fmt), fx.to_raw(y[train_idx], fmt)
    layout = ebp.EBPLayout(inputs=inputs, hidden=hidden, outputs=outputs, pes=pes, samples=samples)
    lm = ebp.initial_lm(layout, raw, train_data, targets, fmt=fmt, eta=eta, alpha=alpha, lm_depth=LM_DEPTH)
    words = RingAssembler(lm_depth=LM_DEPTH).assemble(ebp.ring_program(layout)).words
    model = RingModel(pes=pes, table=table, lm_depth=LM_DEPTH)
    golden = ebp.FixedPointEBP(inputs=inputs, hidden=hidden, outputs=outputs, pes=pes, table=table, eta=eta,
                               alpha=alpha)
    reference = ebp.FloatEBP(eta=eta, alpha=alpha)
    state, golden_params, golden_prev = model.initial_state(lm.copy()), raw, raw
    float_params, float_prev = params, params
    network = f"{inputs}-{hidden}-{outputs}"
    print(f"\nTraining {network} on {pes} PEs, {data.name} ({inputs} inputs), {samples} training samples, "
          f"eta {eta}, alpha {alpha}, {fmt.name}")
    print(f"{'epoch':>5} {'ring loss':>10} {'golden loss':>11} {'bit-exact':>9} {'float64 loss':>12}")
    epoch_rows, golden_epochs = [], []
    for epoch in range(epochs):
        state = model.run(words, state)
        golden_params, golden_prev, losses = golden.train_epoch(golden_params, golden_prev, train_data, targets)
        golden_epochs.append((golden_params, losses))
        float_params, float_prev, float_loss = reference.train_epoch(float_params, float_prev, x[train_idx],
                                                                     y[train_idx])
        ring_params = ebp.read_weights(layout, state.lm)
        exact = all(np.array_equal(a, b) for a, b in zip(ring_params, golden_params)) and np.array_equal(
            state.lm[:, layout.LOSS], losses)
        ring_loss, golden_loss = fx.to_float(state.lm[:, layout.LOSS].sum(), fmt), fx.to_float(losses.sum(), fmt)
        print(f"{epoch + 1:>5} {ring_loss:>10.4f} {golden_loss:>11.4f} {str(exact):>9} {float_loss:>12.4f}")
        epoch_rows.append({"epoch": epoch + 1, "ring_loss": json_float(ring_loss),
                           "golden_loss": json_float(golden_loss), "bit_exact": bool(exact),
                           "float64_loss": json_float(float_loss)})

    def accuracy(predict):
        hits = [(predict(x[i]) > 0.5) == (y[i, 0] > 0.5) for i in test_idx]
        return float(np.mean(hits))

    fixed_accuracy = accuracy(lambda v: fx.to_float(golden.forward(golden_params, fx.to_raw(v, fmt))[1][0], fmt))
    float_accuracy = accuracy(lambda v: reference.forward(float_params, v)[1][0])
    print(f"test accuracy on {len(test_idx)} held-out samples: fixed point (ring) {fixed_accuracy:.4f}, "
          f"float64 {float_accuracy:.4f}")
    result = {"network": network, "pes": pes, "data": data.name, "training_samples": int(samples),
              "held_out_samples": int(len(test_idx)), "eta": eta, "alpha": alpha, "format": fmt.name,
              "epochs": epoch_rows, "fixed_point_accuracy": fixed_accuracy, "float64_accuracy": float_accuracy,
              "rtl": _train_on_rtl(layout, table, words, lm, golden_epochs) if rtl else None}
    result["bit_exact"] = all(row["bit_exact"] for row in epoch_rows) and (not rtl or result["rtl"]["bit_exact"])
    return result


def _train_on_rtl(layout, table, words, lm, golden_epochs):
    """Train on the simulated ring, one START per epoch, and compare its weights and losses, read back after every
    epoch, with the golden model's ``golden_epochs`` ((params, losses) per epoch)."""
    from nnaccel.hw.pe_ring.config import RingConfig
    from nnaccel.hw.pe_ring.ring import PERing
    from nnaccel.testbench.pe_ring.host import run_on_ring

    pes, epochs = layout.pes, len(golden_epochs)
    program_depth = max(1024, 1 << (len(words) - 1).bit_length())      # 1024 and 2048: the builds tests use
    ring = PERing(config=RingConfig(table=table, pes=pes, lm_depth=LM_DEPTH, program_depth=program_depth))
    reads = [(p, a) for p in range(pes) for a in range(layout.data)]
    with progress("epochs"):
        run = run_on_ring(ring, words, lm, reads, starts=epochs)
    exact_epochs = []
    for epoch, (params, losses) in enumerate(golden_epochs):
        image = run.lm_image(epoch, lm.shape)
        exact_epochs.append(all(np.array_equal(a, b) for a, b in zip(ebp.read_weights(layout, image), params))
                            and np.array_equal(image[:, layout.LOSS], losses))
    cycles = [int(c) for c in run.cycles]
    print(f"RTL ({pes}-PE ring, Verilator, through its host port): weights and losses equal the golden model's after "
          f"every epoch: {all(exact_epochs)} ({sum(exact_epochs)} of {epochs}); cycles per epoch {cycles}; "
          f"build {run.build_seconds:.0f} s, run {run.run_seconds:.0f} s")
    return {"bit_exact": all(exact_epochs), "bit_exact_epochs": exact_epochs, "cycles_per_epoch": cycles,
            "build_seconds": run.build_seconds, "simulation_seconds": run.run_seconds}


def _user_data(arguments):
    """The ``--data`` set and its training-sample count, checked against the ring's local memory."""
    data = load_data_set(arguments.data)
    features, hidden = data.features.shape[1], arguments.hidden or DATA_HIDDEN
    capacity = ring_capacity(features, hidden)
    if capacity < 1:
        raise InputError(f"{arguments.data}: {features} features do not fit the ring: a {features}-{hidden}-1 "
                         f"network on {DATA_PES} PEs leaves no room for a sample in the {LM_DEPTH}-word local memory "
                         f"(expected at most {_fitting_features(hidden)} features with --hidden {hidden})")
    held_out = max(1, len(data.features) // 5)
    samples = min(capacity, len(data.features) - held_out)
    if samples < len(data.features) - held_out:
        print(f"nnaccel: {arguments.data}: the ring's local memory holds {capacity} training samples of a "
              f"{features}-{hidden}-1 network; the other {len(data.features) - samples} are held out")
    return data, samples


def add_arguments(parser):
    """Options of ``nnaccel run ebp``."""
    parser.add_argument("--epochs", type=positive_int, default=10, metavar="N", help="training epochs (default 10)")
    parts = parser.add_mutually_exclusive_group()
    parts.add_argument("--only", choices=("pwl", "cycles", "16-5-1", "64-64-1"),
                       help="run one part only: the PWL error table, the cycle table, or one of the digit tasks")
    parts.add_argument("--data", metavar="FILE",
                       help="train on your data set instead of the digit tasks: a .npz with features (N x F) and "
                            "labels (N, 0/1), or a .csv with one sample per line and the 0/1 label last; features "
                            "are scaled to [0, 1], a fifth of the samples is held out")
    parser.add_argument("--hidden", type=positive_int, metavar="N",
                        help=f"hidden nodes of the network trained on --data (default {DATA_HIDDEN})")
    parser.add_argument("--rtl", action="store_true",
                        help=f"also train on the Verilator-simulated {DATA_PES}-PE ring (16-5-1, or the --data "
                             f"network)")
    parser.add_argument("--rtl64", action="store_true",
                        help="also train 64-64-1 on a simulated 64-PE ring (the build takes about 20 minutes)")
    parser.add_argument("--out", type=output_directory, metavar="DIR",
                        help="also draw the PWL activation against the exact sigmoid, as DIR/pwl_sigmoid.png (the "
                             "directory is made if missing)")
    add_json_argument(parser)


def run(arguments):
    """``nnaccel run ebp``; returns 0 when every training run is bit-exact against the golden model, 1 otherwise."""
    if arguments.hidden is not None and not arguments.data:
        raise InputError("--hidden applies to the network trained on --data only")
    if arguments.data:
        parts = {"data"}
    else:
        parts = {arguments.only} if arguments.only else {"pwl", "cycles", "16-5-1", "64-64-1"}
    document = {"job": "ebp", "pwl": None, "cycles": None, "training": []}
    if arguments.out is not None and "pwl" not in parts:
        raise InputError("--out applies to the PWL plot only (the default run or --only pwl)")
    if "pwl" in parts:
        document["pwl"] = pwl_rows()
        if arguments.out is not None:
            make_output_directory("--out", arguments.out)
            with writing("--out", arguments.out):
                plot_sigmoid(arguments.out / "pwl_sigmoid.png")
    if "cycles" in parts:
        document["cycles"] = cycle_rows()
    if "data" in parts:
        data, samples = _user_data(arguments)
        document["training"].append(train(data, hidden=arguments.hidden or DATA_HIDDEN, pes=DATA_PES,
                                           samples=samples, epochs=arguments.epochs, eta=0.5, alpha=0.3,
                                           rtl=arguments.rtl))
    if "16-5-1" in parts:
        document["training"].append(train(digits_task(4, classes=(0, 1)), hidden=5, pes=DATA_PES, samples=160,
                                           epochs=arguments.epochs, eta=0.5, alpha=0.3, rtl=arguments.rtl))
    if "64-64-1" in parts:
        document["training"].append(train(digits_task(8), hidden=64, pes=64, samples=300, epochs=arguments.epochs,
                                           eta=0.5, alpha=0.3, rtl=arguments.rtl64))
    document["bit_exact"] = all(run["bit_exact"] for run in document["training"])
    if arguments.json:
        write_json(arguments.json, document, schema=JSON_SCHEMA)
    return EXIT_DONE if document["bit_exact"] else EXIT_MISMATCH
