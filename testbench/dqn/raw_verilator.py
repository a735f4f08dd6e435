"""The DQN accelerator on Verilator without cocotb (:mod:`testbench.shared.raw_verilator`): the anchor for the
cocotb harness' cost on the DQN.

:func:`run_raw` makes the host operations of :mod:`testbench.dqn.accelerator_tb`: the weight image and the
descriptors once, then per state the input words, START and the wait for ``done``, and the reads of the output
tensor, ACTION, ACTION_VALUE, TOTAL_CYCLES and the per-layer counters.  Its :class:`RawRun` has the fields of
the cocotb run's :class:`testbench.dqn.host.AcceleratorRun` that a benchmark compares bit for bit, and the
wall time of each run for the raw model's simulated cycles per second.
"""

from dataclasses import dataclass

import numpy as np

from nnaccel.hw.dqn.accelerator import DqnMemory, DqnRegister
from nnaccel.hw.shared.host_control import COUNTERS_PER_LAYER, HostTarget
from nnaccel.sim.verilator_options import DEFAULT
from nnaccel.testbench.dqn.accelerator_tb import int_to_words, words_to_ints
from nnaccel.testbench.shared.raw_verilator import HostProgram, build_raw_model, run_program

__all__ = ["RawRun", "host_program", "run_raw"]


@dataclass
class RawRun:
    output_words: np.ndarray      # (N, words, row_elements) the output tensor's words
    actions: np.ndarray           # (N,) ACTION register
    action_values: np.ndarray     # (N,) ACTION_VALUE register
    total_cycles: np.ndarray      # (N,) TOTAL_CYCLES register
    layer_counters: np.ndarray    # (N, layers, 4) per-layer counters
    run_wall_seconds: np.ndarray  # (N,) wall time of each run (START to the cycle after done)
    run_cpu_seconds: np.ndarray   # (N,) the testbench process' CPU time over the same span
    build_seconds: float
    built_now: bool


def host_program(plan, states, *, max_cycles=1_000_000):
    """The :class:`~testbench.shared.raw_verilator.HostProgram` that runs ``states`` on the accelerator."""
    bits, layers = plan.config.element_bits, len(plan.descriptors)
    program = HostProgram()
    program.write_block(DqnMemory.WEIGHTS, 0, words_to_ints(plan.weight_image, bits))
    program.write_block(HostTarget.DESCRIPTORS, 0, plan.descriptors)
    for state in states:
        program.write_block(DqnMemory.ACTIVATIONS0 + plan.input.ram, plan.input.base,
                            words_to_ints(plan.input_words(state), bits))
        program.run(layers, max_cycles)
        program.read_block(DqnMemory.ACTIVATIONS0 + plan.output.ram,
                           range(plan.output.base, plan.output.base + plan.output.words))
        program.read_block(HostTarget.CONTROL, [DqnRegister.ACTION, DqnRegister.ACTION_VALUE])
        program.read_counters(layers)
    return program


def run_raw(accelerator, plan, states, *, options=DEFAULT, max_cycles=1_000_000):
    """Run every state of ``states`` through ``accelerator`` under the C++ testbench, built with the Verilator
    ``options``; a :class:`RawRun`."""
    if accelerator.config != plan.config:
        raise ValueError(f"the plan was compiled for {plan.config}, the accelerator is built for {accelerator.config}")
    program = host_program(plan, states, max_cycles=max_cycles).text()
    build_dir, built_now, build_seconds = build_raw_model(accelerator, accelerator.module_name, program, options)
    output = run_program(build_dir, program)
    config, layers, count = plan.config, len(plan.descriptors), len(states)
    per_state = plan.output.words + 2 + 1 + layers * COUNTERS_PER_LAYER
    reads = np.array(output.reads, dtype=object).reshape(count, per_state)
    outputs = [[int_to_words(value, config.row_elements, config.element_bits) for value in row[:plan.output.words]]
               for row in reads]
    registers = reads[:, plan.output.words:].astype(np.uint64)
    return RawRun(output_words=np.array(outputs, dtype=np.uint32), actions=registers[:, 0].astype(np.int64),
                  action_values=registers[:, 1].astype(np.uint32), total_cycles=registers[:, 2].astype(np.int64),
                  layer_counters=registers[:, 3:].reshape(count, layers, COUNTERS_PER_LAYER).astype(np.int64),
                  run_wall_seconds=np.array(output.run_wall_seconds),
                  run_cpu_seconds=np.array(output.run_cpu_seconds), build_seconds=build_seconds,
                  built_now=built_now)
