# amaranth: UnusedElaboratable=no
"""The flat map's datapath on Amaranth's simulator: FlatLaneWindow's vectors into the accelerator's MatrixModule
(scalar: the channel's weight of the step, seed: its bias), the results stored by FlatWordPacker in flat layout;
the testbench sequences the steps as the sequencer would (tests/dqn/flat_lane_driver.py: groups back to back, a
product every cycle, the next group's window loaded meanwhile).  Depthwise layers of a depthwise-separable block
(3 x 3, padding 1) and a rectangular kernel with uneven padding, on a flat input with other data around it: the
output words bit-exact with models.dqn.flat_map.flat_depthwise (the summation order of the matrix module), in
binary32 (and, in the extended run, bfloat16 and binary16)."""

import numpy as np
import pytest
from amaranth.hdl import Elaboratable, Module, Signal
from amaranth.sim import Simulator

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.flat_lane_window import FlatLaneWindow
from nnaccel.hw.dqn.flat_word_packer import FlatWordPacker
from nnaccel.hw.dqn.matrix_module import MatrixModule
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.models.dqn.flat_map import flat_depthwise, flat_words, window_words_needed, word_writes
from nnaccel.models.dqn.network import ConvLayer
from nnaccel.models.shared.float_arith import from_binary32
from tests.dqn.flat_lane_driver import drive_groups

SIZES = dict(modules=2, lanes=4, row_elements=12, pad_columns=2, activation_depth=64, weight_depth=16)
GROUP_LANES = SIZES["modules"] * SIZES["lanes"]
SEED = 4


class FlatDatapath(Elaboratable):
    """The lane window feeding the matrix modules' vectors, every module the same scalar, seed (broadcast to its
    lanes), count and ReLU flag (driven by the testbench), and the word packer."""

    def __init__(self, config, window_words):
        self.window = FlatLaneWindow(config=config, window_words=window_words)
        self.modules = [MatrixModule(lanes=config.lanes, fmt=config.fmt) for _ in range(config.modules)]
        self.packer = FlatWordPacker(config=config)
        self.valid, self.relu = Signal(), Signal()
        self.scalar, self.seed = Signal(config.fmt.width), Signal(config.fmt.width)
        self.count = Signal(8)

    def elaborate(self, platform):
        m = Module()
        m.submodules.window, m.submodules.packer = self.window, self.packer
        for index, module in enumerate(self.modules):
            m.submodules[f"module{index}"] = module
            payload = module.operands.payload
            m.d.comb += [module.operands.valid.eq(self.valid), payload.vector.eq(self.window.vectors[index]),
                         payload.scalar.eq(self.scalar), payload.count.eq(self.count), payload.relu.eq(self.relu)]
            m.d.comb += [payload.seed[lane].eq(self.seed) for lane in range(len(payload.seed))]
        return m


