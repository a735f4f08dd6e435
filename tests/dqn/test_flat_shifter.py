# amaranth: UnusedElaboratable=no
"""hw.dqn.flat_map.shift_elements_down on Amaranth's simulator: for every value of the shift (those past the value's
end included) the output is elements ``shift .. shift + kept - 1`` of the input, zeros past its end; every level is
no wider than what the levels after it can still move to the output (largest moves first)."""

import numpy as np
import pytest
from amaranth.hdl import Module, Signal
from amaranth.sim import Simulator

from nnaccel.hw.dqn.flat_map import shift_elements_down

SEED = 25


@pytest.mark.parametrize("elements, kept, shift_bits, width", [(12, 4, 4, 5), (9, 9, 2, 3), (7, 3, 3, 8), (6, 2, 0, 4)])
def test_output_is_the_shifted_elements(elements, kept, shift_bits, width):
    rng = np.random.default_rng(SEED)
    m = Module()
    value, shift = Signal(elements * width), Signal(shift_bits)
    shifted = shift_elements_down(m, value, shift, width=width, kept=kept, name="shifted")
    assert len(shifted) == kept * width
    simulator = Simulator(m)

    async def testbench(ctx):
        for _ in range(3):
            inputs = [int(x) for x in rng.integers(0, 1 << width, elements)]
            ctx.set(value, sum(x << (width * i) for i, x in enumerate(inputs)))
            for amount in range(1 << shift_bits):
                ctx.set(shift, amount)
                await ctx.delay(1e-9)
                expected = (inputs + [0] * (amount + kept))[amount:amount + kept]
                output = ctx.get(shifted)
                assert [output >> (width * i) & ((1 << width) - 1) for i in range(kept)] == expected, amount

    simulator.add_testbench(testbench)
    simulator.run()


def test_levels_narrow_as_the_moves_shrink():
    """A 576 -> 128 element shifter of 9 levels (a 16 x 16 slot of 128 lanes over a 6-word window of 96 elements):
    level i holds ``min(576, 128 + 2**i - 1)`` elements, 1,654 in all."""
    m = Module()
    shift_elements_down(m, Signal(576), Signal(9), width=1, kept=128, name="shifted")
    widths = {signal.name: len(signal) for statement in m._statements.get("comb", [])
              for signal in [statement.lhs]}
    assert widths == {f"shifted_{level}": min(576, 128 + (1 << level) - 1) for level in range(9)}
    assert sum(widths.values()) == 1654
