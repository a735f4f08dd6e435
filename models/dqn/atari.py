"""Atari states as the DQN sees them: the Arcade Learning Environment (``ale-py``) plus preprocessing.

A state is four consecutive preprocessed frames, ``(4, 84, 84)`` float32 in [0, 1].  Each
preprocessed frame covers ``FRAME_SKIP`` = 4 emulator frames with the same action: the pixel-wise
maximum of the last two (Atari sprites flicker), converted to luminance by the ALE, resized
from 210x160 to 84x84 with bilinear interpolation and rounded to 8 bits.

``ale-py`` (Farama Foundation; it ships the game ROMs) is needed only to produce new states and
for the closed host loop; a few recorded states ship with the project (:func:`recorded_states`),
so inference and tests run without the emulator.
"""

import warnings
from functools import cache
from pathlib import Path

import numpy as np

FRAME_SKIP = 4
STATE_FRAMES = 4
FRAME_SIZE = 84
RECORDED_STATES = Path(__file__).with_name("data") / "atari_states.npz"


def _bilinear_matrix(size_in, size_out):
    """(size_out, size_in) matrix that resamples a line with bilinear interpolation (pixel centres aligned)."""
    centres = (np.arange(size_out) + 0.5) * size_in / size_out - 0.5
    centres = np.clip(centres, 0, size_in - 1)
    low = np.floor(centres).astype(int)
    high = np.minimum(low + 1, size_in - 1)
    weight_high = centres - low
    matrix = np.zeros((size_out, size_in))
    matrix[np.arange(size_out), low] += 1 - weight_high
    matrix[np.arange(size_out), high] += weight_high
    return matrix


def preprocess_frame(gray_frames):
    """One 84x84 uint8 frame from the last two 210x160 grayscale emulator frames (``(2, 210, 160)``)."""
    gray_frames = np.asarray(gray_frames)
    if gray_frames.ndim != 3 or gray_frames.shape[0] != 2:
        raise ValueError(f"expected the last two grayscale frames as (2, H, W), got shape {gray_frames.shape}")
    frame = gray_frames.max(axis=0).astype(np.float64)
    rows = _bilinear_matrix(frame.shape[0], FRAME_SIZE)
    cols = _bilinear_matrix(frame.shape[1], FRAME_SIZE)
    return np.clip(np.rint(rows @ frame @ cols.T), 0, 255).astype(np.uint8)


def frames_to_states(frames):
    """float32 states ``(N, 4, 84, 84)`` in [0, 1] from uint8 frame stacks of the same shape."""
    return (np.asarray(frames, dtype=np.float32) / np.float32(255)).astype(np.float32)


class AtariGame:
    """A game in the ALE with the DQN's frame skip and frame stacking.

    ``step(action_index)`` plays one agent step (``FRAME_SKIP`` emulator frames) with the
    ``action_index``-th action of the full Atari action set (18 actions, as the thesis' network
    outputs) and returns the reward; a step that ends the game resets it and sets ``episode_over``.
    ``action_names`` names them (``NOOP``, ``FIRE``, ``UP``, ...).
    ``minimal_actions`` lists the indices of the game's minimal action set (Breakout: NOOP FIRE RIGHT LEFT,
    indices 0 1 3 4), the actions a random player draws from.
    ``state()`` is the current ``(4, 84, 84)`` uint8 frame stack, ``screen()`` the last emulator frame in
    colour ``(210, 160, 3)`` uint8, ``lives()`` the lives left and ``ram()`` the console's 128 bytes of RAM
    (a scripted player reads positions there).
    """

    def __init__(self, game="breakout", *, seed=0):
        try:
            from ale_py import ALEInterface, LoggerMode, roms
        except ImportError:
            raise RuntimeError("the Atari emulator is not installed: `pip install ale-py` "
                               "(or `pip install -e .[atari]`)") from None
        ALEInterface.setLoggerMode(LoggerMode.Error)
        self._ale = ALEInterface()
        self._ale.setInt("random_seed", seed)
        self._ale.setFloat("repeat_action_probability", 0.0)
        try:
            with warnings.catch_warnings():      # an unknown name: ale-py warns, then returns None; we say it below
                warnings.simplefilter("ignore")
                rom = roms.get_rom_path(game)
        except Exception:
            rom = None
        if rom is None:
            raise ValueError(f"unknown Atari game {game!r}; ale-py ships e.g. 'breakout', 'pong', 'space_invaders'")
        self._ale.loadROM(rom)
        self.game = game
        self.actions = list(self._ale.getLegalActionSet())
        self.action_names = [action.name for action in self.actions]
        self.minimal_actions = [self.actions.index(action) for action in self._ale.getMinimalActionSet()]
        self._frames = []
        self.episode_over = False
        self.reset()

    def reset(self):
        self._ale.reset_game()
        first = preprocess_frame(np.stack([self._ale.getScreenGrayscale()] * 2))
        self._frames = [first] * STATE_FRAMES

    def step(self, action_index):
        if not 0 <= action_index < len(self.actions):
            raise ValueError(f"action index must be in 0..{len(self.actions) - 1}, not {action_index!r}")
        reward, last_two = 0, []
        for _ in range(FRAME_SKIP):
            reward += self._ale.act(self.actions[action_index])
            last_two = (last_two + [self._ale.getScreenGrayscale()])[-2:]
        self._frames = self._frames[1:] + [preprocess_frame(np.stack(last_two))]
        self.episode_over = self._ale.game_over()
        if self.episode_over:
            self.reset()
        return reward

    def state(self):
        return np.stack(self._frames)

    def screen(self):
        return self._ale.getScreenRGB()

    def lives(self):
        return self._ale.lives()

    def ram(self):
        return self._ale.getRAM()


def record_states(game="breakout", *, count=8, steps_between=12, seed=0):
    """``count`` uint8 frame stacks from ``game``, one every ``steps_between`` agent steps of a seeded uniform-random policy."""
    environment = AtariGame(game, seed=seed)
    policy = np.random.default_rng(seed)
    states = []
    for _ in range(count):
        for _ in range(steps_between):
            environment.step(int(policy.integers(len(environment.actions))))
        states.append(environment.state())
    return np.stack(states)


@cache
def _recorded_archive():
    with np.load(RECORDED_STATES) as archive:
        return {name: archive[name] for name in archive.files}


def recorded_states(count=None):
    """The shipped states from real Breakout frames, ``(N, 4, 84, 84)`` float32 (see ``data/README.md``)."""
    frames = _recorded_archive()["frames"]
    if count is not None:
        if not 1 <= count <= len(frames):
            raise ValueError(f"{len(frames)} recorded states ship with nnaccel; asked for {count!r}")
        frames = frames[:count]
    return frames_to_states(frames)
