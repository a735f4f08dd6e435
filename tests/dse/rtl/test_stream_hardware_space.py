"""The RTL family with the weight placement as DANCE's hardware space (``rtl-stream``), on a small grid: an on-chip
point costs what the RTL space costs, an external point what the cycle formula with the DDR3 model in it gives for
the network compiled and cut into tiles (infinite where a tile does not fit a half), the area adds the external
block, the labelling sweep gives the same table, and every unit of a network is shaped by all its choices."""

import numpy as np
import pytest

from nnaccel.dse.dance import command
from nnaccel.dse.dance.hardware_space import make_hardware_space
from nnaccel.dse.dance.labels import distinct_units, label
from nnaccel.dse.dance.network_space import NETWORK_SPACE, NetworkSpace
from nnaccel.dse.dance.unit_cost import unit_structure
from nnaccel.dse.rtl.hardware_space import RtlHardwareSpace
from nnaccel.dse.rtl.stream_hardware_space import (EXTERNAL_BLOCK, EXTERNAL_BUS_BITS, FIXED, PARAMETERS,
                                                   RtlStreamHardwareSpace, RtlStreamSmallBoardSpace)
from nnaccel.dse.rtl.stream_space import START_CYCLE, StreamSpace, zero_weights
from nnaccel.models.dqn.plan import layer_shapes
from nnaccel.models.dqn.weight_stream import compile_streamed, stream_counters
from nnaccel.models.shared.sdram import DE5_NET_DDR3
from nnaccel.models.shared.tile_port import TilePortModel

SMALL_GRID = (("modules", (16,)), ("lanes", (16,)), ("format", ("binary32", "binary16")),
              ("activation_depth", (1024,)), ("weight_depth", (1024, 4096)), ("weights", ("on-chip", "ddr3")))
NETWORKS = [NETWORK_SPACE.network(indices) for indices in (
    (3, 0, 0, 0, 3, 1, 0),     # conv 64 3x3/2, conv 40 5x5/3 (1,601 weight words on chip), dense 10
    (0, 1, 1, 0, 0, 1, 0),     # conv 24 5x5/3, conv 40 2x2/3, dense 10
    (1, 2, 0, 2, 1, 0, 4),     # conv 32 7x7/2, conv 64 3x3/2, dense 256, dense 10
)]


def _on_chip_grid(values):
    return tuple((name, (FIXED[name],) if name in FIXED else values[name])
                 for name in ("modules", "lanes", "format", "multiplier_latency", "adder_latency", "row_elements",
                              "activation_depth", "weight_depth", "split"))


def test_the_space_has_96_points_and_builds_external_points_on_the_ddr3_port():
    space = RtlStreamHardwareSpace()
    assert len(space) == 96 == 2 * 2 * 2 * 2 * 3 * 2
    external = [point for point in space.all_points() if space.point_values(point)["weights"] == "ddr3"]
    config, split = space.accelerator_build(external[0])
    assert config.external_weights and config.external_bus_bits == EXTERNAL_BUS_BITS and split == "auto"
    assert space.external_memory is DE5_NET_DDR3
    config, _ = command.answer_configuration("rtl-stream", {"hardware_point": [1, 0, 1, 0, 0, 0]})
    assert (config.modules, config.lanes, config.fmt.name, config.weight_depth, config.external_weights) == \
        (32, 8, "binary16", 1024, False)
    with pytest.raises(ValueError, match="modules, lanes"):
        RtlStreamHardwareSpace(parameters=PARAMETERS[1:])


