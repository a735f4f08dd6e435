"""External weights for the DQN accelerator (``DqnConfig(external_weights=True)``): weight tiles in external
memory, the load table, and every counter of a run with the memory model in it.

A *tile* is one pass's weight words (its products' rows, its bias row last: ``LayerPlan.weight_words``), laid out
in external memory in the order the passes use them (tile ``j`` at byte ``tile_addresses[j]``, contiguous, each
weight word as its elements little-endian, element 0 first).  The accelerator
(:class:`hw.dqn.streamed_weights.StreamedWeights`) puts tile ``j`` into half ``j mod 2`` of its weight RAM while
pass ``j - 1`` computes from the other half, by the loads of its load table (:func:`load_entries`):

* a tile of at most ``weight_half_depth`` words is one load into words 0 .. of its half (``weight_base`` 0), and
  its pass starts its products once it is loaded (*whole*);
* a larger tile of a one-group pass (a dense layer's channel tile: its words are read once, in order) is *streamed*
  through its half as a ring of two slots of ``C = weight_half_depth / 2`` words: product ``k`` at word
  ``(weight_base + k) mod H``, the bias row at ``(weight_base + products) mod H``.  ``weight_base`` puts the
  bias in the slot the first load does not fill (:func:`ring_base`); loads: the bias row, the products up to the
  end of ``weight_base``'s slot, then a slot of ``C`` products at a time, each once the pass has read the words it
  overwrites (and at least its first product, which reads the bias).  The sequencer issues a product once its word
  is loaded.

:func:`stream_counters` times a run cycle for cycle, the hardware's rules (the docstrings of
:class:`~hw.dqn.streamed_weights.StreamedWeights` and :class:`~hw.dqn.sequencer.LayerSequencer`), from the cycle
``T`` the sequencer takes START: pass 0 starts on ``T + 1``, pass ``j + 1`` on the cycle after pass ``j``'s last
product ``r_j``; the loads in table order on one :class:`~models.shared.tile_port.TilePortModel` (each taken on the
first cycle the port is free, its entry read, its half free from ``r_{t-2} + 1``, and its ``after_reads`` read:
product ``m - 1`` issued on ``c`` counts from ``c + 1``); a pass's first product no earlier than ``F + 2`` after
the load that makes its first word available (``F``: that load's ``finished`` cycle), a later product of a
streamed pass no earlier than ``F + 1``; the rest is the on-chip machine's timing
(:func:`models.dqn.timing.pass_counters` with ``weight_ready`` and ``weight_last``).
"""

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from nnaccel.hw.dqn.descriptor import encode_descriptor
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.hw.dqn.streamed_weights import EXTERNAL_ADDRESS_BITS, READ_BITS, load_entry_layout
from nnaccel.models.dqn.plan import COUNTERS, compile_network
from nnaccel.models.dqn.timing import IMAGE, PACKED, POSITION_MAJOR, ROW_WORDS, pass_counters
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM
from nnaccel.models.shared.tile_port import TilePortModel

__all__ = ["WeightStream", "Load", "compile_streamed", "on_chip_twin", "MODEL_ROW_BITS", "model_base", "stream_plan",
           "load_entries", "ring_base", "encode_load", "stream_counters", "StreamCounters", "run_timing_arguments",
           "formula_mismatches"]


class Load(NamedTuple):
    """One entry of the load table (:func:`hw.dqn.streamed_weights.load_entry_layout`)."""
    tile: int
    address: int
    words: int
    ram_base: int
    after_reads: int = 0
    available: int = 0
    last: bool = True
    whole: bool = True


@dataclass(frozen=True)
class WeightStream:
    """A network compiled for external weights: the :class:`~models.dqn.plan.Plan` (descriptors with the
    ``weight_base`` of each pass's half), the external memory's image (uint8, from byte 0), each tile's byte
    address and words, and the load table (:class:`Load` s, in the order the loader takes them)."""

    plan: object
    image: np.ndarray
    tile_addresses: tuple
    tile_words: tuple
    loads: tuple

    @property
    def config(self):
        return self.plan.config

    @property
    def table(self):
        """The load table as the host writes it (one int per entry)."""
        return [encode_load(self.plan.config, load) for load in self.loads]

    @property
    def streamed(self):
        """Names of the passes whose tiles stream through their half."""
        tiles = {load.tile for load in self.loads if not load.whole}
        return [layer.name for index, layer in enumerate(self.plan.layers) if index in tiles]

    @property
    def weight_bytes(self):
        """Bytes loaded from external memory per run: every tile once."""
        return int(self.image.size)


