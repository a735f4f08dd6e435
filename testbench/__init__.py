"""cocotb test modules, drivers, monitors and scoreboards, one module per hardware block."""
