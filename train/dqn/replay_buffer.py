"""The replay buffer of the training's agent steps."""

import numpy as np

from nnaccel.models.dqn.atari import FRAME_SIZE, STATE_FRAMES

__all__ = ["ReplayBuffer"]


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

    def sample_labelled(self, rng, size, newest_excluded=0):
        """A batch of states with the actions played and the labels, from all but the newest ``newest_excluded``
        entries; also their global ``indices``."""
        oldest = max(self.count - self.capacity, 0) + STATE_FRAMES
        indices = rng.integers(oldest, self.count - newest_excluded, size=size)
        slots = indices % self.capacity
        return {"indices": indices, "states": self.states(indices), "actions": self.actions[slots],
                "labels": self.labels[slots]}

    def sample(self, rng, size, n_step, gamma):
        """A batch: states, actions, labels, 1-step and n-step (return, discount, bootstrap state, valid)."""
        batch = self.sample_labelled(rng, size, newest_excluded=n_step)
        one = self._returns(batch["indices"], 1, gamma)
        many = self._returns(batch["indices"], n_step, gamma)
        return {**batch, **{f"{key}1": value for key, value in one.items()},
                **{f"{key}n": value for key, value in many.items()}}

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

