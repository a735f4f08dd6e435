"""The CapsNet accelerator on the DE1-SoC's SDRAM: step 2 streamed through double-buffered tiles, routing on chip."""

import enum

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from hw.capsnet.config import SHIFT_BITS
from hw.capsnet.descriptor import LayerKind
from hw.capsnet.matvec_engine import CapsNetMatvecEngine
from hw.capsnet.routing_engine import CapsNetRoutingEngine, digit_caps_layout
from hw.capsnet.stream_config import BUS_BYTES, CapsNetStreamConfig
from hw.shared.dual_port_buffer import DualPortBuffer
from hw.shared.host_control import HostControl, MemoryTarget
from hw.shared.host_port import HostPortAccelerator
from hw.shared.tile_port import TilePort

__all__ = ["CapsNetStreamingAccelerator", "StreamMemory", "StreamStep", "stream_descriptor_layout",
           "routing_word_layout"]


class StreamMemory(MemoryTarget):
    """The streaming accelerator's memory on the host port: the routing result, one word per class."""
    ROUTING = enum.auto()


class StreamStep(enum.IntEnum):
    """The steps the per-layer counters of :class:`~hw.shared.host_control.HostControl` count."""
    PREDICTIONS = 0         # from START to the end of the last tile's matrix-vector products
    ROUTING = 1             # from then to the end of the run (routing finish, last prediction stores)


def stream_descriptor_layout(config):
    """The run's parameters (descriptor 0): SDRAM byte addresses of the PrimaryCaps output (rows of ``row_bytes``,
    channel-major), the matrix-vector weights (word ``(i*J + j)*N + k``, ``digit_dims`` bytes) and the predictions
    (word ``i*J + j``); the number of capsule types; the matrix-vector shift and the routing shift
    (``squash_shift + COUPLING_SHIFT``)."""
    return data.StructLayout({
        "primary_base": config.address_bits, "weights_base": config.address_bits,
        "predictions_base": config.address_bits, "capsule_types": range(config.max_types + 1),
        "shift": SHIFT_BITS, "routing_shift": SHIFT_BITS})


def routing_word_layout(config):
    """A routing result word (what the host reads per class): the routing engine's beat without ``last``."""
    beat = digit_caps_layout(config.classes, config.digit_dims, config.max_capsules)
    return data.StructLayout({name: field.shape for name, field in beat if name != "last"})


