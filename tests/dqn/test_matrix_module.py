# amaranth: UnusedElaboratable=no
"""MatrixModule: parameter checks, the latency formula, streams of accumulations on Verilator bit for bit
against ``models.dqn.matrix_module.matrix_accumulate``, and lint."""

import numpy as np
import pytest
from amaranth.lib import data, stream
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.hw.dqn.matrix_module import MatrixModule, partial_sum_count, reduction_levels
from nnaccel.models.shared.float_arith import bits_dtype
from nnaccel.models.dqn.matrix_module import matrix_accumulate
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.shared.stream_ports import stream_config

SEED = 20261121
# The DQN layers' accumulation lengths (CONV_1/CONV_2/FC_2: 256, FC_1: 2592) and their neighbours, then short
# accumulations back to back (0 acts as 1).
LAYER_COUNTS = [1, 2, 255, 256, 2592]
MIXED_COUNTS = [3, 1, 1, 2, 7, 1, 4, 0, 5, 2, 1, 16, 6, 1, 3]


# ---- Parameters ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("arguments", "error", "message"), [
    ({"lanes": 0}, ValueError, "lanes must be a positive integer, not 0"),
    ({"lanes": 4.0}, ValueError, "lanes must be a positive integer, not 4.0"),
    ({"fmt": "binary32"}, TypeError, "fmt must be a FloatFormat, not 'binary32'"),
    ({"multiplier_latency": -1}, ValueError, "multiplier_latency must be a non-negative integer, not -1"),
    ({"adder_latency": True}, ValueError, "adder_latency must be a non-negative integer, not True"),
    ({"count_bits": 0}, ValueError, "count_bits must be a positive integer, not 0"),
    ({"maximum": 1}, TypeError, "maximum must be a bool, not 1"),
])
def test_rejects_bad_parameters(arguments, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        MatrixModule(**arguments)


def test_parameters_are_read_only_properties():
    module = MatrixModule(lanes=4, fmt=BINARY16, multiplier_latency=1, adder_latency=3, count_bits=12)
    assert (module.lanes, module.fmt, module.multiplier_latency, module.adder_latency, module.count_bits) == (
        4, BINARY16, 1, 3, 12)
    assert module.module_name == "matrix_module_w4_binary16_m1_a3_c12"
    with pytest.raises(AttributeError):
        module.lanes = 8
    assert not module.maximum
    assert MatrixModule(lanes=4, maximum=True).module_name == "matrix_module_w4_binary32_m2_a2_c16_max"


@pytest.mark.parametrize(("multiplier_latency", "adder_latency", "partials", "latency"), [
    (2, 2, 2, 6),     # default: 2 + 2 * (1 + 1)
    (0, 0, 1, 0),     # combinational units: the result shows on the last product's cycle
    (2, 1, 1, 3),     # one partial, no reduction tree
    (1, 3, 3, 10),    # 1 + 3 * (1 + 2): three partials, two tree levels
    (2, 4, 4, 14),    # 2 + 4 * (1 + 2)
    (0, 5, 5, 20),    # 0 + 5 * (1 + 3)
])
def test_latency_formula(multiplier_latency, adder_latency, partials, latency):
    module = MatrixModule(lanes=2, multiplier_latency=multiplier_latency, adder_latency=adder_latency)
    assert module.partials == partial_sum_count(adder_latency) == partials
    assert module.latency == multiplier_latency + adder_latency * (1 + reduction_levels(partials)) == latency


def test_ports():
    module = MatrixModule(lanes=4, count_bits=12)
    operands = data.StructLayout({"scalar": 32, "vector": data.ArrayLayout(32, 4), "seed": data.ArrayLayout(32, 4),
                                  "count": 12, "relu": 1})
    assert dict(module.signature.members) == {
        "operands": In(stream.Signature(operands, always_ready=True)),
        "result": Out(stream.Signature(data.ArrayLayout(32, 4), always_ready=True))}
    with_maximum = MatrixModule(lanes=4, count_bits=12, maximum=True)
    assert dict(with_maximum.signature.members)["operands"] == In(stream.Signature(
        data.StructLayout({name: field.shape for name, field in operands} | {"maximum": 1}), always_ready=True))


# ---- Simulation ----------------------------------------------------------------------------------------------

def random_floats(rng, fmt, shape):
    """Normal-distributed values over a few binades with ~5% zeros of either sign, as raw bits of ``fmt``."""
    values = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 7, size=shape))
    values[rng.random(shape) < 0.05] = 0.0
    values = np.copysign(values, rng.choice([-1.0, 1.0], size=shape))
    if fmt == BFLOAT16:  # binary32 with the low 16 mantissa bits cut (round toward zero is fine for test data)
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    native = {BINARY32: np.float32, BINARY16: np.float16}[fmt]
    return values.astype(native).view(bits_dtype(fmt))


