"""Training: how the weights that ship with the golden models were made (PyTorch, the ``[train]`` extra).

A floor above ``models/`` (it imports the networks, the emulator and the data sets from there) and below the CLI,
which runs it as ``nnaccel train dqn|capsnet``.  Nothing below imports it: inference, the golden models and the tests
of the hardware use the shipped weights and need no PyTorch.
"""
