"""The reduced DQN accelerator on Amaranth's own simulator, without Verilog: ``hw/`` stands alone.

The whole design (host control, sequencer, feeder, matrix modules, writer, argmax, RAMs) elaborates in one piece
and runs inferences through its host port (the reduced network with every kind of pass; padded, rectangular,
13-wide and channel-tiled networks): the weight image, the descriptors and a state written, START,
``done`` awaited, the output words, ACTION and the counters read back.  The Q-values are bit-exact with the golden
model, TOTAL_CYCLES and every layer's cycle counter equal the compiler's prediction.
"""

import dataclasses

import numpy as np
from amaranth.sim import Simulator

from nnaccel.hw.dqn.accelerator import DqnAccelerator, DqnMemory, DqnRegister
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.shared.host_control import ControlRegister, HostTarget, LayerCounter, layer_counter_address
from nnaccel.models.dqn import plan as plan_module
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer
from nnaccel.models.dqn.plan import compile_network, default_mapping
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.dqn.accelerator_tb import int_to_words, words_to_ints
from tests.dqn.test_accelerator import reduced_plan

SEED = 4043


def run_inference(plan, state):
    """``(output words, action, total cycles, per-layer cycle counters)`` of one inference of ``state``."""
    config = plan.config
    accelerator = DqnAccelerator(config=config)
    host = accelerator.host
    observed = {}
    simulator = Simulator(accelerator)
    simulator.add_clock(1e-8)

    async def write_block(ctx, target, base, values):
        ctx.set(host.target, int(target))
        ctx.set(host.write, 1)
        for offset, value in enumerate(values):
            ctx.set(host.address, base + offset)
            ctx.set(host.write_data, int(value))
            await ctx.tick()
        ctx.set(host.write, 0)

    async def read_block(ctx, target, addresses):
        values = []
        ctx.set(host.target, int(target))
        for address in addresses:
            ctx.set(host.read, 1)
            ctx.set(host.address, int(address))
            await ctx.tick()
            ctx.set(host.read, 0)
            assert ctx.get(host.read_data.valid), "the read data was not valid the cycle after a read"
            values.append(ctx.get(host.read_data.payload))
        return values

    async def testbench(ctx):
        await write_block(ctx, DqnMemory.WEIGHTS, 0, words_to_ints(plan.weight_image, config.element_bits))
        await write_block(ctx, HostTarget.DESCRIPTORS, 0, plan.descriptors)
        await write_block(ctx, DqnMemory.ACTIVATIONS0 + plan.input.ram, plan.input.base,
                          words_to_ints(plan.input_words(state), config.element_bits))
        await write_block(ctx, HostTarget.CONTROL, ControlRegister.START, [len(plan.layers)])
        limit = 2 * plan.estimated_cycles + 1000
        for _ in range(limit):
            if ctx.get(host.done):
                break
            await ctx.tick()
        assert ctx.get(host.done), f"the run did not finish in {limit} cycles"
        output = plan.output
        words = await read_block(ctx, DqnMemory.ACTIVATIONS0 + output.ram,
                                 range(output.base, output.base + output.words))
        observed["outputs"] = np.array([int_to_words(word, config.row_elements, config.element_bits) for word in words])
        observed["action"], observed["total"], *observed["layer_cycles"] = await read_block(
            ctx, HostTarget.CONTROL, [DqnRegister.ACTION, ControlRegister.TOTAL_CYCLES] +
            [layer_counter_address(layer, LayerCounter.CYCLES) for layer in range(len(plan.layers))])

    simulator.add_testbench(testbench)
    simulator.run()
    return observed


def test_reduced_inference_on_amaranths_simulator():
    """Every kind of pass (``split="always"``: partial sums and their reductions) on one random state."""
    rng = np.random.default_rng(SEED)
    plan = reduced_plan(rng)
    state = rng.standard_normal((2, 10, 10)).astype(np.float32)
    observed = run_inference(plan, state)
    golden = golden_forward(plan, state)
    np.testing.assert_array_equal(plan.output_values(observed["outputs"]), golden.q_values)
    assert observed["action"] == golden.action
    assert observed["layer_cycles"] == [layer.estimated_cycles for layer in plan.layers]
    assert observed["total"] == plan.estimated_cycles


