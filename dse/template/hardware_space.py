"""The seeds' template as DANCE's hardware space: PE_x, PE_y 8..24, RF 4..64 words, dataflow WS / OS /
RS (4,335 points), each layer mapped by a fixed heuristic per dataflow and costed by the shared
template cost model (``dse.template.cost_model``).

Why a heuristic mapping: the hardware generation tool searches all 4,335 points for every
network, and the random mapping sampler draws about 400 legal mappings per second; the heuristic
builds the (3, 7, 2) codes of millions of (layer, point) cases in NumPy and the cost model
evaluates them at its batch speed. The mapping gives the array a shape (the template's model itself
only counts PEs), so PE_x and PE_y are distinct parameters, as in the patent (a wider PE_x serves more
channels, a taller PE_y larger feature maps):

========  =============================  =============================  ===================
dataflow  PE_x unrolls                   PE_y unrolls                   RF loops (inner last)
========  =============================  =============================  ===================
WS        K (output channels)            C (input channels)             S, X
OS        K                              Y, then X on the rows left     S, C
RS        Y (K for a dense layer)        R, then C on the rows left     X, S
========  =============================  =============================  ===================

Each unrolling takes the largest divisor of the dimension that fits (tiles are exact factors). The
RF loops take the largest tiles that fit the register file (outer loop whole or not at all, inner
loop the largest divisor). Everything else sits in GB loops (order N K C R S Y X for WS, N K Y X C R
S for OS, N K C Y X R S for RS: the stationary tensor's irrelevant loops innermost); while the GB
tile overflows the global buffer, prime factors move out to DRAM loops in the order K, Y, X, C, R, S.
A dimension unrolled at a level takes no temporal loop there: its GB factor goes to DRAM.

Hardware constants: GB 108 KiB, 32 words per cycle, HBM 128 GB/s, 1 GHz, binary32 words (the DQN
accelerator's format).
"""

import base64
from functools import cache

import numpy as np

from nnaccel.dse.shared import energy_table
from nnaccel.dse.shared.hardware_grid import HardwareGrid
from nnaccel.dse.shared.layer import DIM_INDEX, DIMS, Layer, from_network_layer
from nnaccel.dse.template.cost_model import CaseBatch, evaluate_batch
from nnaccel.dse.template.hardware import TEMPLATE_SPACE, TemplateHardware
from nnaccel.dse.template.loopnest import footprints

NUMBER_FORMAT = "fp32"
PE_VALUES = tuple(range(TEMPLATE_SPACE.pe_min, TEMPLATE_SPACE.pe_max + 1))
RF_VALUES = TEMPLATE_SPACE.rf_words_choices
DATAFLOWS = tuple(d.value for d in TEMPLATE_SPACE.dataflows)
CLOCK_MHZ = 1000.0
TASK_LAYERS = 24        # layers a labelling task costs on every point

_N, _K, _C, _Y, _X, _R, _S = (DIM_INDEX[d] for d in DIMS)
_DRAM, _GB, _RF = 0, 1, 2
_GB_ORDER = {"WS": (_N, _K, _C, _R, _S, _Y, _X), "OS": (_N, _K, _Y, _X, _C, _R, _S),
             "RS": (_N, _K, _C, _Y, _X, _R, _S)}
_RF_LOOPS = {"WS": (_S, _X), "OS": (_S, _C), "RS": (_X, _S)}
_SPILL_ORDER = (_K, _Y, _X, _C, _R, _S)
_MAX_BOUND = 1 << 14


@cache
def _largest_divisor_table():
    """table[b, l]: the largest divisor of b that is <= l (b < _MAX_BOUND, l <= 64)."""
    bounds = np.arange(_MAX_BOUND)[:, None]
    limits = np.arange(65)[None, :]
    table = np.ones((_MAX_BOUND, 65), dtype=np.int64)
    for divisor in range(2, 65):
        divides = (bounds % divisor == 0) & (divisor <= limits)
        table = np.where(divides, divisor, table)
    return table


@cache
def _smallest_prime_factor_table():
    table = np.arange(_MAX_BOUND)
    for p in range(2, int(_MAX_BOUND ** 0.5) + 1):
        if table[p] == p:
            multiples = np.arange(p * p, _MAX_BOUND, p)
            table[multiples] = np.minimum(table[multiples], p)
    return table


def _divisor_at_most(values, limits):
    return _largest_divisor_table()[values, np.clip(limits, 0, 64)]


