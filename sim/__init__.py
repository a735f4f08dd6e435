"""Build, run and inspect simulations: Verilog generation, cached simulator builds, cocotb runs, lint, waves, CLI."""
