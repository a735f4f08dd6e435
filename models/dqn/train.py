"""Train the thesis' DQN to play Breakout (PyTorch, one CPU core) and export it in the project's layout.

    python -m nnaccel.models.dqn.train --out DIR            # the full run (about 2 to 3 hours on one busy core)
    python -m nnaccel.models.dqn.train --out DIR --smoke    # a few minutes: every phase, tiny budgets
    python -m nnaccel.models.dqn.train --out DIR --export models/dqn/data/dqn_breakout.npz   # ship the best network so far

Rerunning the same command continues from the last checkpoint in ``DIR``; the finished run prints and
writes its results again.  Only the learning rate may differ on a resume (``--learning-rate``): the
change is logged and listed in ``results.json``.  The run that made the shipped weights trained with
1e-4 for its first 16,772 updates (the imitation crept: validation mean 5 to 7), then with 5e-4,
the default since, which a margin-loss-only test on the same demonstrations had shown to learn faster.
Training is optional: only this module imports PyTorch (the ``[train]`` extra).  ``--export`` reads the latest
checkpoint, so it works while the run is going (and after it has finished: the checkpoint holds the same best
network as the run's own ``dqn_breakout.npz``).

Network and inputs.  The network is :func:`models.dqn.network.dqn_layers` exactly (CONV_1 16 8x8/4, CONV_2
32 4x4/2, FC_1 2592->256, ReLU after each, FC_2 256->actions).  Its input is what the accelerator gets:
:class:`models.dqn.atari.AtariGame` frames (frame skip 4, maximum of the last two emulator frames, the ALE's
grayscale, 84x84 bilinear, 4 stacked frames) scaled by :func:`models.dqn.atari.frames_to_states` (value / 255,
float32), so the exported float32 weights run unchanged in the golden model and the RTL.

Action set.  Training uses Breakout's minimal action set, NOOP FIRE RIGHT LEFT (ALE actions 0 1 3 4).  The
exported FC_2 has the full 18 outputs, output j = ALE action j as :class:`models.dqn.atari.AtariGame` and
``nnaccel play`` index them: column j is a copy of the column of the minimal action that ALE action j
does in Breakout (:data:`FULL_TO_MINIMAL`; checked in the emulator: UP and DOWN do NOOP, UPRIGHT RIGHT,
RIGHTFIRE moves like RIGHT and also serves the ball, and so on).  Copies have identical Q-values, and the
argmax takes the first of equal values, so the greedy action is always one of 0 1 3 4.

Method: imitation of a scripted player, then DQN fine-tuning.  Plain DQN needs about 10M frames, more than
one shared core gives in a few hours, so:

1. Demonstrations.  :class:`ScriptedPlayer` reads the ball and the paddle from the emulator's RAM
   (:data:`RAM_BALL_X`, :data:`RAM_BALL_Y`, :data:`RAM_PADDLE_X`), predicts where the ball crosses the
   paddle's row (walls reflect it) and moves the paddle there; it plays ``demo_steps`` agent steps.
2. Pre-training on them with the DQfD loss (Hester et al., 2018): 1-step and n-step double-DQN targets
   from a target network with the Huber loss, plus a large-margin loss that puts the scripted player's
   action at least ``margin`` above every other action, plus L2 weight decay.  The TD terms give the
   outputs real Q-value semantics (clipped rewards, discount ``gamma``; losing a life ends the TD chain).
3. DAgger: the network plays (epsilon-greedy), the scripted player labels every state the network visits
   with the action it would take there, and training goes on with the same loss on all the data.
4. DQN fine-tuning: the margin loss's weight falls linearly to zero over the first half of the phase,
   leaving double DQN with n-step returns on the network's own games.

Every ``eval_every`` agent steps the network plays the validation games (seeds 1000, 1001, ...,
epsilon 0.05); the network with the best validation mean is exported (``dqn_breakout.npz``, the layout of
:func:`models.dqn.network.save_weights`), then evaluated on the test games (seeds 0..9, epsilon 0.05)
next to the random policy and the scripted player on the same seeds.  A game is one full Breakout game
(5 lives) of at most ``max_episode_steps`` agent steps; the epsilon-random actions come from the minimal
set, drawn by ``numpy.random.default_rng(seed)``.  The ALE itself is deterministic (no sticky actions).

Outputs in ``--out``: ``curve.csv`` (one row per evaluation), ``episodes.csv`` (every training game),
``curve.png``, ``dqn_breakout.npz``, ``results.json`` (scores per game, means, wall time, method), and
``checkpoint/`` (network, target, optimiser, random states, replay buffer).  The wall time counts the
time spent training, summed over restarts.
"""

import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")      # one core: NumPy's BLAS would otherwise use every core

import argparse  # noqa: E402
import copy  # noqa: E402
import csv  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, fields  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from nnaccel.models.dqn.atari import FRAME_SIZE, STATE_FRAMES, AtariGame, frames_to_states, recorded_states  # noqa: E402
from nnaccel.models.dqn.episodes import EVAL_EPSILON, MAX_EPISODE_STEPS, evaluate  # noqa: E402
from nnaccel.models.dqn.network import dqn_layers, load_weights, reference_q_values, save_weights  # noqa: E402

