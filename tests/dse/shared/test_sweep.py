import os

from nnaccel.dse.shared.store import ResultStore
from nnaccel.dse.shared.sweep import run_sweep


def where_and_how(case):
    if case["fail"]:
        raise ValueError(f"case {case['id']} fails on purpose")
    with open("scratch.txt", "w") as scratch:
        scratch.write("a file in the task's own directory")
    return {"id": case["id"], "cwd": os.getcwd(), "threads": os.environ["NNACCEL_SIM_THREADS"]}


def test_local_cluster_sweep_isolates_tasks_and_reruns_only_what_is_missing(tmp_path):
    cases = [{"id": i, "fail": i == 3} for i in range(5)]
    with ResultStore(tmp_path / "r.sqlite") as store:
        report = run_sweep(where_and_how, cases, store=store, workers=1, progress=False)
        assert report.new == 4 and report.skipped == 0
        assert list(report.failures.values()) == ["ValueError('case 3 fails on purpose')"]
        results = [result for _, result in store.items()]
        assert sorted(r["id"] for r in results) == [0, 1, 2, 4]
        assert {r["threads"] for r in results} == {"1"}
        directories = {r["cwd"] for r in results}
        assert len(directories) == 4 and not any(os.path.exists(d) for d in directories)
        assert os.getcwd() not in directories

        cases[3]["fail"] = False  # a different case now: only it runs
        rerun = run_sweep(where_and_how, cases, store=store, workers=1, progress=False)
        assert (rerun.new, rerun.skipped, rerun.failures) == (1, 4, {})
        assert len(store) == 5
