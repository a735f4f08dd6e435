"""The RTL family of the DQN accelerator as DANCE's hardware space: every point is a :class:`hw.dqn.config.DqnConfig`
and a compiler mapping style, and its costs are the RTL family's cost model (``dse.rtl.cost_model``), so the
co-search's hardware answer is a configuration that can be built, and its predicted cycles are the cycles the
hardware counts.

==================  ===========================  ==========================================================
parameter           values                       what it changes
==================  ===========================  ==========================================================
modules             8, 16, 32                    matrix modules (a power of two); output positions per group
lanes               4, 8, 16                     lanes per module; output channels per column block
format              binary32, bfloat16, binary16 the float units, RAM widths, energy per action
multiplier_latency  1, 2, 3                      register stages of the multiplier (the area table's range)
adder_latency       1, 2, 3                      register stages of the adder, and the partial sums per lane
row_elements        28, 84                       elements per activation word (MNIST rows are 28 wide; 84 the
                                                 DQN's default), the width of both activation RAMs
activation_depth    512, 1024                    words per activation RAM (conv1's output needs C1 x rows)
weight_depth        1024, 2048, 4096             words of the weight RAM (the layers' products + 1, summed)
split               auto, never                  the compiler's K-split of idle modules (``default_mapping``)
==================  ===========================  ==========================================================

5,832 points; the DQN accelerator's default configuration (16 x 16 binary32, latencies 2 and 2, 84-element rows,
1,024 and 4,096 words, split auto) is one of them, and every network of the DANCE network space compiles onto it.

**Costs.** Latency: the compiler's cycle prediction (``models.dqn.timing.pass_counters``) of the network's passes as
one run, as the hardware counts them (``dse.rtl.cost_model.evaluate_network``: each pass sets up while the one
before drains, waits for its writes or reads early where the compiler sets a handoff and a start delay), at a
nominal 100 MHz (:data:`CLOCK_MHZ`, the clock nnaccel assumes for its FPGA designs), in ms.
Energy: the RTL cost model's per-action energies (45 nm table), in mJ.  Area: one scalar, **thousands of
ALM-equivalents** (:func:`alm_equivalents`): the composed FPGA area (``dse.rtl.area``: ALMs, DSP blocks,
M10K) with each DSP block and M10K block counted as the ALMs a Cyclone V 5CSEMA5 has per block of that kind (32,070
ALMs, 87 DSP blocks, 397 M10K: a DSP block weighs 368.6 ALMs, an M10K 80.8), so the area is the share of that
device the configuration would take, in its ALMs.

**Infeasible points cost infinity** (latency, energy and area ``inf``): a network that the compiler cannot place on a
configuration (output channels beyond modules x lanes, a group of positions spanning more than two rows, rows
wider than a word, the weight or an activation RAM too small, more passes than descriptors) has no cost there.
The exhaustive search ignores such points; the evaluator is trained on feasible cases only.

**How the costs are computed.** A network's latency and energy are sums over its layers, and what a layer costs
depends on the layer, the tensor it reads (a dense layer reading an image or a packed vector), the pass before it (in
the run) and the configuration: a *layer context* (:func:`layer_contexts`) is the layer with the layers back to the
nearest convolution before it.  :func:`context_table` evaluates contexts on every point with the compiler's own
functions (``layer_shapes``, ``default_mapping``, ``check_mapping``, ``pass_shapes``) and the cost model
(``cost_model.pack`` / ``evaluate_batch``; ``plan.pass_handoffs`` / ``pass_timing`` per pass pair): the layer's
cycles in its context's run without its last pass's drain (a column of its own, which
:meth:`RtlHardwareSpace.combine` adds for the network's last layer only), its energy, and what a network needs of
the shared resources: weight-RAM words (passes of the same layer and column blocks share weights, as the compiler
places them), activation words (the output and any partial sums, in the output's RAM) and passes.
:meth:`RtlHardwareSpace.combine` adds a network's contexts up and checks the sums against the RAM depths and the
descriptor table (the compiler's allocator: the input in RAM 0, each layer's output in the other RAM).
``tests/dse/rtl/test_hardware_space.py`` checks costs and feasibility against ``compile_network`` and
``evaluate_network``.
"""

import base64
import io
from dataclasses import replace

import numpy as np

from nnaccel.dse.rtl import cost_model
from nnaccel.dse.shared.hardware_grid import HardwareGrid, checked_parameters
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.dqn.network import ConvLayer, DenseLayer
from nnaccel.models.dqn.mapping import DqnMapping
from nnaccel.models.dqn.plan import (check_config, check_mapping, default_mapping, layer_shapes, pass_handoffs,
                                      pass_shapes, pass_timing, reads_previous, tensor_words)

