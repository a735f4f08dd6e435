"""Training the float CapsNet and quantizing it into the shipped 8-bit weights (``nnaccel train capsnet``):
:mod:`.trainer`."""
