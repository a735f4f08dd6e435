"""How :func:`sim.harness.simulate` tells a waiting user what it is doing.

A caller that wants to show progress installs a listener for the calls it makes::

    with sim.progress.reporting_to(listener):
        run_on_accelerator(...)          # every simulate() inside reports to listener

``listener`` has two methods (:class:`ProgressListener` documents them and does nothing):

* ``stage(name, total=None)``: a new stage began.  The harness's stages, in order:
  ``"Verilog generation"``, ``"simulator build"`` (looking the build up in the cache, or waiting
  for another process that builds it), on a cache miss ``"Verilator: Verilog to C++"`` and
  ``"C++ compile"`` (``total``: the object files the Verilator-generated makefiles list so far) or
  ``"Icarus compile"``, then ``"simulation"``.
* ``update(done, total=None)``: progress inside the stage: compiled objects, or in
  ``"simulation"`` the ``done total`` a test module reported with
  :func:`testbench.shared.host_driver.report_progress` (inferences, steps, images).

Calls come from the caller's thread and, while a compile or a simulation runs, from one watcher
thread (never both at once).  Without a listener nothing is watched and nothing is reported.

The harness's side: :func:`report_stage`, :func:`build_progress` around a simulator build,
:func:`with_progress_file` (names the file a test module reports to, in its configuration's
``progress_file``) and :func:`simulation_progress` around the simulator run.

**The display policy of every command** (one place, used by the simulation displays of ``cli.report`` and by the
design-space searches and sweeps of ``dse``): a tqdm bar when the output is a terminal (:func:`on_terminal`), plain
lines otherwise (a log or a pipe gets no carriage returns): a line when a count starts, at most one every
:data:`PLAIN_PROGRESS_SECONDS` while it runs (and one every :data:`PLAIN_QUIET_SECONDS` in a stage that reports no
counts), one when it ends.  :func:`counting` is that display for a loop (a search's steps, a sweep's tasks): it
writes to standard output as it is at the call, so ``cli.report.human_output_to_stderr`` moves it with the rest.
"""

import contextvars
import re
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

__all__ = ["ProgressListener", "reporting_to", "current_listener", "report_stage", "build_progress",
           "with_progress_file", "simulation_progress", "makefile_objects", "PLAIN_PROGRESS_SECONDS",
           "PLAIN_QUIET_SECONDS", "on_terminal", "counting"]

POLL_SECONDS = 0.5
PLAIN_PROGRESS_SECONDS = 10     # without a terminal: a line with the counts at most this often
PLAIN_QUIET_SECONDS = 30        # ... and a line this often while nothing changes
_LISTENER = contextvars.ContextVar("nnaccel_progress_listener", default=None)


class ProgressListener:
    """What a progress listener is sent; subclass it and override what you show."""

    def stage(self, name, total=None):
        """Stage ``name`` began; ``total`` is its number of steps when known."""

    def update(self, done, total=None):
        """``done`` steps of the current stage are finished (``total`` when it is known or has changed)."""


@contextmanager
def reporting_to(listener):
    """Send the progress of every :func:`sim.harness.simulate` call inside the block to ``listener``."""
    token = _LISTENER.set(listener)
    try:
        yield listener
    finally:
        _LISTENER.reset(token)


def current_listener():
    """The listener installed by the innermost :func:`reporting_to`, or ``None``."""
    return _LISTENER.get()


def report_stage(name, total=None):
    """Tell the current listener, if any, that stage ``name`` began."""
    listener = current_listener()
    if listener is not None:
        listener.stage(name, total)


@contextmanager
def build_progress(simulator, build_dir):
    """Around a simulator build in ``build_dir``: Verilator's translation and C++ compile with a count of
    object files, or one stage for another simulator's compile."""
    listener = current_listener()
    if listener is None:
        yield
    elif simulator == "verilator":
        with _watching(_compile_watcher(build_dir, listener)):
            yield
    else:
        listener.stage(f"{simulator.capitalize()} compile")
        yield


def with_progress_file(config, run_dir):
    """``config`` with a ``progress_file`` in ``run_dir`` for the test module to report to, if a listener
    wants it and the caller named none."""
    config = dict(config)
    if current_listener() is not None:
        config.setdefault("progress_file", str(Path(run_dir) / "progress.txt"))
    return config


@contextmanager
def simulation_progress(config):
    """Around a simulator run: stage "simulation", with the ``done total`` of ``config["progress_file"]``."""
    listener = current_listener()
    if listener is None:
        yield
        return
    listener.stage("simulation")
    with _watching(_progress_file_watcher(config["progress_file"], listener)):
        yield


@contextmanager
def _watching(poll):
    """Call ``poll()`` from a background thread every :data:`POLL_SECONDS` while the block runs, and once
    more after it (so the final count is reported)."""
    stop = threading.Event()

    def loop():
        while not stop.wait(POLL_SECONDS):
            poll()

    thread = threading.Thread(target=loop, daemon=True, name="nnaccel-progress")
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        poll()


_MAKE_LIST = re.compile(r"^(VM_(?:CLASSES|SUPPORT|GLOBAL)_(?:FAST|SLOW)|VM_USER_CLASSES)\s*\+?=\s*\\?$")
_PARALLEL = re.compile(r"^VM_PARALLEL_BUILDS\s*=\s*(\d)", re.MULTILINE)