GAME = "breakout"
MINIMAL_ACTIONS = (0, 1, 3, 4)     # ALE actions (= AtariGame action indices) NOOP, FIRE, RIGHT, LEFT
NOOP, FIRE, RIGHT, LEFT = range(len(MINIMAL_ACTIONS))
# For each of the 18 ALE actions, the minimal action it does in Breakout (its index in MINIMAL_ACTIONS).
FULL_TO_MINIMAL = (NOOP, FIRE, NOOP, RIGHT, LEFT, NOOP, RIGHT, LEFT, RIGHT, LEFT,
                   FIRE, RIGHT, LEFT, FIRE, RIGHT, LEFT, RIGHT, LEFT)
VALIDATION_SEEDS_FROM = 1000
METHOD = ("imitation of a scripted Breakout player that reads the ball and paddle from the emulator's RAM (DQfD loss: "
          "1-step and n-step double-DQN TD with a target network and Huber loss, large-margin supervised loss), "
          "DAgger relabelling of the states the network visits, then DQN fine-tuning (margin weight annealed to zero)")
TEST_SEEDS = tuple(range(10))

# Breakout's RAM (found by correlating RAM bytes with the ball and paddle pixels of the screen).
RAM_BALL_X = 99          # ball's left edge: screen x = RAM - 49 (the ball is 2 pixels wide)
RAM_BALL_Y = 101         # ball's top edge: screen y = RAM + 9; 0 while no ball is in play (serve with FIRE)
RAM_PADDLE_X = 72        # paddle's left edge: screen x = RAM - 47 (16 pixels wide); 55..191
BALL_X_OFFSET, BALL_Y_OFFSET, PADDLE_CENTRE_OFFSET = 49, 9, 39
BALL_LEFT_MIN, BALL_LEFT_MAX = 8, 150       # the ball's left edge between the side walls
HIT_Y = 186              # screen y of the ball's top edge when it meets the paddle (top row 189)
# The ALE drives Breakout's paddle controller: each frame of RIGHT or LEFT moves a potentiometer one step
# within its range ((790196 - 27450) / 2 / 23000 = 16.58 steps each side of the reset position); the paddle
# settles at RAM_PADDLE_X = 146 + 5.6 * steps (clipped to 55..191) and follows with about 2 frames' lag.
PADDLE_STEPS_MAX = (790196 - 27450) / 2 / 23000
PADDLE_RESET_X, PADDLE_PIXELS_PER_STEP, PADDLE_X_MIN, PADDLE_X_MAX = 146, 5.6, 55, 191
PADDLE_LAG_FRAMES = 2
FRAME_SKIP_FRAMES = 4


@dataclass(frozen=True)
class Settings:
    """Hyperparameters and budgets (agent steps: 4 emulator frames each)."""
    seed: int = 0
    demo_steps: int = 50_000          # scripted-player steps (phase 1)
    demo_epsilon: float = 0.01        # random actions during the demonstrations (labels stay the player's)
    pretrain_updates: int = 10_000    # phase 2
    dagger_steps: int = 100_000       # phase 3
    dagger_epsilon: tuple = (0.1, 0.01)   # linear over phase 3
    finetune_steps: int = 60_000      # phase 4
    finetune_epsilon: float = 0.01
    train_every: int = 8              # one update per this many agent steps (phases 3 and 4)
    batch: int = 32
    learning_rate: float = 5e-4       # may change on a resume (RESUMABLE_CHANGES)
    weight_decay: float = 1e-5
    gamma: float = 0.99
    n_step: int = 10
    n_step_weight: float = 1.0
    margin: float = 0.8
    margin_weight: float = 1.0
    target_every: int = 2_000         # updates between target-network copies
    replay_capacity: int = 200_000
    gradient_clip: float = 10.0
    eval_every: int = 20_000          # agent steps between validation evaluations (phases 3, 4)
    eval_episodes: int = 5
    max_episode_steps: int = MAX_EPISODE_STEPS
    checkpoint_seconds: float = 600.0


RESUMABLE_CHANGES = ("learning_rate",)     # the optimiser takes the new value; results.json lists the change
SMOKE = dict(demo_steps=3_000, pretrain_updates=300, dagger_steps=3_000, finetune_steps=3_000,
             replay_capacity=20_000, eval_every=2_000, eval_episodes=2, max_episode_steps=2_000,
             target_every=200, checkpoint_seconds=60.0)


def _torch():
    try:
        import torch
    except ImportError:
        raise SystemExit("training needs PyTorch: `pip install -e .[train]` (torch 2.13.0, the CPU build)") from None
    torch.set_num_threads(1)
    return torch


# ---- The scripted player --------------------------------------------------------------------------------------