__all__ = ["RtlHardwareSpace", "PARAMETERS", "STRUCTURE", "COLUMNS", "CLOCK_MHZ", "alm_equivalents", "layer_contexts",
           "context_to_dict", "context_from_dict", "context_table"]

PARAMETERS = (
    ("modules", (8, 16, 32)),
    ("lanes", (4, 8, 16)),
    ("format", ("binary32", "bfloat16", "binary16")),
    ("multiplier_latency", (1, 2, 3)),
    ("adder_latency", (1, 2, 3)),
    ("row_elements", (28, 84)),
    ("activation_depth", (512, 1024)),
    ("weight_depth", (1024, 2048, 4096)),
    ("split", ("auto", "never")),
)
#: the parameters a layer's mapping and passes depend on; the others change only constants of the cost model
STRUCTURE = ("modules", "lanes", "multiplier_latency", "adder_latency", "row_elements", "split")
#: the parameters one labelling task shares (its points share their layers' shapes and mappings)
TASK_KEYS = ("modules", "lanes", "row_elements", "split")
CLOCK_MHZ = 100.0
MAX_LAYERS = DqnConfig.max_layers
# Cyclone V 5CSEMA5: ALMs, DSP blocks, M10K blocks (the device of the DE1-SoC)
REFERENCE_DEVICE = {"alms": 32_070, "dsp_blocks": 87, "m10k": 397}
#: the per-context columns of :func:`context_table`
COLUMNS = ("feasible", "cycles", "end_drain_cycles", "energy_pj", "weight_words", "output_words", "input_words",
           "passes")
#: the columns of :func:`context_table` that hold cycles or energies (float64; the others count words or passes)
_COST_COLUMNS = ("cycles", "end_drain_cycles", "energy_pj")


def alm_equivalents(area):
    """One area figure from ``cost_model.hardware_area``'s ALMs, DSP blocks and M10K: every block counted as the ALMs
    the reference device (:data:`REFERENCE_DEVICE`) has per block of its kind."""
    per = REFERENCE_DEVICE["alms"]
    return (area["alms"] + area["dsp_blocks"] * per / REFERENCE_DEVICE["dsp_blocks"]
            + area["m10k"] * per / REFERENCE_DEVICE["m10k"])


def layer_contexts(layers):
    """A network's layers (``ConvLayer`` / ``DenseLayer``) as contexts (tuples of layers, names dropped): each layer
    after the layers back to the nearest convolution before it (or the network's first layer).  A layer's cycles in
    the network's run depend on the pass before it (the writes it waits for, the handoff and start delay the
    compiler sets between the two: ``models.dqn.plan.pass_handoffs``), and a dense layer's passes on the tensor it
    reads (an image or a packed vector), so the context holds what fixes the previous layer's last pass: a
    convolution alone, or a dense layer with what it reads."""
    contexts = []
    for index, layer in enumerate(layers):
        start = max(index - 1, 0)
        while start and not isinstance(layers[start], ConvLayer):
            start -= 1
        chain = layers[start:index]
        contexts.append(tuple(replace(previous, name=f"previous{len(chain) - position}")
                              for position, previous in enumerate(chain)) + (replace(layer, name="layer"),))
    return tuple(contexts)


def context_to_dict(context):
    return [{"kind": "conv" if isinstance(layer, ConvLayer) else "dense", **vars(layer)} for layer in context]


def context_from_dict(items):
    return tuple((ConvLayer if item["kind"] == "conv" else DenseLayer)(
        **{key: value for key, value in item.items() if key != "kind"}) for item in items)


def _weight_words(passes):
    """Weight-RAM words of a layer's passes: positions passes of the same layer, column blocks and channel tile
    share theirs."""
    shared, words = set(), 0
    for work in passes:
        key = (work.layer, work.column_blocks, work.first_channel) if work.kind == "positions" else None
        if key is None or key not in shared:
            words += work.products + 1
        if key is not None:
            shared.add(key)
    return words


def _structure_config(values):
    """The configuration of a structure (``STRUCTURE`` values) with the other parameters at their defaults."""
    return DqnConfig(modules=values["modules"], lanes=values["lanes"], multiplier_latency=values["multiplier_latency"],
                     adder_latency=values["adder_latency"], row_elements=values["row_elements"])


