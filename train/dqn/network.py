"""The thesis network as a PyTorch module, its outputs on frame stacks, its greedy policy, and the export of its
weights to the project's layout (:func:`models.dqn.network.save_weights`) with the full 18 outputs."""

import numpy as np

from nnaccel.models.dqn.atari import frames_to_states
from nnaccel.models.dqn.network import dqn_layers

from nnaccel.train.dqn.breakout import FULL_TO_MINIMAL

__all__ = ["build_network", "q_values", "GreedyPolicy", "export_weights", "network_from_weights"]


def build_network(torch, actions):
    """The thesis network of :func:`models.dqn.network.dqn_layers` as a torch module."""
    nn = torch.nn
    conv1, conv2, fc1, fc2 = dqn_layers(actions)
    return nn.Sequential(
        nn.Conv2d(conv1.in_channels, conv1.out_channels, conv1.kernel, conv1.stride), nn.ReLU(),
        nn.Conv2d(conv2.in_channels, conv2.out_channels, conv2.kernel, conv2.stride), nn.ReLU(),
        nn.Flatten(),                      # channel-major, as models.dqn.network flattens CONV_2's output
        nn.Linear(fc1.inputs, fc1.outputs), nn.ReLU(),
        nn.Linear(fc2.inputs, fc2.outputs))


def q_values(torch, network, frames):
    """The network's outputs for uint8 frame stacks ``(N, 4, 84, 84)``, scaled as the accelerator gets them."""
    return network(torch.from_numpy(frames_to_states(frames)))


def _array(tensor):
    return np.ascontiguousarray(tensor.detach().numpy(), dtype=np.float32)


def _layers(network):
    return [module for module in network if hasattr(module, "weight")]


def export_weights(network):
    """The minimal-action network as float32 weights in the project's layout with the full 18 outputs."""
    conv1, conv2, fc1, fc2 = _layers(network)
    full = list(FULL_TO_MINIMAL)
    return {"conv1_w": _array(conv1.weight.permute(1, 2, 3, 0)), "conv1_b": _array(conv1.bias),
            "conv2_w": _array(conv2.weight.permute(1, 2, 3, 0)), "conv2_b": _array(conv2.bias),
            "fc1_w": _array(fc1.weight.T), "fc1_b": _array(fc1.bias),
            "fc2_w": _array(fc2.weight.T[:, full]), "fc2_b": _array(fc2.bias[full])}


def network_from_weights(torch, weights):
    """A torch network holding weights in the project's layout (any number of actions)."""
    network = build_network(torch, weights["fc2_w"].shape[1])
    conv1, conv2, fc1, fc2 = _layers(network)
    with torch.no_grad():
        for layer, key in ((conv1, "conv1"), (conv2, "conv2")):
            layer.weight.copy_(torch.from_numpy(weights[f"{key}_w"]).permute(3, 0, 1, 2))
            layer.bias.copy_(torch.from_numpy(weights[f"{key}_b"]))
        for layer, key in ((fc1, "fc1"), (fc2, "fc2")):
            layer.weight.copy_(torch.from_numpy(weights[f"{key}_w"]).T)
            layer.bias.copy_(torch.from_numpy(weights[f"{key}_b"]))
    return network


class GreedyPolicy:
    """The greedy action of a network whose output j is ALE action ``action_ids[j]``.

    With a ``teacher`` (a :class:`.scripted_player.ScriptedPlayer`) it also counts how often the greedy action
    does what the teacher would do in the same state: ``agreed`` of ``labelled`` states.
    """

    def __init__(self, torch, network, action_ids, teacher=None):
        self._torch, self._network, self._action_ids, self._teacher = torch, network, action_ids, teacher
        self.agreed = self.labelled = 0

    def reset(self):
        if self._teacher is not None:
            self._teacher.reset()

    def observe(self, action):
        if self._teacher is not None:
            self._teacher.observe(action)

    def choose(self, game):
        with self._torch.no_grad():
            best = int(q_values(self._torch, self._network, game.state()[None])[0].argmax())
        action = self._action_ids[best]
        if self._teacher is not None:
            self.agreed += FULL_TO_MINIMAL[action] == self._teacher.action(game.ram())
            self.labelled += 1
        return action

