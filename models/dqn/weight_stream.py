"""External weights for the DQN accelerator (``DqnConfig(external_weights=True)``): weight tiles in external
memory, the tile table, and every counter of a run with the memory model in it.

A *tile* is one pass's weight words (its products' rows, its bias row last: ``LayerPlan.weight_words``), laid out
in external memory in the order the passes use them (tile ``j`` at byte ``tile_addresses[j]``, contiguous, each
weight word as its elements little-endian, element 0 first).  The accelerator
(:class:`hw.dqn.streamed_weights.StreamedWeights`) loads tile ``j`` into half ``j mod 2`` of its weight RAM (from
word 0, so every descriptor's ``weight_base`` is 0) while pass ``j - 1`` computes from the other half, and pass
``j`` starts its products once its tile is loaded.  A pass's weights must fit a half (``weight_half_depth``
words): a pass that does not is refused, naming it (cut it: narrower output-channel tiles, a K-split).

:func:`stream_counters` times a run cycle for cycle, the hardware's rules (the docstrings of
:class:`~hw.dqn.streamed_weights.StreamedWeights` and :class:`~hw.dqn.sequencer.LayerSequencer`), from the cycle
``T`` the sequencer takes START:

* pass 0 starts on ``T + 1``; pass ``j + 1`` on the cycle after pass ``j``'s last product ``r_j``;
* tile 0's load is taken by the tile port on ``T + 2``; tile ``j``'s on the first cycle ``>= F_{j-1} + 1`` (the
  port is free), ``>= p_{j-1} + 2`` (its table entry is read) and ``>= r_{j-2} + 1`` (its half is released); its
  ``finished`` cycle ``F_j`` is :meth:`models.shared.tile_port.TilePortModel.load`'s, on the SDRAM model;
* pass ``j``'s first product comes no earlier than ``F_j + 2`` (``weight_ready`` of
  :func:`models.dqn.timing.pass_counters`: the cycles past its set-up are stall cycles); the rest of its counters
  are the on-chip machine's.
"""

from dataclasses import dataclass, replace

import numpy as np

from nnaccel.hw.dqn.descriptor import encode_descriptor
from nnaccel.hw.dqn.matrix_module import matrix_module_latency
from nnaccel.hw.dqn.streamed_weights import BUS_BITS, EXTERNAL_ADDRESS_BITS, tile_entry_layout
from nnaccel.models.dqn.plan import COUNTERS, compile_network
from nnaccel.models.dqn.timing import IMAGE, PACKED, POSITION_MAJOR, ROW_WORDS, pass_counters

__all__ = ["WeightStream", "compile_streamed", "stream_counters", "StreamCounters", "encode_tile_entry"]


@dataclass(frozen=True)
class WeightStream:
    """A network compiled for external weights: the :class:`~models.dqn.plan.Plan` (descriptors with
    ``weight_base`` 0), the external memory's image (uint8, from byte 0), each tile's byte address and words, and
    the tile table the host writes (one int per pass)."""

    plan: object
    image: np.ndarray
    tile_addresses: tuple
    tile_words: tuple

    @property
    def table(self):
        return [encode_tile_entry(self.plan.config, address, words)
                for address, words in zip(self.tile_addresses, self.tile_words)]

    @property
    def weight_bytes(self):
        """Bytes loaded from external memory per run: every tile once."""
        return int(self.image.size)


