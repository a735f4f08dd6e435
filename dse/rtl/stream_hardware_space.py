"""The RTL family with the weight placement as a choice: DANCE's hardware space ``rtl-stream``.  Every point is a
:class:`hw.dqn.config.DqnConfig` whose weights are either on chip (the RTL family's accelerator, costed as
``dse.rtl.hardware_space`` costs it) or in a DDR3-class memory with the DE5-Net's bandwidth behind the Avalon-MM
master (``external_weights=True``, the weight RAM then a tile buffer of two halves, each pass's tile loaded into one
half while the pass before computes from the other: ``models.dqn.weight_stream``).

=================  =======================  ===============================================================
parameter          values                   what it changes
=================  =======================  ===============================================================
modules            16, 32                   matrix modules; output positions per group
lanes              8, 16                    lanes per module; output channels per column block
format             binary32, binary16       the float units, RAM widths, bytes per weight
activation_depth   512, 1024                words per activation RAM
weight_depth       1024, 2048, 4096         words of the weight RAM: on chip all the network's weights, external
                                            the tile buffer (a tile of a multi-group pass must fit a half; a
                                            dense layer's larger tile streams through its half)
weights            on-chip, ddr3            where the weights live
=================  =======================  ===============================================================

96 points (:data:`FIXED`: multiplier and adder latency 2, 84-element rows, the compiler's split "auto", the
default's eight descriptors and 64 load-table entries; the external port 1,024 bits, ``DE5_NET_DDR3``).  The grid
is small because labelling is: the exact formula runs the memory model word by word, 10 to 40 ms a run with the DDR3
model (0.25 to 0.6 s with the DE1-SoC SDRAM model, which is therefore not a value), for each of the 3,840 networks
on each point; 8 or 4 modules (fewer than 64 MACs hold few of the network space's layers) and 8- and 4-lane
modules below 16 x 8 are left out, as is bfloat16 (binary16's bytes and cycles).

**Costs.**  On chip: ``RtlHardwareSpace``'s exact costs of the same configuration (its grid restricted to
:data:`FIXED`).  External: latency = TOTAL_CYCLES of one run STARTed on cycle ``START_CYCLE`` with the memory fresh,
by ``models.dqn.weight_stream.stream_counters`` (the exact cycle formula with the DDR3 model in it, which the RTL's
counters equal), at :data:`~dse.rtl.hardware_space.CLOCK_MHZ`; energy = ``dse.rtl.stream_space.StreamSpace.energy``
(the on-chip passes, every loaded weight word written into the buffer, every byte read at the 45 nm table's
off-chip figure, ``energy_table.dram_pj_per_word``); area = the on-chip configuration's (the same weight-RAM bits,
now two halves) plus :data:`EXTERNAL_BLOCK`, the load table, loader, tile port and Avalon master as ``nnaccel
synth`` measured them on ``DE1_SOC_CONFIG`` (the ``weights`` block, 844 ALMs and 38 M10K, less that configuration's
on-chip weight RAM by ``dse.rtl.area``'s rule), a constant for every point (not re-measured per configuration).

**Cost units.**  External latency is not a sum over layers (a tile's load overlaps the pass before, the memory's
refresh phase runs through the whole run), so a network's units are its layers' positions *in the whole network*
(:func:`network_units`): every unit names the network, the first carries its costs and the others cost nothing.  The
sums :meth:`RtlStreamHardwareSpace.combine` takes are then the network's exact costs, and DANCE's cost network,
which only sees a network's totals, reads every unit as shaped by every choice.
"""

from dataclasses import replace

import numpy as np

from nnaccel.dse.rtl.cost_model import hardware_area
from nnaccel.dse.rtl.hardware_space import (CLOCK_MHZ, RtlHardwareSpace, alm_equivalents, context_from_dict,
                                            context_to_dict, pack_arrays, unpack_arrays)
from nnaccel.dse.rtl.hardware_space import PARAMETERS as ON_CHIP_PARAMETERS
from nnaccel.dse.rtl.area import compose
from nnaccel.dse.rtl.stream_space import START_CYCLE, StreamSpace, zero_weights
from nnaccel.dse.shared.hardware_grid import HardwareGrid, checked_parameters
from nnaccel.hw.dqn.config import DE1_SOC_CONFIG, DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.dqn.plan import compile_network, layer_shapes
from nnaccel.models.dqn.weight_stream import on_chip_twin, run_timing_arguments, stream_plan
from nnaccel.models.shared.sdram import DE5_NET_DDR3
from nnaccel.sim.fpga.synth import Resources

