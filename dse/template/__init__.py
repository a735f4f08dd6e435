"""The seeds' template accelerator as a design-space family (SPEC sections 4 and 5): its hardware points
(``hardware``), loop-nest mappings in DCP's (3, 7, 2) code (``mapping``) and their data reuse (``loopnest``), the
analytical cost model (``cost_model``), seeded samplers (``sampler``), and the family as DCP's dataflow space
(``dataflow_space``) and DANCE's hardware space (``hardware_space``, with its labelling tasks)."""
