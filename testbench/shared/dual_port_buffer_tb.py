"""cocotb test of ``DualPortBuffer``: random simultaneous traffic on both ports, checked cycle by cycle.

Stimulus (``load_stimulus()``), one row per cycle, for each port ``p`` in ``a``, ``b``:
``p_address`` (N,), ``p_read_enable`` (N,), ``p_write_enable`` (N,), ``p_write_data`` (N, lanes) raw bits.
Configuration: ``width``, ``depth``, ``lanes`` (write_data lanes of ``width // lanes`` bits), ``granularity``
(null, or the write-enable element width) and ``init`` (the initial words as lists of lanes, or null);
:func:`random_requests` makes such a stimulus.

Driver: presents cycle ``n``'s requests during cycle ``n``.  Monitor: samples both ``read_data`` ports during
every cycle.  Scoreboard: :class:`models.shared.dual_port_buffer.DualPortBufferModel` predicts, from cycle ``n``'s
requests, what ``read_data`` shows on cycle ``n + 1`` (a new word after a read, the held word otherwise); every
sample is compared.  Outputs: ``read_data_a``/``read_data_b`` (N, lanes) as seen on cycle ``n + 1`` and
``checked`` (samples compared).
"""

import cocotb
import numpy as np
from cocotb.triggers import ReadOnly

from nnaccel.models.shared.dual_port_buffer import DualPortBufferModel, PortRequest
from nnaccel.testbench.shared.clocking import start_clock_and_reset
from nnaccel.testbench.shared.exchange import load_config, load_stimulus, pack_lanes, save_outputs, unpack_lanes

PORTS = ("a", "b")
FIELDS = ("address", "read_enable", "write_enable", "write_data")


def random_requests(rng, cycles, *, depth, lanes, lane_bits, granularity):
    """Stimulus for this module: per-cycle requests for both ports (about 40 % reads, 40 % writes, 10 % both, 10 %
    idle), never two writes to one address on one cycle; with a granularity, each write enables a random non-empty
    set of the ``lanes`` elements."""
    stimulus = {}
    kind = {port: rng.choice(4, size=cycles, p=[0.1, 0.4, 0.4, 0.1]) for port in PORTS}
    address = {port: rng.integers(0, depth, size=cycles) for port in PORTS}
    clash = (kind["a"] >= 2) & (kind["b"] >= 2) & (address["a"] == address["b"])
    address["b"][clash] = (address["a"][clash] + 1) % depth
    for port in PORTS:
        stimulus[f"{port}_address"] = address[port].astype(np.uint64)
        stimulus[f"{port}_read_enable"] = np.isin(kind[port], (1, 3)).astype(np.uint64)
        writes = (kind[port] >= 2).astype(np.uint64)
        if granularity is not None:
            writes *= rng.integers(1, 1 << lanes, size=cycles, dtype=np.uint64)
        stimulus[f"{port}_write_enable"] = writes
        stimulus[f"{port}_write_data"] = rng.integers(0, 1 << lane_bits, size=(cycles, lanes), dtype=np.uint64)
    return stimulus


def _requests(stimulus, lane_bits):
    """Per port, the list of per-cycle :class:`PortRequest` the driver presents."""
    requests = {}
    for port in PORTS:
        data = pack_lanes(stimulus[f"{port}_write_data"], lane_bits)
        requests[port] = [
            PortRequest(address=int(address), read_enable=bool(read), write_enable=int(write), write_data=word)
            for address, read, write, word in zip(stimulus[f"{port}_address"], stimulus[f"{port}_read_enable"],
                                                  stimulus[f"{port}_write_enable"], data)]
    return requests


@cocotb.test()
async def random_traffic(dut):
    config = load_config()
    stimulus = load_stimulus()
    width, depth, lanes = config["width"], config["depth"], config["lanes"]
    lane_bits = width // lanes
    init = None if config["init"] is None else np.array(config["init"], dtype=np.uint64)
    model = DualPortBufferModel(width=width, depth=depth, init=init, granularity=config["granularity"])
    requests = _requests(stimulus, lane_bits)
    cycles = len(requests["a"])

    hold = {f"{port}__{field}": 0 for port in PORTS for field in FIELDS}
    next_cycle = await start_clock_and_reset(dut, hold=hold)

    observed = {port: [] for port in PORTS}
    expected = None      # what read_data must show on the coming cycle, per port
    checked = 0
    mismatches = []
    for cycle in range(cycles + 1):
        if cycle < cycles:
            for port in PORTS:
                request = requests[port][cycle]
                for field in FIELDS:
                    getattr(dut, f"{port}__{field}").value = int(getattr(request, field))
        else:
            for port in PORTS:
                getattr(dut, f"{port}__read_enable").value = 0
                getattr(dut, f"{port}__write_enable").value = 0
        await ReadOnly()
        if cycle:
            for index, port in enumerate(PORTS):
                seen = int(getattr(dut, f"{port}__read_data").value)
                observed[port].append(seen)
                checked += 1
                if seen != expected[index]:
                    mismatches.append(f"cycle {cycle} port {port}: read_data {seen:#x}, model {expected[index]:#x}")
        if cycle < cycles:
            expected = model.step(*(requests[port][cycle] for port in PORTS))
        await next_cycle()

    save_outputs(checked=np.array(checked), **{f"read_data_{port}": unpack_lanes(observed[port], lanes, lane_bits)
                                              for port in PORTS})
    assert not mismatches, f"{len(mismatches)} reads differ from the model; first: {mismatches[:5]}"
