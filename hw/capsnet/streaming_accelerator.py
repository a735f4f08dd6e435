"""The CapsNet accelerator on the DE1-SoC's SDRAM: a whole image streamed through double-buffered tiles (conv1 and
PrimaryCaps on the convolution engine, step 2 on the matrix-vector engine), routing on chip."""

import enum

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from nnaccel.hw.capsnet.config import SHIFT_BITS
from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.conv_tile_program import ConvTarget, ConvTileProgram, conv_stream_layout
from nnaccel.hw.capsnet.descriptor import LayerKind, descriptor_layout
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.hw.capsnet.routing_engine import CapsNetRoutingEngine, digit_caps_layout
from nnaccel.hw.capsnet.stream_config import BUS_BYTES, CapsNetStreamConfig
from nnaccel.hw.shared.buffer_port_demux import BufferPortDemux
from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.hw.shared.host_control import HostControl, MemoryTarget
from nnaccel.hw.shared.host_buffer_port import HostBufferPort
from nnaccel.hw.shared.host_port import HostPortAccelerator
from nnaccel.hw.shared.tile_port import TilePort

__all__ = ["CapsNetStreamingAccelerator", "StreamMemory", "StreamStep", "stream_descriptor_layout",
           "image_descriptor_layout", "routing_word_layout"]


class StreamMemory(MemoryTarget):
    """The streaming accelerator's memory on the host port: the routing result, one word per class."""
    ROUTING = enum.auto()


class StreamStep(enum.IntEnum):
    """The steps of a run, in order; each is a descriptor-table entry and a set of counters of
    :class:`~hw.shared.host_control.HostControl`."""
    CONV1 = 0               # conv1 on the convolution engine, until its last output is stored
    PRIMARY = 1             # PrimaryCaps likewise
    PREDICTIONS = 2         # step 2: to the end of the last tile's matrix-vector products
    ROUTING = 3             # from then to the end of the run (routing finish, last prediction stores)


def stream_descriptor_layout(config):
    """The run's parameters (descriptor 0): SDRAM byte addresses of the PrimaryCaps output (rows of ``row_bytes``,
    channel-major), the matrix-vector weights (word ``(i*J + j)*N + k``, ``digit_dims`` bytes) and the predictions
    (word ``i*J + j``); the number of capsule types; the matrix-vector shift and the routing shift
    (``squash_shift + COUPLING_SHIFT``)."""
    return data.StructLayout({
        "primary_base": config.address_bits, "weights_base": config.address_bits,
        "predictions_base": config.address_bits, "capsule_types": range(config.max_types + 1),
        "shift": SHIFT_BITS, "routing_shift": SHIFT_BITS})


def image_descriptor_layout(config):
    """A descriptor-table entry: ``conv`` for the convolutions (entries ``CONV1``, ``PRIMARY``: the SDRAM side,
    :func:`~hw.capsnet.conv_tile_program.conv_stream_layout`, and the engine's
    :func:`~hw.capsnet.descriptor.descriptor_layout`), ``matvec`` for step 2 (entry ``PREDICTIONS``,
    :func:`stream_descriptor_layout`)."""
    conv = data.StructLayout({
        "stream": conv_stream_layout(address_bits=config.address_bits, ram_address_bits=_port_ram_address_bits(config),
                                     beats_per_word_bits=_beats_per_word_bits(config)),
        "engine": descriptor_layout(config.conv_config)})
    return data.UnionLayout({"conv": conv, "matvec": stream_descriptor_layout(config)})


def _port_ram_address_bits(config):
    return max(2 * config.tile_weight_words, 2 * config.type_rows, config.conv_config.activation_depth,
               config.conv_config.conv_weight_depth, config.conv_config.bias_depth).bit_length()


