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
    ``(cycle, address, {element: value}, packed beat)`` for every port and cycle with an enabled element (port 0
    first), the packed beat ``(base_index, mask)`` when the argmax stream is valid and the write is port 0's (else
    None), cycles counted from the beat (the beat is cycle 0)."""
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
        assert not ctx.get(writer.output0.write_enable) and not ctx.get(writer.output1.write_enable)
        await ctx.tick()
        for results in writer.results:
            ctx.set(results.valid, 0)
        packed = writer.packed
        for cycle in range(1, 40):
            assert not ctx.get(packed.valid) or ctx.get(writer.output0.write_enable), \
                f"a packed beat without a write on cycle {cycle}"
            addresses = []
            for output in (writer.output0, writer.output1):
                assert not ctx.get(output.read_enable)
                enable = ctx.get(output.write_enable)
                if not enable:
                    continue
                elements = {element: ctx.get(output.write_data.word_select(element, 32))
                            for element in range(CONFIG.row_elements) if enable >> element & 1}
                beat = None
                if ctx.get(packed.valid) and output is writer.output0:
                    beat = (ctx.get(packed.payload.base_index), ctx.get(packed.payload.mask))
                    # its values are elements 0 .. lanes-1 of the word written
                    assert ctx.get(packed.payload.values) == [ctx.get(output.write_data.word_select(lane, 32))
                                                              for lane in range(LANES)]
                addresses.append(ctx.get(output.address))
                writes.append((cycle, addresses[-1], elements, beat))
            assert len(set(addresses)) == len(addresses), f"both ports write word {addresses[0]} on cycle {cycle}"
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
            "reduce": 0, "last": 1}


@pytest.mark.parametrize("reduce", [0, 1])
@pytest.mark.parametrize(("layer", "p0"), [
    (image_layer(3, 3, 2, 0), 2),      # 4 positions per group: 2 (row 0) and 3, 4, 5 (row 1)
    (image_layer(3, 3, 2, 0), 0),      # positions 0, 1, 2 on row 0 and 3 on row 1
    (image_layer(3, 3, 3, 1), 8),      # 2 positions per group, only position 8 exists; channel 3 does not
    (image_layer(2, 6, 4, 1), 4),      # positions 4, 5 on one row, both column blocks
    (image_layer(2, 6, 3, 1), 4),      # one row, an odd channel count: channel 2 alone on the last cycle
    (image_layer(2, 6, 5, 2), 6),      # one row, channels 0, 1 in block 0 and 2, 3 in block 1, 4 in block 2
    (image_layer(3, 2, 3, 1), 1),      # two rows, an odd channel count
])
def test_image_layout(layer, p0, reduce):
    """Output channel n of position p = (oy, ox) goes to word out_base + n*out_height + oy, element ox; it is lane
    n % lanes of module (q << log2 C) | n // lanes for the group's q-th position.  Both ports write: a channel's two
    rows, or two channels' row, per cycle; a reduction's groups before its last one row per cycle."""
    layer = layer | {"reduce": reduce}
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
    row_writes = layer["out_channels"] * rows
    cycles = [cycle for cycle, *_ in writes]
    assert len(cycles) == row_writes
    one_port = reduce and p0 + per_group < layer["positions"]      # a reduction's last group takes both ports
    assert sorted(set(cycles)) == list(range(1, 1 + (row_writes if one_port else -(-row_writes // 2))))
    assert all(beat is None for *_, beat in writes)         # image writes never feed the argmax
    assert done == cycles[-1] + 1


@pytest.mark.parametrize("last", [1, 0])
def test_packed_layout(last):
    """A single-position layer: column block b's lanes to word out_base + b, elements 0 .. lanes-1, outputs past
    out_channels not written; in the last layer each write is a packed beat naming its outputs (base index, lanes)."""
    layer = {"out_height": 1, "out_width": 1, "positions": 1, "out_channels": 3, "column_blocks_log2": 1,
             "packed_output": 1, "position_major": 0, "first_position": 0, "reduce": 0, "last": last}
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
             "packed_output": 1, "position_major": 1, "first_position": 4, "reduce": 0, "last": 0}
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
        "output0": Out(BufferPortSignature(width=32 * CONFIG.row_elements, depth=64, granularity=32)),
        "output1": Out(BufferPortSignature(width=32 * CONFIG.row_elements, depth=64, granularity=32)),
        "packed": Out(stream.Signature(candidate_layout(CONFIG.fmt, LANES, 12), always_ready=True))}
