# amaranth: UnusedElaboratable=no
"""IntMatrixModule: parameter checks, streams of accumulations on Verilator bit for bit against
``models.capsnet.int8_layers.matvec`` (both multiplier styles), latency, and lint."""

import numpy as np
import pytest
from amaranth.hdl import signed
from amaranth.lib import data
from amaranth.lib.stream import Signature as StreamSignature
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.int_matrix_module import INT_MATRIX_MODULE_LATENCY, IntMatrixModule
from nnaccel.models.capsnet.int8_layers import matvec
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.stream_ports import stream_config

SEED = 20261122
# Long and short accumulations back to back (0 acts as 1), the CapsNet lengths (81, 8) among them.
COUNTS = [81, 8, 1, 1, 2, 7, 0, 5, 1, 3, 16, 1, 200, 2, 1, 1]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"lanes": 0}, "lanes must be a positive integer, not 0"),
    ({"lanes": 2.0}, "lanes must be a positive integer, not 2.0"),
    ({"multipliers": "alm"}, r"multipliers must be one of \('dsp', 'logic'\), not 'alm'"),
    ({"count_bits": 0}, "count_bits must be a positive integer, not 0"),
])
def test_rejects_bad_parameters(arguments, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        IntMatrixModule(**arguments)


def test_rejects_non_bool_requantized():
    with pytest.raises(TypeError, match="^requantized must be a bool, not 1$"):
        IntMatrixModule(requantized=1)


def test_parameters_and_ports():
    module = IntMatrixModule(lanes=6, multipliers="logic", count_bits=12)
    assert (module.lanes, module.multipliers, module.count_bits, module.latency, module.requantized) == (
        6, "logic", 12, 3, True)
    assert module.module_name == "int_matrix_module_w6_logic_c12"
    with pytest.raises(AttributeError):
        module.lanes = 8
    products = {"scalar": signed(8), "vector": data.ArrayLayout(signed(8), 6), "bias": signed(32)}
    assert dict(module.signature.members) == {
        "operands": In(StreamSignature(data.StructLayout(products | {"count": 12, "shift": 5, "relu": 1}),
                                        always_ready=True)),
        "result": Out(StreamSignature(data.ArrayLayout(8, 6), always_ready=True))}
    sums = IntMatrixModule(lanes=6, requantized=False)
    assert sums.module_name == "int_matrix_module_w6_dsp_c16_sums"
    assert dict(sums.signature.members) == {
        "operands": In(StreamSignature(data.StructLayout(products | {"count": 16}), always_ready=True)),
        "result": Out(StreamSignature(data.ArrayLayout(32, 6), always_ready=True))}


def accumulation_stream(rng, lanes, counts):
    """Random int8 products; bias, shift and relu per accumulation (garbage on the other products).

    Accumulation 0 is all extremes (-128 * -128 products); accumulation 2 has a bias of 2**31 - 1 and shift 31, whose
    rounding sum needs the 33rd bit; accumulation 3 has a bias of -2**31 (the most negative accumulator).
    """
    lengths = np.maximum(counts, 1)
    total = int(lengths.sum())
    firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    scalar = rng.integers(-128, 128, total)
    vector = rng.integers(-128, 128, (total, lanes))
    bias = rng.integers(-1 << 20, 1 << 20, total)
    shift = rng.integers(0, 32, total)
    shift[firsts] = rng.integers(0, 16, len(counts))
    relu = rng.integers(0, 2, total)
    scalar[:lengths[0]], vector[:lengths[0]], shift[0] = -128, -128, 13
    bias[firsts[2]], shift[firsts[2]], scalar[firsts[2]] = (1 << 31) - 1, 31, 0
    bias[firsts[3]], shift[firsts[3]], relu[firsts[3]], scalar[firsts[3]] = -(1 << 31), 24, 0, 0
    count = rng.integers(0, 1 << 16, total)
    count[firsts] = counts
    return {"scalar": scalar, "vector": vector, "bias": bias, "count": count, "shift": shift, "relu": relu}, firsts


def expected_results(stream, firsts, counts, requantized):
    """Per accumulation: ``int8_layers.matvec`` (requantized) or the exact sums (int64)."""
    results = []
    for first, count in zip(firsts, counts):
        span = slice(first, first + max(count, 1))
        weights = stream["vector"][span].T                         # (lanes, products)
        bias = np.full(weights.shape[0], stream["bias"][first])
        if requantized:
            results.append(matvec(weights, stream["scalar"][span], bias, shift=int(stream["shift"][first]),
                                  relu=bool(stream["relu"][first])))
        else:
            results.append(weights @ stream["scalar"][span] + bias)
    return np.array(results)


def raw(values, bits):
    return (np.asarray(values, dtype=np.int64) & ((1 << bits) - 1)).astype(np.uint64)


@pytest.mark.parametrize(("multipliers", "requantized"), [("dsp", True), ("logic", True), ("dsp", False)])
def test_accumulations_bit_exact(multipliers, requantized):
    module = IntMatrixModule(lanes=4, multipliers=multipliers, requantized=requantized)
    rng = np.random.default_rng(SEED)
    stream, firsts = accumulation_stream(rng, module.lanes, COUNTS)
    widths = {"scalar": 8, "vector": 8, "bias": 32, "count": 16} | ({"shift": 5, "relu": 1} if requantized else {})
    stimulus = {name: raw(stream[name], bits) for name, bits in widths.items()}
    result_bits = 8 if requantized else 32
    config = stream_config(module, input="operands", output="result", expect=len(COUNTS), idle_seed=None)
    back_to_back = simulate(module, name=module.module_name, test_module="nnaccel.testbench.shared.stream_tb",
                            stimulus=stimulus, config=config)
    with_idle = simulate(module, name=module.module_name, test_module="nnaccel.testbench.shared.stream_tb",
                         stimulus=stimulus, config=config | {"idle_seed": 7})
    expected = expected_results(stream, firsts, COUNTS, requantized)
    if requantized:
        assert expected[0].tolist() == [127] * 4 and expected[2].tolist() == [1] * 4
        assert expected[3].tolist() == [-128] * 4
    lasts = firsts + np.maximum(COUNTS, 1) - 1
    for result in (back_to_back, with_idle):
        observed = result.outputs["result"].astype({8: np.uint8, 32: np.uint32}[result_bits])
        assert np.array_equal(observed.view({8: np.int8, 32: np.int32}[result_bits]), expected)
        latencies = result.outputs["cycle"] - result.outputs["in_cycle"][lasts]
        assert set(latencies.tolist()) == {INT_MATRIX_MODULE_LATENCY}


@pytest.mark.parametrize(("multipliers", "requantized"), [("dsp", True), ("logic", True), ("dsp", False)])
def test_lint_clean(multipliers, requantized):
    module = IntMatrixModule(lanes=4, multipliers=multipliers, requantized=requantized)
    assert lint_verilog(module, module.module_name) == []
