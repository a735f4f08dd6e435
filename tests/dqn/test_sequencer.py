# amaranth: UnusedElaboratable=no
"""hw.dqn.sequencer.LayerSequencer on Amaranth's simulator, with a stand-in result writer that reports a group
written a fixed number of cycles after its last product: per layer, the products it issues (weight, bias-row and
row addresses, load / shift / unit scalar, taps, groups) against what the descriptor fields give by hand, and its
cycles, stalls and drain against the timing its docstring states."""

import pytest
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.descriptor import descriptor_layout
from nnaccel.hw.dqn.interfaces import ActivationSelectSignature, FeederControlSignature, ResultGroupSignature
from nnaccel.hw.dqn.sequencer import LayerSequencer
from nnaccel.hw.shared.run_control import RunSignature

CONFIG = DqnConfig(modules=4, lanes=2, row_elements=12, activation_depth=128, weight_depth=256, max_layers=4)


def conv_descriptor(*, in_base, in_channels, in_height, kernel, stride, out_shape, column_blocks_log2, weight_base,
                    first_position=0, padding=(0, 0), in_width=8):
    (kernel_height, kernel_width), (out_height, out_width), (stride_y, stride_x) = kernel, out_shape, stride
    first_oy, first_ox = divmod(first_position, out_width)
    return {"in_ram": 0, "in_base": in_base, "in_channels": in_channels, "in_height": in_height,
            "in_width": in_width, "kernel_height": kernel_height, "kernel_width": kernel_width,
            "stride_y": stride_y, "stride_x": stride_x, "pad_top": padding[0], "pad_left": padding[1],
            "out_height": out_height, "out_width": out_width, "positions": out_height * out_width,
            "first_position": first_position, "first_oy": first_oy, "first_ox": first_ox,
            "first_row": first_oy * stride_y, "first_column": first_ox * stride_x,
            "column_blocks_log2": column_blocks_log2, "out_channels": 4,
            "products": in_channels * kernel_height * kernel_width, "weight_base": weight_base,
            "out_ram": 1, "out_base": 0, "packed_output": 0, "position_major": 0, "reduce": 0, "step_distance": 1,
            "relu": 1, "last": 0}


LAYERS = [
    # 2 positions per group (C = 2), 12 positions: 6 groups of 12 products; groups span two output rows; padded
    # (one row above the image, rows past its 5 below; two columns left), strides 2 x 1
    conv_descriptor(in_base=5, in_channels=2, in_height=5, kernel=(3, 2), stride=(2, 1), out_shape=(3, 4),
                    column_blocks_log2=1, weight_base=20, padding=(1, 2)),
    # 4 positions per group (C = 1), a pass from position 2: groups of 4, 4 and 2 positions
    conv_descriptor(in_base=40, in_channels=1, in_height=5, kernel=(2, 3), stride=(1, 1), out_shape=(4, 3),
                    column_blocks_log2=0, weight_base=60, first_position=2),
    # a reduction: the sum of 3 partial sums read from words 70, 71, 72 of RAM 1 (the one the layer before writes:
    # it waits for that layer's last group), seeded with the bias row
    conv_descriptor(in_base=70, in_channels=3, in_height=1, kernel=(1, 1), stride=(1, 1), out_shape=(1, 1),
                    column_blocks_log2=1, weight_base=100) | {"reduce": 1, "packed_output": 1, "in_ram": 1},
]


def simulate(layers, written_after):
    """Run ``layers``; the stand-in writer pulses ``group.written`` ``written_after`` cycles after each group's
    last product. Returns one dict of observations per cycle from START on."""
    sequencer = LayerSequencer(config=CONFIG)
    trace = []
    simulator = Simulator(sequencer)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        run, feeder = sequencer.run, sequencer.feeder
        ctx.set(run.descriptor, layers[0])
        ctx.set(run.layer_count, len(layers))
        ctx.set(run.start, 1)
        await ctx.tick()
        ctx.set(run.start, 0)
        written_at, issued = set(), [0] * len(layers)
        for cycle in range(2000):
            layer = ctx.get(run.layer_index)
            ctx.set(run.descriptor, layers[layer])
            ctx.set(sequencer.group.written, cycle in written_at)
            events = {name: ctx.get(getattr(run.events, name)) for name in ("issue", "stall", "draining")}
            observed = {"layer": layer, "busy": ctx.get(run.busy), "done": ctx.get(run.done), **events}
            for name in ("load", "shift", "unit_scalar", "weight_read", "weight_address", "bias_read", "bias_address",
                         "row_read", "row_address0", "row_address1", "row_zero0", "row_zero1", "row_width",
                         "tap_slot"):
                observed[name] = ctx.get(getattr(feeder, name))
            observed["tap_column"] = [ctx.get(feeder.tap_column[m]) for m in range(CONFIG.modules)]
            observed["product"] = ctx.get(feeder.issue)
            observed["from_activations"] = ctx.get(feeder.product.vector_from_activations)
            observed["count"], observed["relu"] = ctx.get(feeder.product.count), ctx.get(feeder.product.relu)
            observed["select"] = {name: ctx.get(getattr(sequencer.select, name))
                                  for name in ("busy", "in_ram", "out_ram")}
            observed["group"] = {field: ctx.get(getattr(sequencer.group.group, field))
                                 for field in ("p0", "oy0", "ox0")}
            observed["group_layer"] = ctx.get(sequencer.group.layer.out_base)
            trace.append(observed)
            if events["issue"]:
                issued[layer] += 1
                if issued[layer] % layers[layer]["products"] == 0:        # the group's last product
                    written_at.add(cycle + written_after)
            if observed["done"] and not observed["busy"]:
                break
            await ctx.tick()

    simulator.add_testbench(testbench)
    simulator.run()
    assert trace[-1]["done"], "the run did not finish"
    return trace