def random_pairs(layers, rng):
    """Uniform float32 weights and biases; ``(None, None)`` for a layer without weights (an add); a max pool's
    weights 1.0 and bias -inf."""
    pairs = []
    for layer in layers:
        if layer.weight_shape is None:
            pairs.append((None, None))
        elif getattr(layer, "maximum", False):
            pairs.append((np.ones(layer.weight_shape, np.float32),
                          np.full(layer.weight_shape[-1], -np.inf, np.float32)))
        else:
            pairs.append((rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                          rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)))
    return pairs


def check_on_the_rtl(config, layers, *, seed, mapping=None, tiling="widest"):
    """Compile ``layers`` for ``config``, run one random input on the RTL: the outputs bit-exact with the golden
    model, TOTAL_CYCLES and every pass's cycle counter equal to the compiler's prediction.  Returns the plan."""
    rng = np.random.default_rng(seed)
    plan = compile_network(config, layers, random_pairs(layers, rng), mapping=mapping, tiling=tiling)
    state = rng.standard_normal(plan.input_shape).astype(np.float32)
    observed = run_inference(plan, state)
    golden = golden_forward(plan, state)
    np.testing.assert_array_equal(plan.output_values(observed["outputs"]), golden.q_values)
    assert observed["layer_cycles"] == [layer.estimated_cycles for layer in plan.layers]
    assert observed["total"] == plan.estimated_cycles
    return plan


def test_a_k_split_into_the_kernels_row_halves():
    """A 4 x 1 kernel padded one row above and below, 3 x 3 positions at 2 per group: position 0 runs alone as 2
    partial sums, the kernel's upper and lower halves on the group's two rows (a 2 x 1 convolution at stride 2 x 1 on a
    grid 1 wide, the second row slot 2 rows further down, the first half over the padding row), after the other 8
    positions, then their sum; a dense layer reads the map.  Bit-exact, every counter as predicted."""
    layers = (ConvLayer("c", 2, (4, 3), 4, (4, 1), 1, padding=(1, 1, 0, 0)), DenseLayer("d", 4 * 3 * 3, 3, relu=False))
    mapping = DqnMapping((LayerMapping((Segment(1, 8, 1), Segment(0, 1, 1, 2))), LayerMapping.whole(1, 1)))
    plan = check_on_the_rtl(REDUCED_CONFIG, layers, seed=SEED + 11, mapping=mapping)
    partials = plan.layers[1]
    assert [layer.name for layer in plan.layers] == ["c", "c @0 partials", "c @0 sum", "d"]
    assert [partials.descriptor[field] for field in ("kernel_height", "kernel_width", "stride_y", "out_width",
                                                     "pad_top", "positions")] == [2, 1, 2, 1, 1, 2]


def test_uneven_same_padding_at_stride_2():
    """TFLite's SAME at stride 2 pads unevenly: 11 x 12 input, 4 x 3 kernel -> 6 x 6 (rows 1 above, 2 below;
    columns 0 left, 1 right), then a 3 x 3 convolution padded 1 all round and a dense layer."""
    layers = (ConvLayer("same", 2, (11, 12), 4, (4, 3), 2, padding=(1, 2, 0, 1)),
              ConvLayer("pad1", 4, 6, 4, 3, 1, padding=1), DenseLayer("d", 4 * 6 * 6, 3, relu=False))
    plan = check_on_the_rtl(dataclasses.replace(REDUCED_CONFIG, weight_depth=512), layers, seed=SEED + 1)
    assert [layer.output.shape for layer in plan.layers[:2]] == [(4, 6, 6), (4, 6, 6)]


def test_rectangular_input_kernel_and_strides():
    """The keyword-spotting shape scaled to 12-element rows: 1 x 17 x 10, a 5 x 4 kernel at strides 2 x 1 padded
    SAME (2 / 2 rows, 1 / 2 columns) -> 9 x 10, then a 3 x 2 kernel at strides 1 x 2 -> 7 x 5."""
    layers = (ConvLayer("kws", 1, (17, 10), 4, (5, 4), (2, 1), padding=(2, 2, 1, 2)),
              ConvLayer("rect", 4, (9, 10), 4, (3, 2), (1, 2)), DenseLayer("d", 4 * 7 * 5, 3, relu=False))
    plan = check_on_the_rtl(dataclasses.replace(REDUCED_CONFIG, weight_depth=512), layers, seed=SEED + 2)
    assert [layer.output.shape for layer in plan.layers[:2]] == [(4, 9, 10), (4, 7, 5)]