def accumulation_stream(rng, module, counts, relus, maximums=None):
    """Stimulus for back-to-back accumulations: ``count``, ``relu`` and ``seed`` (and ``maximum``, for a module with
    the max mode: then the vectors also hold signed zeros, infinities and NaNs) are garbage except on first
    products.

    Returns the stimulus dict, the index of each accumulation's last product and the number of the accumulation
    whose products are all -0.
    """
    fmt = module.fmt
    lengths = np.maximum(counts, 1).astype(np.int64)
    total = int(lengths.sum())
    firsts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    count = rng.integers(0, 1 << module.count_bits, size=total, dtype=np.uint64)
    relu = rng.integers(0, 2, size=total, dtype=np.uint64)
    count[firsts] = counts
    relu[firsts] = relus
    stimulus = {
        "scalar": random_floats(rng, fmt, total).astype(np.uint64),
        "vector": random_floats(rng, fmt, (total, module.lanes)).astype(np.uint64),
        "seed": random_floats(rng, fmt, (total, module.lanes)).astype(np.uint64),
        "count": count,
        "relu": relu,
    }
    if maximums is not None:
        stimulus["maximum"] = rng.integers(0, 2, size=total, dtype=np.uint64)
        stimulus["maximum"][firsts] = maximums
        specials = np.array([0, 1 << (fmt.width - 1), fmt.infinity(0), fmt.infinity(1), fmt.canonical_nan],
                            dtype=np.uint64)
        special = rng.random(stimulus["vector"].shape) < 0.02
        stimulus["vector"][special] = rng.choice(specials, size=int(special.sum()))
    # The last accumulation of 3 or more products without ReLU has only -0 products (+0 times negative values) and
    # a -0 seed: its sum must be -0, not +0.
    zero_sum = int(np.flatnonzero((lengths >= 3) & (relus == 0))[-1])
    span = slice(firsts[zero_sum], firsts[zero_sum] + lengths[zero_sum])
    stimulus["scalar"][span] = 0
    stimulus["vector"][span] |= 1 << (fmt.width - 1)
    stimulus["seed"][firsts[zero_sum]] = 1 << (fmt.width - 1)
    return stimulus, firsts + lengths - 1, zero_sum


def run_stream(module, counts, relus, *, maximums=None, idle_seed=None, seed=SEED):
    """Simulate back-to-back accumulations (sums, or with ``maximums`` for a module with the max mode, each a sum or
    a maximum); check every result bit for bit and every latency."""
    rng = np.random.default_rng(seed)
    fmt = module.fmt
    counts, relus = np.asarray(counts, dtype=np.uint64), np.asarray(relus, dtype=np.uint64)
    stimulus, lasts, zero_sum = accumulation_stream(rng, module, counts, relus, maximums)
    config = stream_config(module, input="operands", output="result", expect=len(counts), idle_seed=idle_seed)
    result = simulate(module, name=module.module_name, test_module="nnaccel.testbench.shared.stream_tb",
                      stimulus=stimulus, config=config)

    firsts = np.concatenate([[0], lasts[:-1] + 1])
    maximums = np.zeros(len(counts), dtype=bool) if maximums is None else np.asarray(maximums, dtype=bool)
    for number, (first, last, relu, maximum) in enumerate(zip(firsts, lasts, relus, maximums)):
        expected = matrix_accumulate(fmt, stimulus["scalar"][first:last + 1], stimulus["vector"][first:last + 1],
                                     adder_latency=module.adder_latency, relu=bool(relu), seed=stimulus["seed"][first],
                                     maximum=bool(maximum))
        assert np.array_equal(result.outputs["result"][number].astype(expected.dtype), expected), (
            f"accumulation {number} (count {counts[number]}, relu {relus[number]}, maximum {maximum}): "
            f"{result.outputs['result'][number]} != {expected}")
    latencies = result.outputs["cycle"] - result.outputs["in_cycle"][lasts]
    assert np.all(latencies == module.latency), f"measured latencies {sorted(set(latencies))}"
    assert np.all(result.outputs["result"][zero_sum] == 1 << (fmt.width - 1)), "a sum (or max) of -0 products is -0"
    return result


