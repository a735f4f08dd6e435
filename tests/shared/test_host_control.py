# amaranth: UnusedElaboratable=no
"""hw.shared.host_control.HostControl on Amaranth's simulator, driven through its host port as the accelerators'
hosts drive it: START and the layer count, the counters against counts of a random busy / layer / event pattern,
registers and memories read back one cycle later, descriptor and memory requests ignored while busy; the register
map's constants and the parameter checks."""

import enum

import numpy as np
import pytest
from amaranth.lib import data
from amaranth.sim import Simulator

from nnaccel.hw.shared.host_control import (COUNTER_BITS, ControlRegister, HostControl, HostTarget, LayerCounter,
                                    MemoryTarget, SystemRegister, layer_counter_address)
from nnaccel.hw.shared.host_port import HostPortSignature

SEED = 6262
MAX_LAYERS = 3
DESCRIPTOR = data.StructLayout({"kind": 2, "size": 9})


class Memory(MemoryTarget):
    RAM_A = enum.auto()
    RAM_B = enum.auto()


class Register(SystemRegister):
    ANSWER = enum.auto()
    FLAGS = enum.auto()


def make_control(**options):
    return HostControl(data_bits=48, max_layers=MAX_LAYERS, descriptor_layout=DESCRIPTOR,
                       memories={Memory.RAM_A: 48, Memory.RAM_B: 12},
                       registers={Register.ANSWER: 40, Register.FLAGS: 3}, **options)


class Host:
    """One request per cycle through ``control.host``; the system's side (busy, layer, events, registers, memory
    read data) is set by the test between requests."""

    def __init__(self, ctx, control):
        self.ctx, self.control = ctx, control

    async def request(self, *, write=0, read=0, target=0, address=0, write_data=0):
        """Present a request for one cycle; returns what the block drives on that cycle (start, layer count, memory
        strobes) and, for a read, the read data of the next cycle."""
        ctx, control = self.ctx, self.control
        host = control.host
        for name, value in (("write", write), ("read", read), ("target", int(target)), ("address", int(address)),
                            ("write_data", write_data)):
            ctx.set(getattr(host, name), value)
        seen = {"start": ctx.get(control.run.start), "layer_count": ctx.get(control.run.layer_count),
                "memory_write": {name: ctx.get(getattr(control.memory, name).write) for name in ("ram_a", "ram_b")},
                "memory_read": {name: ctx.get(getattr(control.memory, name).read) for name in ("ram_a", "ram_b")}}
        await ctx.tick()
        ctx.set(host.write, 0)
        ctx.set(host.read, 0)
        if read:
            assert ctx.get(host.read_data.valid), "no valid read data on the cycle after a read"
            seen["read_data"] = ctx.get(host.read_data.payload)
        else:
            assert not ctx.get(host.read_data.valid)
        return seen


def run(process, **options):
    control = make_control(**options)
    simulator = Simulator(control)
    simulator.add_clock(1e-6)
    results = {}

    async def testbench(ctx):
        await process(ctx, control, Host(ctx, control), results)

    simulator.add_testbench(testbench)
    simulator.run()
    return results