def _beats_per_word_bits(config):
    return (config.port_ram_bits // (8 * BUS_BYTES)).bit_length()


def routing_word_layout(config):
    """A routing result word (what the host reads per class): the routing engine's beat without ``last``."""
    beat = digit_caps_layout(config.classes, config.digit_dims, config.max_capsules)
    return data.StructLayout({name: field.shape for name, field in beat if name != "last"})


class CapsNetStreamingAccelerator(HostPortAccelerator):
    """The CapsNet with every parameter and feature in SDRAM (docs/capsnet_accelerator.md, "On the DE1-SoC"): one
    Avalon-MM master port moves every tile; a run is conv1, PrimaryCaps, step 2 and routing (:class:`StreamStep`),
    each from its descriptor-table entry; the class comes out on chip.

    Step 1 (conv1, PrimaryCaps)
    ---------------------------
    :class:`~hw.capsnet.conv_engine.CapsNetConvEngine` in its tiled mode on two-slot RAMs (input maps, kernel
    slabs, output staging) and a bias RAM, fed by :class:`~hw.capsnet.conv_tile_program.ConvTileProgram` (its
    docstring has the program).  A layer with no tiles is skipped.

    Step 2 and routing
    ------------------
    Tile ``k = t*G + y`` is grid row ``y`` of capsule type ``t`` (``G = grid``): its ``G*J*N`` weight words, and
    with ``y = 0`` the type's ``N*G`` input rows.  The matrix-vector engine
    (:class:`~hw.capsnet.matvec_engine.CapsNetMatvecEngine`) runs each tile as one layer (one capsule
    type of one grid row: ``G*J*N`` product cycles) on the tile RAMs; its prediction vectors go to the
    prediction tile RAM and, as a stream, to the routing engine
    (:class:`~hw.capsnet.routing_engine.CapsNetRoutingEngine`).  Double buffering: weights and predictions in two
    slots (tile parity), inputs in two slots (type parity).  Port program (one
    :class:`~hw.shared.tile_port.TilePort` command at a time): load tile 0, load tile 1, then for every ``k``:
    store the predictions of tile ``k``, load tile ``k + 2``; a load needs the store of the tile two before it to
    have finished (its slots are then free), a store the tile's products to be done.  A tile's products start
    when it is loaded and the engine is idle.  The run ends when the routing engine's last class is stored in the
    routing RAM and the last store has finished.

    Ports
    -----
    ``host`` (In :class:`~hw.shared.host_port.HostPortSignature`): :class:`~hw.shared.host_control.HostControl`
    with entries of :func:`image_descriptor_layout` (entry ``s`` for step ``s``; START with any count runs all
    four), the memory ``ROUTING`` (word ``j`` = :func:`routing_word_layout`: s_j, v_j, |v_j|^2, the class so far;
    the image's class in word ``J - 1``), the counters of every :class:`StreamStep` (cycles, product cycles,
    stall = engine waiting for a tile, drain).  ``avalon``: the Avalon-MM master port to the SDRAM controller.

    Timing
    ------
    A step starts two cycles after the previous one ended (its engine done and its last store finished; the
    first step on the cycle after START).  :func:`models.capsnet.image_stream_plan.image_stream_cycles` gives
    every counter exactly (the tile port's model on the SDRAM model).

    FPGA mapping (Cyclone V)
    ------------------------
    The tile RAMs in M10K (step 1: inputs ``2*max_map_rows`` x ``8*conv_row_bytes`` bits, slabs
    ``2*max_kernel_words`` x ``8*M``, staging ``2*M*conv_rows`` x ``8*conv_row_bytes``, biases ``max_blocks`` x
    ``32*M``; step 2: weights ``2*G*J*N`` x ``8*D``, inputs ``2*N*G`` x ``8*row_bytes``, predictions ``2*G*J`` x
    ``8*D``, routing results ``J`` words); the master's read FIFO; the engines' multipliers in DSP blocks or
    ALMs; counters in ALMs.
    """

    def __init__(self, *, config=CapsNetStreamConfig()):
        if not isinstance(config, CapsNetStreamConfig):
            raise TypeError(f"config must be a CapsNetStreamConfig, not {config!r}")
        self._routing_word = routing_word_layout(config)
        host_bits = max(self._routing_word.size, image_descriptor_layout(config).size)
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
        m.submodules.port = port = TilePort(
            ram_bits=config.port_ram_bits, ram_address_bits=_port_ram_address_bits(config),
            address_bits=config.address_bits, max_burst=config.max_burst, fifo_depth=config.fifo_depth)
        wiring.connect(m, wiring.flipped(self.avalon), port.avalon)
        m.submodules.control = control = HostControl(
            data_bits=len(self.host.write_data), max_layers=len(StreamStep),
            descriptor_layout=image_descriptor_layout(config), memories={StreamMemory.ROUTING: self._routing_word.size})
        wiring.connect(m, wiring.flipped(self.host), control.host)

        # ---- Steps: one after the other, each from its descriptor ----------------------------------------
        # This top is the sequencer of HostControl's run port: it drives busy, done, layer_index and events.
        step = Signal(range(len(StreamStep)))
        step_start, running, done = Signal(), Signal(), Signal()
        conv_step = step < StreamStep.PREDICTIONS
        m.d.comb += [control.run.busy.eq(running), control.run.done.eq(done), control.run.layer_index.eq(step)]
        m.d.sync += step_start.eq(0)
        with m.If(control.run.start):
            m.d.sync += [step.eq(StreamStep.CONV1), step_start.eq(1), running.eq(1), done.eq(0)]

        # ---- The tile port's RAM side: loads into the tile RAMs' port a, stores from staging or predictions ------
        conv_tiles = self._elaborate_conv_tiles(m)
        step2_tiles = self._elaborate_step2_tiles(m)
        loads = {"conv_biases": conv_tiles["biases"].a, "conv_inputs": conv_tiles["inputs"].a,
                 "conv_slabs": conv_tiles["slabs"].a, "inputs": step2_tiles["inputs"].a,
                 "weights": step2_tiles["weights"].a}
        m.submodules.loads = loads_demux = BufferPortDemux(
            initiator=port.ram_write.signature, targets={name: ram.signature.flip() for name, ram in loads.items()})
        wiring.connect(m, port.ram_write, loads_demux.initiator)
        for name, ram in loads.items():
            wiring.connect(m, getattr(loads_demux.targets, name), ram)
        stores = {"conv_staging": conv_tiles["staging"].b, "predictions": step2_tiles["predictions"].b}
        m.submodules.stores = stores_demux = BufferPortDemux(
            initiator=port.ram_read.signature, targets={name: ram.signature.flip() for name, ram in stores.items()})
        wiring.connect(m, port.ram_read, stores_demux.initiator)
        for name, ram in stores.items():
            wiring.connect(m, getattr(stores_demux.targets, name), ram)
        # Stores read the staging RAM in the convolution steps, the prediction RAM after them.
        m.d.comb += stores_demux.select.eq(~conv_step)

        command_bits = len(port.command.payload.as_value())
        conv_command, matvec_command = Signal(command_bits), Signal(command_bits)
        conv_valid, matvec_valid = Signal(), Signal()
        # The port takes the commands of the current step's program (a multiplexer of the two programs' streams).
        with m.If(conv_step):
            m.d.comb += [port.command.payload.eq(conv_command), port.command.valid.eq(conv_valid)]
        with m.Else():
            m.d.comb += [port.command.payload.eq(matvec_command), port.command.valid.eq(matvec_valid)]

        conv_target = self._elaborate_convolutions(m, control, port, conv_tiles, step, step_start, conv_command,
                                                   conv_valid)
        step2_target = self._elaborate_step2(m, control, port, step2_tiles, step, step_start, running, done,
                                             matvec_command, matvec_valid)
        # Loads go to the RAM of the command in flight: a ConvTarget (its first three names) in the convolution
        # steps, step 2's inputs or weights after them.
        m.d.comb += loads_demux.select.eq(Mux(conv_step, conv_target, step2_target))
        return m

    def _elaborate_conv_tiles(self, m):
        """Step 1's tile RAMs (inputs and staging as deep as the engine's activation address)."""
        config, conv_config, modules = self._config, self._config.conv_config, self._config.conv_modules
        rams = {"inputs": DualPortBuffer(width=8 * config.conv_row_bytes, depth=conv_config.activation_depth,
                                         granularity=8),
                "slabs": DualPortBuffer(width=8 * modules, depth=2 * config.max_kernel_words, granularity=8),
                "biases": DualPortBuffer(width=32 * modules, depth=max(2, config.max_blocks), granularity=8),
                "staging": DualPortBuffer(width=8 * config.conv_row_bytes, depth=conv_config.activation_depth,
                                          granularity=8)}
        for name, ram in rams.items():
            m.submodules[f"conv_{name}"] = ram
        return rams

    def _elaborate_step2_tiles(self, m):
        """Step 2's tile RAMs: inputs, weights, predictions (two slots each)."""
        config = self._config
        vector_bits = 8 * config.vector_bytes
        rams = {"inputs": DualPortBuffer(width=8 * config.row_bytes, depth=2 * config.type_rows, granularity=8),
                "weights": DualPortBuffer(width=vector_bits, depth=2 * config.tile_weight_words, granularity=8),
                "predictions": DualPortBuffer(width=vector_bits, depth=2 * config.tile_predictions, granularity=8)}
        for name, ram in rams.items():
            m.submodules[name] = ram
        return rams

    def _elaborate_convolutions(self, m, control, port, rams, step, step_start, command, valid):
        """conv1 and PrimaryCaps: the engine on its tile RAMs, its port program; returns the load target."""
        config = self._config
        m.submodules.conv = engine = CapsNetConvEngine(config=config.conv_config)
        m.submodules.conv_program = program = ConvTileProgram(
            address_bits=config.address_bits, ram_address_bits=_port_ram_address_bits(config),
            beats_bits=len(port.command.payload.beats), beats_per_word_bits=_beats_per_word_bits(config))
        wiring.connect(m, engine.inputs, rams["inputs"].b)
        wiring.connect(m, engine.weights, rams["slabs"].b)
        wiring.connect(m, engine.biases, rams["biases"].b)
        wiring.connect(m, engine.outputs, rams["staging"].a)
        wiring.connect(m, program.tiles, engine.tiles)

        descriptor = control.run.descriptor.conv
        conv_step = step < StreamStep.PREDICTIONS
        starting = step_start & conv_step
        engine_finished, program_finished = Signal(), Signal()
        # The step's sequencing: both start on the step's first cycle (the engine only with tiles to work on),
        # each from its part of the step's descriptor; the program sees the port only in its steps.
        m.d.comb += [
            engine.control.layer.eq(descriptor.engine), program.layer.eq(descriptor.stream),
            engine.control.run.start.eq(starting & (descriptor.stream.tiles != 0)), program.run.start.eq(starting),
            command.eq(program.command.payload), valid.eq(program.command.valid),
            program.command.ready.eq(port.command.ready & conv_step), program.port_finished.eq(port.finished),
        ]
        with m.If(engine.control.run.done):
            m.d.sync += engine_finished.eq(1)
        with m.If(program.run.done):
            m.d.sync += program_finished.eq(1)
        with m.If(starting & (descriptor.stream.tiles == 0)):
            m.d.sync += engine_finished.eq(1)
        with m.If(conv_step & engine_finished & program_finished):
            m.d.sync += [step.eq(step + 1), step_start.eq(1), engine_finished.eq(0), program_finished.eq(0)]
        with m.If(conv_step):
            # The step's counter events: the engine's, and drain until the step's last stores.
            events = engine.control.events
            m.d.comb += [control.run.events.issue.eq(events.issue), control.run.events.stall.eq(events.stall),
                         control.run.events.draining.eq(events.draining | ~engine.control.run.busy & engine_finished)]

        target = Signal(ConvTarget)
        with m.If(program.command.valid & program.command.ready):
            m.d.sync += target.eq(program.target)
        return target

    def _elaborate_step2(self, m, control, port, rams, step, step_start, running, done, command, command_valid):
        """Step 2 and routing: the matrix-vector and routing engines on their tile RAMs, their port program;
        returns the load target (3: inputs, 4: weights, the load demultiplexer's order)."""
        config = self._config
        grid, classes = config.grid, config.classes
        m.submodules.matvec = matvec = CapsNetMatvecEngine(config=config.matvec_config)
        m.submodules.routing = routing = CapsNetRoutingEngine(
            classes=classes, dims=config.digit_dims, max_capsules=config.max_capsules, multipliers=config.multipliers)
        m.submodules.results = results = DualPortBuffer(width=self._routing_word.size, depth=max(2, classes))
        m.submodules.results_host = results_host = HostBufferPort(port=results.b.signature.flip())
        wiring.connect(m, control.memory.routing, results_host.host)
        wiring.connect(m, results_host.buffer, results.b)
        wiring.connect(m, matvec.inputs, rams["inputs"].b)
        wiring.connect(m, matvec.weights, rams["weights"].b)
        wiring.connect(m, matvec.predictions, rams["predictions"].a)

        # ---- Run control ----------------------------------------------------------------------------------
        params = Signal(stream_descriptor_layout(config))
        active, routing_done = Signal(), Signal()       # step 2 or routing is the current step
        routing_phase = step == StreamStep.ROUTING
        tiles = Signal(range(config.max_types * grid + 1))
        tile_bits = len(tiles)
        loaded, stored, computed = Signal(tile_bits), Signal(tile_bits), Signal(tile_bits)
        starting = step_start & (step == StreamStep.PREDICTIONS)
        descriptor = control.run.descriptor.matvec
        with m.If(starting):
            m.d.sync += [params.eq(descriptor), tiles.eq(descriptor.capsule_types * grid), active.eq(1),
                         routing_done.eq(0)]
        with m.If(active & routing_done & (stored == tiles)):
            m.d.sync += [running.eq(0), done.eq(1), active.eq(0)]

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
        command_payload = port.command.payload.shape()(command)
        vector_beats = config.vector_bytes // BUS_BYTES
        with m.If(want_load & (load_row == 0) & ~inputs_loaded):
            m.d.comb += [command_payload.address.eq(input_address), command_payload.beats.eq(type_bytes // BUS_BYTES),
                         command_payload.ram_base.eq(Mux(load_type_parity, config.type_rows, 0)),
                         command_payload.beats_per_word.eq(config.row_bytes // BUS_BYTES)]
        with m.Elif(want_load):
            m.d.comb += [command_payload.address.eq(weight_address),
                         command_payload.beats.eq(tile_weight_bytes // BUS_BYTES),
                         command_payload.ram_base.eq(Mux(loaded[0], config.tile_weight_words, 0)),
                         command_payload.beats_per_word.eq(vector_beats)]
        with m.Else():
            m.d.comb += [command_payload.store.eq(1), command_payload.address.eq(store_address),
                         command_payload.beats.eq(tile_prediction_bytes // BUS_BYTES),
                         command_payload.ram_base.eq(Mux(stored[0], config.tile_predictions, 0)),
                         command_payload.beats_per_word.eq(vector_beats)]
        m.d.comb += command_valid.eq(active & (want_load | can_store))
        with m.If(command_valid & port.command.ready):
            m.d.sync += [loading_inputs.eq(want_load & (load_row == 0) & ~inputs_loaded),
                         loading_weights.eq(want_load & ~((load_row == 0) & ~inputs_loaded))]
        step2_port = active & ~(step < StreamStep.PREDICTIONS)
        with m.If(port.finished & step2_port):
            with m.If(loading_inputs):
                m.d.sync += [inputs_loaded.eq(1), input_address.eq(input_address + type_bytes)]
            with m.Elif(loading_weights):
                m.d.sync += [loaded.eq(loaded + 1), weight_address.eq(weight_address + tile_weight_bytes),
                             load_row.eq(Mux(load_row == grid - 1, 0, load_row + 1)), inputs_loaded.eq(0)]
                with m.If(load_row == grid - 1):
                    m.d.sync += load_type_parity.eq(~load_type_parity)
            with m.Else():
                m.d.sync += [stored.eq(stored + 1), store_address.eq(store_address + tile_prediction_bytes)]
        with m.If(starting):
            m.d.sync += [loaded.eq(0), stored.eq(0), load_row.eq(0), load_type_parity.eq(0), inputs_loaded.eq(0),
                         loading_inputs.eq(0), loading_weights.eq(0), input_address.eq(descriptor.primary_base),
                         weight_address.eq(descriptor.weights_base), store_address.eq(descriptor.predictions_base)]
        load_target = Signal(range(5))
        m.d.comb += load_target.eq(Mux(loading_inputs, 3, 4))

        # ---- Compute: tile ``computed`` on the matrix-vector engine once loaded ----------------------------
        compute_row = Signal(range(grid))
        compute_type_parity = Signal()
        layer, matvec_run = matvec.control.layer, matvec.control.run
        # The tile's layer descriptor, built here from the step's parameters and the tile's slots.
        m.d.comb += [
            layer.kind.eq(LayerKind.MATVEC), layer.shift.eq(params.shift),
            layer.in_base.eq(Mux(compute_type_parity, config.type_rows, 0) + compute_row),
            layer.capsule_types.eq(1), layer.grid_height.eq(1), layer.grid_width.eq(grid),
            layer.dim_words.eq(grid), layer.in_dims.eq(config.primary_dims), layer.out_capsules.eq(classes),
            layer.matvec_weight_base.eq(Mux(computed[0], config.tile_weight_words, 0)),
            layer.prediction_base.eq(Mux(computed[0], config.tile_predictions, 0)),
            matvec_run.start.eq(active & ~matvec_run.busy & (loaded > computed) & ~routing_phase
                                & routing.predictions.ready),
        ]
        last_tile = computed + 1 == tiles
        with m.If(matvec_run.done):
            m.d.sync += [computed.eq(computed + 1), compute_row.eq(Mux(compute_row == grid - 1, 0, compute_row + 1))]
            with m.If(compute_row == grid - 1):
                m.d.sync += compute_type_parity.eq(~compute_type_parity)
            with m.If(last_tile):
                m.d.sync += step.eq(StreamStep.ROUTING)
        with m.If(starting):
            m.d.sync += [computed.eq(0), compute_row.eq(0), compute_type_parity.eq(0)]
        with m.If(~(step < StreamStep.PREDICTIONS)):
            # The step's counter events: the engine's, and stall = the engine idle in step 2 (waiting for a tile).
            m.d.comb += [control.run.events.issue.eq(matvec.control.events.issue),
                         control.run.events.draining.eq(matvec.control.events.draining),
                         control.run.events.stall.eq(~routing_phase & ~matvec_run.busy)]

        # ---- Routing: every prediction vector, the class words into the result RAM ------------------------
        # The routing engine sees the prediction writes as a stream (every lane is written: enable bit 0 says it),
        # the last one of the image marked.
        predictions = matvec.predictions
        last_prediction = Mux(computed[0], 2 * config.tile_predictions, config.tile_predictions) - 1
        m.d.comb += [routing.predictions.valid.eq(predictions.write_enable[0]),
                     routing.predictions.payload.vector.eq(predictions.write_data),
                     routing.predictions.payload.last.eq(last_tile & (predictions.address == last_prediction)),
                     routing.shift.eq(params.routing_shift), routing.digit_caps.ready.eq(1)]
        class_index = Signal(range(max(2, classes)))
        beat = routing.digit_caps.payload
        # A class's beat without ``last`` is its result word, written at the class's index.
        m.d.comb += [results.a.address.eq(class_index), results.a.write_enable.eq(routing.digit_caps.valid),
                     results.a.write_data.eq(Cat(*(getattr(beat, name) for name, _ in self._routing_word)))]
        with m.If(routing.digit_caps.valid):
            m.d.sync += class_index.eq(class_index + 1)
            with m.If(beat.last):
                m.d.sync += [routing_done.eq(1), class_index.eq(0)]
        return load_target