def makefile_objects(classes_makefile):
    """The object files one Verilator ``<prefix>_classes.mk`` (with its ``<prefix>.mk``) makes.

    Generated classes compile one object each, or one ``__ALL`` object when ``VM_PARALLEL_BUILDS`` is 0;
    global classes (the Verilator runtime) and user classes (cocotb's main) one each; a hierarchical
    block (a sub-directory) adds its wrapper object.
    """
    classes_makefile = Path(classes_makefile)
    text = classes_makefile.read_text(errors="replace")
    main_makefile = classes_makefile.with_name(classes_makefile.name.replace("_classes.mk", ".mk"))
    lists = _make_lists(text)
    if main_makefile.exists():
        lists.update({name: names for name, names in _make_lists(main_makefile.read_text(errors="replace")).items()
                      if name == "VM_USER_CLASSES"})
    generated = sum(len(lists.get(f"VM_{kind}_{speed}", ())) for kind in ("CLASSES", "SUPPORT")
                    for speed in ("FAST", "SLOW"))
    parallel = _PARALLEL.search(text)
    if parallel and parallel.group(1) == "0":
        generated = 1
    runtime = len(lists.get("VM_GLOBAL_FAST", ())) + len(lists.get("VM_GLOBAL_SLOW", ()))
    hierarchical_block = 1 if main_makefile.parent.name == main_makefile.stem else 0
    return generated + runtime + len(lists.get("VM_USER_CLASSES", ())) + hierarchical_block


def _make_lists(text):
    lists, current = {}, None
    for line in text.splitlines():
        match = _MAKE_LIST.match(line.strip())
        if match:
            current = lists.setdefault(match.group(1), [])
        elif current is not None and line.startswith((" ", "\t")) and line.strip() not in ("", "\\"):
            current.append(line.strip().rstrip("\\").strip())
        else:
            current = None
    return lists


def _compile_watcher(build_dir, listener):
    """A ``poll`` for :func:`_watching` during a Verilator build in ``build_dir``: stage "Verilator: Verilog to
    C++" until a makefile exists, then "C++ compile" with the object files made out of those listed."""
    build_dir = Path(build_dir)
    reported = {"stage": None, "progress": None}

    def poll():
        makefiles = list(build_dir.rglob("*_classes.mk"))
        if not makefiles:
            _enter(listener, reported, "Verilator: Verilog to C++")
            return
        total = 0
        for makefile in makefiles:
            try:
                total += makefile_objects(makefile)
            except OSError:
                pass                # being written; counted at the next poll
        done = sum(1 for _ in build_dir.rglob("*.o"))
        total = max(total, done)
        _enter(listener, reported, "C++ compile", total)
        if reported["progress"] != (done, total):
            reported["progress"] = (done, total)
            listener.update(done, total)

    listener.stage("Verilator: Verilog to C++")
    reported["stage"] = "Verilator: Verilog to C++"
    return poll


def _enter(listener, reported, stage, total=None):
    if reported["stage"] != stage:
        reported["stage"] = stage
        listener.stage(stage, total)


def _progress_file_watcher(progress_file, listener):
    """A ``poll`` for :func:`_watching` during a simulation: reports the ``done total`` the test module wrote."""
    progress_file = Path(progress_file)
    last = [None]

    def poll():
        try:
            done, total = (int(word) for word in progress_file.read_text().split())
        except (OSError, ValueError):
            return          # not written yet (the test module replaces it atomically)
        if (done, total) != last[0]:
            last[0] = (done, total)
            listener.update(done, total)

    return poll


# ---- The display policy --------------------------------------------------------------------------------------

def on_terminal(stream):
    """Whether ``stream`` is a terminal (a bar), not a log or a pipe (plain lines)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def counting(description, *, total=None, enabled=True, stream=None):
    """A counter of a loop's steps for the user (see the module docstring): ``update(steps=1)`` after each step,
    ``close()`` (or a ``with`` block) at the end.  ``total`` when known; ``enabled=False`` shows nothing."""
    stream = sys.stdout if stream is None else stream
    if not enabled:
        return _SilentCounter()
    if on_terminal(stream):
        from tqdm import tqdm

        return tqdm(total=total, desc=f"nnaccel: {description}", file=stream, leave=False, dynamic_ncols=True)
    return _LineCounter(stream, description, total)


class _SilentCounter:
    def update(self, steps=1):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _LineCounter(_SilentCounter):
    """Plain lines: at the start, at most every :data:`PLAIN_PROGRESS_SECONDS`, and at the end."""

    def __init__(self, stream, description, total):
        self._stream, self._description, self._total = stream, description, total
        self._done, self._start = 0, time.perf_counter()
        self._last_line, self._closed = self._start, False
        self._print(f"{description}{f' (0 of {total})' if total else ''} ...")

    def _print(self, text):
        self._stream.write(f"nnaccel: {time.perf_counter() - self._start:6.0f} s  {text}\n")
        self._stream.flush()
        self._last_line = time.perf_counter()

    def _counts(self):
        return f"{self._done} of {self._total}" if self._total else f"{self._done}"

    def update(self, steps=1):
        self._done += steps
        if time.perf_counter() - self._last_line >= PLAIN_PROGRESS_SECONDS:
            self._print(f"{self._description}: {self._counts()} done")

    def close(self):
        if not self._closed:
            self._closed = True
            self._print(f"{self._description}: {self._counts()} done in {time.perf_counter() - self._start:.1f} s")

