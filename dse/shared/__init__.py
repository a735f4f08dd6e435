"""What the design-space searches share: layers, the template design space, mappings, the
analytical cost model, the mapping sampler, and Dask sweeps with a result store; and nnaccel's own RTL
family (the DQN accelerator): its design space, a cost model its counters prove exact, its area table and
its validation on the simulator."""
