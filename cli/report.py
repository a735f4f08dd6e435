"""What every job prints and writes: positive-integer options, a progress line while the simulator runs, JSON reports."""

import argparse
import json
import threading
import time
from pathlib import Path

__all__ = ["positive_int", "Progress", "write_json"]

_PROGRESS_SECONDS = 30       # a progress line at least this often, and whenever it changes


def positive_int(text):
    """argparse type: an integer >= 1 (argparse prints the message and exits 2 otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


class Progress:
    """Prints, every few seconds while the simulator runs, the elapsed time and the inferences done so far."""

    def __init__(self, progress_file, what):
        self._file, self._what = Path(progress_file), what
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._report, daemon=True)

    def _report(self):
        start, last_state, last_print = time.perf_counter(), None, 0.0
        while not self._stop.wait(1):
            try:
                done, total = self._file.read_text().split()
                state = f"simulating: {done} of {total} {self._what} done"
            except (OSError, ValueError):
                state = "building the model (cached after the first run) or loading the weights"
            elapsed = time.perf_counter() - start
            if state != last_state or elapsed - last_print >= _PROGRESS_SECONDS:
                print(f"nnaccel: {elapsed:5.0f} s  {state}", flush=True)
                last_state, last_print = state, elapsed

    def __enter__(self):
        self._file.unlink(missing_ok=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._file.unlink(missing_ok=True)


def write_json(path, document):
    path = Path(path)
    temporary = path.with_name(path.name + ".partial")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    temporary.replace(path)
    print(f"nnaccel: report written to {path}")