def test_on_chip_points_cost_what_the_rtl_space_says_and_external_points_what_the_formula_says():
    space = RtlStreamHardwareSpace(parameters=SMALL_GRID)
    costs = space.network_costs(NETWORKS)
    values = dict(SMALL_GRID)
    on_chip = RtlHardwareSpace(parameters=_on_chip_grid(values)).network_costs(NETWORKS)
    external_fits = 0
    for index, point in enumerate(space.all_points()):
        chosen = space.point_values(point)
        if chosen["weights"] == "on-chip":
            twin = [values[name].index(chosen[name]) for name in ("format", "weight_depth")]
            same = twin[0] * 2 + twin[1]        # the on-chip grid's point: format, then weight depth
            assert np.array_equal(costs[:, index, :2], on_chip[:, same, :2])
            assert np.array_equal(costs[:, index, 2], on_chip[:, same, 2])
            continue
        config = space.config(point)
        for row, network in enumerate(NETWORKS):
            layers = network.dqn_layers()
            try:
                stream = compile_streamed(config, layers, zero_weights(layers))
            except ValueError:
                assert np.isinf(costs[row, index]).all(), (network.describe(), space.describe(point))
                continue
            external_fits += 1
            cycles = stream_counters(stream, START_CYCLE, TilePortModel(timing=DE5_NET_DDR3,
                                                                        port_bits=EXTERNAL_BUS_BITS)).total
            energy = StreamSpace(config, layers, timing=DE5_NET_DDR3).energy(stream, layer_shapes(stream.plan.config,
                                                                                                 layers))
            assert costs[row, index, 0] == cycles / 1e5                                # 100 MHz, ms
            assert costs[row, index, 1] == pytest.approx(energy * 1e-9, rel=1e-12)
    assert external_fits == 10          # network 0's conv2 tile (1,600 products) is no half of 1,024 words
    # The external block's area on top of the same configuration on chip; on chip the first network needs 4,096
    # words of weight RAM, external weights run it in a 1,024-word buffer.
    area = space.area()
    assert np.allclose(area[1::2] - area[0::2], EXTERNAL_BLOCK) and EXTERNAL_BLOCK > 0
    assert np.isinf(costs[0, 0]).all() and np.isfinite(costs[1, 1]).all()


# When another Dask cluster on the machine holds the scheduler's default HTTP port, distributed warns
# and leaves the probing socket open; neither concerns the labels.
@pytest.mark.filterwarnings("ignore:Port 8787 is already in use", "ignore::ResourceWarning",
                            "ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_labelling_sweep_gives_the_space_s_costs(tmp_path):
    small = NetworkSpace((("c1", (24, 64)), ("k1", (3,)), ("s1", (2,)), ("c2", (40,)), ("k2", (5,)), ("s2", (3,)),
                          ("d1", (0, 32))))
    table, report, _ = label(RtlStreamHardwareSpace(parameters=SMALL_GRID), store_path=tmp_path / "labels.sqlite",
                             workers=1, progress=False, network_space=small)
    assert report.new == 2 and not report.failures           # one task per modules x lanes x format
    networks = [small.network(indices) for indices in small.all_points()]
    reference = RtlStreamHardwareSpace(parameters=SMALL_GRID).network_costs(networks)
    assert np.array_equal(table.all_points(np.arange(4)), reference)
    assert 0 < table.fitting_cases() == np.isfinite(reference[..., 0]).sum() < 4 * len(table.area)


def test_every_unit_of_a_network_is_shaped_by_every_choice():
    """The units are a network's layer positions in the whole network (external latency is no sum over layers):
    DANCE's cost network reads each as shaped by all seven choices, the fourth absent exactly without dense1."""
    _, ids = distinct_units(RtlStreamHardwareSpace(), NETWORK_SPACE)
    masks, absent = unit_structure(ids, NETWORK_SPACE)
    assert masks.shape == (4, NETWORK_SPACE.encoding_width) and (masks == 1).all()
    assert absent[:3].sum() == 0 and absent[3].sum() == 1 and absent[3, -5] == 1       # d1 = none


def test_the_small_board_space_keeps_1024_words_of_weight_ram():
    small = make_hardware_space("rtl-stream-1k")
    assert isinstance(small, RtlStreamSmallBoardSpace) and len(small) == 32
    assert {small.point_values(point)["weight_depth"] for point in small.all_points()} == {1024}
    assert small.label_cases([])[0]["space"] == "rtl-stream-1k"
