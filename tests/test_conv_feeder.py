# amaranth: UnusedElaboratable=no
"""hw.conv_feeder and models.conv_feeder: the schedule is a convolution, the RTL emits exactly the schedule."""

import numpy as np
import pytest

from hw.conv_feeder import FEEDER_LATENCY, ConvFeeder, ConvGeometry
from hw.float_format import BINARY32
from models.conv_feeder import feeder_schedule, feeder_scalars
from sim.lint import lint_verilog
from testbench.conv_feeder_top import feeder_module_name, geometry_kwargs, run_feeder

# (channels, image_size, kernel_size, stride, positions)
SMALL = (2, 12, 4, 2, 4)
CONV_1 = (4, 84, 8, 4, 16)
CONV_2 = (16, 20, 4, 2, 8)
STRIDE_1 = (3, 9, 3, 1, 7)       # stride 1: the registers shift every cycle, one tap per module
POSITIONS_EQUAL_ROW = (2, 11, 3, 2, 5)   # positions = output size: every group is one whole row


# --- parameters ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, error, message", [
    ({"channels": 0}, ValueError, "channels must be a positive integer, not 0"),
    ({"stride": 1.5}, ValueError, "stride must be a positive integer, not 1.5"),
    ({"kernel_size": 13}, ValueError, "kernel_size must be at most image_size = 12, not 13"),
    ({"positions": 6}, ValueError, "positions must be at most the output size 5, not 6"),
    ({"image_size": 20, "kernel_size": 2, "positions": 3}, ValueError,
     r"positions=3 cannot tile 10-wide output rows: group 1 covers columns 3..5 of output row 0, neither its "
     r"start nor its end \(needs gcd\(positions, 10\) >= 7\)"),
    ({"fmt": 32}, TypeError, "fmt must be a FloatFormat, not 32"),
])
def test_parameter_errors(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        ConvFeeder(**{**geometry_kwargs(SMALL), **kwargs})


def test_properties_and_cycle_counts():
    feeder = ConvFeeder(**geometry_kwargs(CONV_1))
    assert (feeder.channels, feeder.image_size, feeder.kernel_size, feeder.stride, feeder.positions) == CONV_1
    assert (feeder.fmt, feeder.latency) == (BINARY32, FEEDER_LATENCY)
    assert feeder.signature.members["upper"].signature.width == 84 * 32
    conv_1 = feeder.geometry
    assert (conv_1.output_size, conv_1.groups, conv_1.products, conv_1.cycles) == (20, 25, 256, 6400)
    assert conv_1.register_elements == 68
    conv_2 = ConvGeometry(**geometry_kwargs(CONV_2))
    assert (conv_2.output_size, conv_2.groups, conv_2.products, conv_2.cycles) == (9, 11, 256, 2816)
    assert lint_free(feeder, feeder_module_name(CONV_1))


def lint_free(component, name):
    """Lint, ignoring the one finding that is by design: the columns of a row no window of the registers
    reaches (the head register takes the first columns, the tail register the last) are unused input bits."""
    findings = lint_verilog(component, name)
    by_design = [line for line in findings
                 if "Bits of signal are not used: 'upper__read_data'" in line
                 or "Bits of signal are not used: 'lower__read_data'" in line]
    assert findings == by_design, findings
    return True


@pytest.mark.parametrize("geometry", [SMALL, CONV_2, STRIDE_1, POSITIONS_EQUAL_ROW])
def test_lint_clean(geometry):
    assert lint_free(ConvFeeder(**geometry_kwargs(geometry)), feeder_module_name(geometry))


# --- the schedule is a convolution --------------------------------------------------------------

@pytest.mark.parametrize("geometry", [SMALL, CONV_1, CONV_2, STRIDE_1, POSITIONS_EQUAL_ROW])
def test_schedule_computes_the_convolution(geometry):
    """Summing image[c, row, column] * weight[weight_index] over the schedule, per module into the output it is
    assigned, gives the direct convolution (float64), and every output is computed exactly once."""
    channels, image_size, kernel_size, stride, positions = geometry
    schedule = feeder_schedule(*geometry)
    size = schedule.geometry.output_size
    filters = 3
    rng = np.random.default_rng(7)
    image = rng.standard_normal((channels, image_size, image_size))
    weights = rng.standard_normal((channels, kernel_size, kernel_size, filters))   # [in, h, w, out]

    direct = np.zeros((size, size, filters))
    for row in range(size):
        for column in range(size):
            window = image[:, row * stride:row * stride + kernel_size, column * stride:column * stride + kernel_size]
            direct[row, column] = np.tensordot(window, weights, axes=3)

    weight_rows = weights.reshape(channels * kernel_size * kernel_size, filters)
    scalars = feeder_scalars(schedule, image)                                   # (T, positions), 0 when idle
    products = scalars[:, :, None] * weight_rows[schedule.weight_index][:, None, :]
    per_module = np.zeros((schedule.geometry.groups, positions, filters))
    np.add.at(per_module, schedule.group, products)
    computed = np.full((size * size, filters), np.nan)
    active = schedule.output_position >= 0
    assert sorted(schedule.output_position[active]) == list(range(size * size))
    computed[schedule.output_position[active]] = per_module[active]
    np.testing.assert_allclose(computed.reshape(size, size, filters), direct, rtol=1e-12, atol=1e-12)

    # each beat's product order is the weight buffer's (channel, kernel row, kernel column)
    products_per_group = channels * kernel_size * kernel_size
    assert np.array_equal(schedule.weight_index, np.tile(np.arange(products_per_group), schedule.geometry.groups))
    assert np.array_equal(schedule.cycle, FEEDER_LATENCY + np.arange(len(schedule.cycle)))


def test_schedule_group_layout_conv_1():
    schedule = feeder_schedule(*CONV_1)
    # group 1: the last 4 columns of output row 0 (modules 12-15) and the first 12 of row 1 (modules 0-11)
    assert schedule.output_row[1] == 1 and schedule.head_count[1] == 12
    assert list(schedule.output_position[1]) == [20 + m for m in range(12)] + [16, 17, 18, 19]
    assert schedule.active.all()


# --- RTL against the schedule -------------------------------------------------------------------

def simulate_feeder(geometry, simulator, *, runs=1, seed=1):
    channels, image_size = geometry[:2]
    image = np.random.default_rng(seed).standard_normal((channels, image_size, image_size)).astype(np.float32)
    image_bits = image.view(np.uint32)
    schedule = feeder_schedule(*geometry)
    result = run_feeder(geometry, image_bits, beats=len(schedule.cycle), runs=runs, simulator=simulator)
    return schedule, feeder_scalars(schedule, image_bits), result.outputs


def check_against_schedule(schedule, expected_scalars, outputs, run):
    beats = outputs["run"] == run
    positions = schedule.geometry.positions
    scalars = outputs["scalars"][beats].reshape(-1, positions)
    assert np.array_equal(outputs["cycle"][beats], schedule.cycle)
    mismatch = np.argwhere(scalars != expected_scalars)
    assert mismatch.size == 0, f"{len(mismatch)} scalars differ, first (beat, module): {mismatch[:5].tolist()}"
    assert np.array_equal(outputs["weight_index"][beats], schedule.weight_index)
    assert np.array_equal(outputs["first"][beats].astype(bool), schedule.first)
    assert np.array_equal(outputs["last"][beats].astype(bool), schedule.last)
    assert np.array_equal(outputs["output_row"][beats], schedule.output_row[schedule.group])
    assert np.array_equal(outputs["head_count"][beats], schedule.head_count[schedule.group])
    active_bits = (schedule.active * (1 << np.arange(positions))).sum(axis=1)
    assert np.array_equal(outputs["active"][beats], active_bits[schedule.group])
    # busy falls on the cycle after the last beat
    assert outputs["busy_cycles"][run] == schedule.cycle[-1] + 1


def test_small_geometry_two_runs(simulator):
    schedule, expected, outputs = simulate_feeder(SMALL, simulator, runs=2)
    for run in range(2):
        check_against_schedule(schedule, expected, outputs, run)


@pytest.mark.parametrize("geometry", [STRIDE_1, POSITIONS_EQUAL_ROW])
def test_other_small_geometries(simulator, geometry):
    schedule, expected, outputs = simulate_feeder(geometry, simulator)
    check_against_schedule(schedule, expected, outputs, 0)


@pytest.mark.parametrize("geometry", [CONV_1, CONV_2], ids=["conv_1", "conv_2"])
def test_dqn_layers(simulator, geometry):
    schedule, expected, outputs = simulate_feeder(geometry, simulator)
    check_against_schedule(schedule, expected, outputs, 0)
    assert len(schedule.cycle) == {CONV_1: 6400, CONV_2: 2816}[geometry]
