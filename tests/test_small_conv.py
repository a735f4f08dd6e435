# amaranth: UnusedElaboratable=no
"""hw.small_conv and models.small_conv: a convolution layer from image buffer to results, on Verilator, bit for bit
against the golden model, on the cycles the docstring predicts; the golden model is a convolution."""

from dataclasses import dataclass

import numpy as np
import pytest

from hw.conv_feeder import FEEDER_LATENCY
from hw.float_format import BINARY32
from hw.small_conv import SmallConv
from models.conv_feeder import feeder_schedule
from models.small_conv import convolution_float64, feature_map, small_conv_groups
from sim.harness import simulate
from sim.lint import lint_verilog

SEED = 20261122


@dataclass(frozen=True)
class Case:
    channels: int
    image_size: int
    kernel_size: int
    stride: int
    positions: int
    filters: int
    relu: bool
    multiplier_latency: int
    adder_latency: int

    @property
    def geometry(self):
        return (self.channels, self.image_size, self.kernel_size, self.stride, self.positions)


# The example: 2x12x12, 4 filters 4x4, stride 2 (5x5 output); 4 positions, the fewest the feeder accepts
# for 5-wide output rows, so each group is a head plus a tail and the 7th group is ragged.
EXAMPLE = Case(2, 12, 4, 2, 4, filters=4, relu=True, multiplier_latency=2, adder_latency=2)
# One matrix module (positions = 1, which the feeder accepts for 2-wide output rows), 3x3 kernel, odd product count
# (27), no ReLU, three partial sums per lane (La = 3: a two-level reduction tree, L = 1 + 3 * 3 = 10).
ONE_MODULE = Case(3, 5, 3, 2, 1, filters=3, relu=False, multiplier_latency=1, adder_latency=3)
CASES = {"example_p4": EXAMPLE, "one_module_p1": ONE_MODULE}


def random_layer(case, seed=SEED):
    rng = np.random.default_rng(seed)
    image = rng.standard_normal((case.channels, case.image_size, case.image_size)).astype(np.float32)
    weights = rng.standard_normal((case.channels, case.kernel_size, case.kernel_size, case.filters)).astype(
        np.float32)
    return image, weights


def build(case, image, weights):
    return SmallConv(channels=case.channels, image_size=case.image_size, kernel_size=case.kernel_size,
                     stride=case.stride, positions=case.positions, image=image.view(np.uint32),
                     weights=weights.view(np.uint32), relu=case.relu, multiplier_latency=case.multiplier_latency,
                     adder_latency=case.adder_latency)


def golden(case, image, weights):
    return small_conv_groups(BINARY32, image.view(np.uint32), weights.view(np.uint32), stride=case.stride,
                             positions=case.positions, adder_latency=case.adder_latency, relu=case.relu)


# ---- Parameters ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "message"), [
    ({"image": np.zeros((2, 12, 11), np.uint32)}, r"image must have shape \(2, 12, 12\), not \(2, 12, 11\)"),
    ({"image": np.zeros((2, 12, 12), np.float32)}, "image must hold raw bits \\(unsigned integers\\), not dtype "
                                                   "float32"),
    ({"weights": np.zeros((2, 4, 3, 4), np.uint32)},
     r"weights must have shape \(2, 4, 4, filters\), not \(2, 4, 3, 4\)"),
    ({"weights": np.zeros((2, 4, 4, 0), np.uint32)},
     r"weights must have shape \(2, 4, 4, filters\), not \(2, 4, 4, 0\)"),
    ({"weights": np.zeros((2, 4, 4, 4), np.int32)}, "weights must hold raw bits \\(unsigned integers\\), not dtype "
                                                    "int32"),
    ({"relu": 1}, "relu must be a bool, not 1"),
    ({"positions": 3}, r"positions=3 cannot tile 5-wide output rows: group 2 covers columns 1..3 of output row 1, "
                       r"neither its start nor its end \(needs gcd\(positions, 5\) >= 2\)"),
    ({"multiplier_latency": -1}, "multiplier_latency must be a non-negative integer, not -1"),
    ({"adder_latency": 2.0}, "adder_latency must be a non-negative integer, not 2.0"),
])
def test_rejects_bad_parameters(change, message):
    image, weights = random_layer(EXAMPLE)
    arguments = dict(channels=2, image_size=12, kernel_size=4, stride=2, positions=4, image=image.view(np.uint32),
                     weights=weights.view(np.uint32))
    with pytest.raises(ValueError, match=f"^{message}$"):
        SmallConv(**{**arguments, **change})


def test_rejects_a_format_that_is_not_a_float_format():
    image, weights = random_layer(EXAMPLE)
    with pytest.raises(TypeError, match="^fmt must be a FloatFormat, not 'binary32'$"):
        SmallConv(channels=2, image_size=12, kernel_size=4, stride=2, positions=4, image=image.view(np.uint32),
                  weights=weights.view(np.uint32), fmt="binary32")


