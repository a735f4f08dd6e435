"""What every job shares: exit statuses, option types, progress display, JSON reports.

Exit statuses (:data:`EXIT_DONE` ...): 0 the job ran and its check passed, 1 the check failed (a
mismatch), 2 bad usage or bad input, 3 a tool or the simulator failed, 4 an internal error.

Human output goes to standard output, unless a job writes its JSON there (``--json -``): then
:func:`human_output_to_stderr` sends everything else to standard error, so standard output holds
exactly one JSON document.
"""

import argparse
import contextlib
import json
import math
import sys
import threading
import time
from pathlib import Path

import numpy as np

from nnaccel.hw.shared.float_format import BINARY32
from nnaccel.models.shared.float_arith import to_binary32
from nnaccel.models.shared.input_files import InputError
from nnaccel.sim.progress import (PLAIN_PROGRESS_SECONDS, PLAIN_QUIET_SECONDS, ProgressListener, on_terminal,
                                   reporting_to)

__all__ = ["EXIT_DONE", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_TOOL_FAILED", "EXIT_INTERNAL_ERROR", "ToolError",
           "positive_int", "non_negative_int", "probability", "output_file", "json_output", "add_json_argument",
           "add_simulator_argument", "human_output_to_stderr", "write_json", "json_float", "progress",
           "DQN_CLOCK_HZ", "simulate_dqn_plan", "golden_mismatches", "q_value_fields", "gflops", "layer_rows",
           "layer_table", "timing_notes"]

EXIT_DONE, EXIT_MISMATCH, EXIT_BAD_INPUT, EXIT_TOOL_FAILED, EXIT_INTERNAL_ERROR = 0, 1, 2, 3, 4


class ToolError(RuntimeError):
    """A tool, an optional package or a data source a job needs is missing or failed (exit 3); the message says
    which and how to get it."""


# ---- Option types -----------------------------------------------------------------------------------------

def _int_from(text, least, what):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be {what}, not {text!r}")
    return value


def positive_int(text):
    """argparse type: an integer >= 1 (argparse prints the message and exits 2 otherwise)."""
    return _int_from(text, 1, "a positive integer")


def non_negative_int(text):
    """argparse type: an integer >= 0."""
    return _int_from(text, 0, "a non-negative integer")


