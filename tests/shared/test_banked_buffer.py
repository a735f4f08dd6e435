# amaranth: UnusedElaboratable=no
"""hw.shared.banked_buffer: a RAM of several banks behaves as one DualPortBuffer of the whole depth (random traffic
on both ports across the banks, checked cycle by cycle against models.shared.dual_port_buffer on Verilator), lint,
and the parameter checks."""

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from nnaccel.hw.shared.banked_buffer import bank_count, instantiate_banked_buffer
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.dual_port_buffer_tb import random_requests

WIDTH, BANK_DEPTH, LANES = 24, 8, 3


class BankedBuffer(wiring.Component):
    """The banked RAM as a component of its own (ports ``a``, ``b`` as a DualPortBuffer's), so that the RAM
    testbench drives it."""

    def __init__(self, *, depth, granularity=None):
        self._depth, self._granularity = depth, granularity
        port = BufferPortSignature(width=WIDTH, depth=self.total_depth, granularity=granularity)
        super().__init__({"a": In(port), "b": In(port)})

    @property
    def total_depth(self):
        banks = bank_count(self._depth, BANK_DEPTH)
        return banks * BANK_DEPTH if banks > 1 else self._depth

    @property
    def module_name(self):
        return f"banked_buffer_d{self._depth}_g{self._granularity or 0}"

    def elaborate(self, platform):
        m = Module()
        ram = instantiate_banked_buffer(m, width=WIDTH, depth=self._depth, bank_depth=BANK_DEPTH,
                                        granularity=self._granularity, instance_name="ram")
        for name in ("a", "b"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(ram, name))
        return m


@pytest.mark.parametrize(("depth", "granularity"), [(20, None), (20, WIDTH // LANES), (6, None)])
def test_random_traffic_against_one_buffer(depth, granularity):
    """Three banks of 8 words (a depth of 20 rounds up to 24) or a single bank of 6: the reads of both ports, held
    between reads even when the other bank is addressed, equal a single buffer's."""
    buffer = BankedBuffer(depth=depth, granularity=granularity)
    rng = np.random.default_rng(depth + (granularity or 0))
    stimulus = random_requests(rng, 1500, depth=buffer.total_depth, lanes=LANES, lane_bits=WIDTH // LANES,
                              granularity=granularity)
    assert len({int(a) // BANK_DEPTH for a in stimulus["a_address"]}) == bank_count(depth, BANK_DEPTH)
    result = simulate(buffer, name=buffer.module_name, test_module="nnaccel.testbench.shared.dual_port_buffer_tb",
                      stimulus=stimulus, config={"width": WIDTH, "depth": buffer.total_depth, "lanes": LANES,
                                                 "granularity": granularity, "init": None})
    assert int(result.outputs["checked"]) == 2 * 1500


def test_lint_clean():
    buffer = BankedBuffer(depth=20, granularity=WIDTH // LANES)
    assert lint_verilog(buffer, buffer.module_name) == []


def test_bank_count():
    assert [bank_count(depth, 8) for depth in (1, 8, 9, 16, 17)] == [1, 1, 2, 2, 3]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"depth": 0}, "depth must be a positive integer, not 0"),
    ({"bank_depth": 6}, "bank_depth must be a power of two, not 6"),
    ({"bank_depth": -8}, "bank_depth must be a positive integer, not -8"),
])
def test_rejects_bad_parameters(arguments, message):
    parameters = {"width": 8, "depth": 16, "bank_depth": 8, "instance_name": "ram"} | arguments
    with pytest.raises(ValueError, match=f"^{message}$"):
        instantiate_banked_buffer(Module(), **parameters)
