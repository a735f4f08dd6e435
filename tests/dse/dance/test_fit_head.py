"""DANCE's fit head: the exact fit column, the head's training and report, its checkpoint, and the co-search's fit
term (DANCE's only, and only where a fit head is shipped)."""

import argparse

import numpy as np
import pytest
import torch

from nnaccel.dse.dance import command, cosearch, fit_head
from nnaccel.dse.dance.network_space import NETWORK_SPACE, NetworkSpace

torch.set_num_threads(1)


def test_the_fit_column_is_the_spaces_own_feasibility():
    """On the small board conv 24x3x3/2, conv 40x5x5/2 fits no point and conv 24x3x3/2, conv 8x5x5/2 does."""
    from nnaccel.dse.dance.hardware_space import make_hardware_space

    from tests.dse.dance.test_cosearch import SMALL_BOARD_CHOICES

    space = NetworkSpace(SMALL_BOARD_CHOICES)
    assert list(fit_head.fit_labels(make_hardware_space("rtl-stream-1k"), space)) == [False, True]


def test_the_head_learns_a_rule_of_the_one_hots_and_reports_held_out_accuracy(tmp_path):
    """A rule the one-hots state (the first choice's first value fits, the others not) is learnt; the report's
    held-out figures are those of the held-out networks; the checkpoint loads to the same predictions."""
    fits = NETWORK_SPACE.all_points()[:, 0] == 0
    head, report = fit_head.train_fit_head(fits, epochs=60)
    assert report["held_out_accuracy"] == 1.0 and report["networks_fitting_no_point"] == int((~fits).sum())
    assert report["held_out_networks"] == 768
    fit_head.save(head, report, "test-space", tmp_path)
    loaded, loaded_report = fit_head.load("test-space", tmp_path)
    encodings = torch.as_tensor(NETWORK_SPACE.encode(NETWORK_SPACE.all_points()), dtype=torch.float32)
    assert torch.equal(loaded(encodings), head(encodings)) and loaded_report == report
    assert fit_head.load("no-such-space", tmp_path) == (None, None)
    assert "accuracy 100.0%" in fit_head.report_line(report)


def test_dances_loss_adds_the_probability_of_not_fitting():
    """With l2 0 DANCE's loss is CE plus fit weight x warm-up factor x the head's probability of not fitting; the
    FLOPs penalty's ignores the head."""
    from nnaccel.dse.dance import evaluator as ev
    from nnaccel.dse.dance.cost_functions import CostFunction
    from nnaccel.dse.dance.labels import distinct_units
    from nnaccel.dse.dance.training import TrainedEvaluator
    from nnaccel.dse.dance.unit_cost import UnitSumCostEstimator, unit_structure
    from nnaccel.dse.template.hardware_space import TemplateHardwareSpace

    space = TemplateHardwareSpace()
    cost = UnitSumCostEstimator(NETWORK_SPACE.encoding_width, space.encoding_width,
                                *unit_structure(distinct_units(space)[1], NETWORK_SPACE), np.zeros(3))
    evaluator = TrainedEvaluator(ev.freeze(ev.HardwareGenerator(NETWORK_SPACE.encoding_width, space.sizes)),
                                 ev.freeze(cost), CostFunction("edap"))
    head = ev.freeze(fit_head.FitHead(NETWORK_SPACE.encoding_width))
    one_hots = [torch.nn.functional.one_hot(torch.tensor(0), size).float() for size in NETWORK_SPACE.sizes]
    ce = torch.tensor(0.5)
    flops = cosearch._HardwareTerm("flops", 0.0, NETWORK_SPACE, space, evaluator, head, 2.0)
    assert float(flops.loss(ce, one_hots, 1.0, 1.0)) == 0.5
    dance = cosearch._HardwareTerm("dance", 0.0, NETWORK_SPACE, space, evaluator, head, 2.0)
    expected = 0.5 + 2.0 * 0.1 * float(torch.sigmoid(-head(torch.cat(one_hots)[None]))[0])
    assert float(dance.loss(ce, one_hots, 0.1, 1.0)) == pytest.approx(expected)


def test_only_dances_tasks_name_the_fit_head_and_only_where_one_is_shipped(monkeypatch):
    arguments = argparse.Namespace(space="rtl", cost="edap", seeds=(0,), methods=("flops", "dance"), lambdas=(0.01,),
                                   search_epochs=1, warmup_epochs=0, retrain_epochs=1, train_images=0, fit_weight=1.0)
    assert all("fit_head" not in case for case in command.cases(arguments))
    monkeypatch.setattr(fit_head, "fit_digest", lambda space_name: "0123456789abcdef")
    flops, dance = command.cases(arguments)
    assert "fit_head" not in flops and (dance["fit_head"], dance["fit_weight"]) == ("0123456789abcdef", 1.0)
