"""A sweep through a real Dask cluster (a ``dask scheduler`` and two ``dask worker`` processes on
127.0.0.1) survives losing a worker mid-task: every case comes back, and is stored, exactly once."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from dask.distributed import Client, get_worker

from nnaccel.dse.shared.store import ResultStore
from nnaccel.dse.shared.sweep import run_sweep

ROOT = Path(__file__).resolve().parents[3]      # the repository: the workers import this module by name
DASK = Path(sys.executable).parent / "dask"
CASES = 10
TASK_SECONDS = 0.8


def slow_case(case):
    """A task that takes a while and logs where it started and finished."""
    worker = get_worker().name
    with open(case["log"], "a") as log:
        log.write(f"start {case['id']} {worker}\n")
    time.sleep(case["seconds"])
    with open(case["log"], "a") as log:
        log.write(f"end {case['id']} {worker}\n")
    return {"id": case["id"], "worker": worker}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(args, log_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    with open(log_path, "w") as log:
        return subprocess.Popen([str(DASK), *args], stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


def log_lines(path):
    return [line.split() for line in Path(path).read_text().splitlines()] if Path(path).exists() else []


@pytest.fixture
def cluster(tmp_path):
    address = f"tcp://127.0.0.1:{free_port()}"
    scheduler = start(["scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                       "--no-dashboard"], tmp_path / "scheduler.log")
    workers = {name: start(["worker", address, "--name", name, "--nthreads", "1", "--no-nanny",
                            "--host", "127.0.0.1", "--no-dashboard"], tmp_path / f"{name}.log")
               for name in ("w1", "w2")}
    processes = [scheduler, *workers.values()]
    try:
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address, workers
    finally:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def kill_w1_mid_task(task_log, worker, killed):
    """Once w1 has finished one task and started another, kill it (SIGKILL) mid-task."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lines = log_lines(task_log)
        finished = sum(1 for kind, _, name in lines if kind == "end" and name == "w1")
        started = sum(1 for kind, _, name in lines if kind == "start" and name == "w1")
        if finished >= 1 and started > finished:
            time.sleep(TASK_SECONDS / 3)
            os.killpg(worker.pid, signal.SIGKILL)
            killed.set()
            return
        time.sleep(0.02)


def test_sweep_survives_a_killed_worker(cluster, tmp_path):
    address, workers = cluster
    task_log = tmp_path / "tasks.log"
    cases = [{"id": i, "seconds": TASK_SECONDS, "log": str(task_log)} for i in range(CASES)]
    killed = threading.Event()
    killer = threading.Thread(target=kill_w1_mid_task, args=(task_log, workers["w1"], killed))
    killer.start()
    with ResultStore(tmp_path / "results.sqlite") as store:
        report = run_sweep(slow_case, cases, store=store, scheduler=address, progress=False)
        killer.join()
        assert killed.is_set(), "w1 was never seen mid-task"
        assert workers["w1"].wait(timeout=10) == -signal.SIGKILL

        assert report.failures == {}
        assert report.new == CASES
        stored = list(store.items())
        assert sorted(case["id"] for case, _ in stored) == list(range(CASES))
        assert all(result["id"] == case["id"] for case, result in stored)

        lines = log_lines(task_log)
        started_w1 = {int(i) for kind, i, name in lines if kind == "start" and name == "w1"}
        ended_w1 = {int(i) for kind, i, name in lines if kind == "end" and name == "w1"}
        interrupted = started_w1 - ended_w1
        assert len(interrupted) == 1, lines
        lost = interrupted.pop()
        assert [name for kind, i, name in lines if kind == "end" and int(i) == lost] == ["w2"]
        assert store.get(cases[lost]) == {"id": lost, "worker": "w2"}

        rerun = run_sweep(slow_case, cases, store=store, scheduler=address, progress=False)
        assert (rerun.new, rerun.skipped, rerun.failures) == (0, CASES, {})
        assert log_lines(task_log) == lines