def words_needed_at(extent, layer_type, stride):
    """Words of W + I + O in tiles spanning ``extent`` (B, 7)."""
    return footprints(extent.astype(np.float64), layer_type, stride).sum(axis=1)


def heuristic_codes(bounds, stride, layer_type, pe_x, pe_y, rf_words, dataflow, gb_words):
    """(B, 3, 7, 2) mapping codes for B cases of one dataflow (``"WS"``, ``"OS"`` or ``"RS"``).

    ``bounds`` (B, 7) loop bounds in ``DIMS`` order; the other arguments (B,) arrays.
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    if bounds.max() >= _MAX_BOUND:
        raise ValueError(f"a loop bound of {bounds.max()} exceeds the mapper's table ({_MAX_BOUND - 1})")
    batch = len(bounds)
    rows = np.arange(batch)
    spatial = np.ones((batch, 3, 7), dtype=np.int64)     # [level, dim]: PEs unrolled (one dim per level)
    parallel_dim = np.zeros((batch, 3), dtype=np.int64)
    left = bounds.copy()

    def unroll(level, dims, limits):
        size = _divisor_at_most(left[rows, dims], limits)
        spatial[rows, level, dims] = size
        parallel_dim[:, level] = dims
        left[rows, dims] //= size
        return size

    if dataflow == "WS":
        unroll(_RF, np.full(batch, _K), pe_x)
        unroll(_GB, np.full(batch, _C), pe_y)
        unroll(_DRAM, np.full(batch, _N), np.ones(batch, dtype=np.int64))
    elif dataflow == "OS":
        unroll(_RF, np.full(batch, _K), pe_x)
        rows_used = unroll(_DRAM, np.full(batch, _Y), pe_y)
        unroll(_GB, np.full(batch, _X), pe_y // rows_used)
    elif dataflow == "RS":
        unroll(_RF, np.where(bounds[:, _Y] > 1, _Y, _K), pe_x)
        rows_used = unroll(_DRAM, np.full(batch, _R), pe_y)
        unroll(_GB, np.full(batch, _C), pe_y // rows_used)
    else:
        raise ValueError(f"dataflow must be one of {', '.join(DATAFLOWS)}, not {dataflow!r}")

    temporal = np.ones((batch, 3, 7), dtype=np.int64)
    # RF loops: the outer one whole if it fits with the inner at 1, the inner the largest divisor that fits.
    outer, inner = _RF_LOOPS[dataflow]
    rf_extent = np.ones((batch, 7), dtype=np.int64)

    def words_needed(extent):
        return words_needed_at(extent, layer_type, stride)

    rf_extent[:, outer] = left[:, outer]
    rf_extent[:, outer] = np.where(words_needed(rf_extent) <= rf_words, left[:, outer], 1)
    # The words are affine in one extent (a tile's rows are (extent - 1) * stride + filter rows).
    at_one = words_needed(rf_extent)
    rf_extent[:, inner] = 2
    slope = words_needed(rf_extent) - at_one
    largest = np.floor((rf_words - at_one) / np.maximum(slope, 1e-9)).astype(np.int64) + 1
    rf_extent[:, inner] = _divisor_at_most(left[:, inner], np.maximum(largest, 1))
    if dataflow == "WS":   # S may not be the innermost active RF loop under WS: no X tile, no S tile
        rf_extent[:, outer] = np.where(rf_extent[:, inner] > 1, rf_extent[:, outer], 1)
    temporal[:, _RF] = rf_extent
    left //= rf_extent

    # GB loops take the rest; a dimension unrolled at the GB level goes to DRAM instead.
    gb_blocked = np.zeros((batch, 7), dtype=bool)
    gb_blocked[rows, parallel_dim[:, _GB]] = True
    dram_blocked = np.zeros((batch, 7), dtype=bool)
    dram_blocked[rows, parallel_dim[:, _DRAM]] = True
    temporal[:, _GB] = np.where(gb_blocked, 1, left)
    temporal[:, _DRAM] = np.where(gb_blocked, left, 1)

    array_extent = spatial.prod(axis=1) * temporal[:, _RF]
    smallest_prime = _smallest_prime_factor_table()
    active = rows
    while len(active):
        over = words_needed_at(temporal[active, _GB] * array_extent[active], layer_type[active],
                               stride[active]) > gb_words
        active = active[over]
        movable = (temporal[active, _GB] > 1) & ~dram_blocked[active]
        spill = np.full(len(active), -1)
        for dim in reversed(_SPILL_ORDER):
            spill = np.where(movable[:, dim], dim, spill)
        active, dims = active[spill >= 0], spill[spill >= 0]
        factor = smallest_prime[temporal[active, _GB, dims]]
        temporal[active, _GB, dims] //= factor
        temporal[active, _DRAM, dims] *= factor

    order = np.array(_GB_ORDER[dataflow])
    codes = np.zeros((batch, 3, 7, 2), dtype=np.int64)
    for level in range(3):
        codes[:, level, 0, 0] = parallel_dim[:, level]
        codes[:, level, 0, 1] = spatial[rows, level, parallel_dim[:, level]]
        rest = np.broadcast_to(order, (batch, 7))
        keep = rest != parallel_dim[:, level, None]
        dims = rest[keep].reshape(batch, 6)
        codes[:, level, 1:, 0] = dims
        codes[:, level, 1:, 1] = np.take_along_axis(temporal[:, level], dims, axis=1)
    return codes


def layer_arrays(layers):
    """Loop bounds (L, 7), strides (L,) and types (L,) of template ``Layer`` objects."""
    return (np.array([layer.loop_bounds() for layer in layers], dtype=np.int64),
            np.array([layer.stride for layer in layers], dtype=np.int64),
            np.array([int(layer.type) for layer in layers], dtype=np.intp))


class TemplateHardwareSpace(HardwareGrid):
    """The template's 17 x 17 x 5 x 3 grid (see the module docstring); its cost units are the layers."""

    name = "template"
    compute_parameters = ("pe_x", "pe_y")
    costs_add_up_over_units = True

    def __init__(self, *, number_format=NUMBER_FORMAT):
        super().__init__()
        self.number_format = number_format
        sample = TemplateHardware(pe_x=8, pe_y=8, rf_words=4, dataflow="WS", number_format=number_format)
        self.constants = {name: getattr(sample, name) for name in
                          ("gb_kib", "gb_words", "gb_words_per_cycle", "dram_words_per_cycle", "word_bits")}

    @property
    def parameters(self):
        return (("pe_x", PE_VALUES), ("pe_y", PE_VALUES), ("rf_words", RF_VALUES), ("dataflow", DATAFLOWS))

    def hardware(self, point):
        """The ``TemplateHardware`` of one point."""
        return TemplateHardware(**self.point_values(point), number_format=self.number_format)

    def mapping_codes(self, cases, points):
        """The heuristic mappings (N, 3, 7, 2) of layer ``i`` of ``cases`` (``layer_arrays``) on
        ``points[i]``."""
        bounds, stride, layer_type = cases
        points = np.asarray(points)
        codes = np.zeros((len(points), 3, 7, 2), dtype=np.int64)
        for index, dataflow in enumerate(DATAFLOWS):
            chosen = points[:, 3] == index
            if chosen.any():
                codes[chosen] = heuristic_codes(
                    bounds[chosen], stride[chosen], layer_type[chosen],
                    np.array(PE_VALUES)[points[chosen, 0]], np.array(PE_VALUES)[points[chosen, 1]],
                    np.array(RF_VALUES)[points[chosen, 2]], dataflow, self.constants["gb_words"])
        return codes

    def case_costs(self, cases, points):
        """Latency (cycles) and energy (pJ) of layer ``i`` of ``cases`` (``layer_arrays``) on
        ``points[i]``: two (N,) arrays."""
        _, stride, layer_type = cases
        points = np.asarray(points)
        count = len(points)
        pe_x = np.array(PE_VALUES, dtype=np.float64)[points[:, 0]]
        pe_y = np.array(PE_VALUES, dtype=np.float64)[points[:, 1]]
        rf_words = np.array(RF_VALUES, dtype=np.float64)[points[:, 2]]

        def column(value):
            return np.full(count, float(value))

        batch = CaseBatch(
            codes=self.mapping_codes(cases, points), layer_type=layer_type, stride=stride.astype(np.float64),
            pes=pe_x * pe_y, rf_words=rf_words, gb_words=column(self.constants["gb_words"]),
            gb_kib=column(self.constants["gb_kib"]),
            gb_words_per_cycle=column(self.constants["gb_words_per_cycle"]),
            dram_words_per_cycle=column(self.constants["dram_words_per_cycle"]),
            word_bits=column(self.constants["word_bits"]),
            mac_pj=column(energy_table.mac_pj(self.number_format)),
            mac_um2=column(energy_table.mac_um2(self.number_format)))
        costs = evaluate_batch(batch)
        return costs["latency_cycles"], costs["energy_pj"]

    def accelerator_build(self, point):
        """How an answer found on this space is built on the DQN accelerator: its default configuration with the
        compiler's split (``(None, "auto")``: the template's points are no configurations of it)."""
        return None, "auto"

    # ---- cost units: the layers ---------------------------------------------------------------

    def cost_units(self, layers):
        """A network's ``models.dqn.network`` layers as template ``Layer`` objects, names dropped."""
        return tuple(from_network_layer(layer, name="") for layer in layers)

    def unit_table(self, layers, *, chunk=16):
        """Latency (ms) and energy (mJ) of each template ``Layer`` on every point: ``{"latency_ms", "energy_mj"}``,
        (L, points) arrays."""
        points = self.all_points()
        latency = np.empty((len(layers), len(points)))
        energy = np.empty((len(layers), len(points)))
        arrays = layer_arrays(layers)
        for start in range(0, len(layers), chunk):
            block = slice(start, min(start + chunk, len(layers)))
            repeats = block.stop - block.start
            cases = tuple(np.repeat(array[block], len(points), axis=0) for array in arrays)
            cycles, picojoules = self.case_costs(cases, np.tile(points, (repeats, 1)))
            latency[block] = cycles.reshape(repeats, -1) / (CLOCK_MHZ * 1e3)
            energy[block] = picojoules.reshape(repeats, -1) * 1e-9
        return {"latency_ms": latency, "energy_mj": energy}

    def combine(self, rows, points):
        """A network's latency and energy are its layers' sums; the area is the point's (every point fits)."""
        latency, energy = rows["latency_ms"].sum(axis=-2), rows["energy_mj"].sum(axis=-2)
        return np.stack(np.broadcast_arrays(latency, energy, self.area()[points]), axis=-1)

    def unit_latency_energy(self, columns, last):
        """(units, points, 2) the latency ms and energy mJ each unit of ``columns`` ({column: (units, points)})
        adds to a network: its layer's, wherever it stands (``last`` is not read)."""
        return np.stack([columns["latency_ms"], columns["energy_mj"]], axis=-1)

    def area(self):
        """Area of every point (mm^2): PEs x (MAC + RF) + GB, as the cost model composes it."""
        points = self.all_points()
        pes = np.array(PE_VALUES)[points[:, 0]] * np.array(PE_VALUES)[points[:, 1]]
        rf_words = np.array(RF_VALUES)[points[:, 2]]
        bits = self.constants["word_bits"]
        area_um2 = (pes * (energy_table.mac_um2(self.number_format)
                           + rf_words * energy_table.register_file_um2_per_word(bits))
                    + self.constants["gb_kib"] * energy_table.sram_um2_per_kib())
        return area_um2 * 1e-6

    # ---- the labelling sweep: every distinct layer on every point, TASK_LAYERS layers a Dask task ---------------

    @property
    def label_task(self):
        """The sweep's task, :func:`label_layers` (module-level, so that a Dask worker imports it)."""
        return label_layers

    def label_cases(self, layers):
        """The sweep's cases (JSON): the number format and a chunk of ``layers`` (``Layer.to_dict``) each."""
        return [{"space": "template", "number_format": self.number_format,
                 "layers": [layer.to_dict() for layer in layers[start:start + TASK_LAYERS]]}
                for start in range(0, len(layers), TASK_LAYERS)]

    def label_columns(self, layers, cases, results):
        """``{"latency_ms", "energy_mj"}`` (layers, points) of the cases' results, in case order."""
        return {name: np.concatenate([_decode(result[name]).reshape(-1, len(self)) for result in results])
                for name in ("latency_ms", "energy_mj")}


def label_layers(case):
    """Sweep task: latency (ms) and energy (mJ) of ``case["layers"]`` on every template point, as base64 float64
    arrays of shape (layers, points)."""
    space = TemplateHardwareSpace(number_format=case["number_format"])
    table = space.unit_table([Layer.from_dict(layer) for layer in case["layers"]])
    return {name: _encode(values) for name, values in table.items()}


def _encode(array):
    return base64.b64encode(np.ascontiguousarray(array, dtype="<f8").tobytes()).decode("ascii")


def _decode(text):
    return np.frombuffer(base64.b64decode(text), dtype="<f8")
