# amaranth: UnusedElaboratable=no
"""hw.dqn.result_writer.ResultWriter on Amaranth's simulator: a group's results through the crossbar into an
activation RAM, checked against where the layout puts each output (docs/dqn_accelerator.md), with the write count
and timing the docstring states."""

import pytest
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.float_argmax import candidate_layout
from nnaccel.hw.dqn.interfaces import ResultGroupSignature
from nnaccel.hw.dqn.result_writer import ResultWriter
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=6, activation_depth=64, weight_depth=16, max_layers=2)
MODULES, LANES = CONFIG.modules, CONFIG.lanes
OUT_BASE = 10


def result_value(module, lane):
    return 1000 * (module + 1) + lane


def run_group(layer, p0):
    """One results beat for the group starting at position ``p0``: ``(writes, done_cycle)``, ``writes`` a list of
    ``(cycle, address, {element: value}, packed beat)`` for every cycle with an enabled element, the packed beat
    ``(base_index, mask)`` when the argmax stream is valid (else None), cycles counted from the beat (the beat is
    cycle 0)."""
    writer = ResultWriter(config=CONFIG)
    oy0, ox0 = divmod(p0, layer["out_width"])
    writes, done = [], []
    simulator = Simulator(writer)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        ctx.set(writer.group.layer, layer | {"out_base": OUT_BASE})
        ctx.set(writer.group.group, {"p0": p0, "oy0": oy0, "ox0": ox0})
        for module, results in enumerate(writer.results):
            ctx.set(results.payload, [result_value(module, lane) for lane in range(LANES)])
            ctx.set(results.valid, 1)
        assert not ctx.get(writer.output.write_enable)
        await ctx.tick()
        for results in writer.results:
            ctx.set(results.valid, 0)
        output, packed = writer.output, writer.packed
        for cycle in range(1, 40):
            enable = ctx.get(output.write_enable)
            assert not ctx.get(packed.valid) or enable, f"a packed beat without a write on cycle {cycle}"
            if enable:
                elements = {element: ctx.get(output.write_data.word_select(element, 32))
                            for element in range(CONFIG.row_elements) if enable >> element & 1}
                beat = None
                if ctx.get(packed.valid):
                    beat = (ctx.get(packed.payload.base_index), ctx.get(packed.payload.mask))
                    # its values are elements 0 .. lanes-1 of the word written
                    assert ctx.get(packed.payload.values) == [ctx.get(output.write_data.word_select(lane, 32))
                                                              for lane in range(LANES)]
                writes.append((cycle, ctx.get(output.address), elements, beat))
            if ctx.get(writer.group.written):
                done.append(cycle)
            await ctx.tick()

    simulator.add_testbench(testbench)
    simulator.run()
    assert len(done) == 1, f"done on cycles {done}"
    return writes, done[0]


def ram_contents(writes):
    ram = {}
    for _, address, elements, _ in writes:
        for element, value in elements.items():
            assert (address, element) not in ram, f"word {address} element {element} written twice"
            ram[address, element] = value
    return ram


def image_layer(out_height, out_width, out_channels, column_blocks_log2, positions=None):
    return {"out_height": out_height, "out_width": out_width, "out_channels": out_channels,
            "positions": out_height * out_width if positions is None else positions,
            "column_blocks_log2": column_blocks_log2, "packed_output": 0, "position_major": 0, "first_position": 0,
            "last": 1}


@pytest.mark.parametrize(("layer", "p0"), [
    (image_layer(3, 3, 2, 0), 2),      # 4 positions per group: 2 (row 0) and 3, 4, 5 (row 1)
    (image_layer(3, 3, 2, 0), 0),      # positions 0, 1, 2 on row 0 and 3 on row 1
    (image_layer(3, 3, 3, 1), 8),      # 2 positions per group, only position 8 exists; channel 3 does not
    (image_layer(2, 6, 4, 1), 4),      # positions 4, 5 on one row, both column blocks
])
def test_image_layout(layer, p0):
    """Output channel n of position p = (oy, ox) goes to word out_base + n*out_height + oy, element ox; it is lane
    n % lanes of module (q << log2 C) | n // lanes for the group's q-th position."""
    writes, done = run_group(layer, p0)
    per_group = MODULES >> layer["column_blocks_log2"]
    positions = range(p0, min(p0 + per_group, layer["positions"]))
    expected = {}
    for q, position in enumerate(positions):
        oy, ox = divmod(position, layer["out_width"])
        for channel in range(layer["out_channels"]):
            module = (q << layer["column_blocks_log2"]) | channel // LANES
            expected[OUT_BASE + channel * layer["out_height"] + oy, ox] = result_value(module, channel % LANES)
    assert ram_contents(writes) == expected
    rows = len({position // layer["out_width"] for position in positions})
    assert [cycle for cycle, *_ in writes] == list(range(1, 1 + layer["out_channels"] * rows))
    assert all(beat is None for *_, beat in writes)         # image writes never feed the argmax
    assert done == len(writes) + 1


@pytest.mark.parametrize("last", [1, 0])
def test_packed_layout(last):
    """A single-position layer: column block b's lanes to word out_base + b, elements 0 .. lanes-1, outputs past
    out_channels not written; in the last layer each write is a packed beat naming its outputs (base index, lanes)."""
    layer = {"out_height": 1, "out_width": 1, "positions": 1, "out_channels": 3, "column_blocks_log2": 1,
             "packed_output": 1, "position_major": 0, "first_position": 0, "last": last}
    writes, done = run_group(layer, 0)
    assert ram_contents(writes) == {(OUT_BASE, 0): result_value(0, 0), (OUT_BASE, 1): result_value(0, 1),
                                    (OUT_BASE + 1, 0): result_value(1, 0)}
    beats = [(0, 0b11), (2, 0b01)] if last else [None, None]
    assert [(cycle, beat) for cycle, _, _, beat in writes] == list(zip([1, 2], beats))
    assert done == 3


def test_position_major_layout():
    """Partial sums of positions 4 and 5 (first_position 4): position q's column block b to word
    out_base + q, elements b*lanes .. b*lanes + lanes-1, from module (q << log2 C) | b."""
    layer = {"out_height": 1, "out_width": 8, "positions": 6, "out_channels": 4, "column_blocks_log2": 1,
             "packed_output": 1, "position_major": 1, "first_position": 4, "last": 0}
    writes, done = run_group(layer, 4)
    expected = {(OUT_BASE + q, block * LANES + lane): result_value((q << 1) | block, lane)
                for q in range(2) for block in range(2) for lane in range(LANES)}
    assert ram_contents(writes) == expected
    assert [cycle for cycle, *_ in writes] == [1, 2, 3, 4] and done == 5


def test_ports():
    writer = ResultWriter(config=CONFIG)
    results = stream.Signature(data.ArrayLayout(32, LANES), always_ready=True)
    assert dict(writer.signature.members) == {
        "results": In(results).array(MODULES), "group": In(ResultGroupSignature(CONFIG)),
        "output": Out(BufferPortSignature(width=32 * CONFIG.row_elements, depth=64, granularity=32)),
        "packed": Out(stream.Signature(candidate_layout(CONFIG.fmt, LANES, 12), always_ready=True))}