__all__ = ["RtlStreamHardwareSpace", "RtlStreamSmallBoardSpace", "PARAMETERS", "SMALL_BOARD_PARAMETERS", "FIXED",
           "EXTERNAL_BUS_BITS", "EXTERNAL_BLOCK", "COLUMNS", "network_units", "network_table", "label_networks"]

PARAMETERS = (
    ("modules", (16, 32)),
    ("lanes", (8, 16)),
    ("format", ("binary32", "binary16")),
    ("activation_depth", (512, 1024)),
    ("weight_depth", (1024, 2048, 4096)),
    ("weights", ("on-chip", "ddr3")),
)
#: the on-chip parameters every point shares (``RtlHardwareSpace``'s values of the DQN accelerator's default)
FIXED = {"multiplier_latency": 2, "adder_latency": 2, "row_elements": 84, "split": "auto"}
EXTERNAL_BUS_BITS = 1024
#: the ``weights`` block of ``nnaccel synth dqn`` on DE1_SOC_CONFIG (docs/dqn_accelerator.md, "Fit on the 5CSEMA5")
MEASURED_WEIGHTS_BLOCK = {"alms": 844, "dsp_blocks": 0, "m10k": 38}
COLUMNS = ("feasible", "latency_ms", "energy_mj")
#: the parameters one labelling task shares
TASK_KEYS = ("modules", "lanes", "format")


def _external_block():
    """Thousands of ALM-equivalents the external weights add to a configuration: :data:`MEASURED_WEIGHTS_BLOCK`
    less ``DE1_SOC_CONFIG``'s weight RAM on chip by ``dse.rtl.area``'s rule."""
    parts, _ = compose(replace(DE1_SOC_CONFIG, external_weights=False))
    _, cells = parts["weight_slice"]
    weight_ram = Resources(**{name: cells.get(name, 0) for name in Resources.__dataclass_fields__})
    return (alm_equivalents(MEASURED_WEIGHTS_BLOCK) - alm_equivalents(
        {"alms": weight_ram.alms, "dsp_blocks": weight_ram.dsp_blocks, "m10k": weight_ram.m10k})) / 1e3


EXTERNAL_BLOCK = _external_block()


def network_units(layers):
    """A network's cost units: ``(layers, position)`` for each of its layers (names kept: the compiler names passes
    after them)."""
    layers = tuple(layers)
    return tuple((layers, position) for position in range(len(layers)))


class _Layers:
    """A network as ``HardwareGrid.network_costs`` takes it."""

    def __init__(self, layers):
        self.layers = layers

    def dqn_layers(self):
        return self.layers


def _on_chip_parameters(values):
    """``RtlHardwareSpace``'s parameters restricted to ``values`` ({name: tuple}) and :data:`FIXED`."""
    return tuple((name, values.get(name, (FIXED[name],) if name in FIXED else options))
                 for name, options in ON_CHIP_PARAMETERS)


def _on_chip_options(values):
    """``DqnConfig`` options of a point's ``values`` with its weights on chip (and :data:`FIXED`)."""
    return dict(modules=values["modules"], lanes=values["lanes"], fmt=float_format(values["format"]),
                multiplier_latency=FIXED["multiplier_latency"], adder_latency=FIXED["adder_latency"],
                row_elements=FIXED["row_elements"], activation_depth=values["activation_depth"],
                weight_depth=values["weight_depth"])