class _RunCycles:
    """Layers' cycles in runs on one structure's configuration, pass by pass: a pass's cycles depend on it and the
    pass before it (the writes it waits for, the handoff and start delay the compiler sets between the two:
    ``models.dqn.plan.pass_handoffs``), so they are computed once per such pair, which many contexts share, and all
    pairs at once (:meth:`resolve`)."""

    def __init__(self, config):
        self.config = config
        self._pairs = {}      # (previous, work, reads) keys -> index

    def layer(self, layers):
        """Pair indices of the last of ``layers`` (``[(LayerShape, [PassShape])]``, a context in run order) after the
        layers before it, and its last pass's (alone, for its drain): what :meth:`resolve`'s arrays are read at."""
        runs = [(_unnamed(work), tensor_words(work, shape)) for shape, passes in layers for work in passes]
        reads = reads_previous([work for _, passes in layers for work in passes])
        first = len(runs) - len(layers[-1][1])
        pairs = [self._index((runs[index - 1] if index else None, runs[index], reads[index]))
                 for index in range(first, len(runs))]
        return pairs, self._index((None, runs[-1], True))

    def _index(self, key):
        return self._pairs.setdefault(key, len(self._pairs))

    def resolve(self):
        """``(cycles, drains)``, arrays over the pairs: a pair's second pass's cycles after its first (its drain
        left out), and that pass's drain."""
        passes, reads, handoffs, delays, runs, ends = [], [], [], [], [], []
        for index, (previous, work, read) in enumerate(self._pairs):
            if previous is None:
                pair, pair_reads, pair_handoffs, pair_delays = [work], [True], [False], [0]
            else:
                pair, pair_reads = [previous, work], [True, read]
                pair_handoffs, pair_delays = pass_handoffs(self.config, [shape for shape, _ in pair], pair_reads,
                                                           [words for _, words in pair])
            passes += [shape for shape, _ in pair]
            reads += pair_reads
            handoffs += pair_handoffs
            delays += pair_delays
            runs += [index] * len(pair)
            ends.append(len(passes) - 1)
        timed = pass_timing(self.config, passes, reads, handoffs, delays, run=runs)
        alone = pass_timing(self.config, [passes[end] for end in ends], run=np.arange(len(ends)))
        return timed["cycles"][ends] - alone["drain_cycles"], alone["drain_cycles"]


def _unnamed(work):
    return work._replace(name="", layer="")


def _mapped(config, shape, split, known):
    """``(LayerShape, layer mapping, [PassShape])`` of a layer shape on ``config`` (``known`` keeps them per shape),
    ``None`` where the compiler cannot map it."""
    key = replace(shape, name="", source="")
    if key not in known:
        try:
            layer_mapping = default_mapping(config, (shape,), split=split).layers[0]
            check_mapping(config, (shape,), DqnMapping((layer_mapping,)))
            known[key] = (layer_mapping, pass_shapes(config, shape, layer_mapping))
        except ValueError:
            known[key] = None
    found = known[key]
    # The passes carry the shape's layer name (the run's reads and the RAMs follow it).
    return found and (shape, found[0], [work._replace(name=shape.name, layer=shape.name) for work in found[1]])


