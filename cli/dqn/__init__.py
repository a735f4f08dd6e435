"""The DQN accelerator's jobs: :mod:`.atari` (``nnaccel run dqn``, ``nnaccel play``) and :mod:`.net`
(``nnaccel run net``), and what they share, :mod:`.accelerator_run` (the simulation, the golden check, the
per-layer table)."""
