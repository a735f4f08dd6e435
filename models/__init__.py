"""NumPy golden models, bit-exact with the hardware they check."""
