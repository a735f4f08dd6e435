"""The smallest DQN accelerator configuration that holds a network: RAM depths, row width and descriptor table sized
from the compiled plan, everything else (modules, lanes, number format, latencies) as the user chose.

:func:`fitting_config` compiles the network once on a configuration with the largest RAMs and table the descriptor
allows, reads what the plan uses (the highest activation word of either RAM, the weight rows, the passes, the widest
row) and returns the base configuration grown just enough, each depth a power of two (as the RAMs are built in
M10K / M20K blocks), never below the base's.  The plan compiled on that configuration places every tensor where
the large one did: placement depends on the tensors' sizes and lifetimes, not on the RAMs'.
"""

from dataclasses import replace

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.dqn.plan import compile_network

__all__ = ["fitting_config", "LARGEST"]

# The largest sizes a DqnConfig accepts (hw/dqn/config.py checks them).
LARGEST = {"row_elements": 1024, "activation_depth": 1 << 16, "weight_depth": 1 << 20, "max_layers": 64,
           "max_layers_in_ram": 1024}


def _power_of_two(count):
    return 1 << max(0, int(count) - 1).bit_length()


def _widest_row(layers):
    widths = [1]
    for layer in layers:
        if isinstance(layer, ConvLayer):
            widths += [layer.in_width, layer.out_width]
    return max(widths)


def fitting_config(base, layers, weights, *, split="auto", allocation="lifetimes"):
    """``base`` (a :class:`DqnConfig`) grown to hold ``layers`` (with ``max_pooling`` if they have a max pool):
    ``(config, plan)``, compiled with ``allocation``
    (:func:`models.dqn.plan.compile_network`).  Raises the compiler's ValueError (naming the layer) when even the
    largest RAMs cannot hold the network."""
    if not isinstance(base, DqnConfig):
        raise TypeError(f"base must be a DqnConfig, not {base!r}")
    widest = max(base.row_elements, _widest_row(layers), base.lanes)
    if widest > LARGEST["row_elements"]:
        raise ValueError(f"rows of {widest} elements are wider than the largest activation word "
                         f"({LARGEST['row_elements']} elements)")
    if any(isinstance(layer, ConvLayer) and layer.maximum for layer in layers):
        base = replace(base, max_pooling=True)          # max pools run in the matrix modules' max mode
    roomy = replace(base, row_elements=widest, activation_depth=LARGEST["activation_depth"],
                    weight_depth=LARGEST["weight_depth"],
                    max_layers=LARGEST["max_layers_in_ram" if base.descriptor_ram else "max_layers"])
    plan = compile_network(roomy, layers, weights, split=split, allocation=allocation)
    activation_words = max(plan.activation_words)
    config = replace(base, row_elements=widest,
                     activation_depth=max(base.activation_depth, _power_of_two(activation_words)),
                     weight_depth=max(base.weight_depth, _power_of_two(len(plan.weight_image))),
                     max_layers=max(base.max_layers, len(plan.layers)))
    return config, compile_network(config, layers, weights, split=split, allocation=allocation)
