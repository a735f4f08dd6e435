"""Running the two-operand float units under :mod:`testbench.shared.stream_tb` and checking their results.

Used by the pytest files and the float benchmark, so both drive the units the same way.

:class:`FloatUnitPair` puts a multiplier and an adder of one configuration side by side on shared
operands, so that one simulator build serves the tests of both units (a Verilator build costs far
more than a simulation run). The benchmark and the Icarus tests stream through a single unit.
"""

import numpy as np
from amaranth.hdl import Module
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.float_adder import FloatAdder
from nnaccel.hw.shared.float_format import BINARY32
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.hw.shared.float_operator import operand_layout
from nnaccel.models.shared.float_arith import bits_dtype, is_nan
from nnaccel.sim.harness import simulate
from nnaccel.testbench.shared.stream_ports import stream_config

__all__ = ["FloatUnitPair", "run_float_stream", "mismatches", "check_results", "check_testfloat",
           "check_against_model"]


class FloatUnitPair(wiring.Component):
    """Design under test: ``FloatMultiplier`` and ``FloatAdder`` with the same parameters on the same
    operands. Ports: the ``operands`` stream (``a``, ``b``) in; the ``result`` stream out, its payload
    the fields ``product`` and ``sum`` (both units have the same latency, so one valid serves both)."""

    def __init__(self, *, fmt=BINARY32, latency=2, flush_to_zero=False):
        self._units = {"product": FloatMultiplier(fmt=fmt, latency=latency, flush_to_zero=flush_to_zero),
                       "sum": FloatAdder(fmt=fmt, latency=latency, flush_to_zero=flush_to_zero)}
        results = data.StructLayout({"product": fmt.width, "sum": fmt.width})
        super().__init__({"operands": In(stream.Signature(operand_layout(fmt), always_ready=True)),
                          "result": Out(stream.Signature(results, always_ready=True))})

    @property
    def fmt(self):
        return self._units["product"].fmt

    @property
    def latency(self):
        return self._units["product"].latency

    @property
    def module_name(self):
        return self._units["product"].module_name.replace("float_multiplier", "float_pair")

    def elaborate(self, platform):
        m = Module()
        for field, unit in self._units.items():
            m.submodules[field] = unit
            m.d.comb += [unit.operands.payload.eq(self.operands.payload), unit.operands.valid.eq(self.operands.valid),
                         self.result.payload[field].eq(unit.result.payload)]
        m.d.comb += self.result.valid.eq(self._units["product"].result.valid)
        return m


def run_float_stream(design, a, b, *, simulator="verilator", idle_seed=None):
    """Stream the operand arrays through ``design`` (a FloatMultiplier, a FloatAdder or a
    FloatUnitPair), one pair per cycle (or with random idle cycles for ``idle_seed``). Returns the
    :class:`sim.harness.SimResult`; its outputs (``result``, or ``product`` and ``sum``) hold the
    result bits in the order of the operands."""
    config = stream_config(design, input="operands", output="result", expect=len(a), idle_seed=idle_seed)
    stimulus = {"a": np.asarray(a, dtype=np.uint64), "b": np.asarray(b, dtype=np.uint64)}
    result = simulate(design, name=design.module_name, test_module="nnaccel.testbench.shared.stream_tb", stimulus=stimulus,
                      config=config, simulator=simulator)
    for field in config["outputs"]["result__payload"]["fields"]:
        result.outputs[field] = result.outputs[field].astype(bits_dtype(design.fmt))
    return result


def mismatches(fmt, got, expected, *, any_nan=False):
    """Indices where ``got`` differs from ``expected`` bit for bit; with ``any_nan`` an expected NaN
    is matched by any NaN (TestFloat's rule, its NaN bit patterns being x86's)."""
    got, expected = np.asarray(got, dtype=np.int64), np.asarray(expected, dtype=np.int64)
    wrong = got != expected
    if any_nan:
        wrong &= ~(is_nan(fmt, expected) & is_nan(fmt, got))
    return np.nonzero(wrong)[0]


def _describe(fmt, a, b, got, expected, wrong, limit=5):
    digits = (fmt.width + 3) // 4
    rows = [f"  a={int(a[i]):0{digits}X} b={int(b[i]):0{digits}X} got={int(got[i]):0{digits}X} "
            f"expected={int(expected[i]):0{digits}X}" for i in wrong[:limit]]
    return f"{len(wrong)} of {len(expected)} results differ, first ones:\n" + "\n".join(rows)


def check_results(fmt, a, b, got, expected, *, any_nan=False):
    """Assert that ``got`` equals ``expected`` bit for bit (see :func:`mismatches`); the failure
    message lists the first differing cases in hex."""
    assert len(got) == len(expected), f"{len(got)} results for {len(expected)} operand pairs"
    wrong = mismatches(fmt, got, expected, any_nan=any_nan)
    assert len(wrong) == 0, _describe(fmt, a, b, got, expected, wrong)


def check_testfloat(design, output, vectors, *, simulator="verilator"):
    """Every TestFloat case of ``vectors`` (a :class:`testbench.shared.testfloat.TestFloatVectors`) through
    ``design``, checking output port ``output``; NaN results only need to be NaNs. Returns the
    SimResult (for timing)."""
    result = run_float_stream(design, vectors.a, vectors.b, simulator=simulator)
    check_results(design.fmt, vectors.a, vectors.b, result.outputs[output], vectors.expected, any_nan=True)
    return result


def check_against_model(design, output, model, a, b, *, simulator="verilator", idle_seed=None):
    """Output port ``output`` of ``design`` on the operand arrays against ``model(a, b)`` bit for bit
    (NaNs included, the model producing the canonical NaN), and every result exactly
    ``design.latency`` cycles after its operands."""
    result = run_float_stream(design, a, b, simulator=simulator, idle_seed=idle_seed)
    check_results(design.fmt, a, b, result.outputs[output], model(a, b))
    delays = np.unique(result.outputs["cycle"] - result.outputs["in_cycle"])
    assert delays.tolist() == [design.latency], f"results appeared {delays.tolist()} cycles after the operands"
    return result
