"""Generic streaming testbench: one stimulus element per cycle in, every valid output beat recorded.

Configuration (``load_config()``)::

    inputs:    {port: {"lanes": L, "bits": B}}   # stimulus[port] is (N,) or (N, L) raw bits
               or {port: {"fields": {key: {"offset": O, "lanes": L, "bits": B}}}}: the port holds
               stimulus[key] at bit offset O for each key (a stream's payload of several fields)
    in_valid:  port pulsed with each element, or null
    outputs:   {port: {"lanes": L, "bits": B}} or {port: {"fields": ...}}, recorded as outputs[port]
               or outputs[key] for each field key
    out_valid: port sampled each cycle; when high the outputs are recorded
    expect:    number of output beats to collect
    idle_seed: null, or a seed for random idle cycles (0-3) between input elements
    hold:      {port: value} constant inputs, set before reset is released
    drain_cycles: cycles allowed after the last input for the outputs to appear (default 10,000)

Cycle numbering: cycle 0 is the first cycle after reset.  The driver presents element i during
cycle ``in_cycle[i]``; a beat seen (after the combinational logic settled) during cycle c is
recorded with ``cycle = c``, so a unit of latency L gives ``cycle - in_cycle == L``.
"""

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly

from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, pack_lanes, save_outputs, unpack_lanes


def _fields(port, spec):
    """A port's fields ``{key: {"offset", "lanes", "bits"}}``; a port without fields is one field named after it."""
    return spec["fields"] if "fields" in spec else {port: {"offset": 0, "lanes": spec["lanes"], "bits": spec["bits"]}}


def _pack_port(port, spec, stimulus):
    """The port's value for every element: its fields' stimulus packed at their offsets."""
    words = None
    for key, field in _fields(port, spec).items():
        packed = [value << field["offset"] for value in pack_lanes(stimulus[key], field["bits"])]
        words = packed if words is None else [word | value for word, value in zip(words, packed)]
    return words


def _unpack_port(port, spec, words):
    """``{key: array}`` of the port's fields in the recorded words."""
    unpacked = {}
    for key, field in _fields(port, spec).items():
        mask = (1 << field["lanes"] * field["bits"]) - 1
        unpacked[key] = unpack_lanes([(word >> field["offset"]) & mask for word in words], field["lanes"],
                                     field["bits"])
    return unpacked


def _input_schedule(count, idle_seed):
    """Cycle on which each input element is presented."""
    if idle_seed is None:
        return np.arange(count)
    gaps = np.random.default_rng(idle_seed).integers(0, 4, size=count)
    return np.arange(count) + np.cumsum(gaps)


@cocotb.test()
async def stream(dut):
    config = load_config()
    stimulus = load_stimulus()
    inputs = {port: _pack_port(port, spec, stimulus) for port, spec in config["inputs"].items()}
    count = len(next(iter(inputs.values()))) if inputs else 0
    in_cycle = _input_schedule(count, config.get("idle_seed"))
    expect = config["expect"]
    in_valid = getattr(dut, config["in_valid"]) if config.get("in_valid") else None
    out_valid = getattr(dut, config["out_valid"])
    input_handles = {port: getattr(dut, port) for port in inputs}
    output_handles = {port: getattr(dut, port) for port in config["outputs"]}
    hold = dict(config.get("hold") or {})
    if in_valid is not None:
        hold[config["in_valid"]] = 0
    next_cycle = await start_clock_and_reset(dut, hold=hold)

    observed = {port: [] for port in output_handles}
    out_cycle = []
    last_cycle = (int(in_cycle[-1]) if count else 0) + config.get("drain_cycles", 10_000)
    element = 0
    cycle = 0
    while len(out_cycle) < expect and cycle <= last_cycle:
        presenting = element < count and in_cycle[element] == cycle
        if presenting:
            for port, handle in input_handles.items():
                handle.value = inputs[port][element]
            element += 1
        if in_valid is not None:
            in_valid.value = int(presenting)
        await ReadOnly()
        if int(out_valid.value):
            out_cycle.append(cycle)
            for port, handle in output_handles.items():
                observed[port].append(int(handle.value))
        await next_cycle()
        cycle += 1

    outputs = {}
    for port, spec in config["outputs"].items():
        outputs.update(_unpack_port(port, spec, observed[port]))
    save_outputs(cycle=np.array(out_cycle, dtype=np.int64), in_cycle=np.asarray(in_cycle, dtype=np.int64), **outputs)
    assert len(out_cycle) == expect, (
        f"expected {expect} output beats, saw {len(out_cycle)} by cycle {cycle} "
        f"({count} inputs, last presented on cycle {in_cycle[-1] if count else None})")
