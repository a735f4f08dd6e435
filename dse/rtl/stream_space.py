"""The mapping space of the DQN accelerator with its weights in external memory (``DqnConfig(external_weights=True)``,
``models.dqn.weight_stream``): what DCP and its baselines search on the DE1-SoC configuration.

With external weights every pass loads its own weight tile (its products' rows and its bias row) from the memory
into one half of the weight RAM while the pass before computes from the other half, so a mapping decides how many
bytes cross the memory port, in what pieces and against how much computation they overlap.  Per network layer a
:class:`LayerChoice` fixes, and each one compiles (``compile_streamed``) to descriptors and a load table the RTL runs:

* ``tile``: the output channels of a pass (the layer's channel tile, ``models.dqn.plan.layer_shapes`` with a dict
  ``tiling``): ``lanes * 2**i`` up to ``modules * lanes``.  Fewer channels per pass mean more passes and tiles, each
  loaded once;
* ``blocks``: the column blocks ``C`` of every pass (``C * lanes >= tile``): ``P = modules / C`` output positions
  per group.  A weight word holds a product's weights for every module, so ``P > 1`` repeats each weight ``P`` times
  in the tile (more bytes from memory) and computes ``P`` positions at once;
* ``segments`` (a convolution): the output positions cut into 1, 2 or 4 contiguous ranges of whole groups, one pass
  per range and channel tile, each loading its tile's weights again (a smaller first load, more bytes);
* ``order``: with several segments and tiles, the passes channel tile by channel tile (``"tiles"``: the loop over
  positions inside) or position range by position range (``"positions"``: the loop over channel tiles inside), i.e.
  which loop is outer; the same bytes, another overlap of loads with passes and of a layer's writes with the next
  layer's first reads;
* ``split`` (a single-position layer, i.e. a dense one): a K-split in ``S`` partial sums on ``S`` of the ``P``
  position slots (``models.dqn.plan.split_chunk``) and a reduction pass: the same weight bytes in fewer product
  cycles, one more pass.

Which tensor stays on chip is not a choice of this hardware: activations always do (two on-chip RAMs), weights
always stream.  The network-wide limits are the descriptor table (passes <= ``max_layers``), the load table (loads
<= ``weight_loads``) and the streaming rules of ``load_entries``: a choice that breaks one is *illegal*
(:meth:`StreamSpace.cost` returns None) and no searcher's answer.

**Cost** of a network mapping (:meth:`StreamSpace.cost`): latency = TOTAL_CYCLES of one run STARTed on cycle
``START_CYCLE`` with the memory fresh, by ``models.dqn.weight_stream.stream_counters`` (the exact cycle formula with
the memory model in it: the RTL's counters equal it); energy (pJ) = the RTL cost model's on-chip energy of the
passes (``dse.rtl.cost_model``: MACs, weight- and activation-RAM reads, writes, registers; 45 nm table) + every
weight word loaded written once into the weight RAM + every byte read from external memory at the table's
off-chip energy per bit (its HBM figure: the table has no SDRAM entry; the bytes, not the figure, are what the
mappings change).
"""

from dataclasses import dataclass
from functools import cached_property
from itertools import product

import numpy as np

from nnaccel.dse.rtl import cost_model as rtl_cost
from nnaccel.dse.shared import energy_table
from nnaccel.hw.dqn.config import DE1_SOC_CONFIG
from nnaccel.models.dqn.mapping import DqnMapping, LayerMapping, Segment
from nnaccel.models.dqn.network import dqn_layers
from nnaccel.models.dqn.plan import check_segment, compile_network, default_mapping, layer_shapes
from nnaccel.models.dqn.weight_stream import on_chip_twin, stream_counters, stream_plan
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, sustained_read_bytes_per_cycle
from nnaccel.models.shared.tile_port import TilePortModel

__all__ = ["LayerChoice", "StreamSpace", "SEGMENT_COUNTS", "ORDERS", "START_CYCLE", "zero_weights"]

SEGMENT_COUNTS = (1, 2, 4)
ORDERS = ("tiles", "positions")
START_CYCLE = 100           # the cycle the sequencer takes START in the cost model (the memory fresh from cycle 0)


@dataclass(frozen=True)
class LayerChoice:
    """One layer's mapping on the external-weight hardware (see the module docstring)."""

    tile: int
    blocks: int
    segments: int = 1
    order: str = "tiles"
    split: int = 1

    def describe(self):
        parts = [f"tile {self.tile}", f"C{self.blocks}"]
        if self.segments > 1:
            parts.append(f"{self.segments} position ranges, {self.order} outer")
        if self.split > 1:
            parts.append(f"S{self.split}")
        return " ".join(parts)

    def to_list(self):
        return [self.tile, self.blocks, self.segments, self.order, self.split]


