"""The super-network: a sampled path is exactly the candidate it names, the architecture gradient
flows through the straight-through gates, and a candidate's weights compile for the accelerator."""

import numpy as np
import torch

from nnaccel.dse.dance.network_space import NETWORK_SPACE
from nnaccel.dse.dance.supernet import ArchitectureParameters, Candidate, SuperNet
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.plan import compile_network

torch.set_num_threads(1)


def _copy_path(supernet, candidate):
    """The super-network's weights of ``candidate.network``'s path, copied into ``candidate``."""
    net = candidate.network
    with torch.no_grad():
        conv1 = supernet.conv1[f"{net.k1}_{net.s1}"]
        candidate.conv1.weight.copy_(conv1.weight[:net.c1])
        candidate.conv1.bias.copy_(conv1.bias[:net.c1])
        conv2 = supernet.conv2[f"{net.k2}_{net.s2}"]
        candidate.conv2.weight.copy_(conv2.weight[:net.c2, :net.c1])
        candidate.conv2.bias.copy_(conv2.bias[:net.c2])
        h = net.conv2_size
        if net.d1:
            dense1 = supernet.dense1[str(h)]
            candidate.dense1.weight.copy_(dense1.weight.view(-1, supernet.c2_max, h, h)[:net.d1, :net.c2]
                                          .reshape(net.d1, -1))
            candidate.dense1.bias.copy_(dense1.bias[:net.d1])
            candidate.dense2.weight.copy_(supernet.dense2.weight[:, :net.d1])
            candidate.dense2.bias.copy_(supernet.dense2.bias)
        else:
            direct = supernet.direct[str(h)]
            candidate.dense2.weight.copy_(direct.weight.view(10, supernet.c2_max, h, h)[:, :net.c2].reshape(10, -1))
            candidate.dense2.bias.copy_(direct.bias)


def test_a_sampled_path_is_the_candidate():
    torch.manual_seed(0)
    supernet = SuperNet()
    images = torch.rand(3, 1, 28, 28)
    for indices in NETWORK_SPACE.sample(np.random.default_rng(0), 6):
        candidate = Candidate(NETWORK_SPACE.network(indices))
        _copy_path(supernet, candidate)
        assert torch.allclose(supernet(images, list(indices)), candidate(images), atol=1e-5)


def test_the_loss_reaches_every_choice_of_the_sampled_path():
    torch.manual_seed(1)
    supernet, arch = SuperNet(), ArchitectureParameters(NETWORK_SPACE.sizes)
    one_hots, indices = arch.sample(tau=1.0)
    assert all(float(hot.detach().sum()) == 1.0 for hot in one_hots)
    gates = [hot[i] for hot, i in zip(one_hots, indices)]
    logits = supernet(torch.rand(4, 1, 28, 28), indices, gates)
    torch.nn.functional.cross_entropy(logits, torch.arange(4)).backward()
    assert all(logits_.grad is not None and logits_.grad.abs().sum() > 0 for logits_ in arch.logits)


def test_candidate_weights_compile_for_the_accelerator():
    network = NETWORK_SPACE.network((0, 1, 1, 0, 2, 0, 1))
    plan = compile_network(DqnConfig(), network.dqn_layers(), Candidate(network).dqn_weights())
    assert [layer.network_layer for layer in plan.layers][0] == "conv1"
    assert plan.actions == 10
