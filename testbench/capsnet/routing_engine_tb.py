"""cocotb test of :class:`hw.capsnet.routing_engine.CapsNetRoutingEngine`: images of prediction vectors in, one
beat per class out, with optional random gaps on the input and random backpressure on the output.

Configuration: ``shift`` (the engine's shift input), ``image_vectors`` (vectors per image; images are sent back to
back), ``valid_seed`` / ``ready_seed`` (null: no gap / always ready; else seeds: about 1 cycle in 3 idle),
``max_cycles``.  Stimulus: ``vectors`` ((total vectors, dims) uint8, raw int8 bits).  Outputs: ``sums``, ``caps``,
``squared_length``, ``label``, ``last``, ``beat_cycles`` (one row per beat taken), ``accept_cycles`` (the cycle
each vector was taken).
"""

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly

from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, pack_lanes, save_outputs


def _willing(seed, count):
    return np.ones(count, bool) if seed is None else np.random.default_rng(seed).random(count) >= 0.3


@cocotb.test()
async def routing(dut):
    config, stimulus = load_config(), load_stimulus()
    vectors = pack_lanes(stimulus["vectors"], 8)
    last = np.zeros(len(vectors), bool)
    last[np.cumsum(config["image_vectors"]) - 1] = True
    dims = stimulus["vectors"].shape[1]
    vector_bits = 8 * dims
    beats_expected = len(config["image_vectors"]) * config["classes"]
    max_cycles = config["max_cycles"]
    offer = _willing(config.get("valid_seed"), max_cycles)
    ready = _willing(config.get("ready_seed"), max_cycles)
    next_cycle = await start_clock_and_reset(dut, hold={"shift": config["shift"], "predictions__valid": 0,
                                                         "digit_caps__ready": 0})
    payload_width = len(dut.digit_caps__payload)
    sum_bits = (payload_width - 1 - config["label_bits"] - config["length_bits"] - vector_bits) // dims

    beats, beat_cycles, accept_cycles = [], [], []
    sent, offering, cycle = 0, False, 0
    while len(beats) < beats_expected and cycle < max_cycles:
        offering = sent < len(vectors) and (offering or bool(offer[cycle]))
        dut.predictions__valid.value = int(offering)
        if offering:
            dut.predictions__payload.value = vectors[sent] | int(last[sent]) << vector_bits
        dut.digit_caps__ready.value = int(ready[cycle])
        await ReadOnly()
        if offering and int(dut.predictions__ready.value):
            accept_cycles.append(cycle)
            sent += 1
            offering = False
        if ready[cycle] and int(dut.digit_caps__valid.value):
            beats.append(int(dut.digit_caps__payload.value))
            beat_cycles.append(cycle)
        await next_cycle()
        cycle += 1

    def field(value, offset, bits):
        return value >> offset & ((1 << bits) - 1)

    sums_offset, caps_offset = 0, dims * sum_bits
    length_offset = caps_offset + vector_bits
    label_offset = length_offset + config["length_bits"]
    sums = np.array([[field(b, sums_offset + k * sum_bits, sum_bits) for k in range(dims)] for b in beats],
                    np.int64).reshape(-1, dims)
    sums = np.where(sums >= 1 << (sum_bits - 1), sums - (1 << sum_bits), sums)
    save_outputs(sums=sums,
                 caps=np.array([[field(b, caps_offset + 8 * k, 8) for k in range(dims)] for b in beats],
                               np.uint8).reshape(-1, dims),
                 squared_length=np.array([field(b, length_offset, config["length_bits"]) for b in beats], np.int64),
                 label=np.array([field(b, label_offset, config["label_bits"]) for b in beats], np.int64),
                 last=np.array([field(b, label_offset + config["label_bits"], 1) for b in beats], np.int64),
                 beat_cycles=np.array(beat_cycles, np.int64), accept_cycles=np.array(accept_cycles, np.int64))
    assert len(beats) == beats_expected, f"{len(beats)} of {beats_expected} beats by cycle {cycle}"