def probability(text):
    """argparse type: a number from 0 to 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, not {text!r}")
    return value


def output_file(text):
    """argparse type: a file to write, whose directory exists (checked before the job runs, not after)."""
    directory = Path(text).parent
    if not directory.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: the directory {directory} does not exist")
    return text


def json_output(text):
    """argparse type of ``--json``: ``-`` (standard output) or an :func:`output_file`."""
    return text if text == "-" else output_file(text)


def add_json_argument(parser, what="the report"):
    parser.add_argument("--json", metavar="FILE", type=json_output,
                        help=f"also write {what} as JSON to FILE (- for standard output: then only the JSON goes "
                             f"there, everything else to standard error)")


def add_simulator_argument(parser):
    from nnaccel.sim.toolchain import SIMULATORS

    parser.add_argument("--simulator", choices=SIMULATORS, default="verilator",
                        help="the HDL simulator: verilator (compiled C++, fast; default) or icarus (interpreted, "
                             "no C++ compile)")


# ---- Output streams and JSON --------------------------------------------------------------------------------

_streams = threading.local()


@contextlib.contextmanager
def human_output_to_stderr():
    """Inside the block, ``print`` goes to standard error; :func:`write_json` ``("-", ...)`` to standard output."""
    _streams.document = sys.stdout
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        del _streams.document


def write_json(path, document, *, schema):
    """Write ``document`` with its ``schema`` (``"nnaccel.<job>/<version>"``, first) as JSON to ``path``
    (``-``: standard output)."""
    text = json.dumps({"schema": schema, **document}, indent=2, allow_nan=False) + "\n"
    if path == "-":
        stream = getattr(_streams, "document", sys.stdout)
        stream.write(text)
        stream.flush()
        return
    path = Path(path)
    temporary = path.with_name(path.name + ".partial")
    try:
        temporary.write_text(text)
        temporary.replace(path)
    except OSError as error:
        raise InputError(f"{path}: cannot write the JSON report: {error.strerror}") from None
    print(f"nnaccel: report written to {path}")


def json_float(value):
    """A float for JSON, which has no NaN or infinities: those become the strings "NaN", "Infinity", "-Infinity"."""
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


# ---- Progress ----------------------------------------------------------------------------------------------

def progress(what="inferences", *, before_first=None):
    """A context in which every simulation reports its stages (:mod:`sim.progress`, whose display policy this
    follows): a tqdm bar per stage when the human output is a terminal, else plain lines: one per stage, one per
    count at most every :data:`PLAIN_PROGRESS_SECONDS`, and one every :data:`PLAIN_QUIET_SECONDS` while nothing
    changes.

    ``what`` names what the test module counts ("states", "images"); ``before_first`` what the simulation
    does before the first is done (e.g. "weight load").
    """
    stream = sys.stdout
    display = (_BarDisplay if on_terminal(stream) else _LineDisplay)(stream, what, before_first)
    return _closing(display)


@contextlib.contextmanager
def _closing(display):
    try:
        with reporting_to(display):
            yield display
    finally:
        display.close()


class _Display(ProgressListener):
    """What both displays share: the stage's label and counts, a lock, and a clock thread calling ``_tick``."""

    def __init__(self, stream, what, before_first):
        self._stream, self._what, self._before_first = stream, what, before_first
        self._stage, self._done, self._total = None, 0, None
        self._lock, self._closed = threading.Lock(), threading.Event()
        threading.Thread(target=self._clock, daemon=True, name="nnaccel-progress-display").start()

    def _clock(self):
        while not self._closed.wait(1):
            with self._lock:
                if self._stage is not None:
                    self._tick()

    def _label(self):
        """The stage's name; the simulation's says what it counts, or what it does before the first count."""
        if self._stage != "simulation":
            return self._stage
        if self._done or self._total:
            return f"simulation: {self._what}"
        return f"simulation: start-up{f' and {self._before_first}' if self._before_first else ''}"

    def stage(self, name, total=None):
        with self._lock:
            self._end_stage()
            self._stage, self._done, self._total = name, 0, total
            self._begin_stage()

    def update(self, done, total=None):
        with self._lock:
            if self._stage is None:
                return
            self._done, self._total = done, total if total is not None else self._total
            self._count()

    def close(self):
        self._closed.set()
        with self._lock:
            self._end_stage()
            self._stage = None


