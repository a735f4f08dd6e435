import numpy as np
import pytest

from nnaccel.dse.dcp.dataset import Plan, chunk_cases, collect, label_chunk
from nnaccel.dse.shared.layer import dqn_layers
from nnaccel.dse.template.mapping import Mapping

from .conftest import TINY_PLAN


def test_a_labelled_chunk_is_legal_codes_and_their_costs(space):
    case = chunk_cases(space, dqn_layers()[1:2], TINY_PLAN.train_hardware, 30)[0]
    result = label_chunk(case)
    layer, hardware = dqn_layers()[1], TINY_PLAN.train_hardware[0]
    codes = np.array(result["codes"])
    assert codes.shape == (30, 3, 7, 2)
    assert all(Mapping.from_code(c).violations(layer, hardware) == [] for c in codes)
    costs = space.evaluate(layer, hardware, codes)
    assert result["latency"] == costs["latency"].tolist()
    assert result["energy"] == costs["energy"].tolist()
    assert label_chunk(case) == result  # reproducible from the case's seed


def test_chunks_cover_the_plan():
    from nnaccel.dse.dcp.space import space_named

    cases = Plan(per_group=1100).cases(space_named("template"))
    counts = {}
    for case in cases:
        key = (case["layer"]["name"], tuple(sorted(case["hardware"].items())))
        counts[key] = counts.get(key, 0) + case["count"]
    assert set(counts.values()) == {1100, 500}
    assert len({(c["layer"]["name"], c["seed"], str(c["hardware"])) for c in cases}) == len(cases)


def test_splits_hold_out_dataflows_layers_and_hardware(tiny_data):
    parts = tiny_data.split(TINY_PLAN)
    train, dataflows = parts["train"], parts["held_out_dataflows"]
    assert len(train) > 300 and len(dataflows) > 30
    seen = {(l, c.tobytes()) for l, c in zip(train.layer_index, train.codes)}
    assert not any((l, c.tobytes()) in seen for l, c in zip(dataflows.layer_index, dataflows.codes))
    names = {tiny_data.layers[i].name for i in parts["held_out_layers"].layer_index}
    assert names == {"conv16"}
    assert {tiny_data.layers[i].name for i in train.layer_index}.isdisjoint(names)
    held_hardware = {tiny_data.hardware[i] for i in parts["held_out_hardware"].hardware_index}
    assert held_hardware == set(TINY_PLAN.held_out_hardware)
    assert len(parts["held_out_hardware"]) == 40 * 5  # every layer, trained or not
    layer_rows, hardware_rows, relaxed = train.inputs(space_of())
    assert layer_rows.shape == (len(train), 10) and relaxed.shape == (len(train), 3, 7, 2)


def space_of():
    from nnaccel.dse.dcp.space import space_named

    return space_named("template")


def test_the_sweep_labels_into_the_store_and_a_rerun_is_free(tmp_path, space):
    plan = Plan(per_group=20, held_out_per_group=10, train_layers=dqn_layers()[3:],
                held_out_layers=(), train_hardware=TINY_PLAN.train_hardware,
                held_out_hardware=())
    store = tmp_path / "labels.sqlite"
    first = collect(space, plan, store, workers=1, progress=False)
    assert len(first) == 20
    again = collect(space, plan, store, workers=1, progress=False)
    assert (again.codes == first.codes).all() and (again.latency == first.latency).all()
    with pytest.raises(ValueError, match="unknown design space 'eyeriss'; known: template, rtl"):
        from nnaccel.dse.dcp.space import space_named
        space_named("eyeriss")
