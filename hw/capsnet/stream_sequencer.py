"""The streaming CapsNet accelerator's sequencer: its steps one after the other, step 2's port program, the
prediction vectors into the routing engine and the class words into the result RAM."""

import enum

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.config import OPERAND_BITS, SHIFT_BITS
from nnaccel.hw.capsnet.conv_tile_program import conv_stream_layout
from nnaccel.hw.capsnet.descriptor import LayerKind, descriptor_layout
from nnaccel.hw.capsnet.engine_control import EngineControlSignature
from nnaccel.hw.capsnet.routing_engine import digit_caps_layout
from nnaccel.hw.capsnet.stream_config import BUS_BYTES, CapsNetStreamConfig
from nnaccel.hw.capsnet.stream_descriptor import (StreamStep, beats_per_word_bits, image_descriptor_layout,
                                                  port_command_layout, port_ram_address_bits, routing_word_layout,
                                                  stream_descriptor_layout)
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.run_control import RunSignature
from nnaccel.hw.shared.tile_port import TileCommandSignature

__all__ = ["CapsNetStreamSequencer", "PortOwner", "STEP2_LOAD_TARGETS"]

STEP2_LOAD_TARGETS = 2       # step 2's loads go to its input tile RAM (0) or its weight tile RAM (1)


class PortOwner(enum.IntEnum):
    """Whose commands the tile port takes (:attr:`CapsNetStreamSequencer.port_owner`)."""
    CONVOLUTION = 0          # the convolution steps' program (ConvTileProgram)
    STEP2 = 1                # step 2's program (this sequencer)


