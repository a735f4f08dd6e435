"""nnaccel's RTL family, the DQN accelerator's configurations, as a design space: its parameters and JSON
(``hardware``), seeded samplers of configurations, networks and mappings (``sampler``), mappings in DCP's code
(``code``), the cost model the hardware counters prove exact (``cost_model``) with the composed FPGA area
(``area``, ``data/rtl_area_cyclonev.json``), its check on the simulator (``validate``), and the family as DCP's
dataflow space (``dataflow_space``) and DANCE's hardware space (``hardware_space``, with its labelling tasks)."""
