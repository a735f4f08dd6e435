"""sim.progress: what simulate reports to a listener, and the object count of a Verilator build."""

import io
import re

import numpy as np

from nnaccel.sim import progress
from nnaccel.sim.harness import simulate
from tests.sim.test_harness import DelayLine, stream_config


class Recorder(progress.ProgressListener):
    def __init__(self):
        self.events = []

    def stage(self, name, total=None):
        self.events.append(("stage", name, total))

    def update(self, done, total=None):
        self.events.append(("update", done, total))


def _classes_makefile(path, *, parallel, fast=(), slow=(), support=(), runtime=(), user=None):
    def listing(name, entries):
        return f"{name} += \\\n" + "".join(f"  {entry} \\\n" for entry in entries) + "\n"

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"VM_PARALLEL_BUILDS = {int(parallel)}\n" + listing("VM_CLASSES_FAST", fast)
                    + listing("VM_CLASSES_SLOW", slow) + listing("VM_SUPPORT_FAST", support)
                    + listing("VM_SUPPORT_SLOW", ()) + listing("VM_GLOBAL_FAST", runtime)
                    + listing("VM_GLOBAL_SLOW", ()))
    if user is not None:
        path.with_name(path.name.replace("_classes.mk", ".mk")).write_text(
            "VM_USER_CLASSES = \\\n" + "".join(f"\t{name} \\\n" for name in user) + "\n")


def test_object_count_of_flat_and_hierarchical_builds(tmp_path):
    top = tmp_path / "Vtop_classes.mk"
    _classes_makefile(top, parallel=True, fast=("Vtop", "Vtop___024root__0"), slow=("Vtop__Slow",),
                      support=("Vtop__Dpi",), runtime=("verilated", "verilated_vpi"), user=("verilator",))
    assert progress.makefile_objects(top) == 4 + 2 + 1
    block = tmp_path / "Vblock" / "Vblock_classes.mk"       # a hierarchical block in its own directory
    _classes_makefile(block, parallel=False, fast=("Vblock", "Vblock__0"), slow=("Vblock__Slow",))
    assert progress.makefile_objects(block) == 1 + 1        # one __ALL object and the block's wrapper


def test_compile_watcher_counts_objects_as_they_appear(tmp_path):
    recorder = Recorder()
    poll = progress._compile_watcher(tmp_path, recorder)
    poll()
    _classes_makefile(tmp_path / "Vtop_classes.mk", parallel=True, fast=("Vtop", "Vtop__1"), runtime=("verilated",))
    poll()
    (tmp_path / "Vtop.o").write_bytes(b"")
    poll()
    poll()                                                   # nothing new: nothing reported
    (tmp_path / "Vtop__1.o").write_bytes(b"")
    (tmp_path / "verilated.o").write_bytes(b"")
    poll()
    assert recorder.events == [("stage", "Verilator: Verilog to C++", None), ("stage", "C++ compile", 3),
                               ("update", 0, 3), ("update", 1, 3), ("update", 3, 3)]


def test_progress_file_watcher(tmp_path):
    recorder = Recorder()
    path = tmp_path / "progress.txt"
    poll = progress._progress_file_watcher(path, recorder)
    poll()                                                   # not written yet
    path.write_text("1 4\n")
    poll()
    poll()
    path.write_text("4 4\n")
    poll()
    assert recorder.events == [("update", 1, 4), ("update", 4, 4)]


def test_simulate_reports_its_stages_to_the_listener_installed():
    values = np.arange(20, dtype=np.uint64)
    recorder = Recorder()
    simulate(DelayLine(3), name="delay3", test_module="nnaccel.testbench.shared.stream_tb", stimulus={"data_in": values},
             config=stream_config(20))                       # built (or found) before the listener is installed
    with progress.reporting_to(recorder):
        result = simulate(DelayLine(3), name="delay3", test_module="nnaccel.testbench.shared.stream_tb",
                          stimulus={"data_in": values}, config=stream_config(20))
    assert np.array_equal(result.outputs["data_out"], values)
    assert recorder.events == [("stage", "Verilog generation", None), ("stage", "simulator build", None),
                               ("stage", "simulation", None)]
    assert progress.current_listener() is None


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_counting_prints_plain_lines_off_a_terminal_and_a_bar_on_one(monkeypatch):
    stream = io.StringIO()
    monkeypatch.setattr(progress, "PLAIN_PROGRESS_SECONDS", 0)       # a line at every count
    with progress.counting("labels", total=2, stream=stream) as counter:
        counter.update()
        counter.update()
    lines = [re.sub(r"^nnaccel: +\d+ s  ", "", line) for line in stream.getvalue().splitlines()]
    assert lines[:3] == ["labels (0 of 2) ...", "labels: 1 of 2 done", "labels: 2 of 2 done"]
    assert lines[3].startswith("labels: 2 of 2 done in ") and "\r" not in stream.getvalue()
    terminal = _Terminal()
    with progress.counting("labels", total=2, stream=terminal) as counter:
        counter.update(2)
    assert "\rnnaccel: labels:   0%|" in terminal.getvalue()     # a tqdm bar, cleared when done
    silent = io.StringIO()
    with progress.counting("labels", enabled=False, stream=silent) as counter:
        counter.update()
    assert silent.getvalue() == ""