def _counter_key(config, stream):
    """What ``stream_counters`` of a fresh run reads of ``stream``: the passes' timing arguments, the loads and the
    bus words per weight word (points that differ only in RAM depths often share them)."""
    arguments = run_timing_arguments(config, stream.plan)
    return (tuple((name, value.tobytes() if isinstance(value, np.ndarray) else value)
                  for name, value in sorted(arguments.items())),
            stream.loads, config.weight_word_bits // config.external_bus_bits)


def _external_costs(space, layers, points):
    """``{point index: (latency ms, energy mJ)}`` of ``layers`` on the external ``points`` (indices), leaving out
    those it does not fit: the network compiled once per on-chip twin, its tiles cut for each buffer depth, each
    distinct run timed once."""
    found, plans, cycles = {}, {}, {}
    for index in points:
        config = space.config(space.all_points()[index])
        if config is None:
            continue
        twin = on_chip_twin(config)
        if twin not in plans:
            try:
                plans[twin] = (compile_network(twin, layers, zero_weights(layers)), layer_shapes(twin, layers))
            except ValueError:
                plans[twin] = None
        if plans[twin] is None:
            continue
        plan, shapes = plans[twin]
        try:
            stream = stream_plan(config, plan)
        except ValueError:
            continue
        costing = StreamSpace(config, layers, timing=DE5_NET_DDR3, name="")
        key = _counter_key(config, stream)
        if key not in cycles:
            cycles[key] = costing.latency(stream, START_CYCLE).total
        found[int(index)] = (cycles[key] / (CLOCK_MHZ * 1e3), costing.energy(stream, shapes) * 1e-9)
    return found


def _empty_table(networks, points):
    """``COLUMNS`` for ``networks`` x ``points`` with nothing fitting."""
    return {"feasible": np.zeros((networks, points), bool), "latency_ms": np.full((networks, points), np.inf),
            "energy_mj": np.full((networks, points), np.inf)}


def network_table(space, networks, structures=None):
    """``{column: (networks, points)}`` of ``COLUMNS`` for ``networks`` (tuples of layers) on the points whose
    ``TASK_KEYS`` values are in ``structures`` (default all); other points are left infeasible."""
    points = space.all_points()
    table = _empty_table(len(networks), len(points))
    values = dict(space.parameters)
    for structure in structures or space.structures():
        members = space.structure_points(structure)
        on_chip = [index for index in members if space.point_values(points[index])["weights"] == "on-chip"]
        external = [index for index in members if index not in set(on_chip)]
        inner = RtlHardwareSpace(parameters=_on_chip_parameters(
            {name: values[name] for name in ("activation_depth", "weight_depth")}
            | dict(zip(TASK_KEYS, ((value,) for value in structure)))))
        inner_costs = inner.network_costs([_Layers(layers) for layers in networks])
        inner_points = inner.point_index(np.array([[options.index(space.inner_value(points[index], name))
                                                    for name, options in inner.parameters] for index in on_chip]))
        costs = inner_costs[:, inner_points, :2]
        table["latency_ms"][:, on_chip], table["energy_mj"][:, on_chip] = costs[..., 0], costs[..., 1]
        table["feasible"][:, on_chip] = np.isfinite(costs).all(axis=-1)
        for row, layers in enumerate(networks):
            for index, (latency, energy) in _external_costs(space, layers, external).items():
                table["feasible"][row, index] = True
                table["latency_ms"][row, index], table["energy_mj"][row, index] = latency, energy
    return table


class RtlStreamHardwareSpace(HardwareGrid):
    """The RTL family with the weight placement (see the module docstring)."""

    name = "rtl-stream"
    area_unit = "kALMeq"
    compute_parameters = ("modules", "lanes")
    #: the memory behind the Avalon-MM master of an external point (what an answer is simulated with)
    external_memory = DE5_NET_DDR3

    def __init__(self, *, parameters=PARAMETERS):
        super().__init__()
        #: the grid: (name, values) per parameter, a subset of :data:`PARAMETERS`' values
        self.parameters = checked_parameters(parameters, PARAMETERS)
        self._area = None

    def inner_value(self, point, name):
        """The value of ``RtlHardwareSpace``'s parameter ``name`` at ``point``."""
        return self.point_values(point).get(name, FIXED.get(name))

    def config(self, point):
        """The ``DqnConfig`` of one point; None where the configuration cannot be built (binary16 on 32 MACs with
        the 1,024-bit port)."""
        values = self.point_values(point)
        options = _on_chip_options(values)
        if values["weights"] == "ddr3":
            options.update(external_weights=True, external_bus_bits=EXTERNAL_BUS_BITS)
        try:
            return DqnConfig(**options)
        except ValueError:
            return None

    def accelerator_build(self, point):
        """How an answer is built: ``(config(point), "auto")``."""
        return self.config(point), FIXED["split"]

    def structures(self):
        """Every ``TASK_KEYS`` value tuple, in grid order."""
        values = dict(self.parameters)
        return [(modules, lanes, name) for modules in values["modules"] for lanes in values["lanes"]
                for name in values["format"]]

    def structure_points(self, structure):
        """Point indices with ``TASK_KEYS`` values ``structure``."""
        points = self.all_points()
        columns = [self.names.index(name) for name in TASK_KEYS]
        values = dict(self.parameters)
        wanted = [values[name].index(value) for name, value in zip(TASK_KEYS, structure)]
        return np.flatnonzero((points[:, columns] == wanted).all(axis=1))

    def area(self):
        """Thousands of ALM-equivalents of every point: the on-chip configuration's, plus :data:`EXTERNAL_BLOCK`
        for external weights."""
        if self._area is None:
            areas = []
            for point in self.all_points():
                values = self.point_values(point)
                config = DqnConfig(**_on_chip_options(values))
                areas.append(alm_equivalents(hardware_area(config)) / 1e3
                             + (EXTERNAL_BLOCK if values["weights"] == "ddr3" else 0.0))
            self._area = np.array(areas)
        return self._area

    # ---- cost units: a network's layer positions --------------------------------------------------------------

    def cost_units(self, layers):
        return network_units(layers)

    def unit_table(self, units):
        """``{column: (units, points)}``: a unit at position 0 its network's costs, the others none."""
        networks = list(dict.fromkeys(layers for layers, _ in units))
        table = network_table(self, networks)
        return _unit_columns(units, networks, table)

    def combine(self, rows, points):
        """Costs (..., 3) from unit rows ``{column: (..., 4, P)}`` on ``points``: latency ms, energy mJ, area;
        ``inf`` where the network does not fit."""
        feasible = rows["feasible"].astype(bool).all(axis=-2)
        latency, energy = rows["latency_ms"].sum(axis=-2), rows["energy_mj"].sum(axis=-2)
        return self.stacked_costs(latency, energy, points, feasible)

    # ---- the labelling sweep: one Dask task per (modules, lanes, format) ---------------------------------------

    @property
    def label_task(self):
        return label_networks

    def label_cases(self, units):
        networks = list(dict.fromkeys(layers for layers, _ in units))
        grid = [[name, list(values)] for name, values in self.parameters]
        encoded = [context_to_dict(layers) for layers in networks]
        return [{"space": self.name, "parameters": grid, "task": list(structure), "networks": encoded}
                for structure in self.structures()]

    def label_columns(self, units, cases, results):
        networks = list(dict.fromkeys(layers for layers, _ in units))
        table = _empty_table(len(networks), len(self))
        for result in results:
            arrays = unpack_arrays(result["points"])
            for name in COLUMNS:
                table[name][:, arrays["points"]] = arrays[name]
        return _unit_columns(units, networks, table)


def _unit_columns(units, networks, table):
    """Unit rows from network rows: position 0 its network's, the others feasible as the network and costing 0."""
    row_of = {layers: row for row, layers in enumerate(networks)}
    rows = np.array([row_of[layers] for layers, _ in units])
    first = np.array([position == 0 for _, position in units])
    columns = {"feasible": table["feasible"][rows]}
    for name in ("latency_ms", "energy_mj"):
        columns[name] = np.where(first[:, None], table[name][rows], 0.0)
    return columns


def label_networks(case):
    """Sweep task: ``COLUMNS`` of ``case["networks"]`` on the points of one ``TASK_KEYS`` structure, compressed."""
    space = RtlStreamHardwareSpace(parameters=case["parameters"])
    networks = [context_from_dict(items) for items in case["networks"]]
    structure = tuple(case["task"])
    table = network_table(space, networks, [structure])
    members = space.structure_points(structure)
    return {"points": pack_arrays({"points": members, **{name: table[name][:, members] for name in COLUMNS}})}


#: a small board's grid: the on-chip weight RAM (and the external tile buffer) at 1,024 words, so that a network with
#: more weight words runs only with its weights external
SMALL_BOARD_PARAMETERS = tuple((name, (1024,) if name == "weight_depth" else values) for name, values in PARAMETERS)


class RtlStreamSmallBoardSpace(RtlStreamHardwareSpace):
    """``rtl-stream`` with 1,024 words of weight RAM (:data:`SMALL_BOARD_PARAMETERS`, 32 points): where weights
    that do not fit must stream, as on the DE1-SoC."""

    name = "rtl-stream-1k"

    def __init__(self, *, parameters=SMALL_BOARD_PARAMETERS):
        super().__init__(parameters=parameters)
