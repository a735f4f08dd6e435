"""Training the thesis' DQN for Breakout (``nnaccel train dqn``; docs/dqn_training.md).

:mod:`.breakout` the game's facts the training relies on (action equivalences, RAM addresses, the paddle's
mechanics), :mod:`.scripted_player` the demonstrator, :mod:`.network` the thesis network in PyTorch and its export
to the project's layout, :mod:`.replay_buffer`, :mod:`.trainer` the four phases with checkpoints and the export of a
run's best network, :mod:`.run_record` the run's CSV files and plot.
"""