def context_table(space, contexts, structures=None):
    """Costs and resource needs of ``contexts`` on the points of ``space`` whose structure is in ``structures``
    (tuples of ``STRUCTURE`` values; default all).  Returns ``{column: (contexts, points) array}`` for
    ``COLUMNS``; points outside ``structures`` are left infeasible."""
    points = space.all_points()
    table = {name: np.zeros((len(contexts), len(points)),
                            dtype=bool if name == "feasible" else np.float64 if name in _COST_COLUMNS
                            else np.int32) for name in COLUMNS}
    shapes = {}     # a context's layer shapes, per (modules, lanes, row_elements): the latencies do not change them
    for key, members in space.structure_members().items():
        if structures is not None and key not in structures:
            continue
        structure = dict(zip(STRUCTURE, key))
        reference = _structure_config(structure)
        run_cycles, mapped = _RunCycles(reference), {}
        configs = [space.config(points[member]) for member in members]
        usable = np.array([space.config_feasible(points[member]) for member in members])
        cases, rows, pairs = [], [], []
        for row, context in enumerate(contexts):
            shape_key = (reference.modules, reference.lanes, reference.row_elements, row)
            if shape_key not in shapes:
                try:
                    shapes[shape_key] = layer_shapes(reference, context)
                except ValueError:
                    shapes[shape_key] = None
            layers = [_mapped(reference, shape, structure["split"], mapped) for shape in shapes[shape_key] or ()]
            if not layers or None in layers:
                continue
            shape, layer_mapping, passes = layers[-1]
            cases += [(config, layer_mapping, shape) for config in configs]
            rows.append(row)
            table["feasible"][row, members] = usable
            pairs.append(run_cycles.layer([(layer[0], layer[2]) for layer in layers]))
            table["weight_words"][row, members] = _weight_words(passes)
            table["output_words"][row, members] = (shape.out_shape[0] * shape.out_shape[1]
                                                   + sum(work.count for work in passes if work.kind == "partials"))
            table["input_words"][row, members] = shape.in_shape[0] * shape.in_shape[1]
            table["passes"][row, members] = len(passes)
        if rows:
            costs = cost_model.evaluate_batch(cost_model.pack(cases, area=False))
            where = np.ix_(rows, members)
            table["energy_pj"][where] = costs["energy_pj"].reshape(len(rows), len(members))
            # Cycles depend on the structure alone: the layer's passes in its context's run.
            cycles, drains = run_cycles.resolve()
            table["cycles"][rows, members[0]] = [cycles[indices].sum() for indices, _ in pairs]
            table["end_drain_cycles"][rows, members[0]] = drains[[last for _, last in pairs]]
            for name in ("cycles", "end_drain_cycles"):
                table[name][where] = table[name][rows, members[0]][:, None]
    return table