class ScriptedPlayer:
    """Breakout from the RAM: serve, predict where the ball crosses the paddle's row, steer the paddle there.

    ``action(ram)`` is an index into :data:`MINIMAL_ACTIONS`.  The player keeps the ball's last position (for
    its velocity) and the paddle controller's position, which the RAM does not hold: ``observe(action)``
    must see every action played (an ALE action index), whoever chose it, and ``reset()`` a new game.
    As a policy of :mod:`models.dqn.episodes`, ``choose(game)`` gives its ALE action.
    """

    def __init__(self):
        self.reset()

    def reset(self):
        self._paddle_steps = 0.0
        self._last_ball = None

    def observe(self, action):
        direction = {RIGHT: 1, LEFT: -1}.get(FULL_TO_MINIMAL[action], 0)
        self._paddle_steps = self._clip_steps(self._paddle_steps + direction * FRAME_SKIP_FRAMES)

    @staticmethod
    def _clip_steps(steps):
        return min(max(steps, -PADDLE_STEPS_MAX), PADDLE_STEPS_MAX)

    def action(self, ram):
        if ram[RAM_BALL_Y] == 0:
            self._last_ball = None
            return FIRE
        x, y = int(ram[RAM_BALL_X]) - BALL_X_OFFSET, int(ram[RAM_BALL_Y]) + BALL_Y_OFFSET
        target, frames = x + 1, FRAME_SKIP_FRAMES + PADDLE_LAG_FRAMES
        if self._last_ball is not None:
            velocity_x = (x - self._last_ball[0]) / FRAME_SKIP_FRAMES
            velocity_y = (y - self._last_ball[1]) / FRAME_SKIP_FRAMES
            if velocity_y > 0 and y < HIT_Y + 4:
                frames = max((HIT_Y - y) / velocity_y, 0.0)
                target = self._reflect(x + velocity_x * frames) + 1
                frames = int(round(frames))
        self._last_ball = (x, y)
        return self._steer(target + PADDLE_CENTRE_OFFSET, max(frames - PADDLE_LAG_FRAMES, 0))

    @staticmethod
    def _reflect(x):
        span = BALL_LEFT_MAX - BALL_LEFT_MIN
        folded = (x - BALL_LEFT_MIN) % (2 * span)
        return BALL_LEFT_MIN + (folded if folded <= span else 2 * span - folded)

    def _steer(self, target, frames):
        """The move now (NOOP, RIGHT or LEFT) after which some later moves bring the paddle closest to
        ``target`` (RAM_PADDLE_X units) in ``frames`` frames; NOOP on ties."""
        best = None
        for action, direction in ((NOOP, 0), (RIGHT, 1), (LEFT, -1)):
            now = min(frames, FRAME_SKIP_FRAMES)
            reachable = np.array([self._clip_steps(self._paddle_steps + direction * now)])
            for remaining in range(frames - now, 0, -FRAME_SKIP_FRAMES):
                moved = reachable[:, None] + np.array([0, 1, -1]) * min(remaining, FRAME_SKIP_FRAMES)
                reachable = np.unique(np.clip(moved, -PADDLE_STEPS_MAX, PADDLE_STEPS_MAX).round(6))
            paddle_x = np.clip(PADDLE_RESET_X + PADDLE_PIXELS_PER_STEP * reachable, PADDLE_X_MIN, PADDLE_X_MAX)
            error = float(np.abs(paddle_x - target).min())
            if best is None or error < best[0] - 1e-9:
                best = (error, action)
        return best[1]

    def choose(self, game):
        return MINIMAL_ACTIONS[self.action(game.ram())]


# ---- Policies and evaluation ----------------------------------------------------------------------------------

class GreedyPolicy:
    """The greedy action of a network whose output j is ALE action ``action_ids[j]``."""

    def __init__(self, torch, network, action_ids):
        self._torch, self._network, self._action_ids = torch, network, action_ids

    def reset(self):
        pass

    def observe(self, action):
        pass

    def choose(self, game):
        with self._torch.no_grad():
            best = int(q_values(self._torch, self._network, game.state()[None])[0].argmax())
        return self._action_ids[best]


# ---- Network ---------------------------------------------------------------------------------------------------

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


# ---- Replay buffer --------------------------------------------------------------------------------------------