def groups_of(descriptor):
    per_group = CONFIG.modules >> descriptor["column_blocks_log2"]
    return [range(p0, min(p0 + per_group, descriptor["positions"]))
            for p0 in range(descriptor["first_position"], descriptor["positions"], per_group)]


def expected_products(d):
    """Per issued product of the layer: (weight address or None, load, shift, unit scalar, bias-row address or
    None): the bias row (after the products' rows) is read with a group's first product, the seed."""
    products = []
    for _ in groups_of(d):
        for k in range(d["products"]):
            column = k % d["kernel_width"]
            bias_row = d["weight_base"] + d["products"] if k == 0 else None
            if d["reduce"]:
                products.append((None, 0, 0, 1, bias_row))
            else:
                products.append((d["weight_base"] + k, int(column == 0), int(column != 0), 0, bias_row))
    return products


@pytest.fixture(scope="module")
def trace():
    return simulate(LAYERS, written_after=5)


def layer_cycles(trace, layer):
    return [entry for entry in trace if entry["busy"] and entry["layer"] == layer]


@pytest.mark.parametrize("layer", range(len(LAYERS)))
def test_products_weights_load_shift_bias(trace, layer):
    d = LAYERS[layer]
    cycles = layer_cycles(trace, layer)
    issued = [(entry["weight_address"] if entry["weight_read"] else None, entry["load"], entry["shift"],
               entry["unit_scalar"], entry["bias_address"] if entry["bias_read"] else None)
              for entry in cycles if entry["issue"]]
    assert issued == expected_products(d)
    assert not any(entry["bias_read"] for entry in cycles if not entry["issue"])
    # The feeder is told of each product on its issue cycle: a reduction takes its vectors from the input words;
    # every product counts the layer's products and carries its ReLU flag.
    for entry in cycles:
        assert entry["product"] == entry["issue"]
        if entry["issue"]:
            assert entry["from_activations"] == d["reduce"]
            assert (entry["count"], entry["relu"]) == (d["products"], d["relu"])
    assert sum(entry["product"] for entry in trace) == sum(len(expected_products(d)) for d in LAYERS)


def test_layer_to_the_rams_and_the_writer(trace):
    """The RAM selection is the layer's in_ram one cycle late (a read's data comes from the RAM it was read from,
    also on the cycle after a layer's last read, when the next layer is the current one): on every cycle that reads
    it is the reading layer's; out_ram is the layer's (all write RAM 1); the writer sees the descriptor of the
    layer whose group it writes."""
    busy = [index for index, entry in enumerate(trace) if entry["busy"]]
    for index in busy[1:]:
        entry, previous = trace[index], trace[index - 1]
        assert entry["select"]["in_ram"] == LAYERS[previous["layer"]]["in_ram"]
        if entry["row_read"]:
            assert entry["select"]["in_ram"] == LAYERS[entry["layer"]]["in_ram"]
        assert entry["select"]["busy"] == entry["busy"] and entry["select"]["out_ram"] == LAYERS[entry["layer"]]["out_ram"]
        assert entry["group_layer"] == LAYERS[entry["layer"]]["out_base"]
    assert {LAYERS[trace[index]["layer"]]["in_ram"] for index in busy} == {0, 1}