def run_flat_pass(config, layer, memory, in_word, out_memory, out_word, weights, biases, relu):
    """One flat depthwise pass: the groups (per channel, its positions in groups of all the lanes) driven back to back
    (flat_lane_driver), each step's product issued on the cycle its vectors come out, the results packed into
    ``out_memory`` in flat layout at ``out_word``."""
    datapath = FlatDatapath(config, window_words_needed(layer, config.row_elements, GROUP_LANES) + 1 & ~1)
    window, modules, packer = datapath.window, datapath.modules, datapath.packer
    positions = layer.out_height * layer.out_width
    words_per_channel = -(-positions // config.row_elements)
    groups = [[(in_word + channel * words_per_channel, first)]
              for channel in range(layer.in_channels) for first in range(0, positions, GROUP_LANES)]
    results = []
    simulator = Simulator(datapath)
    simulator.add_clock(1e-6)

    async def testbench(ctx):
        def collect():
            if ctx.get(modules[0].result.valid):
                results.append([int(value) for module in modules for value in ctx.get(module.result.payload)])

        async def issue(group, kh, kw):
            """The step's vectors are out: its product goes to the modules on this cycle."""
            collect()
            channel = (groups[group][0][0] - in_word) // words_per_channel
            ctx.set(datapath.valid, 1)
            ctx.set(datapath.scalar, int(weights[0, kh, kw, channel]))
            ctx.set(datapath.seed, int(biases[channel]))
            ctx.set(datapath.count, layer.kernel_height * layer.kernel_width)
            ctx.set(datapath.relu, relu)

        await drive_groups(ctx, window, layer, memory, groups, issue)
        await ctx.tick()
        ctx.set(datapath.valid, 0)
        for _ in range(12):                                   # the last group through the modules
            collect()
            await ctx.tick()
        assert len(results) == len(groups)
        for [(channel_word, first)], group_results in zip(groups, results):
            valid = min(GROUP_LANES, positions - first)
            ctx.set(packer.results, [group_results[m * config.lanes:(m + 1) * config.lanes]
                                     for m in range(config.modules)])
            for word, offset in word_writes(first, valid, config.row_elements):
                ctx.set(packer.word.offset, offset)
                ctx.set(packer.word.valid, valid)
                await ctx.delay(1e-9)
                data, enable = [int(value) for value in ctx.get(packer.data)], ctx.get(packer.enable)
                address = out_word + (channel_word - in_word) + word
                for element in range(config.row_elements):
                    if enable >> element & 1:
                        out_memory[address][element] = data[element]

    simulator.add_testbench(testbench)
    simulator.run()


SEPARABLE = ConvLayer("separable_dw", 2, (5, 4), 2, 3, 1, padding=1, groups=2)
KWS_LIKE = ConvLayer("kws_like_dw", 2, (6, 3), 2, (3, 2), 1, padding=(2, 0, 1, 0), groups=2)


@pytest.mark.parametrize("fmt, layer, relu", [
    (BINARY32, SEPARABLE, True),
    (BINARY32, KWS_LIKE, False),
    pytest.param(BFLOAT16, SEPARABLE, True, marks=pytest.mark.extended),
    pytest.param(BINARY16, KWS_LIKE, True, marks=pytest.mark.extended),
], ids=lambda value: getattr(value, "name", str(value)))
def test_flat_pass_is_bit_exact(fmt, layer, relu):
    config = DqnConfig(fmt=fmt, **SIZES)
    rng = np.random.default_rng(SEED)
    image = from_binary32(fmt, rng.standard_normal((layer.in_channels, layer.in_height, layer.in_width),
                                                   dtype=np.float32))
    weights = from_binary32(fmt, rng.standard_normal(layer.weight_shape, dtype=np.float32))
    biases = from_binary32(fmt, rng.standard_normal(layer.out_channels, dtype=np.float32))
    memory = rng.integers(0, 1 << fmt.width, (config.activation_depth, config.row_elements), dtype=np.uint64)
    in_word = 7
    flat = flat_words(image, config.row_elements).reshape(-1, config.row_elements)
    memory[in_word:in_word + len(flat)] = flat
    out_memory = rng.integers(0, 1 << fmt.width, memory.shape, dtype=np.uint64)
    expected = out_memory.copy()
    out_word = 30
    golden = flat_depthwise(fmt, image, weights, biases, layer, adder_latency=config.adder_latency, relu=relu)
    positions = layer.out_height * layer.out_width
    words_per_channel = -(-positions // config.row_elements)
    for channel in range(layer.out_channels):
        start = (out_word + channel * words_per_channel) * config.row_elements
        expected.reshape(-1)[start:start + positions] = golden[channel].reshape(-1)
    out_rows = out_memory.tolist()
    run_flat_pass(config, layer, memory.tolist(), in_word, out_rows, out_word, weights, biases, relu)
    assert (np.array(out_rows, dtype=np.uint64) == expected).all()