def test_a_13_wide_map_takes_fewer_positions_per_group():
    """16 modules: a group of 16 positions of a 7 x 13 map would span three rows (positions 64..79), so the
    compiler runs 8 positions per group (2 column blocks) and says so; the RTL agrees."""
    config = DqnConfig(modules=16, lanes=1, row_elements=16, activation_depth=64, weight_depth=64, max_layers=4)
    layers = (ConvLayer("wide", 1, (9, 15), 1, 3, 1), DenseLayer("d", 91, 1, relu=False))
    plan = check_on_the_rtl(config, layers, seed=SEED + 3)
    assert plan.layers[0].positions_per_group == 8
    assert plan.notes == ["wide: 8 positions per group, 8 of 16 modules idle: a group must lie in two output rows "
                          "of 13"]


def test_output_channels_in_tiles():
    """More output channels than modules x lanes (8): a convolution of 12 channels and a dense layer of 10 run as
    two passes each over channel slices (8 + 4, 8 + 2), each writing its slice of the layer's output."""
    layers = (ConvLayer("conv", 2, 6, 12, 3, 2, padding=(0, 1, 0, 1)), DenseLayer("dense", 12 * 3 * 3, 10, relu=False))
    plan = check_on_the_rtl(dataclasses.replace(REDUCED_CONFIG, weight_depth=512), layers, seed=SEED + 4)
    assert [(layer.name, layer.first_channel, layer.out_channels) for layer in plan.layers] == [
        ("conv [0:8]", 0, 8), ("conv [8:12]", 8, 4), ("dense [0:8]", 0, 8), ("dense [8:10]", 8, 2)]


def test_residual_adds_on_the_rtl():
    """conv -> conv -> a1 (+ the network input) -> a2 (a1 + the network input) -> dense.  An add runs one row word
    per group, reading its two addends (a2: a1's output and the input, both in RAM 0) ``step_distance`` words apart
    on port 1 and writing RAM 0 on port 0; its groups follow one another without waiting for the writer: two cycles
    per row word.  a1 runs in two segments last-first (a later segment's first group waits for the other's words,
    as every pass's does), a2 waits for a1's last word.  Bit-exact, every counter as predicted."""
    layers = (ConvLayer("c1", 4, 6, 4, 3, 1, padding=1), ConvLayer("c2", 4, 6, 4, 3, 1, padding=1, relu=False),
              AddLayer("a1", skip="", relu=False), AddLayer("a2", skip="", source="a1"),
              DenseLayer("d", 4 * 6 * 6, 3, relu=False))
    default = default_mapping(REDUCED_CONFIG, layers)
    modules = REDUCED_CONFIG.modules
    split_add = LayerMapping((Segment(10, 14, modules), Segment(0, 10, modules)))
    mapping = DqnMapping(default.layers[:2] + (split_add,) + default.layers[3:])
    plan = check_on_the_rtl(REDUCED_CONFIG, layers, seed=SEED + 5, mapping=mapping)
    adds = [layer for layer in plan.layers if layer.network_layer in ("a1", "a2")]
    assert [(layer.name, layer.descriptor["in_ram"], layer.descriptor["out_ram"]) for layer in adds] == [
        ("a1 10..23", 0, 0), ("a1 0..9", 0, 0), ("a2", 0, 0)]
    a2 = adds[-1]
    assert (a2.input.base, a2.descriptor["step_distance"]) == (48, 128 - 48)
    assert (a2.groups, a2.positions_per_group, a2.descriptor["reduce"]) == (24, 1, 1)
    assert [int(layer.predicted["product_cycles"]) for layer in adds] == [28, 20, 48]
    assert all(layer.predicted["stall_cycles"] == 0 for layer in adds)
    assert a2.predicted["cycles"] == 1 + a2.predicted["drain_cycles"] + 1 + 2 * 24     # set-up, wait, read


