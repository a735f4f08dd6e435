"""Labelling through a Dask sweep on a small network space: the table's costs are the hardware
space's, a rerun labels nothing, the exhaustive search is the minimum, the split holds out networks."""

import numpy as np
import pytest

from nnaccel.dse.dance.cost_functions import CostFunction
from nnaccel.dse.dance.labels import adopt_stored_labels, label, split_networks
from nnaccel.dse.dance.network_space import NetworkSpace
from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

SMALL_SPACE = NetworkSpace((("c1", (24,)), ("k1", (5,)), ("s1", (2, 3)), ("c2", (48,)), ("k2", (3,)),
                            ("s2", (2,)), ("d1", (0, 32))))


# When another Dask cluster on the machine holds the scheduler's default HTTP port, distributed warns
# and leaves the probing socket open; neither concerns the labels.
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use", "ignore::ResourceWarning",
                            "ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_sweep_labels_every_network_on_every_point(tmp_path):
    store = tmp_path / "labels.sqlite"
    table, report, _ = label(TemplateHardwareSpace(), store_path=store, workers=1, progress=False,
                                 network_space=SMALL_SPACE)
    assert report.new >= 1 and not report.failures
    assert table.cost_cases == 4 * 4335
    reference = TemplateHardwareSpace().network_costs(
        [SMALL_SPACE.network(indices) for indices in SMALL_SPACE.all_points()])
    assert np.allclose(table.all_points(np.arange(4)), reference)
    points = np.array([0, 17, 4000, 4334])
    assert np.allclose(table.costs(np.arange(4), points), reference[np.arange(4), points])

    function = CostFunction("balanced", (0.01, 0.01, 3.0))
    best, costs = table.best(np.arange(4), function)
    scores = function(reference[..., 0], reference[..., 1], reference[..., 2])
    assert np.array_equal(best, scores.argmin(axis=1))
    few = table.best_few(np.arange(4), function, 5)
    assert np.array_equal(np.take_along_axis(scores, few, axis=1), np.sort(scores, axis=1)[:, :5])

    _, again, _ = label(TemplateHardwareSpace(), store_path=store, workers=1, progress=False,
                                 network_space=SMALL_SPACE)
    assert again.new == 0 and again.skipped == report.new

    adopted = TemplateHardwareSpace()
    assert adopt_stored_labels(adopted, network_space=SMALL_SPACE, store_path=store)
    adopted.unit_table = None       # the costs come from the store, not the cost model
    assert np.allclose(adopted.network_costs([SMALL_SPACE.network(i) for i in SMALL_SPACE.all_points()]), reference)
    again = TemplateHardwareSpace()     # a second adoption in the process reuses the columns decoded once
    again.label_columns = lambda *arguments: pytest.fail("the stored columns were decoded again")
    assert adopt_stored_labels(again, network_space=SMALL_SPACE, store_path=store)
    again.unit_table = None
    assert np.allclose(again.network_costs([SMALL_SPACE.network(i) for i in SMALL_SPACE.all_points()]), reference)
    larger = NetworkSpace(SMALL_SPACE.choices[:-1] + (("d1", (0, 32, 64)),))
    assert not adopt_stored_labels(TemplateHardwareSpace(), network_space=larger, store_path=store)
    assert not adopt_stored_labels(TemplateHardwareSpace(), store_path=tmp_path / "none.sqlite")
    assert not (tmp_path / "none.sqlite").exists()


def test_held_out_networks_are_disjoint_from_the_training_ones():
    train, held_out = split_networks(100, seed=3)
    assert len(held_out) == 20 and len(train) == 80
    assert not set(train) & set(held_out)
