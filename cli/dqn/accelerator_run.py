"""The DQN accelerator's runs as the jobs ``run dqn``, ``play``, ``run net`` and ``run mlperf-tiny`` report them:
a model file compiled on the configuration that holds it, the simulation with a progress display, the check of every
output against the golden model and of every counter against the compiler's prediction, the per-layer cycle table
from the hardware counters, and the distance from the model's own runtime."""

import numpy as np

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import BINARY32, float_format
from nnaccel.models.dqn.flat_map import flat_map_applies
from nnaccel.models.dqn.lowering import lower_graph, softmax
from nnaccel.models.dqn.model_files import read_model
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.dqn.sizing import fitting_config
from nnaccel.models.shared.float_arith import to_binary32
from nnaccel.models.shared.input_files import InputError

from nnaccel.cli.report import flat_map_fields, flat_options, json_float, progress

__all__ = ["DQN_CLOCK_HZ", "base_config", "compile_model", "model_macs", "describe_config",
           "grouped_notes", "flat_map_note",
           "runtime_difference", "simulate_dqn_plan", "golden_mismatches", "counter_mismatches", "q_value_fields",
           "gflops", "layer_rows", "layer_table", "timing_notes"]


DQN_CLOCK_HZ = 100e6        # the thesis' clock: cycles -> time and GFLOPS in the DQN accelerator's reports


def base_config(arguments):
    """The configuration ``--modules``, ``--lanes``, ``--format`` (and ``--flat-window``, ``--flat-slots``) ask for
    (RAMs grown later to hold the model); raises InputError naming the options."""
    flat = flat_map_fields(arguments)
    try:
        return DqnConfig(modules=arguments.modules, lanes=arguments.lanes, fmt=float_format(arguments.number_format),
                         **flat)
    except ValueError as error:
        raise InputError(" ".join(filter(None, [f"--modules {arguments.modules} --lanes {arguments.lanes}",
                                                flat_options(flat)])) + f": {error}") from None


def compile_model(path, base, *, split="auto"):
    """Read, lower and compile the model file at ``path`` on the smallest configuration like ``base`` that holds
    it: ``(graph, lowered network, plan)``; raises InputError (one line naming the file) for what cannot run."""
    graph = read_model(path)
    lowered = lower_graph(graph)
    try:
        _, plan = fitting_config(base, lowered.layers, lowered.weights, split=split)
    except ValueError as error:
        raise InputError(f"{path}: does not fit {base.modules} modules x {base.lanes} lanes: {error}") from None
    return graph, lowered, plan


def model_macs(graph):
    """The multiply-accumulates the model's own ops do (a depthwise convolution's, not its block-diagonal
    lowering's)."""
    return sum(graph.macs(op) for op in graph.ops)


def describe_config(config):
    """The configuration a model was compiled for, in words."""
    return (f"{config.modules} x {config.lanes} {config.fmt.name} MACs, {config.row_elements}-element rows, "
            f"activation RAMs of {config.activation_depth} words, weight RAM of {config.weight_depth} words, "
            f"{config.max_layers} descriptors" + (", max mode (max pooling)" if config.max_pooling else "")
            + (f", flat map ({config.flat_window_words}-word lane window"
               + (f", {config.flat_slots} channel slots)" if config.flat_slots > 1 else ")") if config.flat_slots
               else ""))


def flat_map_note(config, layers):
    """``[note]`` for a network whose depthwise layers the flat map would run where ``config`` has none (the options
    that build it), else ``[]``."""
    flat = [layer.name for layer in layers if isinstance(layer, ConvLayer) and not layer.maximum
            and flat_map_applies(layer)]
    if config.flat_slots or not flat:
        return []
    return [f"{', '.join(flat[:3])}{f' and {len(flat) - 3} more' if len(flat) > 3 else ''}: depthwise, run "
            f"block-diagonal here; --flat-window 6 --flat-slots 2 runs them on the flat map, the lanes over a "
            f"channel's positions (docs/dqn_accelerator.md, \"The flat map in the accelerator\")"]


def grouped_notes(notes):
    """The lowering's and the compiler's notes (``"layer: what"``), each ``what`` once with the layers it is about:
    ``"layer_1, layer_3: what"``."""
    layers = {}
    for note in notes:
        name, _, what = note.partition(": ")
        layers.setdefault(what or name, []).append(name if what else "")
    return [f"{', '.join(filter(None, names))}: {what}" if any(names) else what for what, names in layers.items()]


def runtime_difference(outputs, fmt, reference, *, softmax_first=False):
    """Largest |accelerator - reference| (the outputs: bits of ``fmt``, softmaxed first if the reference is
    probabilities) and that relative to the largest |reference|."""
    values = to_binary32(fmt, outputs).astype(np.float64)
    if softmax_first:
        values = softmax(values)
    distance = np.abs(values - reference.astype(np.float64))
    largest = float(distance.max())
    return largest, largest / max(float(np.abs(reference).max()), np.finfo(np.float64).tiny)