def test_narrower_channel_tiles_where_the_writer_bounds_a_group():
    """A 1 x 1 convolution of 4 -> 8 channels: one tile of 8 (one position per group, 8 row writes for 5 product
    cycles) waits for the writer; tiling="fastest" runs two tiles of 4 channels at two positions per group, faster
    as predicted, bit-exact."""
    layers = (ConvLayer("pw", 4, 6, 8, 1, 1), DenseLayer("d", 8 * 6 * 6, 3, relu=False))
    config = dataclasses.replace(REDUCED_CONFIG, weight_depth=512)
    widest = compile_network(config, layers, random_pairs(layers, np.random.default_rng(0)))
    plan = check_on_the_rtl(config, layers, seed=SEED + 6, tiling="fastest")
    assert [layer.name for layer in plan.layers[:2]] == ["pw [0:4]", "pw [4:8]"]
    assert plan.layers[0].predicted["cycles"] + plan.layers[1].predicted["cycles"] < widest.layers[0].predicted["cycles"]


def test_depthwise_separable_block_and_a_grouped_convolution():
    """A padded 3 x 3 depthwise convolution of 8 channels runs as two passes of 4 channels (one lane block each),
    each reading only its own 4 input channels (``in_base`` at its first channel's row word); then the pointwise
    1 x 1 convolution, a 2-group 3 x 3 convolution at stride 2 (two tiles of one group), a depthwise 2 x 2 mean
    (average pooling) and a dense layer: bit-exact, every counter as predicted."""
    layers = (ConvLayer("dw", 8, 6, 8, 3, 1, padding=1, groups=8), ConvLayer("pw", 8, 6, 8, 1, 1),
              ConvLayer("grouped", 8, 6, 8, 3, 2, padding=(0, 1, 0, 1), groups=2),
              ConvLayer("mean", 8, 3, 8, 2, 1, relu=False, groups=8), DenseLayer("d", 8 * 2 * 2, 3, relu=False))
    config = dataclasses.replace(REDUCED_CONFIG, weight_depth=512, max_layers=16)
    plan = check_on_the_rtl(config, layers, seed=SEED + 7)
    dw = [layer for layer in plan.layers if layer.network_layer == "dw"]
    assert [(layer.name, layer.descriptor["in_channels"], layer.descriptor["products"]) for layer in dw] == [
        ("dw [0:4]", 4, 4 * 9), ("dw [4:8]", 4, 4 * 9)]
    assert dw[1].input.base == dw[0].input.base + 4 * 6 and dw[1].descriptor["in_base"] == dw[1].input.base
    grouped = [layer for layer in plan.layers if layer.network_layer == "grouped"]
    assert [(layer.first_channel, layer.descriptor["in_channels"]) for layer in grouped] == [(0, 4), (4, 4)]
    assert sum(layer.ideal_macs for layer in dw) == layers[0].macs


def test_a_resnet_like_graph_with_a_strided_shortcut():
    """Two residual blocks: the first adds the stem's output, the second a 1 x 1 stride-2 shortcut convolution of
    the block input (its ``source``).  Two convolutions on one path and one on the other put the addends in
    different RAMs, so the compiler inserts a copy pass; tensors are placed by lifetimes (the stem's words are
    reused once the first add has read them).  Bit-exact, every counter as predicted."""
    layers = (ConvLayer("stem", 2, 6, 4, 3, 1, padding=1),
              ConvLayer("b1c1", 4, 6, 4, 3, 1, padding=1), ConvLayer("b1c2", 4, 6, 4, 3, 1, padding=1, relu=False),
              AddLayer("b1add", skip="stem"),
              ConvLayer("b2c1", 4, 6, 8, 3, 2, padding=(0, 1, 0, 1)),
              ConvLayer("b2c2", 8, 3, 8, 3, 1, padding=1, relu=False),
              ConvLayer("shortcut", 4, 6, 8, 1, 2, relu=False, source="b1add"),
              AddLayer("b2add", skip="shortcut", source="b2c2"), DenseLayer("d", 8 * 3 * 3, 3, relu=False))
    config = dataclasses.replace(REDUCED_CONFIG, weight_depth=512, max_layers=16)
    plan = check_on_the_rtl(config, layers, seed=SEED + 8)
    assert [layer.name for layer in plan.network] == [
        "stem", "b1c1", "b1c2", "b1add", "b2c1", "b2c2", "shortcut", "shortcut_copy", "b2add", "d"]
    add = next(layer for layer in plan.layers if layer.name == "b2add")
    assert add.input.ram == plan.tensors["shortcut_copy"].ram != plan.tensors["shortcut"].ram
    assert "stem" in plan.overwritten
    assert plan.notes == [f"shortcut_copy [{tile}]: a copy pass: b2add reads both addends from one RAM, and no "
                          f"assignment of RAMs puts b2c2 and shortcut in one" for tile in ("0:4", "4:8")]
    keep = compile_network(dataclasses.replace(config, activation_depth=1024), layers,
                           random_pairs(layers, np.random.default_rng(0)), allocation="keep")
    assert max(plan.activation_words) < max(keep.activation_words) and keep.overwritten == ()


