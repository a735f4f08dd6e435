from concurrent.futures import ProcessPoolExecutor

from nnaccel.dse.shared.store import ResultStore, case_key


def test_key_is_stable_across_key_order_and_distinct_across_values():
    assert case_key({"a": 1, "b": [1, 2]}) == case_key({"b": [1, 2], "a": 1})
    assert case_key({"a": 1}) != case_key({"a": 2})
    assert len(case_key({"a": 1})) == 64


def test_put_get_and_first_result_wins(tmp_path):
    with ResultStore(tmp_path / "r.sqlite") as store:
        assert store.get({"x": 1}) is None and {"x": 1} not in store
        assert store.put({"x": 1}, {"y": 2}) is True
        assert store.put({"x": 1}, {"y": 3}) is False
        assert store.get({"x": 1}) == {"y": 2} and {"x": 1} in store
        assert len(store) == 1


def test_results_survive_reopening(tmp_path):
    path = tmp_path / "sub" / "r.sqlite"
    with ResultStore(path) as store:
        for i in range(5):
            store.put({"i": i}, {"square": i * i})
    with ResultStore(path) as store:
        assert list(store.items()) == [({"i": i}, {"square": i * i}) for i in range(5)]
        assert store.done_keys() == {case_key({"i": i}) for i in range(5)}


def _write_range(path, start, stop):
    with ResultStore(path) as store:
        return sum(store.put({"i": i}, {"by": start}) for i in range(start, stop))


def test_concurrent_writers_store_each_case_once(tmp_path):
    path = tmp_path / "r.sqlite"
    ResultStore(path).close()
    with ProcessPoolExecutor(2) as pool:
        new = list(pool.map(_write_range, [path] * 4, [0, 50, 25, 75], [100, 150, 125, 175]))
    with ResultStore(path) as store:
        assert len(store) == 175
        assert sum(new) == 175
        assert sorted(case["i"] for case, _ in store.items()) == list(range(175))