def simulate_dqn_plan(arguments, plan, *, states=None, play=None, what="states"):
    """Build the accelerator of ``plan.config`` (cached) and run ``plan`` on ``states`` (or the ``play`` host loop)
    with a progress display: the :class:`testbench.dqn.host.AcceleratorRun`.  ``arguments`` gives
    ``simulator``, ``waves`` and (``run dqn``, ``play``) ``board``: the weights then in the board's SDRAM model."""
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.testbench.dqn.host import run_on_accelerator

    board, limit = getattr(arguments, "board", None), {}
    if board:                       # the weights in the board's external memory (cli.dqn.board)
        from nnaccel.cli.dqn.board import BOARD_MAX_CYCLES, board_stream

        plan, limit = board_stream(board, plan), {"max_cycles": BOARD_MAX_CYCLES}
    print(f"nnaccel: building {plan.config.modules} x {plan.config.lanes} MACs on {arguments.simulator} "
          f"(cached after the first run) and simulating ...", flush=True)
    with progress(what, before_first="weight load"):
        return run_on_accelerator(DqnAccelerator(config=plan.config), plan, states, play=play,
                                  simulator=arguments.simulator, waves=arguments.waves or None, **limit)


def golden_mismatches(plan, states, run):
    """Every input's outputs, action and its value against the golden model: ``(mismatch lines, GoldenRuns,
    per input bit-exact)``."""
    from nnaccel.models.dqn.golden import golden_forward

    digits = plan.config.fmt.width // 4
    mismatches, goldens, exact = [], [], []
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        goldens.append(golden)
        found = len(mismatches)
        wrong = np.flatnonzero(run.q_values[index] != golden.q_values)
        for output in wrong[:4]:
            mismatches.append(f"state {index}: Q[{output}] = {run.q_values[index][output]:0{digits}X}, "
                              f"golden {golden.q_values[output]:0{digits}X}")
        if len(wrong) > 4:
            mismatches.append(f"state {index}: ... {len(wrong)} of {len(golden.q_values)} Q-values differ")
        if (run.actions[index], run.action_values[index]) != (golden.action, golden.action_value):
            mismatches.append(f"state {index}: ACTION {run.actions[index]} (value {run.action_values[index]:0{digits}X}), "
                              f"golden {golden.action} ({golden.action_value:0{digits}X})")
        exact.append(len(mismatches) == found)
    return mismatches, goldens, exact


def counter_mismatches(plan, run):
    """Every input's TOTAL_CYCLES and per-pass counters against the compiler's prediction: mismatch lines."""
    from nnaccel.models.dqn.plan import COUNTERS

    predicted = np.array([[layer.predicted[name] for name in COUNTERS] for layer in plan.layers])
    lines = []
    for index, (total, counters) in enumerate(zip(run.total_cycles, run.layer_counters)):
        if int(total) != plan.estimated_cycles:
            lines.append(f"input {index}: TOTAL_CYCLES {int(total)}, predicted {plan.estimated_cycles}")
        for layer, measured, expected in zip(plan.layers, counters, predicted):
            for name, value, prediction in zip(COUNTERS, measured, expected):
                if int(value) != int(prediction):
                    lines.append(f"input {index}: {layer.name} {name} {int(value)}, predicted {int(prediction)}")
    return lines


def q_value_fields(prefix, bits, fmt=BINARY32):
    """Outputs as floats and as bit patterns of ``fmt`` (hex), under ``prefix``."""
    bits = np.asarray(bits, dtype=np.uint32)
    return {f"{prefix}q_values": [json_float(value) for value in to_binary32(fmt, bits)],
            f"{prefix}q_bits": [f"0x{int(word):0{fmt.width // 4}X}" for word in bits]}


def gflops(macs, cycles, clock_hz):
    return 2 * macs * clock_hz / cycles / 1e9 if cycles else 0.0


def layer_rows(plan, run, clock_hz):
    """Per network layer: the counters of the first inference summed over its passes, with time, GFLOPS and
    MAC utilisation derived; ``passes`` lists the passes of a layer the compiler split."""
    counters = run.layer_counters[0]
    rows = {}
    for layer, (cycles, products, stalls, drains) in zip(plan.layers, counters):
        row = rows.setdefault(layer.network_layer, {
            "name": layer.network_layer, "cycles": 0, "product_cycles": 0, "ideal_cycles": 0, "stall_cycles": 0,
            "drain_cycles": 0, "macs": 0, "passes": []})
        counted = {"cycles": int(cycles), "product_cycles": int(products), "ideal_cycles": layer.product_cycles,
                   "stall_cycles": int(stalls), "drain_cycles": int(drains)}
        for key, value in counted.items():
            row[key] += value
        row["macs"] += layer.ideal_macs
        row["passes"].append({"name": layer.name, **counted})
    for row in rows.values():
        cycles = row["cycles"]
        row.update({"time_ms": cycles / clock_hz * 1e3, "gflops": gflops(row["macs"], cycles, clock_hz),
                    "mac_utilisation": row["macs"] / (cycles * plan.config.macs) if cycles else 0.0})
    return list(rows.values())


