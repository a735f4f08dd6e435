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

from nnaccel.models.shared.input_files import InputError
from nnaccel.sim.progress import (PLAIN_PROGRESS_SECONDS, PLAIN_QUIET_SECONDS, ProgressListener, on_terminal,
                                   reporting_to)

__all__ = ["EXIT_DONE", "EXIT_MISMATCH", "EXIT_BAD_INPUT", "EXIT_TOOL_FAILED", "EXIT_INTERNAL_ERROR", "ToolError",
           "positive_int", "non_negative_int", "probability", "output_file", "output_directory",
           "make_output_directory", "writing", "json_output", "add_json_argument",
           "add_simulator_argument", "add_flat_argument", "flat_map_fields", "flat_options", "human_output_to_stderr",
           "write_json", "json_float", "text_table", "progress"]

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
    """argparse type: a file to write, checked before the job runs, not after: its directory exists and the file can
    be written there (an existing file writable, or a new one created and removed at once)."""
    path = Path(text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: the directory {path.parent} does not exist")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write {text}: it is a directory")
    try:
        if path.exists():
            path.open("ab").close()
        else:
            path.open("xb").close()
            path.unlink()
    except OSError as error:
        raise argparse.ArgumentTypeError(f"cannot write {text}: {error.strerror}") from None
    return text


def output_directory(text):
    """argparse type: a directory to write into, existing or to be made (:func:`make_output_directory`)."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} exists and is not a directory")
    return path


def make_output_directory(option, path):
    """Make the directory ``path`` the user gave with ``option`` (and its parents) before the job's work, so that one
    that cannot be made is bad input (exit 2) said at once."""
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InputError(f"{option} {path}: cannot make the directory: {error.strerror}") from None


@contextlib.contextmanager
def writing(option, path):
    """Inside the block, a failed write of the file or directory ``path`` the user gave with ``option`` is bad input
    naming both (exit 2), not an internal error."""
    try:
        yield
    except OSError as error:
        raise InputError(f"{option} {path}: cannot write: {error.strerror or error}") from None


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


def add_flat_argument(parser):
    """``--flat-window WORDS`` and ``--flat-slots S`` (``run net``, ``run mlperf-tiny``, ``synth dqn --model``): the
    DQN accelerator built with the flat map (the configuration's ``flat_slots``, ``flat_window_words``:
    :func:`flat_map_fields`)."""
    parser.add_argument("--flat-window", type=int, default=0, metavar="WORDS",
                        help="build the flat map with a lane window of WORDS activation words per slot (the slots' "
                             "words even in total; default 0: no flat map): stride-1 depthwise layers with the lanes "
                             "over a channel's positions where the compiler predicts fewer cycles")
    parser.add_argument("--flat-slots", type=int, default=1, metavar="S",
                        help="with --flat-window: the flat map's channel slots, 1, 2 or 4 (default 1): a group "
                             "computes S channels' positions, each on modules / S modules")


def flat_map_fields(arguments):
    """The DQN configuration fields ``--flat-window`` / ``--flat-slots`` ask for (``{}`` without ``--flat-window``);
    the configuration checks their values."""
    window, slots = getattr(arguments, "flat_window", 0), getattr(arguments, "flat_slots", 1)
    return {"flat_slots": slots, "flat_window_words": window} if window else {}


def flat_options(fields):
    """The options that ask for the flat map of ``fields`` (:func:`flat_map_fields`' or a configuration's
    ``flat_slots`` and ``flat_window_words``), as typed: ``""`` without a flat map (no slots)."""
    window, slots = fields.get("flat_window_words"), fields.get("flat_slots", 0)
    return f"--flat-window {window}" + (f" --flat-slots {slots}" if slots != 1 else "") if slots else ""


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


def text_table(header, rows):
    """Lines of a table whose columns are as wide as their widest cell: the first left-aligned, the others right."""
    cells = [header, *rows]
    widths = [max(len(row[column]) for row in cells) for column in range(len(header))]
    lines = ["  ".join(cell.ljust(width) if column == 0 else cell.rjust(width)
                       for column, (cell, width) in enumerate(zip(row, widths))) for row in cells]
    return [lines[0], "-" * len(lines[0]), *lines[1:]]


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