def test_a_start_delay_at_its_tightest_reads_a_word_on_the_cycle_after_its_write():
    """A dense layer of 16 outputs in two tiles of 8, then a dense layer reading them: the second tile hands its
    last group off (written on port 1 while the next pass reads port 0) and the next pass reads first on the
    earliest cycle of its start delay, a word on the cycle after the writer writes it: bit-exact, every counter as
    predicted."""
    layers = (DenseLayer("a", 4, 16), DenseLayer("b", 16, 3, relu=False))
    plan = check_on_the_rtl(REDUCED_CONFIG, layers, seed=SEED + 9)
    assert [layer.descriptor["handoff"] for layer in plan.layers] == [0, 1, 0]
    assert [layer.descriptor["start_delay"] for layer in plan.layers] == [0, 0, 4]


def test_a_read_one_cycle_before_the_write_reads_the_old_word(monkeypatch):
    """The negative control of the rule: a 1 x 2 x 2 -> 2 x 3 x 3 convolution whose dense successor starts one cycle
    earlier than its start delay allows, so that it reads a word on the very cycle the writer writes it: the RTL
    reads the word as it was before the write and the outputs differ from the golden model."""
    layers = (ConvLayer("c", 1, 4, 2, 2, 1, relu=False), DenseLayer("d", 2 * 3 * 3, 3, relu=False))
    rng = np.random.default_rng(SEED + 10)
    pairs = random_pairs(layers, rng)
    honest = compile_network(REDUCED_CONFIG, layers, pairs)
    delay = honest.layers[1].descriptor["start_delay"]
    assert honest.layers[0].descriptor["handoff"] == 1 and delay > 1
    early = plan_module.start_delay
    monkeypatch.setattr(plan_module, "start_delay",
                        lambda *arguments, **words: None if early(*arguments, **words) is None else delay - 1)
    forced = compile_network(REDUCED_CONFIG, layers, pairs)
    assert [layer.descriptor["start_delay"] for layer in forced.layers] == [0, delay - 1]
    state = rng.standard_normal(forced.input.shape).astype(np.float32)
    observed = run_inference(forced, state)
    assert observed["total"] == forced.estimated_cycles == honest.estimated_cycles - 1
    assert not np.array_equal(forced.output_values(observed["outputs"]), golden_forward(forced, state).q_values)


def test_max_pooling_in_the_matrix_modules_max_mode():
    """``max_pooling=True``: a padded convolution with ReLU, a 2 x 2 stride-2 max pool (4 products: both partials),
    a padded 3 x 3 max pool (9 products, the border's +0 harmless after the ReLU) and a dense layer.  Each pool runs a
    pass per channel with the descriptor's ``maximum`` bit; bit-exact, every counter as predicted."""
    layers = (ConvLayer("conv", 2, 8, 3, 3, 1, padding=1), ConvLayer("pool", 3, 8, 3, 2, 2, relu=False, groups=3,
                                                                     maximum=True),
              ConvLayer("pool3", 3, 4, 3, 3, 1, relu=False, padding=1, groups=3, maximum=True),
              DenseLayer("d", 3 * 4 * 4, 3, relu=False))
    config = dataclasses.replace(REDUCED_CONFIG, weight_depth=512, max_layers=16, max_pooling=True)
    plan = check_on_the_rtl(config, layers, seed=SEED + 9)
    pools = [layer for layer in plan.layers if layer.descriptor["maximum"]]
    assert [(layer.name, layer.out_channels, layer.products) for layer in pools] == [
        (f"{name} [{channel}:{channel + 1}]", 1, products) for name, products in (("pool", 4), ("pool3", 9))
        for channel in range(3)]


def test_the_max_pooling_build_is_lint_clean():
    """The accelerator with ``max_pooling`` (its modules' max mode, the descriptor's ``maximum`` bit) lints clean."""
    accelerator = DqnAccelerator(config=dataclasses.replace(REDUCED_CONFIG, max_pooling=True))
    assert accelerator.module_name.endswith("_max")
    assert lint_verilog(accelerator, accelerator.module_name) == []