def layer_table(plan, run, rows, clock_hz, *, reference=None):
    """The per-layer cycle table of the first inference.  ``reference`` adds columns after a ``|``: a dict with
    ``name`` (e.g. "thesis"), ``input`` (its input-load cycles), ``total`` ((ms, GFLOPS, cycles)) and per row
    ``thesis_ms`` / ``thesis_gflops`` already in ``rows`` (None: "-")."""
    def number(value, digits):
        return f"{value:.{digits}f}" if value is not None else "-"

    def pass_label(row, part):
        return "  " + (part["name"][len(row["name"]):].strip() or "main")

    width = max([12, *(len(row["name"]) + 1 for row in rows),
                 *(len(pass_label(row, part)) + 1 for row in rows if len(row["passes"]) > 1 for part in row["passes"])])

    def counts(name, row):
        return (f"{name:<{width}}{row['cycles']:>8}{row['ideal_cycles']:>8}{row['stall_cycles']:>8}"
                f"{row['drain_cycles']:>7}")

    def side(*columns):
        return f"  |{columns[0]:>10}{columns[1]:>8}" if reference else ""

    header = (f"{'layer':<{width}}{'cycles':>8}{'ideal':>8}{'stalls':>8}{'drain':>7}{'ms':>8}{'GFLOPS':>8}"
              f"{'MAC use':>9}"
              + side(f"{reference['name']} ms" if reference else "", "GFLOPS"))
    lines = [header, "-" * len(header)]
    load = int(run.load_cycles[0])
    lines.append(f"{'INPUT':<{width}}{load:>8}{'':>8}{'':>8}{'':>7}{load / clock_hz * 1e3:>8.4f}{'-':>8}{'-':>9}"
                 + side(f"{reference['input'] / clock_hz * 1e3:.3f}" if reference else "", "-"))
    for row in rows:
        lines.append(f"{counts(row['name'], row)}{row['time_ms']:>8.4f}{row['gflops']:>8.1f}"
                     f"{row['mac_utilisation']:>9.1%}"
                     + side(number(row.get("thesis_ms"), 3), number(row.get("thesis_gflops"), 1)))
        if len(row["passes"]) > 1:
            for part in row["passes"]:
                lines.append(counts(pass_label(row, part), part))
    total = int(run.total_cycles[0])
    macs = sum(layer.ideal_macs for layer in plan.layers)
    lines.append("-" * len(header))
    lines.append(f"{'total':<{width}}{total:>8}{sum(r['ideal_cycles'] for r in rows):>8}{'':>8}{'':>7}"
                 f"{total / clock_hz * 1e3:>8.4f}{gflops(macs, total, clock_hz):>8.1f}"
                 f"{macs / (total * plan.config.macs):>9.1%}"
                 + side(f"{reference['total'][0]:.3f}" if reference else "",
                        f"{reference['total'][1]:.1f}" if reference else ""))
    compared = (f"; {reference['name']} total {reference['total'][2]:,} cycles; input {load} cycles vs the "
                f"{reference['name']}' {reference['input']:,}") if reference else ""
    lines.append(f"(cycles: TOTAL_CYCLES and the per-pass counters of the first inference; a split layer's passes are "
                 f"listed under it (main, tail / partials: partial sums on idle modules, @p: of position p, sum: their "
                 f"reduction); ideal = groups x products; stalls = cycles a product waited for the writer "
                 f"(with external weights also for its weights); "
                 f"drain = cycles a pass waited for the previous pass's last writes, or its start delay, before its "
                 f"first read (a pass sets up while the one before drains) and the last pass's final "
                 f"drain{compared})")
    return lines


def timing_notes(plan, run):
    """Lines about anything data-dependent in the timing (there should be none) or off the analytic count."""
    notes = []
    if len(set(run.total_cycles.tolist())) > 1:
        notes.append(f"note: TOTAL_CYCLES differs between states: {sorted(set(run.total_cycles.tolist()))}")
    for layer, products in zip(plan.layers, run.layer_counters[0][:, 1]):
        if products != layer.product_cycles:
            notes.append(f"note: {layer.name} took products on {products} cycles; the mapping needs "
                         f"{layer.product_cycles}")
    return notes
