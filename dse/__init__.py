"""Design-space exploration: hardware families as design spaces, and the searches that consume them.

Families (one room each: its design space, cost model, sampler and labelling):
``dse.template`` (the seeds' Eyeriss-like template: PE array, RF, dataflow style; loop-nest mappings in DCP's
(3, 7, 2) code; an analytical cost model on a 45 nm table) and ``dse.rtl`` (nnaccel's own RTL family, the DQN
accelerator's configurations: a cost model its hardware counters prove exact, a composed FPGA area, its
validation on the simulator).

Searches (one room each, consuming any family through one protocol): ``dse.dcp`` (DCP: dataflows by gradient
descent through a learned predictor; ``dse.dcp.space.DataflowSpace``) and ``dse.dance`` (DANCE: a network and its
accelerator searched together; ``dse.dance.hardware_space.HardwareSpace``).

``dse.shared`` holds what is family-independent: the layer as searches see it (``layer``, derived from
``models.dqn.network``), the families by name (``families``), DCP's dataflow code (``dataflow_code``), the one-hot grids DANCE's spaces are built
on (``one_hot_grid``, ``hardware_grid``), the 45 nm energy and area table (``energy_table``), Dask sweeps
(``sweep``) and their result store (``store``).
"""
