"""Sweeps on Dask: run a function over many cases as ``dask.distributed`` tasks and keep the
results in a ``ResultStore``.

``run_sweep(function, cases, store=...)``:

- skips every case already in the store (a rerun does only what is missing);
- runs each remaining case as one Dask task, by default on an embedded ``LocalCluster`` sized to
  the machine (one worker process per core, one thread each), or on an existing cluster given
  ``scheduler="tcp://HOST:PORT"`` (e.g. one that dask-jobqueue started on a Slurm cluster; one that does not answer
  within ``SCHEDULER_TIMEOUT_SECONDS`` raises ``SchedulerUnreachable``);
- in the task: a temporary working directory of its own (the current directory while the
  function runs, deleted afterwards) and the simulator's threads capped (``NNACCEL_SIM_THREADS``,
  ``OMP_NUM_THREADS`` set to 1); the function returns JSON data, not files;
- streams results back as they complete (``sim.progress.counting``: a bar on a terminal, plain lines in a log
  or a pipe) and stores each one as it
  arrives, once per case even if Dask ran a task twice after losing a worker (Dask reschedules a
  lost worker's tasks on the others).

``function(case)`` must be importable by the workers (a module-level function) and take and
return JSON values. A case whose task raised is not stored (the next run tries it again); the
sweep reports it in ``SweepReport.failures``.
"""

import argparse
import os
import tempfile
from dataclasses import dataclass, field

from nnaccel.dse.shared.store import case_key
from nnaccel.sim.progress import counting

SCHEDULER_TIMEOUT_SECONDS = 5      # a scheduler address that does not answer in this time is unreachable
THREAD_CAPS = {"NNACCEL_SIM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "MKL_NUM_THREADS": "1"}


def machine_cores():
    return len(os.sched_getaffinity(0))


def run_case(function, case):
    """Run ``function(case)`` in a fresh temporary directory with the thread caps set."""
    saved_env = {name: os.environ.get(name) for name in THREAD_CAPS}
    saved_cwd = os.getcwd()
    os.environ.update(THREAD_CAPS)
    try:
        with tempfile.TemporaryDirectory(prefix="nnaccel-task-") as workdir:
            os.chdir(workdir)
            try:
                return function(case)
            finally:
                os.chdir(saved_cwd)
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class SweepReport:
    """What a sweep did: ``new`` results stored now, ``skipped`` cases already stored,
    ``failures`` (case key -> error text) of tasks that raised."""

    new: int = 0
    skipped: int = 0
    failures: dict = field(default_factory=dict)


class SchedulerUnreachable(OSError):
    """The Dask scheduler at the address given does not answer (the message names the address)."""


def _client(scheduler, workers):
    # dask.distributed takes half a second to import: only sweeps pay for it, not every `nnaccel` call.
    from dask.distributed import Client, LocalCluster

    if scheduler is not None:
        try:
            return Client(scheduler, timeout=SCHEDULER_TIMEOUT_SECONDS), None
        except OSError as error:
            raise SchedulerUnreachable(f"the Dask scheduler at {scheduler} does not answer within "
                                       f"{SCHEDULER_TIMEOUT_SECONDS} s ({error})") from None
    cluster = LocalCluster(n_workers=workers or machine_cores(), threads_per_worker=1,
                           processes=True, dashboard_address=":0")
    return Client(cluster), cluster


def run_sweep(function, cases, *, store, scheduler=None, workers=None, progress=True,
              description="sweep"):
    """Run ``function`` over ``cases`` into ``store``; returns a ``SweepReport``."""
    cases = list(cases)
    done = store.done_keys()
    todo = {}
    for case in cases:
        key = case_key(case)
        if key not in done:
            todo.setdefault(key, case)
    report = SweepReport(skipped=len(cases) - len(todo))
    if not todo:
        return report
    client, cluster = _client(scheduler, workers)
    from dask.distributed import as_completed

    try:
        futures = {client.submit(run_case, function, case, key=f"{description}-{key}"): key
                   for key, case in todo.items()}
        with counting(description, total=len(futures), enabled=progress) as bar:
            for future in as_completed(futures):
                key = futures[future]
                if future.status == "error":
                    report.failures[key] = repr(future.exception())
                elif store.put(todo[key], future.result()):
                    report.new += 1
                future.release()
                bar.update()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return report


def scheduler_address(text):
    """argparse type: ``text`` if it is a Dask scheduler address, ``[PROTOCOL://]HOST:PORT`` with a port in
    1..65535 (the address is tried only when the sweep starts)."""
    host, _, port = text.rpartition("://")[2].rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"must be a Dask scheduler address, [PROTOCOL://]HOST:PORT (e.g. "
                                         f"tcp://10.0.0.1:8786), not {text!r}")
    return text