def zero_weights(layers):
    """All-zero weights of ``layers`` (the costs do not depend on the values)."""
    return [(np.zeros(layer.weight_shape, np.float32), np.zeros(layer.weight_shape[-1], np.float32))
            for layer in layers]


def _ranges(positions, count, positions_per_group):
    """``count`` contiguous ranges of whole groups over ``positions`` (as even as groups allow): (first, count)s."""
    groups = -(-positions // positions_per_group)
    if count > groups:
        return None
    cuts = [min(positions, round(groups * index / count) * positions_per_group) for index in range(count + 1)]
    return [(first, end - first) for first, end in zip(cuts, cuts[1:])]


class StreamSpace:
    """The external-weight mapping space of ``layers`` (default: the thesis network; any network the external-weight
    compiler runs, e.g. an imported MLPerf Tiny model) on ``config`` (default ``DE1_SOC_CONFIG``) with the memory
    ``timing`` (a ``models.shared.sdram.SdramTiming``); ``name``: the network's, for reports.  Each layer's first
    choice is the compiler's own mapping of it (``models.dqn.plan.default_mapping``: its K-split where the compiler
    takes one), so the all-default mapping is the plan ``compile_streamed`` gives."""

    def __init__(self, config=DE1_SOC_CONFIG, layers=None, *, timing=DE1_SOC_SDRAM, name="the thesis network"):
        if not config.external_weights:
            raise ValueError(f"{config.module_name}: the stream space needs a configuration with external_weights=True")
        self.config, self.timing, self.name = config, timing, name
        self.layers = tuple(dqn_layers() if layers is None else layers)
        self.weights = zero_weights(self.layers)
        self.twin = on_chip_twin(config)
        self.energy_constants = rtl_cost.hardware_costs(config)

    # ---- the choices ---------------------------------------------------------------------------------------

    def _layer_mapping(self, shape, choice):
        """The ``LayerMapping`` of ``choice`` for ``shape`` (tiled as ``choice.tile``), or None if it cannot be."""
        positions_per_group = self.config.modules // choice.blocks
        ranges = _ranges(shape.positions, choice.segments, positions_per_group)
        if ranges is None or (choice.split > 1 and shape.positions != 1):
            return None
        cells = [(tile, first, count) for tile in range(shape.tiles) for first, count in ranges]
        if choice.order == "positions":
            cells.sort(key=lambda cell: (cell[1], cell[0]))
        segments = tuple(Segment(first, count, choice.blocks, choice.split, tile) for tile, first, count in cells)
        try:
            for segment in segments:
                check_segment(self.twin, shape, segment)
        except ValueError:
            return None
        return LayerMapping(segments)

    def _shape(self, index, tile):
        return layer_shapes(self.twin, self.layers, tiling={self.layers[index].name: tile})[index]

    def choice_shape(self, index, choice):
        """The ``LayerShape`` of layer ``index`` under ``choice`` (its channel tiles: the choice's, or the
        compiler's where they are no choice)."""
        return self._shape(index, None if self.layers[index].name in self._compiler_tiled else choice.tile)

    @cached_property
    def _compiler_tiled(self):
        """The names of the layers whose channel tiles are the compiler's (adds, grouped convolutions, max pools)."""
        return {shape.name for shape in layer_shapes(self.twin, self.layers)
                if shape.add or shape.groups > 1 or shape.maximum}

    @cached_property
    def _compiler_mappings(self):
        """The compiler's ``LayerMapping`` of every layer at its widest tiles."""
        return default_mapping(self.twin, layer_shapes(self.twin, self.layers)).layers

    @cached_property
    def choices(self):
        """Per layer the list of its legal :class:`LayerChoice` s (each compiles on its own; the network-wide
        limits are checked by :meth:`cost`), the compiler's default first."""
        lanes, modules = self.config.lanes, self.config.modules
        per_layer = []
        for index, layer in enumerate(self.layers):
            widest = self._shape(index, None)
            if layer.name in self._compiler_tiled:
                per_layer.append([self.default_choice(index)])
                continue
            tiles = sorted({self._tile(widest, lanes << power) for power in range(modules.bit_length())},
                           reverse=True)
            legal = []
            for tile, blocks, segments, order, split in product(
                    tiles, [1 << power for power in range(modules.bit_length())], SEGMENT_COUNTS, ORDERS,
                    range(1, modules + 1)):
                if (segments == 1 or self._shape(index, tile).tiles == 1) and order != "tiles":
                    continue                    # the order matters only with several ranges and tiles
                choice = LayerChoice(tile, blocks, segments, order, split)
                if self._layer_mapping(self._shape(index, tile), choice) is not None:
                    legal.append(choice)
            default = self.default_choice(index)
            per_layer.append([default] + [choice for choice in legal if choice != default])
        return per_layer

    def _tile(self, shape, size):
        """``size`` as a tile of ``shape``: at most its widest, and no wider than its channels in whole lanes (a
        wider tile is the same single tile)."""
        return min(size, shape.tile_size, -(-shape.out_channels // self.config.lanes) * self.config.lanes)

    def default_choice(self, index):
        """The compiler's default of layer ``index``: the widest tile, its column blocks (the fewest that keep a
        group in two output rows) and K-split, one range; it compiles to the compiler's own mapping of the layer."""
        return self._default_choices[index]

    @cached_property
    def _default_choices(self):
        defaults = []
        for index, mapping in enumerate(self._compiler_mappings):
            shape, first = self._shape(index, None), mapping.segments[0]
            defaults.append(LayerChoice(self._tile(shape, shape.tile_size), first.column_blocks, split=first.split))
        return defaults

    def size(self):
        """``(choices per layer, choices of the network)`` (the network's before its shared limits)."""
        counts = [len(choices) for choices in self.choices]
        return counts, int(np.prod(counts, dtype=object))

    # ---- compiling and costing -----------------------------------------------------------------------------

    def compile(self, choices, weights=None):
        """``choices`` (one :class:`LayerChoice` per layer) compiled: ``(WeightStream, shapes, the plan compiled for
        the on-chip twin)`` (the golden model runs the plan); a ValueError names the limit a choice breaks."""
        tiling = {layer.name: choice.tile for layer, choice in zip(self.layers, choices)
                  if layer.name not in self._compiler_tiled}
        shapes = layer_shapes(self.twin, self.layers, tiling=tiling)
        mappings = []
        for index, (shape, choice) in enumerate(zip(shapes, choices)):
            default = choice == self.default_choice(index)
            mapping = self._compiler_mappings[index] if default else self._layer_mapping(shape, choice)
            if mapping is None:
                raise ValueError(f"{shape.name}: {choice.describe()} does not map onto the hardware")
            mappings.append(mapping)
        mapping = DqnMapping(tuple(mappings))
        plan = compile_network(self.twin, self.layers, self.weights if weights is None else weights, mapping=mapping,
                               tiling=tiling)
        return stream_plan(self.config, plan), shapes, plan

    def latency(self, stream, start=START_CYCLE, port=None):
        """The run's ``StreamCounters`` (a fresh memory unless ``port`` is given)."""
        port = port or TilePortModel(timing=self.timing, port_bits=self.config.external_bus_bits)
        return stream_counters(stream, start, port)

    def energy(self, stream, shapes):
        """Energy (pJ) of one run of ``stream``: on chip (the RTL cost model) + weight-RAM writes + memory reads."""
        config = self.config
        on_chip = rtl_cost.evaluate_batch(rtl_cost.pack(zip([config] * len(shapes), stream.plan.mapping.layers,
                                                            shapes), area=False, one_run=True))["energy_pj"].sum()
        loaded = sum(load.words for load in stream.loads) * self.energy_constants["weight_read_pj"]
        memory = float(energy_table.dram_pj_per_word(8 * stream.weight_bytes))
        return float(on_chip + loaded + memory)

    def cost(self, choices, *, latency=True):
        """``{"latency": cycles, "energy": pJ, "bytes": weight bytes, "passes", "loads"}`` of a network mapping, or
        None if it breaks a limit; without ``latency`` (the SDRAM model's run, most of the time) no "latency"."""
        try:
            stream, shapes, _ = self.compile(choices)
        except ValueError:
            return None
        cost = {"energy": self.energy(stream, shapes), "bytes": stream.weight_bytes,
                "passes": len(stream.plan.layers), "loads": len(stream.loads)}
        return {"latency": self.latency(stream).total, **cost} if latency else cost

    def bandwidth_bound(self):
        """Cycles the memory needs for the default mapping's weight bytes at its sustained read rate (a latency no
        mapping of the same bytes goes below)."""
        stream, _, _ = self.compile(self.default())
        return stream.weight_bytes / sustained_read_bytes_per_cycle(self.timing, port_bits=self.config.external_bus_bits)

    def default(self):
        return [self.default_choice(index) for index in range(len(self.layers))]

    def describe(self, choices):
        return " | ".join(f"{layer.name}: {choice.describe()}" for layer, choice in zip(self.layers, choices))
