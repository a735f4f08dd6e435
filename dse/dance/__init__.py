"""DANCE (SPEC section 4, seed 000): a network and its accelerator searched together by gradient
descent through a frozen evaluator network.

``network_space`` (MNIST candidates shaped like the DQN network, each compilable onto the DQN
accelerator), ``hardware_space`` (the interface a hardware space implements) and
``template_hardware`` (the seeds' template), ``cost_functions``, ``labels`` (ground truth through a
Dask sweep), ``evaluator`` and ``training`` (the hardware-generation and cost-estimation networks,
Table 1, checkpoints in ``data/``), ``supernet`` and ``cosearch`` (the search, its baselines, Table
2), ``command`` (``nnaccel dse cosearch``).
"""