class ReplayBuffer:
    """A ring of agent steps, each stored once as the newest frame of the state it was taken in.

    Entry i holds that frame, the action played, the scripted player's label, the clipped reward, whether
    a life or the game ended (``terminal``: no bootstrapping past it), whether the game ended or was cut
    (``last``: the next entry starts a new game) and the index of its game's first entry.  A state is the
    entry's frame and the three before it within its game, the first frame repeated at a game's start, as
    :class:`models.dqn.atari.AtariGame` stacks them.  Indices are global (``count`` entries ever added).
    """

    ARRAYS = ("frames", "actions", "labels", "rewards", "terminal", "last", "game_start")

    def __init__(self, capacity):
        self.capacity = capacity
        self.frames = np.zeros((capacity, FRAME_SIZE, FRAME_SIZE), np.uint8)
        self.actions = np.zeros(capacity, np.uint8)
        self.labels = np.zeros(capacity, np.uint8)
        self.rewards = np.zeros(capacity, np.float32)
        self.terminal = np.zeros(capacity, bool)
        self.last = np.zeros(capacity, bool)
        self.game_start = np.zeros(capacity, np.int64)
        self.count = 0

    def add(self, frame, action, label, reward, terminal, last):
        slot = self.count % self.capacity
        previous = (self.count - 1) % self.capacity
        new_game = self.count == 0 or self.last[previous]
        self.frames[slot], self.actions[slot], self.labels[slot] = frame, action, label
        self.rewards[slot], self.terminal[slot], self.last[slot] = np.sign(reward), terminal, last
        self.game_start[slot] = self.count if new_game else self.game_start[previous]
        self.count += 1

    def cut(self):
        """End the current game here (a restart begins a new one)."""
        if self.count:
            self.last[(self.count - 1) % self.capacity] = True

    def states(self, indices):
        offsets = indices[:, None] + np.arange(1 - STATE_FRAMES, 1)
        offsets = np.maximum(offsets, self.game_start[indices % self.capacity][:, None])
        return self.frames[offsets % self.capacity]

    def sample(self, rng, size, n_step, gamma):
        """A batch: states, actions, labels, 1-step and n-step (return, discount, bootstrap state, valid)."""
        oldest = max(self.count - self.capacity, 0) + STATE_FRAMES
        indices = rng.integers(oldest, self.count - n_step, size=size)
        slots = indices % self.capacity
        one = self._returns(indices, 1, gamma)
        many = self._returns(indices, n_step, gamma)
        return {"states": self.states(indices), "actions": self.actions[slots], "labels": self.labels[slots],
                **{f"{key}1": value for key, value in one.items()}, **{f"{key}n": value for key, value in many.items()}}

    def _returns(self, indices, steps, gamma):
        """Discounted clipped rewards over up to ``steps`` entries; the discount left for the bootstrap (0 when
        a terminal entry stopped it); valid False where a cut game (no terminal) stopped it."""
        total = np.zeros(len(indices), np.float32)
        discount = np.ones(len(indices), np.float32)
        running = np.ones(len(indices), bool)
        valid = np.ones(len(indices), bool)
        for offset in range(steps):
            slots = (indices + offset) % self.capacity
            total += np.where(running, discount * self.rewards[slots], 0)
            discount = np.where(running, discount * gamma, discount)
            ended = running & self.terminal[slots]
            cut = running & self.last[slots] & ~self.terminal[slots]
            discount[ended] = 0.0
            valid &= ~cut
            running &= ~(self.terminal[slots] | self.last[slots])
        return {"return": total, "discount": discount, "next": self.states(indices + steps), "valid": valid}

    def save(self, directory):
        used = min(self.count, self.capacity)
        for name in self.ARRAYS:
            np.save(directory / f"replay_{name}.npy", getattr(self, name)[:used])

    def load(self, directory, count):
        self.count = count
        for name in self.ARRAYS:
            stored = np.load(directory / f"replay_{name}.npy")
            getattr(self, name)[:len(stored)] = stored


# ---- Training -------------------------------------------------------------------------------------------------