class RtlHardwareSpace(HardwareGrid):
    """The RTL family's grid (see the module docstring)."""

    name = "rtl"
    area_unit = "kALMeq"
    compute_parameters = ("modules", "lanes")
    costs_add_up_over_units = True

    def __init__(self, *, parameters=PARAMETERS):
        super().__init__()
        self._parameters = checked_parameters(parameters, PARAMETERS)
        self._area = None

    @property
    def parameters(self):
        return self._parameters

    def config(self, point):
        """The ``DqnConfig`` of one point."""
        values = self.point_values(point)
        return DqnConfig(modules=values["modules"], lanes=values["lanes"], fmt=float_format(values["format"]),
                         multiplier_latency=values["multiplier_latency"], adder_latency=values["adder_latency"],
                         row_elements=values["row_elements"], activation_depth=values["activation_depth"],
                         weight_depth=values["weight_depth"])

    def split(self, point):
        """The compiler's split mode of one point (``compile_network(split=...)``)."""
        return self.point_values(point)["split"]

    def accelerator_build(self, point):
        """How an answer found on this space is built on the DQN accelerator: ``(config(point), split(point))``."""
        return self.config(point), self.split(point)

    def config_feasible(self, point):
        """Whether networks can be compiled for the point's configuration at all (``plan.check_config``)."""
        return _config_feasible(self.config(point))

    def structure_members(self):
        """``{STRUCTURE values: [point indices]}``: the points that share a structure, hence their layers' passes."""
        columns = [self.names.index(name) for name in STRUCTURE]
        values = dict(self.parameters)
        members = {}
        for index, point in enumerate(self.all_points()):
            members.setdefault(tuple(values[name][point[column]] for name, column in zip(STRUCTURE, columns)),
                               []).append(index)
        return members

    def depths(self):
        """Activation and weight depths of every point: two (points,) arrays."""
        values, points = dict(self.parameters), self.all_points()
        return tuple(np.array(values[name])[points[:, self.names.index(name)]]
                     for name in ("activation_depth", "weight_depth"))

    def area(self):
        """Thousands of ALM-equivalents of every point (:func:`alm_equivalents`)."""
        if self._area is None:
            self._area = np.array([alm_equivalents(cost_model.hardware_area(self.config(point))) / 1e3
                                   for point in self.all_points()])
        return self._area

    # ---- cost units: layer contexts --------------------------------------------------------------------------

    def cost_units(self, layers):
        """A network's layer contexts (:func:`layer_contexts`)."""
        return layer_contexts(layers)

    def unit_table(self, contexts):
        """:func:`context_table` of ``contexts`` on every point."""
        return context_table(self, contexts)

    def combine(self, rows, points):
        """Costs (..., 3) from context rows ``{column: (..., 4, P)}`` (a network's four layer contexts on the
        second to last axis) on ``points``: latency ms, energy mJ, area; ``inf`` where the network does not fit
        (the compiler's allocator: the input in RAM 0, each layer's output in the other RAM; the descriptor table;
        the weight RAM)."""
        activation_depth, weight_depth = (depth[points] for depth in self.depths())
        words = rows["output_words"]
        ram0 = rows["input_words"][..., 0, :] + words[..., 1, :] + words[..., 3, :]   # the input, conv2, the 4th
        ram1 = words[..., 0, :] + words[..., 2, :]
        feasible = (rows["feasible"].astype(bool).all(axis=-2) & (rows["passes"].sum(axis=-2) <= MAX_LAYERS)
                    & (rows["weight_words"].sum(axis=-2) <= weight_depth)
                    & (ram0 <= activation_depth) & (ram1 <= activation_depth))
        # A context's cycles leave its layer's drain out; the network pays its last layer's.
        present = rows["passes"] > 0
        last = present & ~np.concatenate([present[..., 1:, :], np.zeros_like(present[..., :1, :])], axis=-2)
        cycles = (rows["cycles"] + np.where(last, rows["end_drain_cycles"], 0)).sum(axis=-2)
        latency = cycles / (CLOCK_MHZ * 1e3)
        energy = rows["energy_pj"].sum(axis=-2) * 1e-9
        return self.stacked_costs(latency, energy, points, feasible)

    def unit_latency_energy(self, columns, last):
        """(units, points, 2) the latency ms and energy mJ each context of ``columns`` ({column: (units, points)})
        adds to a network, as ``combine`` adds them: its cycles, and its layer's drain where it is the network's
        ``last`` (units,) context; NaN where the context itself does not fit the point."""
        cycles = columns["cycles"] + np.where(np.asarray(last)[:, None], columns["end_drain_cycles"], 0)
        costs = np.stack([cycles / (CLOCK_MHZ * 1e3), columns["energy_pj"] * 1e-9], axis=-1)
        return np.where(columns["feasible"].astype(bool)[..., None], costs, np.nan)

    # ---- the labelling sweep: one Dask task per (modules, lanes, row_elements, split), TASK_KEYS ---------------

    @property
    def label_task(self):
        """The sweep's task, :func:`label_contexts` (module-level, so that a Dask worker imports it)."""
        return label_contexts

    def label_cases(self, contexts):
        """The sweep's cases (JSON): the grid, one task's ``TASK_KEYS`` values and every context, each."""
        values = dict(self.parameters)
        tasks = sorted({tuple(dict(zip(STRUCTURE, key))[name] for name in TASK_KEYS)
                        for key in self.structure_members()},
                       key=lambda task: tuple(values[name].index(value) for name, value in zip(TASK_KEYS, task)))
        encoded = [context_to_dict(context) for context in contexts]
        grid = [[name, list(values)] for name, values in self.parameters]
        return [{"space": "rtl", "parameters": grid, "task": list(task), "contexts": encoded} for task in tasks]

    def label_columns(self, contexts, cases, results):
        """``COLUMNS`` (contexts, points) of the tasks' results."""
        results = [unpack_arrays(result["points"]) for result in results]
        columns = {}
        for name in COLUMNS:
            column = np.zeros((len(contexts), len(self)), dtype=results[0][name].dtype)
            for result in results:
                column[:, result["points"]] = result[name]
            columns[name] = column
        return columns


def label_contexts(case):
    """Sweep task: ``COLUMNS`` of ``case["contexts"]`` on the points of one task's structures, as compressed arrays
    (contexts, task points)."""
    space = RtlHardwareSpace(parameters=case["parameters"])
    contexts = [context_from_dict(items) for items in case["contexts"]]
    structures, members = _task_members(space, tuple(case["task"]))
    table = context_table(space, contexts, structures)
    return {"points": pack_arrays({"points": members, **{name: table[name][:, members] for name in COLUMNS}})}


def _task_members(space, task):
    """The structures and point indices of one task (``TASK_KEYS`` values)."""
    fixed = dict(zip(TASK_KEYS, task))
    chosen = {key: members for key, members in space.structure_members().items()
              if all(dict(zip(STRUCTURE, key))[name] == value for name, value in fixed.items())}
    return set(chosen), np.array(sorted(index for members in chosen.values() for index in members))


def pack_arrays(arrays):
    """``{name: array}`` as compressed text (a labelling task's result crosses the Dask sweep as JSON)."""
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def unpack_arrays(text):
    """The ``{name: array}`` :func:`pack_arrays` made ``text`` of."""
    with np.load(io.BytesIO(base64.b64decode(text))) as data:
        return {name: data[name] for name in data.files}


def _config_feasible(config):
    try:
        check_config(config)
    except ValueError:
        return False
    return True
