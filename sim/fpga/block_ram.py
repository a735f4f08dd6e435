"""The cells of a :class:`hw.shared.dual_port_buffer.DualPortBuffer` by rule, from its shape: what Yosys maps it to,
without Yosys.

Yosys' time on a buffer grows with its width times its write groups, not with what it makes of it: the Verilog
writes a granular memory as one statement per element and port (``if (en[i]) mem[addr][hi:lo] <= data[hi:lo]``),
and its frontend and ``proc`` passes handle each of them over the whole word.  The DQN accelerator's activation RAM
of 84 binary32 elements took 36 minutes (2,688 x 1,024 bits, 2 x 84 write statements) and the 96-element one 52,
for 336 and 384 M10K blocks and two LUTs per element.  :mod:`sim.fpga.synth` takes a buffer's cells from
:func:`dual_port_buffer_cells` instead; the rule is the mapping ``yosys/m10k_tdp.txt`` makes:

* M10K blocks: the cheapest true dual-port mode (:func:`sim.fpga.devices.block_mapping`: elements padded to whole
  10-bit byte-enable groups, a tie going to fewer blocks in depth);
* per port, a write enable per element and block in depth (the port's enable gated by the reset, and by the
  address bits that pick the block in depth): a LUT of 2 + those bits' inputs;
* per port, with blocks in depth, a read multiplexer per bit over them (a tree of 4:1 multiplexers, a 6-input LUT
  each, a last 2:1 or 3:1 stage) and its select, the address bits registered (flip-flops);
* the memory's shape, for the M20K count and the memory bits.

It reproduces, cell for cell, each of the 14 buffers Yosys had mapped in the shared synthesis cache (3,072 x 1,024
and 2,688 x 1,024 in 96 and 84 groups, 512 x 4,096 and 512 x 16,384 whole-word, 455 x 10, nine smaller ones,
granular or not); tests/sim/test_synth_modules.py holds it against Yosys on buffers of each kind and on the reduced
DQN accelerator's whole-design run.
"""

import math
import re

from .devices import M10K_MODES, block_mapping

__all__ = ["PORTS", "buffer_shape", "buffer_cells", "dual_port_buffer_cells"]

# Ports of a DualPortBuffer (a and b), each with its write enables and read data.
PORTS = 2
# DualPortBuffer.module_name: "dual_port_buffer_w{width}_d{depth}_g{granularity or 0}", "_i{digest}" with contents.
_MODULE_NAME = re.compile(r"dual_port_buffer_w(\d+)_d(\d+)_g(\d+)(?:_i[0-9a-f]+)?")
# Inputs of the LUT that ends a multiplexer of 2 or 3 inputs (data and select bits).
_LAST_STAGE_INPUTS = {2: 3, 3: 5}


def buffer_shape(module_name):
    """``(width, depth, write groups)`` of the DualPortBuffer generated as ``module_name``, or None if the name is
    not one (:attr:`hw.shared.dual_port_buffer.DualPortBuffer.module_name` carries its parameters)."""
    match = _MODULE_NAME.fullmatch(module_name)
    if match is None:
        return None
    width, depth, granularity = map(int, match.groups())
    return width, depth, width // granularity if granularity else 1


def _lut(inputs):
    """Yosys' cell type of a LUT of ``inputs`` inputs."""
    return f"MISTRAL_ALUT{inputs}"


def _multiplexer_luts(inputs):
    """``{cell type: count}`` of one bit of an ``inputs``:1 multiplexer: 4:1 stages (6-input LUTs) while four or
    more remain, then one 2:1 or 3:1 LUT."""
    cells, remaining = {}, inputs
    while remaining >= 4:
        cells[_lut(6)] = cells.get(_lut(6), 0) + remaining // 4
        remaining = remaining // 4 + remaining % 4
    if remaining > 1:
        cells[_lut(_LAST_STAGE_INPUTS[remaining])] = cells.get(_lut(_LAST_STAGE_INPUTS[remaining]), 0) + 1
    return cells


def buffer_cells(width, depth, groups):
    """``{Yosys cell type: count}`` of a DualPortBuffer of ``depth`` x ``width`` bits written in ``groups`` parts (the
    rule in the module docstring)."""
    blocks, deep = block_mapping(width, depth, groups, M10K_MODES)
    select_bits = math.ceil(math.log2(deep))
    cells = {"NNACCEL_M10K": blocks}

    def add(cell_type, count):
        if count:
            cells[cell_type] = cells.get(cell_type, 0) + count

    enable_inputs = 2 + select_bits
    add(_lut(min(enable_inputs, 6)), PORTS * groups * deep * math.ceil((enable_inputs - 1) / 5))
    if deep > 1:
        for cell_type, count in _multiplexer_luts(deep).items():
            add(cell_type, PORTS * width * count)
    add("MISTRAL_FF", PORTS * select_bits)
    return cells


def dual_port_buffer_cells(module_name):
    """``{"cells": {Yosys cell type: count}, "memories": [[width, depth, groups]]}`` of the DualPortBuffer generated
    as ``module_name`` (:func:`buffer_cells`), or None if the name is not one."""
    shape = buffer_shape(module_name)
    if shape is None:
        return None
    return {"cells": buffer_cells(*shape), "memories": [list(shape)]}
