"""An animated GIF of a played episode: the game's screen next to the network's Q-values as bars.

:class:`EpisodeGif` collects one frame per agent step, :meth:`EpisodeGif.add` with the emulator's colour screen
before the step, the step's Q-values (float32 bit patterns, as the accelerator and the golden model give them), the
action played, whether the exploration chose it instead of the network, who computed the Q-values (``"RTL"``: the
simulated accelerator, ``"golden"``: the golden model) and the score so far.  :meth:`EpisodeGif.save` draws them
with Pillow: the screen at twice its size on the left; on the right one bar per action, scaled over the whole
episode (so a bar's length means the same in every frame), the chosen action's bar red and marked with an arrow,
and ``random`` beside it when the exploration chose it.  Frames last 67 ms, the four emulator frames of a step at
60 Hz, so the GIF plays in real time.
"""

import numpy as np

__all__ = ["EpisodeGif"]

SCALE = 2
PANEL_WIDTH = 300
FRAME_MS = 67
BAR_LEFT, BAR_RIGHT = 104, PANEL_WIDTH - 56
BACKGROUND, TEXT, BAR, CHOSEN = (255, 255, 255), (20, 20, 20), (150, 150, 150), (210, 40, 40)


class EpisodeGif:
    """Frames of one episode of ``game`` (its ``action_names``), written by :meth:`save`."""

    def __init__(self, game, action_names):
        self.game, self.action_names = game, list(action_names)
        self._frames = []

    def __len__(self):
        return len(self._frames)

    def add(self, screen, q_bits, action, *, explored, source, score):
        q_values = np.asarray(q_bits, dtype=np.uint32).view(np.float32).astype(np.float64)
        if q_values.shape != (len(self.action_names),):
            raise ValueError(f"expected {len(self.action_names)} Q-values, got shape {q_values.shape}")
        self._frames.append((np.array(screen, dtype=np.uint8), q_values, int(action), bool(explored), source,
                             float(score)))

    def save(self, path):
        """Write the GIF to ``path``; raises ``ValueError`` when no frame was added."""
        if not self._frames:
            raise ValueError("no frames to write")
        from PIL import Image

        finite = np.concatenate([q_values[np.isfinite(q_values)] for _, q_values, *_ in self._frames] + [[0.0]])
        low, high = float(finite.min()), float(finite.max())
        images = [self._draw(step, frame, low, high) for step, frame in enumerate(self._frames)]
        palette = [image.quantize(colors=64, method=Image.Quantize.MEDIANCUT) for image in images]
        palette[0].save(path, save_all=True, append_images=palette[1:], duration=FRAME_MS, loop=0, optimize=True)

    def _draw(self, step, frame, low, high):
        from PIL import Image, ImageDraw

        screen, q_values, action, explored, source, score = frame
        height, width = screen.shape[0] * SCALE, screen.shape[1] * SCALE
        image = Image.new("RGB", (width + PANEL_WIDTH, height), BACKGROUND)
        image.paste(Image.fromarray(screen).resize((width, height), Image.Resampling.NEAREST), (0, 0))
        draw = ImageDraw.Draw(image)
        left = width + 8
        draw.text((left, 6), f"{self.game}  step {step}  score {score:g}", fill=TEXT)
        draw.text((left, 20), f"Q-values from the {'accelerator (RTL)' if source == 'RTL' else 'golden model'}",
                  fill=TEXT)
        row_height = (height - 44) / len(self.action_names)
        span = high - low if high > low else 1.0
        zero = width + BAR_LEFT + (BAR_RIGHT - BAR_LEFT) * (0.0 - low) / span
        for index, (name, value) in enumerate(zip(self.action_names, q_values)):
            top = 40 + index * row_height
            chosen = index == action
            colour = CHOSEN if chosen else BAR
            draw.text((left, top), ("> " if chosen else "  ") + name, fill=colour if chosen else TEXT)
            if np.isfinite(value):
                end = width + BAR_LEFT + (BAR_RIGHT - BAR_LEFT) * (value - low) / span
                draw.rectangle((min(zero, end), top + 2, max(zero, end), top + row_height - 3), fill=colour)
            draw.text((width + BAR_RIGHT + 4, top), "random" if chosen and explored else f"{value:.2f}",
                      fill=colour if chosen else TEXT)
        return image