class CapsNetStreamSequencer(wiring.Component):
    """Runs a START's four steps (:class:`~hw.capsnet.stream_descriptor.StreamStep`) of the streaming CapsNet
    accelerator (:class:`~hw.capsnet.streaming_accelerator.CapsNetStreamingAccelerator`, whose docstring has the
    programs), each from its descriptor-table entry.

    Ports
    -----
    run : In(RunSignature(max_layers=4, descriptor_layout=image_descriptor_layout(config)))
        From :class:`~hw.shared.host_control.HostControl`; ``layer_index`` is the current step, ``events`` its
        counter events.
    conv, conv_program : Out(EngineControlSignature)
        The convolution engine (the entry's ``conv.engine``) and its port program (``conv.stream``, no events),
        both started on a convolution step's first cycle (the engine only when the layer has tiles).
    conv_port : In(TileCommandSignature); port : Out(TileCommandSignature)
        The convolution program's commands, passed to the tile port in the convolution steps; step 2's own
        commands after them.
    port_owner : Out(range(2))
        :class:`PortOwner` of the current step (the tile port's stores read the staging RAM, then the prediction
        RAM).
    step2_load_target : Out(range(STEP2_LOAD_TARGETS))
        Step 2's command in flight loads the input tile RAM (0) or the weight tile RAM (1).
    matvec : Out(EngineControlSignature)
        The matrix-vector engine: one tile of step 2 per run (a descriptor built here).
    matvec_predictions : In(BufferPortSignature); predictions : Out(BufferPortSignature)
        The engine's prediction writes, passed to the prediction RAM, and as ``routing`` (Out stream: ``vector``,
        ``last`` = the image's last vector) to the routing engine, with ``routing_shift`` (Out, the entry's).
    digit_caps : In(stream of :func:`~hw.capsnet.routing_engine.digit_caps_layout`); results : Out(BufferPortSignature)
        The routing engine's class beats (always taken) written as result words (class ``j`` at word ``j``).

    Timing: as the accelerator's docstring says (a step starts two cycles after the previous one ended, the first
    on the cycle after START); :func:`models.capsnet.image_stream_plan.image_stream_cycles` follows it.

    FPGA mapping (Cyclone V): the step and tile counters, the SDRAM address registers and the command multiplexer
    in ALMs; no RAM, no multiplier.
    """

    def __init__(self, *, config=CapsNetStreamConfig()):
        if not isinstance(config, CapsNetStreamConfig):
            raise TypeError(f"config must be a CapsNetStreamConfig, not {config!r}")
        self._config = config
        commands = TileCommandSignature(port_command_layout(config))
        matvec = config.matvec_config
        predictions = BufferPortSignature(width=matvec.matvec_word_bits, depth=matvec.prediction_depth,
                                          granularity=OPERAND_BITS)
        super().__init__({
            "run": In(RunSignature(max_layers=len(StreamStep), descriptor_layout=image_descriptor_layout(config))),
            "conv": Out(EngineControlSignature(descriptor_layout(config.conv_config))),
            "conv_program": Out(EngineControlSignature(conv_stream_layout(
                address_bits=config.address_bits, ram_address_bits=port_ram_address_bits(config),
                beats_per_word_bits=beats_per_word_bits(config)), events=False)),
            "conv_port": In(commands), "port": Out(commands), "port_owner": Out(range(2)),
            "step2_load_target": Out(range(STEP2_LOAD_TARGETS)),
            "matvec": Out(EngineControlSignature(descriptor_layout(matvec))),
            "matvec_predictions": In(predictions), "predictions": Out(predictions),
            "routing": Out(stream.Signature(data.StructLayout({"vector": config.digit_dims * OPERAND_BITS,
                                                               "last": 1}))),
            "routing_shift": Out(SHIFT_BITS),
            "digit_caps": In(stream.Signature(digit_caps_layout(config.classes, config.digit_dims,
                                                                config.max_capsules))),
            "results": Out(BufferPortSignature(width=routing_word_layout(config).size, depth=max(2, config.classes))),
        })

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        run = self.run

        # ---- Steps: one after the other, each from its descriptor ----------------------------------------
        step = Signal(range(len(StreamStep)))
        step_start, running, done = Signal(), Signal(), Signal()
        conv_step = step < StreamStep.PREDICTIONS
        m.d.comb += [run.busy.eq(running), run.done.eq(done), run.layer_index.eq(step),
                     self.port_owner.eq(Mux(conv_step, PortOwner.CONVOLUTION, PortOwner.STEP2))]
        m.d.sync += step_start.eq(0)
        with m.If(run.start):
            m.d.sync += [step.eq(StreamStep.CONV1), step_start.eq(1), running.eq(1), done.eq(0)]

        # ---- The tile port: the current step's program's commands ------------------------------------------
        step2_command = Signal.like(self.port.command.payload)
        step2_valid = Signal()
        conv_commands = self.conv_port.command
        with m.If(conv_step):
            m.d.comb += [self.port.command.payload.eq(conv_commands.payload),
                         self.port.command.valid.eq(conv_commands.valid)]
        with m.Else():
            m.d.comb += [self.port.command.payload.eq(step2_command), self.port.command.valid.eq(step2_valid)]
        m.d.comb += [conv_commands.ready.eq(self.port.command.ready & conv_step),
                     self.conv_port.finished.eq(self.port.finished)]

        self._elaborate_convolutions(m, step, step_start)
        self._elaborate_step2(m, step, step_start, running, done, step2_command, step2_valid)
        return m

    def _elaborate_convolutions(self, m, step, step_start):
        """conv1 and PrimaryCaps: start the engine and its program, advance when both are finished."""
        run, engine, program = self.run, self.conv, self.conv_program
        descriptor = run.descriptor.conv
        conv_step = step < StreamStep.PREDICTIONS
        starting = step_start & conv_step
        engine_finished, program_finished = Signal(), Signal()
        m.d.comb += [
            engine.layer.eq(descriptor.engine), program.layer.eq(descriptor.stream),
            engine.run.start.eq(starting & (descriptor.stream.tiles != 0)), program.run.start.eq(starting),
        ]
        with m.If(engine.run.done):
            m.d.sync += engine_finished.eq(1)
        with m.If(program.run.done):
            m.d.sync += program_finished.eq(1)
        with m.If(starting & (descriptor.stream.tiles == 0)):
            m.d.sync += engine_finished.eq(1)
        with m.If(conv_step & engine_finished & program_finished):
            m.d.sync += [step.eq(step + 1), step_start.eq(1), engine_finished.eq(0), program_finished.eq(0)]
        with m.If(conv_step):
            # Drain: the engine's last writes, then the wait for the step's last stores.
            m.d.comb += [run.events.issue.eq(engine.events.issue), run.events.stall.eq(engine.events.stall),
                         run.events.draining.eq(engine.events.draining | ~engine.run.busy & engine_finished)]

    def _elaborate_step2(self, m, step, step_start, running, done, command, command_valid):
        """Step 2 and routing: the port program, the tiles on the matrix-vector engine, the routing engine's feed."""
        config, run, port = self._config, self.run, self.port
        grid, classes = config.grid, config.classes
        type_tiles = grid * config.row_tiles           # tiles of one capsule type

        # ---- Run control ----------------------------------------------------------------------------------
        params = Signal(stream_descriptor_layout(config))
        active, routing_done = Signal(), Signal()       # step 2 or routing is the current step
        routing_phase = step == StreamStep.ROUTING
        tiles = Signal(range(config.max_types * type_tiles + 1))
        tile_bits = len(tiles)
        loaded, stored, computed = Signal(tile_bits), Signal(tile_bits), Signal(tile_bits)
        starting = step_start & (step == StreamStep.PREDICTIONS)
        descriptor = run.descriptor.matvec
        with m.If(starting):
            m.d.sync += [params.eq(descriptor), tiles.eq(descriptor.capsule_types * type_tiles), active.eq(1),
                         routing_done.eq(0)]
        with m.If(active & routing_done & (stored == tiles)):
            m.d.sync += [running.eq(0), done.eq(1), active.eq(0)]

        # ---- Port program: load k (inputs with a type's first tile, then weights), store k, load k + 2 -----
        type_bytes = config.type_rows * config.row_bytes
        tile_weight_bytes = config.tile_weight_words * config.vector_bytes
        tile_prediction_bytes = config.tile_predictions * config.vector_bytes
        load_tile = Signal(range(type_tiles))            # the next load's tile within its capsule type
        load_type_parity, inputs_loaded = Signal(), Signal()
        input_address, weight_address, store_address = (Signal(config.address_bits) for _ in range(3))
        loading_inputs, loading_weights = Signal(), Signal()      # the command in flight
        want_load = (loaded < tiles) & (loaded < stored + 2)
        can_store = (stored < tiles) & (computed > stored)
        vector_beats = config.vector_bytes // BUS_BYTES
        with m.If(want_load & (load_tile == 0) & ~inputs_loaded):
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
        m.d.comb += command_valid.eq(active & (want_load | can_store))
        with m.If(command_valid & port.command.ready):
            m.d.sync += [loading_inputs.eq(want_load & (load_tile == 0) & ~inputs_loaded),
                         loading_weights.eq(want_load & ~((load_tile == 0) & ~inputs_loaded))]
        step2_port = active & ~(step < StreamStep.PREDICTIONS)
        with m.If(port.finished & step2_port):
            with m.If(loading_inputs):
                m.d.sync += [inputs_loaded.eq(1), input_address.eq(input_address + type_bytes)]
            with m.Elif(loading_weights):
                m.d.sync += [loaded.eq(loaded + 1), weight_address.eq(weight_address + tile_weight_bytes),
                             load_tile.eq(Mux(load_tile == type_tiles - 1, 0, load_tile + 1)), inputs_loaded.eq(0)]
                with m.If(load_tile == type_tiles - 1):
                    m.d.sync += load_type_parity.eq(~load_type_parity)
            with m.Else():
                m.d.sync += [stored.eq(stored + 1), store_address.eq(store_address + tile_prediction_bytes)]
        with m.If(starting):
            m.d.sync += [loaded.eq(0), stored.eq(0), load_tile.eq(0), load_type_parity.eq(0), inputs_loaded.eq(0),
                         loading_inputs.eq(0), loading_weights.eq(0), input_address.eq(descriptor.primary_base),
                         weight_address.eq(descriptor.weights_base), store_address.eq(descriptor.predictions_base)]
        m.d.comb += self.step2_load_target.eq(~loading_inputs)

        # ---- Compute: tile ``computed`` on the matrix-vector engine once loaded ----------------------------
        compute_row, compute_part = Signal(range(grid)), Signal(range(config.row_tiles))
        compute_type_parity = Signal()
        matvec = self.matvec
        layer = matvec.layer
        m.d.comb += [
            layer.kind.eq(LayerKind.MATVEC), layer.shift.eq(params.shift),
            layer.in_base.eq(Mux(compute_type_parity, config.type_rows, 0) + compute_row),
            layer.capsule_types.eq(1), layer.grid_height.eq(1), layer.grid_width.eq(config.tile_columns),
            layer.column_base.eq(compute_part * config.tile_columns),
            layer.dim_words.eq(grid), layer.in_dims.eq(config.primary_dims), layer.out_capsules.eq(classes),
            layer.matvec_weight_base.eq(Mux(computed[0], config.tile_weight_words, 0)),
            layer.prediction_base.eq(Mux(computed[0], config.tile_predictions, 0)),
            matvec.run.start.eq(active & ~matvec.run.busy & (loaded > computed) & ~routing_phase & self.routing.ready),
        ]
        last_tile = computed + 1 == tiles
        with m.If(matvec.run.done):
            last_part = compute_part == config.row_tiles - 1
            m.d.sync += [computed.eq(computed + 1), compute_part.eq(Mux(last_part, 0, compute_part + 1))]
            with m.If(last_part):
                m.d.sync += compute_row.eq(Mux(compute_row == grid - 1, 0, compute_row + 1))
                with m.If(compute_row == grid - 1):
                    m.d.sync += compute_type_parity.eq(~compute_type_parity)
            with m.If(last_tile):
                m.d.sync += step.eq(StreamStep.ROUTING)
        with m.If(starting):
            m.d.sync += [computed.eq(0), compute_row.eq(0), compute_part.eq(0), compute_type_parity.eq(0)]
        with m.If(~(step < StreamStep.PREDICTIONS)):
            # Stall: the engine idle in step 2 (waiting for a tile).
            m.d.comb += [run.events.issue.eq(matvec.events.issue), run.events.draining.eq(matvec.events.draining),
                         run.events.stall.eq(~routing_phase & ~matvec.run.busy)]

        # ---- Routing: every prediction vector (its write into the prediction RAM), the class words -----------
        writes = self.matvec_predictions
        wiring.connect(m, wiring.flipped(writes), wiring.flipped(self.predictions))
        last_prediction = Mux(computed[0], 2 * config.tile_predictions, config.tile_predictions) - 1
        m.d.comb += [self.routing.valid.eq(writes.write_enable[0]),          # every lane is written at once
                     self.routing.payload.vector.eq(writes.write_data),
                     self.routing.payload.last.eq(last_tile & (writes.address == last_prediction)),
                     self.routing_shift.eq(params.routing_shift), self.digit_caps.ready.eq(1)]
        class_index = Signal(range(max(2, classes)))
        beat = self.digit_caps.payload
        results = self.results
        m.d.comb += [results.address.eq(class_index), results.write_enable.eq(self.digit_caps.valid),
                     results.write_data.eq(Cat(*(getattr(beat, name) for name, _ in routing_word_layout(config))))]
        with m.If(self.digit_caps.valid):
            m.d.sync += class_index.eq(class_index + 1)
            with m.If(beat.last):
                m.d.sync += [routing_done.eq(1), class_index.eq(0)]
