"""Design-space exploration: design spaces, an analytical cost model, sweeps on Dask, and (in
later rooms) the searches of the seeds, DCP (``dse.dcp``) and DANCE (``dse.dance``).

``dse.shared`` holds what every search uses: the layer description (``layer``), the seeds'
Eyeriss-like template (``template``), loop-nest mappings in DCP's encoding (``mapping``), their
analysis (``loopnest``), the cost model (``cost_model``) with its per-action energy and area table
(``energy_table``, ``data/energy_45nm.json``), a random legal-mapping sampler (``sampler``), and
the sweep engine (``sweep``) with its result store (``store``).
"""
