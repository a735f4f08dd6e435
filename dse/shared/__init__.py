"""What every design-space family and search shares: the layer (``layer``), DCP's dataflow code
(``dataflow_code``), the one-hot grids (``one_hot_grid``, ``hardware_grid``), the 45 nm energy and area table
(``energy_table``), Dask sweeps (``sweep``) and their result store (``store``)."""