@pytest.mark.parametrize("counter_ram", [False, True], ids=["counter registers", "counter_ram"])
def test_start_counters_and_register_reads(counter_ram):
    """A run of random events: TOTAL_CYCLES and every layer's counters equal the counts of the pattern, the STATUS,
    system registers and counters read back one cycle later (with ``counter_ram`` from the first idle cycle, when
    the last layer's word is written); START while busy starts nothing."""
    rng = np.random.default_rng(SEED)
    cycles = 60
    layer_of = np.sort(rng.integers(0, MAX_LAYERS, cycles))
    events = rng.integers(0, 2, (cycles, 3))

    async def process(ctx, control, host, results):
        seen = await host.request(write=1, target=HostTarget.CONTROL, address=ControlRegister.START, write_data=3)
        results["start"] = (seen["start"], seen["layer_count"])
        ctx.set(control.run.busy, 1)
        for cycle in range(cycles):
            ctx.set(control.run.layer_index, int(layer_of[cycle]))
            ctx.set(control.run.events, {"issue": int(events[cycle, 0]), "stall": int(events[cycle, 1]),
                                     "draining": int(events[cycle, 2])})
            if cycle == 10:    # START while busy: ignored, counting goes on
                seen = await host.request(write=1, target=HostTarget.CONTROL, address=ControlRegister.START,
                                          write_data=2)
                results["start_while_busy"] = seen["start"]
            else:
                await ctx.tick()
        ctx.set(control.run.busy, 0)
        ctx.set(control.run.done, 1)
        ctx.set(control.run.events, {"issue": 1, "stall": 1, "draining": 1})     # not counted: not busy
        ctx.set(control.system_registers, {"answer": (1 << 40) - 3, "flags": 5})
        addresses = [ControlRegister.STATUS, ControlRegister.TOTAL_CYCLES, Register.ANSWER, Register.FLAGS]
        addresses += [layer_counter_address(layer, counter) for layer in range(MAX_LAYERS) for counter in LayerCounter]
        results["reads"] = [(await host.request(read=1, target=HostTarget.CONTROL, address=address))["read_data"]
                            for address in addresses]

    results = run(process, counter_ram=counter_ram)
    assert results["start"] == (1, 3) and results["start_while_busy"] == 0
    status, total, answer, flags, *counters = results["reads"]
    assert (status, total, answer, flags) == (0b10, cycles, (1 << 40) - 3, 5)
    expected = [[int(np.sum(layer_of == layer))] + [int(np.sum(events[layer_of == layer, kind])) for kind in range(3)]
                for layer in range(MAX_LAYERS)]
    assert np.reshape(counters, (MAX_LAYERS, 4)).tolist() == expected


@pytest.mark.parametrize("counter_ram", [False, True], ids=["counter registers", "counter_ram"])
def test_a_new_start_clears_the_counters(counter_ram):
    async def process(ctx, control, host, results):
        for run_cycles in (7, 3):
            await host.request(write=1, target=HostTarget.CONTROL, address=ControlRegister.START, write_data=1)
            ctx.set(control.run.busy, 1)
            ctx.set(control.run.layer_index, 1)
            for _ in range(run_cycles):
                await ctx.tick()
            ctx.set(control.run.busy, 0)
            status = (await host.request(read=1, target=HostTarget.CONTROL, address=ControlRegister.STATUS))
            results.setdefault("totals", []).append([
                (await host.request(read=1, target=HostTarget.CONTROL, address=address))["read_data"]
                for address in (ControlRegister.TOTAL_CYCLES, layer_counter_address(1, LayerCounter.CYCLES),
                                layer_counter_address(0, LayerCounter.CYCLES))])
            results.setdefault("status", []).append(status["read_data"])

    results = run(process, counter_ram=counter_ram)
    assert results["totals"] == [[7, 7, 0], [3, 3, 0]] and results["status"] == [0, 0]


def test_descriptors_and_memories():
    """Descriptor writes land in the entry of their address and show on ``descriptor`` for ``layer_index``; memory
    requests reach the memory of their target only; all are ignored while busy; memory reads return the memory's
    word of the next cycle, zero-extended."""
    async def process(ctx, control, host, results):
        for entry in range(MAX_LAYERS):
            await host.request(write=1, target=HostTarget.DESCRIPTORS, address=entry, write_data=(entry + 1) * 0x55)
        ctx.set(control.run.busy, 1)
        await host.request(write=1, target=HostTarget.DESCRIPTORS, address=1, write_data=0)      # ignored
        results["busy_write"] = await host.request(write=1, target=Memory.RAM_A, address=9, write_data=1)
        results["busy_read"] = (await host.request(read=1, target=Memory.RAM_B, address=9))["memory_read"]
        ctx.set(control.run.busy, 0)
        results["descriptors"] = []
        for entry in range(MAX_LAYERS):
            ctx.set(control.run.layer_index, entry)
            results["descriptors"].append(ctx.get(control.run.descriptor.as_value()))
        results["write_b"] = await host.request(write=1, target=Memory.RAM_B, address=77, write_data=0xABC)
        results["address"] = {name: (ctx.get(getattr(control.memory, name).address), ctx.get(getattr(control.memory, name).write_data))
                              for name in ("ram_a", "ram_b")}
        ctx.set(control.memory.ram_a.read_data, 0xFFFF_0000_1234)
        ctx.set(control.memory.ram_b.read_data, 0xFED)
        results["read_a"] = await host.request(read=1, target=Memory.RAM_A, address=3)
        results["read_b"] = await host.request(read=1, target=Memory.RAM_B, address=4)

    results = run(process)
    mask = (1 << DESCRIPTOR.size) - 1
    assert results["descriptors"] == [(entry + 1) * 0x55 & mask for entry in range(MAX_LAYERS)]
    assert results["busy_write"]["memory_write"] == {"ram_a": 0, "ram_b": 0}
    assert results["busy_read"] == {"ram_a": 0, "ram_b": 0}
    assert results["write_b"]["memory_write"] == {"ram_a": 0, "ram_b": 1} and results["address"] == {"ram_a": (77, 0xABC), "ram_b": (77, 0xABC)}
    assert results["read_a"]["memory_read"] == {"ram_a": 1, "ram_b": 0}
    assert (results["read_a"]["read_data"], results["read_b"]["read_data"]) == (0xFFFF_0000_1234, 0xFED)


