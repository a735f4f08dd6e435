"""DANCE (SPEC section 4, seed 000): a network and its accelerator searched together by gradient
descent through a frozen evaluator network.

``network_space`` (MNIST candidates shaped like the DQN network, each compilable onto the DQN
accelerator), ``hardware_space`` (the protocol a family's hardware space implements, and the families by
name: ``dse.template``, ``dse.rtl``), ``cost_functions``, ``labels`` (ground truth through a Dask
sweep, any family), ``evaluator`` and ``training`` (the hardware-generation and cost-estimation networks,
Table 1, checkpoints in ``data/``), ``supernet`` and ``cosearch`` (the search, its baselines, Table
2), ``command`` (``nnaccel dse cosearch``).
"""