def test_parameters_and_cycle_formula():
    conv = build(EXAMPLE, *random_layer(EXAMPLE))
    geometry = conv.geometry
    assert (geometry.output_size, geometry.groups, geometry.products) == (5, 7, 32)
    assert (conv.filters, conv.relu, conv.fmt, conv.multiplier_latency, conv.adder_latency) == (
        4, True, BINARY32, 2, 2)
    assert conv.matrix_module_latency == 6
    # FEEDER_LATENCY + weight read + (g + 1) * products - 1 + L
    assert [conv.result_cycle(group) for group in range(7)] == [4 + 1 + 32 * (g + 1) - 1 + 6 for g in range(7)]
    assert conv.cycles == 234
    assert conv.module_name == "small_conv_c2_i12_k4_s2_p4_f4_binary32_m2_a2_relu"
    one_module = build(ONE_MODULE, *random_layer(ONE_MODULE))
    assert one_module.matrix_module_latency == 10
    assert one_module.cycles == FEEDER_LATENCY + 4 * 27 + 10
    with pytest.raises(AttributeError):
        conv.relu = False


# ---- The golden model is a convolution ------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_golden_model_is_the_convolution(case):
    """The bit-exact binary32 golden model, placed at its outputs, is close to the float64 convolution (the
    binary32 roundings make it differ in the last bits, so this check is ``close``, not equal)."""
    image, weights = random_layer(case)
    groups = golden(case, image, weights)
    computed = feature_map(groups, channels=case.channels, image_size=case.image_size,
                           kernel_size=case.kernel_size, stride=case.stride).view(np.float32)
    reference = convolution_float64(image, weights, stride=case.stride, relu=case.relu)
    assert computed.shape == reference.shape == (case.filters, *(2 * [feeder_schedule(*case.geometry).geometry
                                                                      .output_size]))
    np.testing.assert_allclose(computed, reference, rtol=1e-5, atol=1e-5)
    if case.relu:
        assert (reference == 0).any() and (reference > 0).any()


# ---- RTL ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_lint_clean(case):
    """Clean but for the feeder's one finding by design (see tests/test_conv_feeder.py): the row columns no window
    of a port's shift register reaches, i.e. the first ``tail_offset`` columns of ``upper`` and the columns from
    ``register_elements`` on of ``lower``, are unused input bits of the feeder module."""
    conv = build(case, *random_layer(case))
    geometry = conv.geometry
    row_bits = geometry.image_size * 32
    expected = [f"Bits of signal are not used: 'upper__read_data'[{geometry.tail_offset * 32 - 1}:0]",
                f"Bits of signal are not used: 'lower__read_data'[{row_bits - 1}:{geometry.register_elements * 32}]"]
    findings = lint_verilog(conv, conv.module_name)
    assert sorted(finding.split(": ", 2)[-1] for finding in findings) == sorted(expected), findings
    assert all(finding.startswith("%Warning-UNUSEDSIGNAL") for finding in findings)


def run_layers(conv, start_cycles, simulator):
    """Pulse ``start`` on each of ``start_cycles`` (counted from the first cycle after reset) and collect every
    result beat (``testbench.stream_tb`` drives ``start`` as a one-bit input stream, one element per cycle)."""
    start = np.zeros(start_cycles[-1] + 2, dtype=np.uint8)
    start[start_cycles] = 1
    geometry = conv.geometry
    group_ports = {"output_row": {"lanes": 1, "bits": 8}, "head_count": {"lanes": 1, "bits": 8},
                   "active": {"lanes": 1, "bits": geometry.positions}}
    return simulate(conv, name=conv.module_name, test_module="testbench.stream_tb", simulator=simulator,
                    stimulus={"start": start},
                    config={"inputs": {"start": {"lanes": 1, "bits": 1}}, "in_valid": None,
                            "outputs": {"result": {"lanes": geometry.positions * conv.filters, "bits": 32},
                                        **group_ports},
                            "out_valid": "out_valid", "expect": geometry.groups * len(start_cycles),
                            "drain_cycles": conv.cycles + 10}).outputs


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_rtl_computes_the_golden_convolution_on_the_predicted_cycles(simulator, case):
    """Two layers: the second ``start`` comes on the first cycle the feeder accepts it (the cycle after its last
    beat, while the matrix modules still drain the first layer); every result bit and every result cycle is
    checked."""
    image, weights = random_layer(case)
    conv = build(case, image, weights)
    geometry = conv.geometry
    schedule = feeder_schedule(*case.geometry)
    expected = golden(case, image, weights).reshape(geometry.groups, -1)
    second_start = 3 + FEEDER_LATENCY + geometry.groups * geometry.products
    start_cycles = [3, second_start]
    outputs = run_layers(conv, start_cycles, simulator)

    predicted_cycles = [start + conv.result_cycle(group) for start in start_cycles for group in range(geometry.groups)]
    print(f"{conv.module_name}: last result of layer 1 on cycle {outputs['cycle'][geometry.groups - 1] - 3} after "
          f"start, predicted {conv.cycles}; {outputs['result'].size} result words compared")
    assert outputs["cycle"].tolist() == predicted_cycles
    for run in range(2):
        beats = slice(run * geometry.groups, (run + 1) * geometry.groups)
        result = outputs["result"][beats].reshape(geometry.groups, -1)
        mismatch = np.argwhere(result != expected)
        assert mismatch.size == 0, f"layer {run}: {len(mismatch)} words differ, first (group, word): {mismatch[:5]}"
        assert outputs["output_row"][beats].tolist() == schedule.output_row.tolist()
        assert outputs["head_count"][beats].tolist() == schedule.head_count.tolist()
        active_bits = (schedule.active * (1 << np.arange(geometry.positions))).sum(axis=1)
        assert outputs["active"][beats].tolist() == active_bits.tolist()