def encode_load(config, load):
    """A load table entry as an int."""
    layout = load_entry_layout(config)
    if not 0 <= load.address < 1 << EXTERNAL_ADDRESS_BITS or load.address % (config.external_bus_bits // 8):
        raise ValueError(f"a load's address must be a bus-word address below 2**{EXTERNAL_ADDRESS_BITS}, "
                         f"not {load.address!r}")
    if not 0 < load.words <= config.weight_half_depth:
        raise ValueError(f"a load moves 1 .. {config.weight_half_depth} words, not {load.words!r}")
    fields = dict(address=load.address, words=load.words, ram_base=load.ram_base, after_reads=load.after_reads,
                  available=load.available, last=int(load.last), whole=int(load.whole))
    return sum(value << layout[name].offset for name, value in fields.items())


def ring_base(products, half_depth):
    """``weight_base`` of a streamed pass of ``products`` products: the first ring slot's word that leaves the bias
    row (word ``(weight_base + products) mod H``) outside the first load, with that load as long as possible; None
    if no word does (``products`` a multiple of ``H``: the bias row and product 0 would share a word)."""
    slot = half_depth // 2
    offset = products % half_depth
    if offset == 0:
        return None
    return 0 if offset >= slot else slot - offset


def load_entries(config, tile, address, layer):
    """The loads of ``layer``'s tile (number ``tile``, at byte ``address``), and its descriptor's ``weight_base``."""
    half, word_bytes = config.weight_half_depth, config.weight_word_bits // 8
    words = layer.weight_words.shape[0]
    if words <= half:
        return [Load(tile, address, words, 0)], 0
    products = layer.products
    if layer.groups != 1 or layer.reduce:
        raise ValueError(f"{layer.name}: its weights are {words} words, a half of the weight RAM holds {half}, and "
                         f"only a pass of one group streams its weights (it has {layer.groups})")
    base = ring_base(products, half)
    if base is None:
        raise ValueError(f"{layer.name}: {products} products, a multiple of the {half}-word half: its bias row and "
                         f"product 0 would share a word of the ring")
    if products >= 1 << READ_BITS:
        raise ValueError(f"{layer.name}: {products} products, a streamed pass counts at most {(1 << READ_BITS) - 1}")
    slot = half // 2
    first = slot - base % slot
    loads = [Load(tile, address + products * word_bytes, 1, (base + products) % half, last=False, whole=False),
             Load(tile, address, first, base, available=first, last=False, whole=False)]
    start = first
    while start < products:
        end = min(start + slot, products)
        loads.append(Load(tile, address + start * word_bytes, end - start, (base + start) % half,
                          after_reads=max(1, end - half), available=end, last=end == products, whole=False))
        start = end
    return loads, base


def on_chip_twin(config):
    """The configuration :func:`models.dqn.plan.compile_network` compiles for before :func:`stream_plan`: ``config``
    with its weights on chip in a RAM deep enough for any network (each pass's weights are then a tile)."""
    if not config.external_weights:
        raise ValueError(f"{config.module_name}: compile_streamed needs a configuration with external_weights=True")
    return replace(config, external_weights=False, weight_depth=1 << 20)


MODEL_ROW_BITS = 512        # an imported model's narrowest rows: a descriptor fits the host port's word


def model_base(config):
    """The base an imported model is sized from on an external-weight ``config`` (``run mlperf-tiny --board``,
    ``dse stream --model``; :func:`models.dqn.sizing.fitting_config` grows its rows, activation RAMs and descriptor
    table to the smallest that hold the model): :func:`on_chip_twin` of ``config`` with rows of
    :data:`MODEL_ROW_BITS` (16 binary32 or 32 binary16 elements) and the descriptor table in block RAM."""
    twin = on_chip_twin(config)
    return replace(twin, row_elements=MODEL_ROW_BITS // twin.fmt.width, activation_depth=2, max_layers=1,
                   descriptor_ram=True)


def compile_streamed(config, layers, weights, **options):
    """Compile ``layers`` for ``config`` (``external_weights=True``) as :func:`models.dqn.plan.compile_network`
    does (the same ``options``), then cut the weights into tiles and loads: a :class:`WeightStream`."""
    return stream_plan(config, compile_network(on_chip_twin(config), layers, weights, **options))


def stream_plan(config, plan):
    """``plan`` (compiled for :func:`on_chip_twin` of ``config``) with its weights in external memory: a
    :class:`WeightStream`."""
    if plan.config != on_chip_twin(config):
        raise ValueError(f"the plan was compiled for {plan.config.module_name}, not for "
                         f"{on_chip_twin(config).module_name}")
    passes, chunks, addresses, words, loads, address = [], [], [], [], [], 0
    dtype = {32: "<u4", 16: "<u2"}[config.element_bits]
    for index, layer in enumerate(plan.layers):
        tile_loads, base = load_entries(config, index, address, layer)
        descriptor = dict(layer.descriptor, weight_base=base)
        try:
            encoded = encode_descriptor(config, **descriptor)
        except ValueError as error:
            raise ValueError(f"{layer.name}: {error}") from None
        passes.append(replace(layer, descriptor=descriptor, encoded=encoded))
        chunk = np.ascontiguousarray(layer.weight_words.astype(dtype)).view(np.uint8).reshape(-1)
        chunks.append(chunk)
        addresses.append(address)
        words.append(layer.weight_words.shape[0])
        loads += tile_loads
        address += chunk.size
    if address > 1 << EXTERNAL_ADDRESS_BITS:
        raise ValueError(f"the weights are {address} bytes, external memory {1 << EXTERNAL_ADDRESS_BITS}")
    if len(loads) > config.weight_loads:
        raise ValueError(f"the weights need {len(loads)} loads, the load table holds {config.weight_loads}")
    streamed = replace(plan, config=config, layers=tuple(passes))
    return WeightStream(plan=streamed, image=np.concatenate(chunks), tile_addresses=tuple(addresses),
                        tile_words=tuple(words), loads=tuple(loads))


@dataclass(frozen=True)
class StreamCounters:
    """A run's counters: ``total`` (TOTAL_CYCLES), ``passes`` (per pass a dict of :data:`~models.dqn.plan.COUNTERS`),
    ``end`` (the cycle after the run's last counted cycle, on the memory model's clock), ``load_finished`` (each
    load's ``finished`` cycle), ``bytes_read``."""

    total: int
    passes: tuple
    end: int
    load_finished: tuple
    bytes_read: int


def _layout(descriptor):
    if not descriptor["packed_output"]:
        return IMAGE
    if descriptor["position_major"]:
        return ROW_WORDS if descriptor["reduce"] else POSITION_MAJOR
    return PACKED


def run_timing_arguments(config, plan):
    """The arguments of :func:`~models.dqn.timing.pass_counters` for ``plan``'s passes as one run, read from their
    descriptors (the RAM compare, the handoff bits and the start delays as the sequencer sees them)."""
    descriptors = [layer.descriptor for layer in plan.layers]

    def column(read):
        return np.array([read(descriptor) for descriptor in descriptors], dtype=np.int64)

    return dict(positions_per_group=config.modules >> column(lambda d: d["column_blocks_log2"]),
                count=column(lambda d: d["positions"] - d["first_position"]), products=column(lambda d: d["products"]),
                latency=matrix_module_latency(config.multiplier_latency, config.adder_latency),
                out_channels=column(lambda d: d["out_channels"]), lanes=config.lanes, layout=column(_layout),
                reduce=column(lambda d: d["reduce"]), first_column=column(lambda d: d["first_ox"]),
                out_width=column(lambda d: d["out_width"]), run=0,
                reads_previous=np.array([index == 0 or descriptor["in_ram"] == descriptors[index - 1]["out_ram"]
                                         for index, descriptor in enumerate(descriptors)], dtype=np.int64),
                handoff=column(lambda d: d["handoff"]), start_delay=column(lambda d: d["start_delay"]))


def _set_ups(arguments):
    """Each pass's set-up on the on-chip machine (its first product, counted from its first cycle): the run with
    its last pass repeated, so that every pass's drain counter is its wait for the previous pass's writes."""
    repeated = {name: np.append(value, value[-1]) if isinstance(value, np.ndarray) else value
                for name, value in arguments.items()}
    counters = pass_counters(**repeated)
    # No pass of the repeated run drains at its end, so its cycles are its set-up, products and stalls.
    set_ups = counters["cycles"] - counters["product_cycles"] - counters["stall_cycles"]
    return [int(set_up) for set_up in set_ups[:-1]]


def _product_cycle(segments, product):
    """The issue cycle of ``product`` of a streamed pass: ``segments`` are (first product, its cycle) of runs of
    consecutive products, in order."""
    first, cycle = next((first, cycle) for first, cycle in reversed(segments) if first <= product)
    return cycle + product - first


def stream_counters(stream, start, port):
    """The counters of one run of ``stream`` (a :class:`WeightStream`) whose START the sequencer takes on cycle
    ``start``, with the external memory in the state ``port`` (a :class:`~models.shared.tile_port.TilePortModel`
    that has timed everything before: carried across runs): a :class:`StreamCounters`."""
    plan, config = stream.plan, stream.plan.config
    arguments = run_timing_arguments(config, plan)
    set_ups = _set_ups(arguments)
    count = len(plan.layers)
    weight_ready, weight_last = np.zeros(count, np.int64), np.zeros(count, np.int64)
    word_beats = config.weight_word_bits // config.external_bus_bits
    read_before = port.bytes_read
    pass_start, last_products, finished, counters = start + 1, [], [], []
    taken = None
    for index in range(count):
        segments, loaded = [], 0                   # a streamed pass's runs of products, words available
        tile_loads = [load for load in stream.loads if load.tile == index]
        for load in tile_loads:
            earliest = start + 2 if taken is None else max(finished[-1] + 1, taken + 2)
            if index >= 2:                         # its half: pass index - 2 released it
                earliest = max(earliest, last_products[index - 2] + 1)
            if load.after_reads:                   # product after_reads - 1 read (the pass runs)
                earliest = max(earliest, _product_cycle(segments, load.after_reads - 1) + 1)
            taken = earliest
            finished.append(port.load(taken, load.address, load.words * word_beats))
            if load.whole or (load.available and not segments):
                weight_ready[index] = finished[-1] + 2 - pass_start
                segments.append((0, pass_start + max(set_ups[index], weight_ready[index])))
            elif load.available:
                segments.append((loaded, max(_product_cycle(segments, loaded - 1) + 1, finished[-1] + 1)))
            loaded = load.available
        if not tile_loads[-1].whole:               # streamed: its last product waits for its word
            weight_last[index] = _product_cycle(segments, plan.layers[index].products - 1) - pass_start
        timing = pass_counters(**arguments, weight_ready=weight_ready, weight_last=weight_last)
        counters.append({name: int(timing[name][index]) for name in COUNTERS})
        last_products.append(pass_start + counters[-1]["cycles"] - 1)
        pass_start += counters[-1]["cycles"]
    return StreamCounters(total=sum(counter["cycles"] for counter in counters), passes=tuple(counters),
                          end=pass_start, load_finished=tuple(finished), bytes_read=port.bytes_read - read_before)


def formula_mismatches(stream, run, timing=DE1_SOC_SDRAM):
    """Every run's TOTAL_CYCLES and counters against :func:`stream_counters` (one model of the memory of ``timing``
    across the runs): ``(mismatch lines, the first run's StreamCounters)``."""
    port, lines, first = TilePortModel(timing=timing, port_bits=stream.config.external_bus_bits), [], None
    for index, start in enumerate(run.start_cycles):
        predicted = stream_counters(stream, int(start), port)
        first = first or predicted
        if int(run.total_cycles[index]) != predicted.total:
            lines.append(f"input {index}: TOTAL_CYCLES {int(run.total_cycles[index])}, formula {predicted.total}")
        for layer, measured, expected in zip(stream.plan.layers, run.layer_counters[index], predicted.passes):
            for name, value in zip(COUNTERS, measured):
                if int(value) != expected[name]:
                    lines.append(f"input {index}: {layer.name} {name} {int(value)}, formula {expected[name]}")
    return lines, first
