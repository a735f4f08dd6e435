"""A tiny labelled data set and a predictor trained on it in seconds, shared by the DCP tests."""

import pytest

from nnaccel.dse.dcp.dataset import Plan, assemble, label_chunk
from nnaccel.dse.dcp.space import space_named
from nnaccel.dse.dcp.workloads import DEFAULT_HARDWARE
from nnaccel.dse.shared.layer import Layer, dqn_layers
from nnaccel.dse.template.hardware import TemplateHardware
from nnaccel.hw.dqn.config import DqnConfig

TINY_PLAN = Plan(per_group=150, held_out_per_group=40,
                 train_layers=(*dqn_layers()[1:], Layer.conv(in_channels=8, in_size=10,
                                                            out_channels=16, kernel=3,
                                                            name="conv8")),
                 held_out_layers=(Layer.conv(in_channels=16, in_size=8, out_channels=8,
                                             kernel=3, name="conv16"),),
                 train_hardware=(DEFAULT_HARDWARE,),
                 held_out_hardware=(TemplateHardware(pe_x=12, pe_y=12, rf_words=32,
                                                     dataflow="RS"),))


@pytest.fixture(scope="session")
def space():
    return space_named("template")


def _labelled(space, plan):
    return assemble(space, [(case, label_chunk(case)) for case in plan.cases(space)])


def _trained_predictor(space, data, plan):
    """A small MLP trained for 40 epochs on ``plan``'s training split, frozen (skips without PyTorch)."""
    torch = pytest.importorskip("torch")
    from nnaccel.dse.dcp import predictor

    torch.set_num_threads(1)
    model = predictor.new_predictor(space, "mlp", width=64, depth=2)
    predictor.train(model, data.split(plan)["train"], space, epochs=40)
    return model.freeze()


@pytest.fixture(scope="session")
def tiny_data(space):
    return _labelled(space, TINY_PLAN)


@pytest.fixture(scope="session")
def tiny_predictor(space, tiny_data):
    return _trained_predictor(space, tiny_data, TINY_PLAN)


RTL_TINY_PLAN = Plan.for_space("rtl", per_group=150, held_out_per_group=40,
                               train_layers=(*dqn_layers()[1:], Layer.conv(in_channels=8, in_size=10,
                                                                          out_channels=16, kernel=3,
                                                                          name="conv8")),
                               held_out_layers=(Layer.conv(in_channels=16, in_size=8, out_channels=8,
                                                           kernel=3, name="conv16"),),
                               train_hardware=(DqnConfig(),),
                               held_out_hardware=(DqnConfig(modules=8, lanes=32),))


@pytest.fixture(scope="session")
def rtl_space():
    return space_named("rtl")


@pytest.fixture(scope="session")
def rtl_tiny_data(rtl_space):
    return _labelled(rtl_space, RTL_TINY_PLAN)


@pytest.fixture(scope="session")
def rtl_tiny_predictor(rtl_space, rtl_tiny_data):
    return _trained_predictor(rtl_space, rtl_tiny_data, RTL_TINY_PLAN)