class CapsNetStreamingAccelerator(HostPortAccelerator):
    """Step 2 and steps 3-6 of the CapsNet with every parameter and feature in SDRAM (docs/capsnet_accelerator.md,
    "On the DE1-SoC"): the PrimaryCaps output and the DigitCaps weights stream in through one Avalon-MM master
    port, the prediction vectors stream out to SDRAM and into the routing engine, the class comes out on chip.

    Tiles
    -----
    Tile ``k = t*G + y`` is grid row ``y`` of capsule type ``t`` (``G = grid``): its ``G*J*N`` weight words, and
    with ``y = 0`` the type's ``N*G`` input rows.  The matrix-vector engine
    (:class:`~hw.capsnet.matvec_engine.CapsNetMatvecEngine`, unchanged) runs each tile as one layer (one capsule
    type of one grid row: ``G*J*N`` product cycles) on the tile RAMs; its prediction vectors go to the
    prediction tile RAM and, as a stream, to the routing engine
    (:class:`~hw.capsnet.routing_engine.CapsNetRoutingEngine`).  Double buffering: weights and predictions in two
    slots (tile parity), inputs in two slots (type parity).

    Port program (one :class:`~hw.shared.tile_port.TilePort` command at a time): load tile 0, load tile 1, then
    for every ``k``: store the predictions of tile ``k``, load tile ``k + 2``; a load needs the store of the tile
    two before it to have finished (its slots are then free), a store the tile's products to be done.  A tile's
    products start when it is loaded and the engine is idle.  The run ends when the routing engine's last class
    is stored in the routing RAM and the last store has finished.

    Ports
    -----
    ``host`` (In :class:`~hw.shared.host_port.HostPortSignature`): :class:`~hw.shared.host_control.HostControl`
    with descriptor 0 = :func:`stream_descriptor_layout` (latched at START), the memory ``ROUTING`` (word ``j`` =
    :func:`routing_word_layout`: s_j, v_j, |v_j|^2, the class so far; the image's class in word ``J - 1``), the
    counters of :class:`StreamStep` (cycles, product cycles, stall = engine idle waiting for a tile, drain).
    ``avalon``: the Avalon-MM master port to the SDRAM controller.

    Timing
    ------
    :func:`models.capsnet.stream_plan.stream_cycles` gives every counter exactly (the tile port's model on the
    SDRAM model); step 2 is memory-bound (``J*D`` bytes of weights per product cycle against 2 bytes per cycle
    from the SDRAM), so the engine waits most of the time and the stall counter shows it.

    FPGA mapping (Cyclone V)
    ------------------------
    The tile RAMs in M10K: weights ``2*G*J*N`` x ``8*D`` bits (960 x 128 for the CapsNet: 15 Kbit x 8), inputs
    ``2*N*G`` x ``8*row_bytes``, predictions ``2*G*J`` x ``8*D``, routing results ``J`` words; the master's read
    FIFO; the engines' multipliers (``D + 1``) in DSP blocks or ALMs; counters in ALMs.
    """

    def __init__(self, *, config=CapsNetStreamConfig()):
        if not isinstance(config, CapsNetStreamConfig):
            raise TypeError(f"config must be a CapsNetStreamConfig, not {config!r}")
        self._routing_word = routing_word_layout(config)
        host_bits = max(self._routing_word.size, stream_descriptor_layout(config).size)
        super().__init__(config, CapsNetStreamConfig, host_data_bits=host_bits,
                         ports={"avalon": Out(TilePort.avalon_signature(address_bits=config.address_bits,
                                                                        max_burst=config.max_burst))})

    @property
    def routing_word(self):
        return self._routing_word

    @property
    def module_name(self):
        return self._config.name

    def elaborate(self, platform):
        m = Module()
        config = self._config
        grid, classes = config.grid, config.classes
        m.submodules.matvec = matvec = CapsNetMatvecEngine(config=config.matvec_config)
        m.submodules.routing = routing = CapsNetRoutingEngine(
            classes=classes, dims=config.digit_dims, max_capsules=config.max_capsules, multipliers=config.multipliers)
        m.submodules.port = port = TilePort(
            ram_bits=8 * max(config.row_bytes, config.vector_bytes),
            ram_address_bits=max(2 * config.tile_weight_words, 2 * config.type_rows).bit_length(),
            address_bits=config.address_bits, max_burst=config.max_burst, fifo_depth=config.fifo_depth)
        wiring.connect(m, wiring.flipped(self.avalon), port.avalon)
        vector_bits = 8 * config.vector_bytes
        m.submodules.inputs = inputs = DualPortBuffer(width=8 * config.row_bytes, depth=2 * config.type_rows,
                                                      granularity=8)
        m.submodules.weights = weights = DualPortBuffer(width=vector_bits, depth=2 * config.tile_weight_words,
                                                        granularity=8)
        m.submodules.predictions = predictions = DualPortBuffer(width=vector_bits, depth=2 * config.tile_predictions)
        m.submodules.results = results = DualPortBuffer(width=self._routing_word.size, depth=max(2, classes))

        m.submodules.control = control = HostControl(
            data_bits=len(self.host.write_data), max_layers=len(StreamStep),
            descriptor_layout=stream_descriptor_layout(config), memories={StreamMemory.ROUTING: results.width})
        wiring.connect(m, wiring.flipped(self.host), control.host)

        # ---- Run control ----------------------------------------------------------------------------------
        params = Signal(stream_descriptor_layout(config))
        running, done, routing_phase, routing_done = Signal(), Signal(), Signal(), Signal()
        tiles = Signal(range(config.max_types * grid + 1))
        tile_bits = len(tiles)
        loaded, stored, computed = Signal(tile_bits), Signal(tile_bits), Signal(tile_bits)
        m.d.comb += [control.busy.eq(running), control.done.eq(done),
                     control.layer_index.eq(routing_phase & running)]
        with m.If(control.start):
            m.d.sync += [params.eq(control.descriptor), tiles.eq(control.descriptor.capsule_types * grid),
                         running.eq(1), done.eq(0), routing_phase.eq(0), routing_done.eq(0)]
        with m.If(running & routing_done & (stored == tiles)):
            m.d.sync += [running.eq(0), done.eq(1)]

        # ---- Port program: load k (inputs with a type's first row, then weights), store k, load k + 2 ------
        type_bytes = config.type_rows * config.row_bytes
        tile_weight_bytes = config.tile_weight_words * config.vector_bytes
        tile_prediction_bytes = config.tile_predictions * config.vector_bytes
        load_row = Signal(range(grid))
        load_type_parity, inputs_loaded = Signal(), Signal()
        input_address, weight_address, store_address = (Signal(config.address_bits) for _ in range(3))
        loading_inputs, loading_weights = Signal(), Signal()      # the command in flight
        want_load = (loaded < tiles) & (loaded < stored + 2)
        can_store = (stored < tiles) & (computed > stored)
        command = port.command.payload
        vector_beats = config.vector_bytes // BUS_BYTES
        with m.If(want_load & (load_row == 0) & ~inputs_loaded):
            m.d.comb += [command.address.eq(input_address), command.beats.eq(type_bytes // BUS_BYTES),
                         command.ram_base.eq(Mux(load_type_parity, config.type_rows, 0)),
                         command.beats_per_word.eq(config.row_bytes // BUS_BYTES)]
        with m.Elif(want_load):
            m.d.comb += [command.address.eq(weight_address), command.beats.eq(tile_weight_bytes // BUS_BYTES),
                         command.ram_base.eq(Mux(loaded[0], config.tile_weight_words, 0)),
                         command.beats_per_word.eq(vector_beats)]
        with m.Else():
            m.d.comb += [command.store.eq(1), command.address.eq(store_address),
                         command.beats.eq(tile_prediction_bytes // BUS_BYTES),
                         command.ram_base.eq(Mux(stored[0], config.tile_predictions, 0)),
                         command.beats_per_word.eq(vector_beats)]
        m.d.comb += port.command.valid.eq(running & (want_load | can_store))
        with m.If(port.command.valid & port.command.ready):
            m.d.sync += [loading_inputs.eq(want_load & (load_row == 0) & ~inputs_loaded),
                         loading_weights.eq(want_load & ~((load_row == 0) & ~inputs_loaded))]
        with m.If(port.finished):
            with m.If(loading_inputs):
                m.d.sync += [inputs_loaded.eq(1), input_address.eq(input_address + type_bytes)]
            with m.Elif(loading_weights):
                m.d.sync += [loaded.eq(loaded + 1), weight_address.eq(weight_address + tile_weight_bytes),
                             load_row.eq(Mux(load_row == grid - 1, 0, load_row + 1)), inputs_loaded.eq(0)]
                with m.If(load_row == grid - 1):
                    m.d.sync += load_type_parity.eq(~load_type_parity)
            with m.Else():
                m.d.sync += [stored.eq(stored + 1), store_address.eq(store_address + tile_prediction_bytes)]
        with m.If(control.start):
            m.d.sync += [loaded.eq(0), stored.eq(0), load_row.eq(0), load_type_parity.eq(0), inputs_loaded.eq(0),
                         input_address.eq(control.descriptor.primary_base),
                         weight_address.eq(control.descriptor.weights_base),
                         store_address.eq(control.descriptor.predictions_base)]

        write = port.ram_write
        for ram, selected in ((inputs, loading_inputs), (weights, loading_weights)):
            m.d.comb += [ram.a.address.eq(write.address), ram.a.write_data.eq(write.data),
                         ram.a.write_enable.eq(Mux(write.enable & selected, write.byte_enable[:len(ram.a.write_enable)],
                                                   0))]
        m.d.comb += [predictions.b.address.eq(port.ram_read.address), predictions.b.read_enable.eq(port.ram_read.enable),
                     port.ram_read_data.eq(predictions.b.read_data)]

        # ---- Compute: tile ``computed`` on the matrix-vector engine once loaded ----------------------------
        compute_row = Signal(range(grid))
        compute_type_parity = Signal()
        layer = matvec.layer
        m.d.comb += [
            layer.kind.eq(LayerKind.MATVEC), layer.shift.eq(params.shift),
            layer.in_base.eq(Mux(compute_type_parity, config.type_rows, 0) + compute_row),
            layer.capsule_types.eq(1), layer.grid_height.eq(1), layer.grid_width.eq(grid),
            layer.dim_words.eq(grid), layer.in_dims.eq(config.primary_dims), layer.out_capsules.eq(classes),
            layer.matvec_weight_base.eq(Mux(computed[0], config.tile_weight_words, 0)),
            layer.prediction_base.eq(Mux(computed[0], config.tile_predictions, 0)),
            matvec.start.eq(running & ~matvec.busy & (loaded > computed) & ~routing_phase & routing.predictions.ready),
            inputs.b.address.eq(matvec.read_address), inputs.b.read_enable.eq(matvec.read_enable),
            matvec.read_data.eq(inputs.b.read_data),
            weights.b.address.eq(matvec.weight_address), weights.b.read_enable.eq(matvec.weight_read),
            matvec.weight_data.eq(weights.b.read_data),
            predictions.a.address.eq(matvec.write_address), predictions.a.write_data.eq(matvec.write_data),
            predictions.a.write_enable.eq(matvec.write_enable),
        ]
        last_tile = computed + 1 == tiles
        with m.If(matvec.done):
            m.d.sync += [computed.eq(computed + 1), compute_row.eq(Mux(compute_row == grid - 1, 0, compute_row + 1))]
            with m.If(compute_row == grid - 1):
                m.d.sync += compute_type_parity.eq(~compute_type_parity)
            with m.If(last_tile):
                m.d.sync += routing_phase.eq(1)
        with m.If(control.start):
            m.d.sync += [computed.eq(0), compute_row.eq(0), compute_type_parity.eq(0)]
        m.d.comb += [control.events.issue.eq(matvec.issue), control.events.draining.eq(matvec.draining),
                     control.events.stall.eq(~routing_phase & ~matvec.busy)]

        # ---- Routing: every prediction vector, the class words into the result RAM ------------------------
        last_prediction = Mux(computed[0], 2 * config.tile_predictions, config.tile_predictions) - 1
        m.d.comb += [routing.predictions.valid.eq(matvec.write_enable),
                     routing.predictions.payload.vector.eq(matvec.write_data),
                     routing.predictions.payload.last.eq(last_tile & (matvec.write_address == last_prediction)),
                     routing.shift.eq(params.routing_shift), routing.digit_caps.ready.eq(1)]
        class_index = Signal(range(max(2, classes)))
        beat = routing.digit_caps.payload
        m.d.comb += [results.a.address.eq(class_index), results.a.write_enable.eq(routing.digit_caps.valid),
                     results.a.write_data.eq(Cat(*(getattr(beat, name) for name, _ in self._routing_word)))]
        with m.If(routing.digit_caps.valid):
            m.d.sync += class_index.eq(class_index + 1)
            with m.If(beat.last):
                m.d.sync += [routing_done.eq(1), class_index.eq(0)]
        m.d.comb += [results.b.address.eq(control.memory_address), results.b.read_enable.eq(control.memory_read.routing),
                     control.memory_read_data.routing.eq(results.b.read_data)]
        return m