class Trainer:
    """The four phases, with checkpoints; :meth:`run` continues wherever the checkpoint left off."""

    def __init__(self, torch, settings, out):
        self.torch, self.settings, self.out = torch, settings, out
        torch.manual_seed(settings.seed)
        self.rng = np.random.default_rng(settings.seed)
        self.network = build_network(torch, len(MINIMAL_ACTIONS))
        self.target = copy.deepcopy(self.network)
        self.optimiser = torch.optim.Adam(self.network.parameters(), lr=settings.learning_rate,
                                          weight_decay=settings.weight_decay)
        self.replay = ReplayBuffer(settings.replay_capacity)
        self.player = ScriptedPlayer()
        self.steps = self.updates = self.games = 0
        self.wall_seconds = 0.0
        self.curve, self.episodes, self.baselines = [], [], {}
        self.changes = []             # settings changed by a resume: [{"steps", "updates", name: [old, new]}]
        self.best = None              # {"mean", "steps", "updates", "phase", "state"}
        self.metrics = self._fresh_metrics()
        self.last_evaluated_at = 0
        self._session_start = time.perf_counter()
        self._last_checkpoint = time.perf_counter()
        self._game = None

    # -- bookkeeping --

    @staticmethod
    def _fresh_metrics():
        return {"td": [], "td_n": [], "margin": [], "agreement": []}

    def phase(self):
        s = self.settings
        if self.steps < s.demo_steps:
            return "demo"
        if self.updates < s.pretrain_updates:
            return "pretrain"
        if self.steps < s.demo_steps + s.dagger_steps:
            return "dagger"
        if self.steps < s.demo_steps + s.dagger_steps + s.finetune_steps:
            return "finetune"
        return "done"

    def elapsed(self):
        return self.wall_seconds + time.perf_counter() - self._session_start

    def log(self, message):
        hours = self.elapsed() / 3600
        print(f"[{time.strftime('%H:%M:%S')} {hours:5.2f} h] {message}", flush=True)

    # -- acting --

    def _new_game(self):
        self._game = AtariGame(GAME, seed=self.settings.seed + 10_000 + self.games)
        self.player.reset()
        self._game_score, self._game_steps = 0.0, 0

    def _epsilon(self, phase):
        s = self.settings
        if phase == "demo":
            return s.demo_epsilon
        if phase == "dagger":
            start, end = s.dagger_epsilon
            progress = (self.steps - s.demo_steps) / s.dagger_steps
            return start + (end - start) * progress
        return s.finetune_epsilon

    def act(self, phase):
        """One agent step in the training game, stored in the replay buffer."""
        if self._game is None:
            self._new_game()
        game, frame = self._game, self._game.state()[-1]
        label = self.player.action(game.ram())
        if self.rng.random() < self._epsilon(phase):
            action = int(self.rng.integers(len(MINIMAL_ACTIONS)))
        elif phase == "demo":
            action = label
        else:
            with self.torch.no_grad():
                action = int(q_values(self.torch, self.network, game.state()[None])[0].argmax())
        self.player.observe(MINIMAL_ACTIONS[action])
        lives = game.lives()
        reward = game.step(MINIMAL_ACTIONS[action])
        self._game_score += reward
        self._game_steps += 1
        over = game.episode_over
        cut = not over and self._game_steps >= self.settings.max_episode_steps
        self.replay.add(frame, action, label, reward, terminal=over or game.lives() < lives, last=over or cut)
        self.steps += 1
        if over or cut:
            self.episodes.append({"steps": self.steps, "phase": phase, "score": self._game_score,
                                  "length": self._game_steps, "wall_seconds": round(self.elapsed(), 1)})
            self.games += 1
            if self.games % 20 == 0:
                recent = [episode["score"] for episode in self.episodes[-20:]]
                self.log(f"{phase}: {self.steps} steps, {self.updates} updates, {self.games} games, "
                         f"last 20 games' mean score {np.mean(recent):.1f}")
            self._new_game()

    # -- learning --

    def update(self, margin_weight):
        torch, s = self.torch, self.settings
        batch = self.replay.sample(self.rng, s.batch, s.n_step, s.gamma)
        actions = torch.from_numpy(batch["actions"].astype(np.int64))
        labels = torch.from_numpy(batch["labels"].astype(np.int64))
        with torch.no_grad():
            following = np.concatenate([batch["next1"], batch["nextn"]])
            chosen = q_values(torch, self.network, following).argmax(1, keepdim=True)     # double DQN
            bootstrap = q_values(torch, self.target, following).gather(1, chosen).squeeze(1)
            one, many = bootstrap[:s.batch], bootstrap[s.batch:]
            target_1 = torch.from_numpy(batch["return1"]) + torch.from_numpy(batch["discount1"]) * one
            target_n = torch.from_numpy(batch["returnn"]) + torch.from_numpy(batch["discountn"]) * many
        outputs = q_values(torch, self.network, batch["states"])
        taken = outputs.gather(1, actions[:, None]).squeeze(1)
        huber = torch.nn.functional.smooth_l1_loss
        valid_1, valid_n = torch.from_numpy(batch["valid1"]), torch.from_numpy(batch["validn"])
        td = huber(taken[valid_1], target_1[valid_1]) if valid_1.any() else taken.sum() * 0
        td_n = huber(taken[valid_n], target_n[valid_n]) if valid_n.any() else taken.sum() * 0
        margins = s.margin * (1 - torch.nn.functional.one_hot(labels, len(MINIMAL_ACTIONS)).float())
        margin = ((outputs + margins).max(1).values - outputs.gather(1, labels[:, None]).squeeze(1)).mean()
        loss = td + s.n_step_weight * td_n + margin_weight * margin
        self.optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.network.parameters(), s.gradient_clip)
        self.optimiser.step()
        self.updates += 1
        if self.updates % s.target_every == 0:
            self.target.load_state_dict(self.network.state_dict())
        for key, value in (("td", td), ("td_n", td_n), ("margin", margin),
                           ("agreement", (outputs.argmax(1) == labels).float().mean())):
            value = value.detach()
            self.metrics[key].append(value.item())

    def _margin_weight(self, phase):
        s = self.settings
        if phase != "finetune":
            return s.margin_weight
        progress = (self.steps - s.demo_steps - s.dagger_steps) / (s.finetune_steps / 2)
        return s.margin_weight * max(0.0, 1.0 - progress)

    # -- evaluation, curve, checkpoints --

    def validate(self, phase):
        s = self.settings
        seeds = range(VALIDATION_SEEDS_FROM, VALIDATION_SEEDS_FROM + s.eval_episodes)
        result = evaluate(GreedyPolicy(self.torch, self.network, MINIMAL_ACTIONS), seeds, game=GAME,
                          max_steps=s.max_episode_steps)
        recent = [episode["score"] for episode in self.episodes[-20:]]
        row = {"wall_seconds": round(self.elapsed(), 1), "steps": self.steps, "updates": self.updates,
               "phase": phase, "validation_mean": result["mean"],
               "validation_scores": " ".join(f"{score:g}" for score in result["scores"]),
               "training_mean_last_20": float(np.mean(recent)) if recent else float("nan"),
               **{key: float(np.mean(values)) if values else float("nan") for key, values in self.metrics.items()}}
        self.curve.append(row)
        self.metrics = self._fresh_metrics()
        self.last_evaluated_at = self.steps
        if self.best is None or result["mean"] >= self.best["mean"]:
            self.best = {"mean": result["mean"], "steps": self.steps, "updates": self.updates, "phase": phase,
                         "state": copy.deepcopy(self.network.state_dict())}
        self.log(f"validation after {self.steps} steps / {self.updates} updates ({phase}): mean score "
                 f"{result['mean']:.1f} {result['scores']}; expert agreement {row['agreement']:.3f}, "
                 f"TD {row['td']:.4f}, n-step TD {row['td_n']:.4f}, margin {row['margin']:.4f}")
        self.write_curve()

    def write_curve(self):
        if self.curve:
            with open(self.out / "curve.csv", "w", newline="") as file:
                writer = csv.DictWriter(file, fieldnames=list(self.curve[0]))
                writer.writeheader()
                writer.writerows(self.curve)
        if self.episodes:
            with open(self.out / "episodes.csv", "w", newline="") as file:
                writer = csv.DictWriter(file, fieldnames=list(self.episodes[0]))
                writer.writeheader()
                writer.writerows(self.episodes)
        self.plot()

    def plot(self):
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot

        figure, axis = pyplot.subplots(figsize=(8, 4.5))
        for players, colour, name in ((("demo",), "C2", "scripted player's"),
                                       (("dagger", "finetune"), "0.4", "network's")):
            games = [episode for episode in self.episodes if episode["phase"] in players]
            if games:
                steps = np.array([episode["steps"] for episode in games]) / 1e3
                scores = np.array([episode["score"] for episode in games])
                window = min(20, len(scores))
                axis.plot(steps, scores, ".", color=colour, alpha=0.4, markersize=3)
                axis.plot(steps[window - 1:], np.convolve(scores, np.ones(window) / window, mode="valid"),
                          color=colour, label=f"training games, {name} (mean of {window})")
        if self.curve:
            axis.plot([row["steps"] / 1e3 for row in self.curve], [row["validation_mean"] for row in self.curve],
                      "o-", color="C0", label=f"validation mean ({self.settings.eval_episodes} games, eps 0.05)")
        for name, colour in (("random", "C3"), ("scripted", "C2")):
            if name in self.baselines:
                axis.axhline(self.baselines[name]["mean"], color=colour, linestyle="--",
                             label=f"{name} policy, test games ({self.baselines[name]['mean']:.1f})")
        s = self.settings
        for boundary in (s.demo_steps, s.demo_steps + s.dagger_steps):
            axis.axvline(boundary / 1e3, color="0.85", linewidth=0.8)
        axis.set_xlabel("agent steps (thousands; 4 frames each)")
        axis.set_yscale("symlog", linthresh=10)
        top = max([episode["score"] for episode in self.episodes] + [row["validation_mean"] for row in self.curve]
                  + [baseline["mean"] for baseline in self.baselines.values()] + [10])
        axis.set_ylim(0, top * 1.5)
        axis.set_ylabel("Breakout score (linear to 10, then log)")
        axis.set_title(f"Thesis DQN on Breakout: demonstrations, DAgger, fine-tuning "
                       f"({self.elapsed() / 3600:.2f} h wall)")
        axis.legend(fontsize=7, loc="upper right", framealpha=0.9)
        figure.tight_layout()
        figure.savefig(self.out / "curve.png", dpi=120)
        pyplot.close(figure)

    def checkpoint(self):
        torch = self.torch
        partial, final, old = (self.out / name for name in ("checkpoint.partial", "checkpoint", "checkpoint.old"))
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        self.replay.save(partial)
        torch.save({"settings": asdict(self.settings), "network": self.network.state_dict(),
                    "target": self.target.state_dict(), "optimiser": self.optimiser.state_dict(),
                    "rng": self.rng.bit_generator.state, "torch_rng": torch.get_rng_state(),
                    "steps": self.steps, "updates": self.updates, "games": self.games,
                    "replay_count": self.replay.count, "wall_seconds": self.elapsed(), "curve": self.curve,
                    "episodes": self.episodes, "baselines": self.baselines, "best": self.best,
                    "last_evaluated_at": self.last_evaluated_at, "changes": self.changes}, partial / "state.pt")
        if final.exists():
            final.rename(old)
        partial.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        self._last_checkpoint = time.perf_counter()
        self.log(f"checkpoint: {self.steps} steps, {self.updates} updates ({self.phase()})")

    def restore(self):
        """Load the checkpoint in ``out`` if there is one; returns whether there was."""
        directory = next((path for path in (self.out / "checkpoint", self.out / "checkpoint.old")
                          if (path / "state.pt").exists()), None)
        if directory is None:
            return False
        state = self.torch.load(directory / "state.pt", weights_only=False)
        stored = Settings(**{key: tuple(value) if isinstance(value, list) else value
                             for key, value in state["settings"].items()})
        changed = [field.name for field in fields(Settings)
                   if getattr(stored, field.name) != getattr(self.settings, field.name)]
        if set(changed) - set(RESUMABLE_CHANGES):
            raise SystemExit(f"{directory}: the checkpoint was made with other settings ({', '.join(changed)}); "
                             f"rerun the same command or use another --out")
        self.network.load_state_dict(state["network"])
        self.target.load_state_dict(state["target"])
        self.optimiser.load_state_dict(state["optimiser"])
        for group in self.optimiser.param_groups:
            group["lr"] = self.settings.learning_rate
        self.rng.bit_generator.state = state["rng"]
        self.torch.set_rng_state(state["torch_rng"])
        for key in ("steps", "updates", "games", "wall_seconds", "curve", "episodes", "baselines", "best",
                    "last_evaluated_at"):
            setattr(self, key, state[key])
        self.changes = state.get("changes", [])     # checkpoints before changes were recorded had none
        for name in changed:
            old, new = getattr(stored, name), getattr(self.settings, name)
            self.changes.append({"steps": self.steps, "updates": self.updates, name: [old, new]})
            self.log(f"{name} changes from {old:g} to {new:g} after {self.updates} updates")
        self.replay.load(directory, state["replay_count"])
        self.replay.cut()            # the game in progress is not in the checkpoint: a new one starts
        self._session_start = time.perf_counter()
        self.log(f"resumed from {directory}: {self.steps} steps, {self.updates} updates, phase {self.phase()}")
        return True

    # -- the run --

    def run(self):
        s = self.settings
        if not self.restore():
            self.log(f"new run in {self.out}: {asdict(s)}")
        if "random" not in self.baselines:
            self.baselines["random"] = evaluate(None, TEST_SEEDS, game=GAME, epsilon=1.0,
                                                max_steps=s.max_episode_steps)
            self.log(f"random policy on the test games: mean {self.baselines['random']['mean']:.2f} "
                     f"{self.baselines['random']['scores']}")
            self.baselines["scripted"] = evaluate(ScriptedPlayer(), TEST_SEEDS, game=GAME,
                                                  max_steps=s.max_episode_steps)
            self.log(f"scripted player (eps {EVAL_EPSILON}) on the test games: mean "
                     f"{self.baselines['scripted']['mean']:.1f} {self.baselines['scripted']['scores']}")
            self.checkpoint()
        while (phase := self.phase()) != "done":
            if phase == "demo":
                self.act(phase)
            elif phase == "pretrain":
                self.update(s.margin_weight)
                if self.updates % 1000 == 0:
                    self.log(f"pretrain: {self.updates} updates, expert agreement "
                             f"{np.mean(self.metrics['agreement'][-1000:]):.3f}")
                if self.updates == s.pretrain_updates:
                    self.validate(phase)
            else:
                self.act(phase)
                if self.steps % s.train_every == 0:
                    self.update(self._margin_weight(phase))
                if self.steps - self.last_evaluated_at >= s.eval_every:
                    self.validate(phase)
            if self.phase() != phase or time.perf_counter() - self._last_checkpoint >= s.checkpoint_seconds:
                self.checkpoint()
        if self.last_evaluated_at != self.steps:
            self.validate("finetune")
            self.checkpoint()
        return self.finish()

    def finish(self):
        """Export the best validated network, check the export, evaluate it on the test games, write results."""
        torch, s = self.torch, self.settings
        network = build_network(torch, len(MINIMAL_ACTIONS))
        network.load_state_dict(self.best["state"])
        path = self.out / "dqn_breakout.npz"
        save_weights(path, export_weights(network))
        weights = load_weights(path)
        exported = network_from_weights(torch, weights)
        states = recorded_states()
        with torch.no_grad():
            torch_q = exported(torch.from_numpy(states)).double().numpy()
            minimal_q = network(torch.from_numpy(states)).double().numpy()
        reference = np.stack([reference_q_values(weights, state) for state in states])
        export_error = float(np.abs(torch_q - reference).max())
        mapping_error = float(np.abs(torch_q - minimal_q[:, list(FULL_TO_MINIMAL)]).max())
        test = evaluate(GreedyPolicy(torch, exported, tuple(range(len(FULL_TO_MINIMAL)))), TEST_SEEDS, game=GAME,
                        max_steps=s.max_episode_steps)
        random_mean = self.baselines["random"]["mean"]
        results = {
            "method": METHOD, "game": GAME, "settings": asdict(s), "settings_changed_on_resume": self.changes,
            "wall_seconds": round(self.elapsed(), 1),
            "wall_hours": round(self.elapsed() / 3600, 3), "agent_steps": self.steps, "updates": self.updates,
            "training_games": self.games, "weights": str(path), "curve_png": str(self.out / "curve.png"),
            "selected": {key: value for key, value in self.best.items() if key != "state"},
            "action_set": {"trained_on_ale_actions": list(MINIMAL_ACTIONS),
                           "exported_output_j_is_ale_action_j_copying_minimal_index": list(FULL_TO_MINIMAL)},
            "ram_addresses": {"ball_x": RAM_BALL_X, "ball_y": RAM_BALL_Y, "paddle_x": RAM_PADDLE_X},
            "export_check": {"max_abs_q_torch_vs_float64_reference": export_error,
                             "max_abs_q_full_vs_minimal_outputs": mapping_error},
            "test": {"trained": test, "random": self.baselines["random"], "scripted": self.baselines["scripted"],
                     "trained_over_random": test["mean"] / random_mean if random_mean else float("inf")},
        }
        (self.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        self.write_curve()
        self.log(f"exported {path} (best validation mean {self.best['mean']:.1f} after {self.best['steps']} steps, "
                 f"{self.best['phase']}); torch vs float64 reference max |dQ| {export_error:.2e}")
        self.log(f"test games (seeds {TEST_SEEDS[0]}..{TEST_SEEDS[-1]}, eps {EVAL_EPSILON}): trained mean "
                 f"{test['mean']:.1f} {test['scores']}; random mean {random_mean:.2f}; scripted mean "
                 f"{self.baselines['scripted']['mean']:.1f}; wall time {self.elapsed() / 3600:.2f} h")
        return results


def export_checkpoint(torch, out, path):
    """Write the best validated network of the run in ``out`` (from its checkpoint: the run may still be going) to
    the weights file ``path``, and next to it ``path`` with ``.json``: where the weights came from.  Returns that."""
    directory = next((candidate for candidate in (out / "checkpoint", out / "checkpoint.old")
                      if (candidate / "state.pt").exists()), None)
    if directory is None:
        raise SystemExit(f"{out}: no checkpoint to export (expected {out / 'checkpoint' / 'state.pt'})")
    state = torch.load(directory / "state.pt", weights_only=False)
    if state["best"] is None:
        raise SystemExit(f"{directory}: the run has not validated a network yet")
    network = build_network(torch, len(MINIMAL_ACTIONS))
    network.load_state_dict(state["best"]["state"])
    save_weights(path, export_weights(network))
    results = out / "results.json"
    provenance = {
        "method": METHOD, "game": GAME, "run": str(out), "finished": results.exists(),
        "selected": {key: value for key, value in state["best"].items() if key != "state"},
        "validation": {"seeds_from": VALIDATION_SEEDS_FROM, "games": state["settings"]["eval_episodes"],
                       "epsilon": EVAL_EPSILON},
        "run_at_export": {"agent_steps": state["steps"], "updates": state["updates"], "games": state["games"],
                          "wall_hours": round(state["wall_seconds"] / 3600, 3)},
        "settings": state["settings"], "settings_changed_on_resume": state.get("changes", []),
        "curve": state["curve"], "baselines": {name: result["mean"] for name, result in state["baselines"].items()},
        "test": json.loads(results.read_text())["test"] if results.exists() else None,
    }
    path.with_suffix(".json").write_text(json.dumps(provenance, indent=2) + "\n")
    print(f"exported {path}: best validation mean {state['best']['mean']:g} after {state['best']['steps']} steps "
          f"({state['best']['phase']}); the run was at {state['steps']} steps, {state['wall_seconds'] / 3600:.2f} h")
    return provenance


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nnaccel.models.dqn.train", description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="directory for checkpoints, curve and weights")
    parser.add_argument("--smoke", action="store_true", help="tiny budgets: every phase in a few minutes")
    parser.add_argument("--seed", type=int, default=Settings.seed,
                        help=f"seed of the network's initialisation and of every random draw (default {Settings.seed})")
    parser.add_argument("--learning-rate", type=float, default=Settings.learning_rate,
                        help=f"Adam's step size (default {Settings.learning_rate:g}); may change when resuming")
    parser.add_argument("--export", type=Path, metavar="FILE",
                        help="do not train: write the best validated network of the run in --out (its latest "
                             "checkpoint) to this weights .npz, with a .json saying where it came from")
    arguments = parser.parse_args(argv)
    if arguments.export:
        export_checkpoint(_torch(), arguments.out, arguments.export)
        return 0
    settings = Settings(seed=arguments.seed, learning_rate=arguments.learning_rate,
                        **(SMOKE if arguments.smoke else {}))
    torch = _torch()
    arguments.out.mkdir(parents=True, exist_ok=True)
    Trainer(torch, settings, arguments.out).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