@pytest.mark.parametrize("layer", [0, 1])
def test_rows_read_per_step(trace, layer):
    """Every step (c, kh) of every group reads input row y = oy0*stride_y + kh - pad_top of channel c (word
    in_base + c*in_height + y, slot 0) and the row stride_y below (slot 1), before the step, each flagged as
    padding where it lies outside 0 .. in_height - 1 (its address then wraps and does not matter); the last step
    reads ahead for a group that does not exist.  The feeder's row width is the layer's in_width throughout."""
    d = LAYERS[layer]
    depth = CONFIG.activation_depth
    reads = [(entry["row_zero0"], entry["row_zero1"], entry["row_address0"], entry["row_address1"])
             for entry in layer_cycles(trace, layer) if entry["row_read"]]
    expected = []
    for positions in groups_of(d):
        oy0 = positions[0] // d["out_width"]
        for channel in range(d["in_channels"]):
            for kernel_row in range(d["kernel_height"]):
                row = oy0 * d["stride_y"] + kernel_row - d["pad_top"]
                rows = (row, row + d["stride_y"])
                outside = [int(not 0 <= y < d["in_height"]) for y in rows]
                addresses = [(d["in_base"] + channel * d["in_height"] + y) % depth for y in rows]
                expected.append((*outside, *addresses))
    assert reads[:len(expected)] == expected and len(reads) == len(expected) + 1
    assert any(read[0] for read in expected) == (d["pad_top"] > 0)
    assert all(entry["row_width"] == d["in_width"] for entry in layer_cycles(trace, layer))


def test_reduction_reads_one_word_per_product(trace):
    d = LAYERS[2]
    reads = [entry["row_address1"] for entry in layer_cycles(trace, 2) if entry["issue"] and entry["row_read"]]
    assert reads == [d["in_base"] + k for k in range(d["products"])]


@pytest.mark.parametrize("layer", [0, 1])
def test_taps_and_groups(trace, layer):
    """From a group's first product on, module m taps slot (oy != oy0) and column ox * stride_x + pad_columns -
    pad_left of its position p0 + (m >> log2 C); the group's position reaches the writer after its last product."""
    d = LAYERS[layer]
    cycles = layer_cycles(trace, layer)
    index = trace.index(cycles[0])
    issues = [offset for offset, entry in enumerate(cycles) if entry["issue"]]
    firsts, lasts = issues[::d["products"]], issues[d["products"] - 1::d["products"]]
    for positions, first, last in zip(groups_of(d), firsts, lasts, strict=True):
        taps = trace[index + first + 1]
        oy0, ox0 = divmod(positions[0], d["out_width"])
        for module in range(CONFIG.modules):
            q = module >> d["column_blocks_log2"]
            if q < len(positions):
                oy, ox = divmod(positions[q], d["out_width"])
                column = ox * d["stride_x"] + CONFIG.pad_columns - d["pad_left"]
                assert (taps["tap_slot"] >> module & 1, taps["tap_column"][module]) == (oy - oy0, column)
        assert trace[index + last + 1]["group"] == {"p0": positions[0], "oy0": oy0, "ox0": ox0}


@pytest.mark.parametrize("written_after", [5, 16])
def test_layer_timing(written_after):
    """Per layer: 1 cycle set-up (the descriptor, the first group's taps and its first rows' read), groups * products
    product cycles, a stall per cycle the previous group is still being written when a group's last product is due.
    A layer after the first starts on the cycle after the last product of the one before, whose last group is
    written ``written_after`` cycles after it: if the layer reads the RAM being written (layer 2, no start delay)
    it waits for it from its cycle 1 (drain cycles), then reads, otherwise only its first group's last product
    does (stalls).  The last layer drains until its last group is written."""
    trace = simulate(LAYERS, written_after=written_after)
    for layer, d in enumerate(LAYERS):
        cycles = layer_cycles(trace, layer)
        groups = groups_of(d)
        products = d["products"]
        stalls = (len(groups) - 1) * max(0, written_after - (products - 1))
        wait = read = 0
        if layer and d["in_ram"] == LAYERS[layer - 1]["out_ram"]:
            wait, read = written_after - 1, 1          # written on cycle written_after - 1 of the layer
        elif layer:
            stalls += max(0, written_after - products)     # the first product on cycle 1
        drain = written_after + 1 if layer == len(LAYERS) - 1 else 0
        assert sum(entry["issue"] for entry in cycles) == len(groups) * products
        assert sum(entry["stall"] for entry in cycles) == stalls
        assert sum(entry["draining"] for entry in cycles) == wait + drain
        assert len(cycles) == 1 + wait + read + len(groups) * products + stalls + drain
    assert [entry["layer"] for entry in trace if entry["busy"]][-1] == len(LAYERS) - 1


def test_ports():
    sequencer = LayerSequencer(config=CONFIG)
    assert dict(sequencer.signature.members) == {
        "run": In(RunSignature(max_layers=4, descriptor_layout=descriptor_layout(CONFIG))),
        "feeder": Out(FeederControlSignature(CONFIG)), "select": Out(ActivationSelectSignature()),
        "group": Out(ResultGroupSignature(CONFIG))}


def test_rejects_bad_config():
    with pytest.raises(TypeError, match="^config must be a DqnConfig, not None$"):
        LayerSequencer(config=None)