def encode_tile_entry(config, address, words):
    """A tile table entry (:func:`hw.dqn.streamed_weights.tile_entry_layout`) as an int."""
    layout = tile_entry_layout(config)
    if not 0 <= address < 1 << EXTERNAL_ADDRESS_BITS or address % (BUS_BITS // 8):
        raise ValueError(f"a tile's address must be a bus-word address below 2**{EXTERNAL_ADDRESS_BITS}, "
                         f"not {address!r}")
    if not 0 < words <= config.weight_half_depth:
        raise ValueError(f"a tile holds 1 .. {config.weight_half_depth} words, not {words!r}")
    return address << layout["address"].offset | words << layout["words"].offset


def compile_streamed(config, layers, weights, **options):
    """Compile ``layers`` for ``config`` (``external_weights=True``) as :func:`models.dqn.plan.compile_network`
    does (the same ``options``), then cut the weights into tiles: a :class:`WeightStream`."""
    if not config.external_weights:
        raise ValueError(f"{config.module_name}: compile_streamed needs a configuration with external_weights=True")
    # The on-chip compiler lays every pass's weights out in one RAM; here each pass has a half of its own.
    on_chip = replace(config, external_weights=False, weight_depth=1 << 20)
    plan = compile_network(on_chip, layers, weights, **options)
    passes, chunks, addresses, words, address = [], [], [], [], 0
    dtype = {32: "<u4", 16: "<u2"}[config.element_bits]
    for layer in plan.layers:
        count = layer.weight_words.shape[0]
        if count > config.weight_half_depth:
            raise ValueError(f"{layer.name}: its weights are {count} words, a half of the weight RAM holds "
                             f"{config.weight_half_depth} (cut the pass: narrower channel tiles or a K-split)")
        descriptor = dict(layer.descriptor, weight_base=0)
        try:
            encoded = encode_descriptor(config, **descriptor)
        except ValueError as error:
            raise ValueError(f"{layer.name}: {error}") from None
        passes.append(replace(layer, descriptor=descriptor, encoded=encoded))
        chunk = np.ascontiguousarray(layer.weight_words.astype(dtype)).view(np.uint8).reshape(-1)
        chunks.append(chunk)
        addresses.append(address)
        words.append(count)
        address += chunk.size
    if address > 1 << EXTERNAL_ADDRESS_BITS:
        raise ValueError(f"the weights are {address} bytes, external memory {1 << EXTERNAL_ADDRESS_BITS}")
    streamed = replace(plan, config=config, layers=tuple(passes))
    return WeightStream(plan=streamed, image=np.concatenate(chunks), tile_addresses=tuple(addresses),
                        tile_words=tuple(words))


@dataclass(frozen=True)
class StreamCounters:
    """A run's counters: ``total`` (TOTAL_CYCLES), ``passes`` (per pass a dict of :data:`~models.dqn.plan.COUNTERS`),
    ``end`` (the cycle of the run's last counted cycle + 1, on the SDRAM model's clock), ``load_finished`` (each
    tile's ``finished`` cycle), ``bytes_read``."""

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


def _run_columns(config, plan):
    """The arguments of :func:`~models.dqn.timing.pass_counters` for ``plan``'s passes as one run, read from their
    descriptors (the RAM compare and the handoff bits as the sequencer sees them)."""
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
                handoff=column(lambda d: d["handoff"]))


def stream_counters(stream, start, port):
    """The counters of one run of ``stream`` (a :class:`WeightStream`) whose START the sequencer takes on cycle
    ``start``, with the external memory in the state ``port`` (a :class:`~models.shared.tile_port.TilePortModel`
    that has timed everything before: carried across runs): a :class:`StreamCounters`."""
    plan, config = stream.plan, stream.plan.config
    columns = _run_columns(config, plan)
    count = len(plan.layers)
    weight_ready = np.zeros(count, np.int64)
    word_beats = config.weight_word_bits // BUS_BITS
    read_before = port.bytes_read
    pass_start, last_products, taken, finished, counters = start + 1, [], [], [], []
    for index in range(count):
        earliest = start + 2 if index == 0 else max(finished[-1] + 1, taken[-1] + 2)
        if index >= 2:
            earliest = max(earliest, last_products[index - 2] + 1)
        taken.append(earliest)
        finished.append(port.load(earliest, stream.tile_addresses[index], stream.tile_words[index] * word_beats))
        weight_ready[index] = finished[-1] + 2 - pass_start
        timing = pass_counters(**columns, weight_ready=weight_ready)
        counters.append({name: int(timing[name][index]) for name in COUNTERS})
        last_products.append(pass_start + counters[-1]["cycles"] - 1)
        pass_start += counters[-1]["cycles"]
    return StreamCounters(total=sum(counter["cycles"] for counter in counters), passes=tuple(counters),
                          end=pass_start, load_finished=tuple(finished), bytes_read=port.bytes_read - read_before)
