"""DCP (SPEC section 5): the best dataflow of a layer by gradient descent through a learned predictor.

``space`` (the protocol a family's dataflow space implements, and the families by name), ``encoding`` (the
predictor's features), ``workloads`` (the layers and hardware points of its data set), ``dataset`` (sampled
dataflows labelled by a Dask sweep), ``predictor`` (checkpoints in ``data/``), ``evaluator``, ``search`` (the
gradient search), ``baselines`` (random, TPE, NSGA-II, exhaustive), ``command`` (``nnaccel dse dataflow`` and
``nnaccel dse predictor``).
"""
