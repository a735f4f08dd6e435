"""What the design-space searches share: layers, the template design space, mappings, the
analytical cost model, the mapping sampler, and Dask sweeps with a result store."""