def relu_pattern(count):
    return [index % 2 for index in range(count)]


@pytest.mark.parametrize("lanes", [4, 16])
def test_layer_counts_and_mixed_back_to_back(lanes):
    """Accumulations of 1, 2, 255, 256, 2592 products, then short mixed ones, no idle cycle anywhere."""
    counts = LAYER_COUNTS + MIXED_COUNTS
    result = run_stream(MatrixModule(lanes=lanes), counts, relu_pattern(len(counts)))
    assert result.outputs["in_cycle"][-1] == len(result.outputs["in_cycle"]) - 1, "no idle input cycle"


def test_idle_cycles_between_products():
    """Random idle cycles (0-3) between products, inside and between accumulations; same build as above."""
    counts = [300] + MIXED_COUNTS * 2
    run_stream(MatrixModule(lanes=4), counts, relu_pattern(len(counts))[::-1], idle_seed=3)


def test_three_partials_odd_reduction_tree():
    """adder_latency 3: three partial sums, a tree level with a carried value; counts around the partials."""
    counts = [1, 2, 3, 4, 5, 6, 7, 255, 256] + MIXED_COUNTS
    run_stream(MatrixModule(lanes=4, multiplier_latency=1, adder_latency=3), counts, relu_pattern(len(counts)))
    run_stream(MatrixModule(lanes=4, multiplier_latency=1, adder_latency=3), counts, relu_pattern(len(counts)),
               idle_seed=5)


@pytest.mark.parametrize(("fmt", "multiplier_latency", "adder_latency"), [
    (BINARY32, 2, 2),
    pytest.param(BINARY32, 1, 3, marks=pytest.mark.extended),
    pytest.param(BINARY16, 2, 2, marks=pytest.mark.extended),
    pytest.param(BFLOAT16, 2, 2, marks=pytest.mark.extended),
])
def test_max_mode(fmt, multiplier_latency, adder_latency):
    """The max mode (max pooling): sums and maxima back to back, counts around the partials, specials in the
    vectors, with and without idle cycles; the tree of three partials carries a value."""
    counts = [1, 2, 3, 4, 5, 9, 255] + MIXED_COUNTS
    maximums = [(index // 2) % 2 for index in range(len(counts))]   # each combination of ReLU and max mode
    module = MatrixModule(lanes=4, fmt=fmt, multiplier_latency=multiplier_latency, adder_latency=adder_latency,
                          maximum=True)
    run_stream(module, counts, relu_pattern(len(counts)), maximums=maximums)
    run_stream(module, counts, relu_pattern(len(counts)), maximums=maximums[::-1], idle_seed=7)


@pytest.mark.extended
@pytest.mark.parametrize(("fmt", "multiplier_latency", "adder_latency"), [
    (BINARY32, 0, 0),     # combinational units: one accumulator register, result on the last product's cycle
    (BINARY32, 2, 1),
    (BINARY32, 3, 4),
    (BINARY16, 2, 2),
    (BFLOAT16, 2, 2),
])
def test_other_latencies_and_formats(fmt, multiplier_latency, adder_latency):
    module = MatrixModule(lanes=4, fmt=fmt, multiplier_latency=multiplier_latency, adder_latency=adder_latency)
    counts = [1, 2, 3, 4, 5, 255, 256] + MIXED_COUNTS
    run_stream(module, counts, relu_pattern(len(counts)))
    run_stream(module, counts, relu_pattern(len(counts)), idle_seed=11)


# ---- Lint ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("lanes", [4, 16])
def test_lint_clean(lanes):
    module = MatrixModule(lanes=lanes)
    assert lint_verilog(module, module.module_name) == []


def test_lint_clean_max_mode():
    module = MatrixModule(lanes=4, maximum=True)
    assert lint_verilog(module, module.module_name) == []
