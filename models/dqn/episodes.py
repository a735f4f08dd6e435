"""Scored Atari episodes: a policy plays whole games, epsilon-greedy, from seeded emulators and seeded exploration.

An episode is one whole game (every life) from a reset of a :class:`models.dqn.atari.AtariGame` made with ALE seed
``seed``, cut after ``max_steps`` agent steps.  Its exploration, :class:`Exploration`, draws from
``numpy.random.default_rng(seed)`` on every step: a uniform number, and when that is below ``epsilon`` a random
action from the game's minimal action set, which replaces the policy's.  The draws do not depend on what the policy
does, so the first draws of an episode can be taken ahead (``nnaccel play`` hands them to the simulated
accelerator's host loop) and the episode continued with the same :class:`Exploration`.  Epsilon 1 is the random
policy, which needs no network (``policy=None``).

A policy has ``reset()`` (a new game), ``observe(action)`` (the action played, whoever chose it) and
``choose(game) -> action index``; :class:`GoldenPolicy` is the accelerator's bit-exact golden model.
"""

from dataclasses import dataclass, field

import numpy as np

from nnaccel.models.dqn.atari import AtariGame, frames_to_states
from nnaccel.models.dqn.golden import golden_forward

__all__ = ["EVAL_EPSILON", "MAX_EPISODE_STEPS", "Episode", "Exploration", "GoldenPolicy", "evaluate", "play_episode"]

EVAL_EPSILON = 0.05
MAX_EPISODE_STEPS = 27_000       # 108,000 emulator frames, the usual cap of an Atari evaluation episode


class Exploration:
    """An episode's epsilon draws: :meth:`next` is a random action index (from ``actions``), or ``None``: the
    policy's action stands."""

    def __init__(self, seed, epsilon, actions):
        if not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1], not {epsilon!r}")
        self.epsilon, self.actions = epsilon, list(actions)
        self._rng = np.random.default_rng(seed)

    def next(self):
        if self._rng.random() < self.epsilon:
            return self.actions[int(self._rng.integers(len(self.actions)))]
        return None


@dataclass
class Episode:
    """One played game: its seed; per step the action, whether the exploration chose it, the reward."""
    seed: int
    actions: list = field(default_factory=list)
    explored: list = field(default_factory=list)
    rewards: list = field(default_factory=list)
    over: bool = False            # the game ended (False: cut at max_steps)

    @property
    def steps(self):
        return len(self.actions)

    @property
    def score(self):
        return float(sum(self.rewards))


class GoldenPolicy:
    """The greedy action of the accelerator's golden model (:func:`models.dqn.golden.golden_forward`) on a compiled
    plan; ``q_values`` keeps every step's Q-value bits."""

    def __init__(self, plan):
        self.plan, self.q_values = plan, []

    def reset(self):
        self.q_values = []

    def observe(self, action):
        pass

    def choose(self, game):
        run = golden_forward(self.plan, frames_to_states(game.state()))
        self.q_values.append(run.q_values)
        return run.action


def play_episode(game, policy, exploration, *, seed, max_steps=MAX_EPISODE_STEPS, opening=(), opening_frames=None,
                 on_step=None):
    """Play ``game`` from a reset until it ends or ``max_steps`` steps: an :class:`Episode`.

    ``opening``: actions already chosen elsewhere for the first steps (with ``exploration``'s first draws, which are
    not drawn again), replayed without asking ``policy``; ``opening_frames``, the frame stacks the chooser saw, are
    checked against this emulator's (a ``RuntimeError`` names the first step that differs).  ``on_step(game, action,
    explored)`` is called before each step is played.
    """
    game.reset()
    if policy is not None:
        policy.reset()
    episode = Episode(seed=seed)
    for step in range(max_steps):
        if step < len(opening):
            if opening_frames is not None and not np.array_equal(game.state(), opening_frames[step]):
                raise RuntimeError(f"{game.game} seed {seed}: step {step}'s frames differ from the ones the "
                                   f"opening's chooser saw (the emulator is not deterministic here)")
            action, explored = opening[step]
        else:
            action = policy.choose(game) if policy is not None else None
            random_action = exploration.next()
            explored = random_action is not None
            if explored:
                action = random_action
        if policy is not None:
            policy.observe(action)
        if on_step is not None:
            on_step(game, action, explored)
        episode.rewards.append(game.step(action))
        episode.actions.append(action)
        episode.explored.append(explored)
        if game.episode_over:
            episode.over = True
            break
    return episode


def evaluate(policy, seeds, *, game="breakout", epsilon=EVAL_EPSILON, max_steps=MAX_EPISODE_STEPS):
    """One episode per seed (ALE seed and exploration seed): ``{"seeds", "epsilon", "scores", "steps", "mean"}``."""
    episodes = []
    for seed in seeds:
        emulator = AtariGame(game, seed=seed)
        exploration = Exploration(seed, epsilon, emulator.minimal_actions)
        episodes.append(play_episode(emulator, policy, exploration, seed=seed, max_steps=max_steps))
    scores = [episode.score for episode in episodes]
    return {"seeds": list(seeds), "epsilon": epsilon, "scores": scores,
            "steps": [episode.steps for episode in episodes], "mean": float(np.mean(scores))}