def test_register_map_constants():
    assert [(target.name, int(target)) for target in HostTarget] == [("CONTROL", 0), ("DESCRIPTORS", 1)]
    assert [int(target) for target in Memory] == [2, 3]
    assert [(register.name, int(register)) for register in ControlRegister] == [
        ("START", 0), ("STATUS", 1), ("TOTAL_CYCLES", 2)]
    assert [int(register) for register in Register] == [8, 9]
    assert [layer_counter_address(0, counter) for counter in LayerCounter] == [16, 17, 18, 19]
    assert layer_counter_address(2, LayerCounter.DRAIN_CYCLES) == 16 + 2 * 4 + 3
    assert COUNTER_BITS == 40


def test_ports_and_properties():
    control = make_control()
    assert control.signature.members["host"].signature == HostPortSignature(data_bits=48).flip()
    assert (control.data_bits, control.max_layers) == (48, MAX_LAYERS)
    assert control.memories == {Memory.RAM_A: 48, Memory.RAM_B: 12}
    assert control.registers == {Register.ANSWER: 40, Register.FLAGS: 3}
    assert "system_registers" not in HostControl(data_bits=8, max_layers=1, descriptor_layout=DESCRIPTOR,
                                                 memories={}).signature.members


class TooFar(MemoryTarget):
    A, B, C, D, E, F, G = (enum.auto() for _ in range(7))


class Late(SystemRegister):
    R0, R1, R2, R3, R4, R5, R6, R7, R8 = (enum.auto() for _ in range(9))


@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"max_layers": 0}, ValueError, "max_layers must be an integer from 1 to 262140, not 0"),
    ({"descriptor_layout": 12}, TypeError, "descriptor_layout must be a data.Layout, not 12"),
    ({"data_bits": -1}, ValueError, "data_bits must be a positive integer, not -1"),
    ({"memories": [Memory.RAM_A]}, TypeError,
     r"memories must be a dict of MemoryTarget members to widths, not \[<Memory.RAM_A: 2>\]"),
    ({"memories": {HostTarget.CONTROL: 8}}, TypeError,
     "memories keys must be members of a MemoryTarget subclass, not <HostTarget.CONTROL: 0>"),
    ({"memories": {Memory.RAM_A: 49}}, ValueError, "memories\\[RAM_A\\] must be a width from 1 to 48, not 49"),
    ({"memories": {TooFar.G: 8}}, ValueError, "memory target G = 8 does not fit the host port's 3-bit target"),
    ({"registers": {Register.ANSWER: 41}}, ValueError, "registers\\[ANSWER\\] must be a width from 1 to 40, not 41"),
    ({"registers": {Late.R8: 1}}, ValueError, "register R8 = 16 lies among the layer counters \\(from 16\\)"),
])
def test_rejects_bad_parameters(arguments, error, message):
    parameters = {"data_bits": 48, "max_layers": 2, "descriptor_layout": DESCRIPTOR, "memories": {}} | arguments
    with pytest.raises(error, match=f"^{message}$"):
        HostControl(**parameters)