class _BarDisplay(_Display):
    """One tqdm bar per stage, on the terminal."""

    _COUNTED = "{desc}: {n_fmt}/{total_fmt} |{bar}| {elapsed}<{remaining}"

    def __init__(self, stream, what, before_first):
        from tqdm import tqdm

        self._tqdm, self._bar = tqdm, None
        super().__init__(stream, what, before_first)

    def _open(self):
        self._bar = self._tqdm(total=self._total, desc=f"nnaccel: {self._label()}", file=self._stream,
                               dynamic_ncols=True, bar_format=self._COUNTED if self._total else "{desc}: {elapsed}")

    def _begin_stage(self):
        self._open()

    def _end_stage(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _count(self):
        if self._bar.total is None and self._total:      # the first count: a bar with a total replaces the timer
            self._end_stage()
            self._open()
        self._bar.total = self._total
        self._bar.n = self._done
        self._bar.refresh()

    def _tick(self):
        self._bar.refresh()         # the elapsed time runs on in a stage that reports no counts


class _LineDisplay(_Display):
    """Plain lines, for logs and pipes."""

    def __init__(self, stream, what, before_first):
        self._start = self._stage_start = self._last_line = time.perf_counter()
        self._last_count = None
        super().__init__(stream, what, before_first)

    def _print(self, text):
        now = time.perf_counter()
        self._stream.write(f"nnaccel: {now - self._start:6.0f} s  {text}\n")
        self._stream.flush()
        self._last_line = now

    def _counts(self):
        unit = " objects" if self._stage == "C++ compile" else ""
        return f"{self._done} of {self._total if self._total is not None else '?'}{unit} done"

    def _begin_stage(self):
        self._stage_start, self._last_count = time.perf_counter(), None
        self._print(f"{self._label()}{f' (0 of {self._total})' if self._total else ''} ...")

    def _end_stage(self):
        seconds = time.perf_counter() - self._stage_start
        if self._stage is not None and seconds >= 1:
            self._print(f"{self._stage}: finished in {seconds:.1f} s")

    def _count(self):
        finished = self._total is not None and self._done >= self._total
        if (self._done, self._total) != self._last_count and (
                finished or time.perf_counter() - self._last_line >= PLAIN_PROGRESS_SECONDS):
            self._last_count = (self._done, self._total)
            self._print(f"{self._label()}: {self._counts()}")

    def _tick(self):
        if time.perf_counter() - self._last_line >= PLAIN_QUIET_SECONDS:
            counts = f": {self._counts()}" if self._done or self._total else ""
            self._print(f"{self._label()}{counts} (still running, {time.perf_counter() - self._stage_start:.0f} s "
                        f"in this stage)")


# ---- The DQN accelerator family: simulation, golden check and layer table (run dqn, play, run net) ----------

DQN_CLOCK_HZ = 100e6        # the thesis' clock: cycles -> time and GFLOPS in the DQN accelerator's reports

def simulate_dqn_plan(arguments, plan, *, states=None, play=None, what="states"):
    """Build the accelerator of ``plan.config`` (cached) and run ``plan`` on ``states`` (or the ``play`` host loop)
    with a progress display: the :class:`testbench.dqn.host.AcceleratorRun`.  ``arguments`` gives
    ``simulator`` and ``waves``."""
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.testbench.dqn.host import run_on_accelerator

    print(f"nnaccel: building {plan.config.modules} x {plan.config.lanes} MACs on {arguments.simulator} "
          f"(cached after the first run) and simulating ...", flush=True)
    with progress(what, before_first="weight load"):
        return run_on_accelerator(DqnAccelerator(config=plan.config), plan, states, play=play,
                                  simulator=arguments.simulator, waves=arguments.waves or None)


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

    def counts(name, row):
        return (f"{name:<12}{row['cycles']:>8}{row['ideal_cycles']:>8}{row['stall_cycles']:>8}"
                f"{row['drain_cycles']:>7}")

    def side(*columns):
        return f"  |{columns[0]:>10}{columns[1]:>8}" if reference else ""

    header = (f"{'layer':<12}{'cycles':>8}{'ideal':>8}{'stalls':>8}{'drain':>7}{'ms':>8}{'GFLOPS':>8}{'MAC use':>9}"
              + side(f"{reference['name']} ms" if reference else "", "GFLOPS"))
    lines = [header, "-" * len(header)]
    load = int(run.load_cycles[0])
    lines.append(f"{'INPUT':<12}{load:>8}{'':>8}{'':>8}{'':>7}{load / clock_hz * 1e3:>8.4f}{'-':>8}{'-':>9}"
                 + side(f"{reference['input'] / clock_hz * 1e3:.3f}" if reference else "", "-"))
    for row in rows:
        lines.append(f"{counts(row['name'], row)}{row['time_ms']:>8.4f}{row['gflops']:>8.1f}"
                     f"{row['mac_utilisation']:>9.1%}"
                     + side(number(row.get("thesis_ms"), 3), number(row.get("thesis_gflops"), 1)))
        if len(row["passes"]) > 1:
            for part in row["passes"]:
                lines.append(counts("  " + (part["name"][len(row["name"]):].strip() or "main"), part))
    total = int(run.total_cycles[0])
    macs = sum(layer.ideal_macs for layer in plan.layers)
    lines.append("-" * len(header))
    lines.append(f"{'total':<12}{total:>8}{sum(r['ideal_cycles'] for r in rows):>8}{'':>8}{'':>7}"
                 f"{total / clock_hz * 1e3:>8.4f}{gflops(macs, total, clock_hz):>8.1f}"
                 f"{macs / (total * plan.config.macs):>9.1%}"
                 + side(f"{reference['total'][0]:.3f}" if reference else "",
                        f"{reference['total'][1]:.1f}" if reference else ""))
    compared = (f"; {reference['name']} total {reference['total'][2]:,} cycles; input {load} cycles vs the "
                f"{reference['name']}' {reference['input']:,}") if reference else ""
    lines.append(f"(cycles: TOTAL_CYCLES and the per-pass counters of the first inference; a split layer's passes are "
                 f"listed under it (main, tail / partials: partial sums on idle modules, sum: their reduction); "
                 f"ideal = groups x (products + 1); stalls = cycles a product waited for the writer or the taps; "
                 f"drain = cycles at a pass's end waiting for its last writes{compared})")
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
