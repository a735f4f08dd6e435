"""The reduced DQN accelerator on Amaranth's own simulator, without Verilog: ``hw/`` stands alone.

The whole design (host control, sequencer, feeder, matrix modules, writer, argmax, RAMs) elaborates in one piece
and runs one inference through its host port: the weight image, the descriptors and a state written, START,
``done`` awaited, the output words, ACTION and the counters read back.  The Q-values are bit-exact with the golden
model, TOTAL_CYCLES and every layer's cycle counter equal the compiler's prediction.
"""

import numpy as np
from amaranth.sim import Simulator

from nnaccel.hw.dqn.accelerator import DqnAccelerator, DqnMemory, DqnRegister
from nnaccel.hw.shared.host_control import ControlRegister, HostTarget, LayerCounter, layer_counter_address
from nnaccel.models.dqn.golden import golden_forward
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
        for _ in range(5000):
            if ctx.get(host.done):
                break
            await ctx.tick()
        assert ctx.get(host.done), "the run did not finish in 5,000 cycles"
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
