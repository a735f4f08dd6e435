"""The scripted Breakout player that demonstrates and labels states for the imitation phases."""

import numpy as np

from nnaccel.models.dqn.atari import FRAME_SKIP

from nnaccel.train.dqn.breakout import (BALL_LEFT_MAX, BALL_LEFT_MIN, BALL_X_OFFSET, BALL_Y_OFFSET, FIRE,
                                        FULL_TO_MINIMAL, HIT_Y, LEFT, MINIMAL_ACTIONS, NOOP, PADDLE_CENTRE_OFFSET,
                                        PADDLE_LAG_FRAMES, PADDLE_PIXELS_PER_STEP, PADDLE_RESET_X, PADDLE_STEPS_MAX,
                                        PADDLE_X_MAX, PADDLE_X_MIN, RAM_BALL_X, RAM_BALL_Y, RIGHT)

__all__ = ["ScriptedPlayer"]


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
        self._paddle_steps = self._clip_steps(self._paddle_steps + direction * FRAME_SKIP)

    @staticmethod
    def _clip_steps(steps):
        return min(max(steps, -PADDLE_STEPS_MAX), PADDLE_STEPS_MAX)

    def action(self, ram):
        if ram[RAM_BALL_Y] == 0:
            self._last_ball = None
            return FIRE
        x, y = int(ram[RAM_BALL_X]) - BALL_X_OFFSET, int(ram[RAM_BALL_Y]) + BALL_Y_OFFSET
        target, frames = x + 1, FRAME_SKIP + PADDLE_LAG_FRAMES
        if self._last_ball is not None:
            velocity_x = (x - self._last_ball[0]) / FRAME_SKIP
            velocity_y = (y - self._last_ball[1]) / FRAME_SKIP
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
            now = min(frames, FRAME_SKIP)
            reachable = np.array([self._clip_steps(self._paddle_steps + direction * now)])
            for remaining in range(frames - now, 0, -FRAME_SKIP):
                moved = reachable[:, None] + np.array([0, 1, -1]) * min(remaining, FRAME_SKIP)
                reachable = np.unique(np.clip(moved, -PADDLE_STEPS_MAX, PADDLE_STEPS_MAX).round(6))
            paddle_x = np.clip(PADDLE_RESET_X + PADDLE_PIXELS_PER_STEP * reachable, PADDLE_X_MIN, PADDLE_X_MAX)
            error = float(np.abs(paddle_x - target).min())
            if best is None or error < best[0] - 1e-9:
                best = (error, action)
        return best[1]

    def choose(self, game):
        return MINIMAL_ACTIONS[self.action(game.ram())]

