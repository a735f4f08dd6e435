"""The Atari DQN accelerator (SPEC section 1): matrix modules, feeder, writer and RAMs under a host interface."""

import enum

from amaranth.hdl import Cat, Module, Mux
from amaranth.lib import wiring

from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.descriptor import descriptor_layout
from nnaccel.hw.dqn.float_argmax import FloatArgmax
from nnaccel.hw.dqn.matrix_module import MatrixModule
from nnaccel.hw.dqn.result_writer import ResultWriter
from nnaccel.hw.dqn.sequencer import LayerSequencer
from nnaccel.hw.dqn.window_feeder import WindowFeeder
from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.hw.shared.host_control import HostControl, MemoryTarget, SystemRegister
from nnaccel.hw.shared.host_port import HostPortAccelerator
from nnaccel.hw.shared.separate_module import instantiate_separately

__all__ = ["DqnAccelerator", "DqnMemory", "DqnRegister"]


class DqnMemory(MemoryTarget):
    """The DQN accelerator's memories on the host port (after the common targets of :class:`HostTarget`)."""
    WEIGHTS = enum.auto()
    ACTIVATIONS0 = enum.auto()
    ACTIVATIONS1 = enum.auto()


class DqnRegister(SystemRegister):
    """The DQN accelerator's own control registers: the last layer's argmax."""
    ACTION = enum.auto()
    ACTION_VALUE = enum.auto()


class DqnAccelerator(HostPortAccelerator):
    """``config.modules`` matrix modules of ``config.lanes`` float MACs running a table of layer descriptors.

    See docs/dqn_accelerator.md for the datapath, the layer mapping, the descriptor and the register
    map. Ports: ``host`` (In :class:`~hw.shared.host_port.HostPortSignature` of ``config.host_data_bits``:
    requests, reads answered on the next cycle, ``busy`` and ``done``), served by
    :class:`~hw.shared.host_control.HostControl` with the memories :class:`DqnMemory` and the registers
    :class:`DqnRegister` (the last layer's argmax).

    Timing: ``products + 1`` cycles per group of output positions, groups back to back; per layer a
    few cycles of set-up and the drain of the last group (matrix module latency + its writes).
    The thesis network: 11,945 cycles per inference with the default configuration (`nnaccel run dqn`).

    FPGA (Stratix V, default configuration): 256 DSP blocks for the multipliers (one binary32
    multiplier each), the adders and the feeder/writer muxes in ALMs, the weight RAM (16 slices of
    4096 x 512 bits, one per matrix module) and the two activation RAMs (1024 x 2688 bits) in M20K blocks.
    """

    def __init__(self, *, config=DqnConfig()):
        super().__init__(config, DqnConfig)

    def _module_vector(self, index, weight_vector, input_row, from_activations):
        """Module ``index``'s vector: its weight slice, or in a reduction step its lanes of the input word
        (modules whose lanes lie past the word's ``row_elements`` never take part in a reduction)."""
        config = self._config
        bits = config.lanes * config.fmt.width
        if (index + 1) * config.lanes > config.row_elements:
            return weight_vector
        return Mux(from_activations, input_row[index * bits:(index + 1) * bits], weight_vector)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        m.submodules.sequencer = sequencer = LayerSequencer(config=config)
        m.submodules.feeder = feeder = WindowFeeder(config=config)
        m.submodules.writer = writer = ResultWriter(config=config)
        m.submodules.argmax = argmax = FloatArgmax(fmt=config.fmt, lanes=config.lanes,
                                                   index_bits=len(writer.packed_index))
        m.submodules.control = control = HostControl(
            data_bits=config.host_data_bits, max_layers=config.max_layers, descriptor_layout=descriptor_layout(config),
            memories={DqnMemory.WEIGHTS: config.weight_word_bits, DqnMemory.ACTIVATIONS0: config.activation_word_bits,
                      DqnMemory.ACTIVATIONS1: config.activation_word_bits},
            registers={DqnRegister.ACTION: argmax.index_bits, DqnRegister.ACTION_VALUE: config.fmt.width})
        # The weight RAM is one slice per matrix module (slot m of every word), the activation RAMs two
        # identical buffers: each distinct RAM is generated once (see hw.shared.separate_module), and simulated
        # inlined (as hierarchical blocks every evaluation would copy their wide ports).
        vector_bits = config.lanes * config.fmt.width
        weight_slices = [
            instantiate_separately(m, self, lambda: DualPortBuffer(width=vector_bits, depth=config.weight_depth),
                                   module_name=f"{config.name}_weight_slice", instance_name=f"weights{index}",
                                   hierarchical_block=False)
            for index in range(config.modules)]
        activations = [
            instantiate_separately(m, self, lambda: DualPortBuffer(width=config.activation_word_bits,
                                                                   depth=config.activation_depth,
                                                                   granularity=config.fmt.width),
                                   module_name=f"{config.name}_activation_ram", instance_name=f"activations{index}",
                                   hierarchical_block=False)
            for index in range(2)]

        # ---- Host control: registers, counters, descriptor table, host reads ---------------------------
        wiring.connect(m, wiring.flipped(self.host), control.host)
        run, memory = control.run, control.memory
        layer = run.descriptor
        m.d.comb += [
            run.busy.eq(sequencer.busy), run.done.eq(sequencer.done),
            run.layer_index.eq(sequencer.layer_index), run.events.eq(sequencer.events),
            sequencer.start.eq(run.start), sequencer.layer_count.eq(run.layer_count),
            sequencer.descriptor.eq(layer),
            control.system_registers.action.eq(argmax.index), control.system_registers.action_value.eq(argmax.value),
            memory.weights.read_data.eq(Cat(slice_.b.read_data for slice_ in weight_slices)),
            memory.activations0.read_data.eq(activations[0].a.read_data),
            memory.activations1.read_data.eq(activations[1].a.read_data),
        ]

        # ---- Matrix modules: scalar from the feeder, vector = slot m of the weight word, or in a
        # reduction step the elements m*lanes .. m*lanes+lanes-1 of the input RAM's word on port 1 ------
        input_ram = Mux(layer.in_ram, 1, 0)
        input_row1 = Mux(input_ram, activations[1].b.read_data, activations[0].b.read_data)
        results = []
        module_name = f"{config.name}_matrix_module"
        for index in range(config.modules):
            module = instantiate_separately(
                m, self, lambda: MatrixModule(lanes=config.lanes, fmt=config.fmt,
                                              multiplier_latency=config.multiplier_latency,
                                              adder_latency=config.adder_latency),
                module_name=module_name, instance_name=f"matrix_module{index}")
            operands = module.operands.payload
            m.d.comb += [
                module.operands.valid.eq(sequencer.products.valid),
                operands.scalar.eq(feeder.scalars[index]),
                operands.vector.eq(self._module_vector(index, weight_slices[index].a.read_data, input_row1,
                                                       sequencer.products.payload.vector_from_activations)),
                operands.count.eq(layer.products + 1),
                operands.relu.eq(layer.relu),
            ]
            results.append(module.result.payload)
            if index == 0:
                first_module = module

        # ---- Feeder: rows from the layer's input RAM --------------------------------------------
        m.d.comb += [
            feeder.row0.eq(Mux(input_ram, activations[1].a.read_data, activations[0].a.read_data)),
            feeder.row1.eq(input_row1),
            feeder.load.eq(sequencer.load), feeder.shift.eq(sequencer.shift), feeder.bias.eq(sequencer.bias),
            feeder.tap_slot.eq(sequencer.tap_slot), feeder.tap_column.eq(sequencer.tap_column),
        ]
        for slice_ in weight_slices:
            m.d.comb += [slice_.a.address.eq(sequencer.weight_address), slice_.a.read_enable.eq(sequencer.weight_read)]

        # ---- Writer: results into the layer's output RAM ----------------------------------------
        m.d.comb += [
            writer.results.valid.eq(first_module.result.valid), writer.results.payload.eq(Cat(*results)),
            writer.group.eq(sequencer.group), writer.layer.eq(layer),
            sequencer.group_written.eq(writer.done),
        ]
        candidates = argmax.candidates.payload
        m.d.comb += [
            argmax.clear.eq(sequencer.start),
            argmax.candidates.valid.eq(writer.busy & layer.last & layer.packed_output),
            candidates.values.eq(writer.write_data.as_value()[:vector_bits]), candidates.mask.eq(writer.lane_enable),
            candidates.base_index.eq(writer.packed_index),
        ]

        # ---- RAM ports: the datapath while busy, the host otherwise -------------------------------
        for index, ram in enumerate(activations):
            reading = sequencer.busy & (layer.in_ram == index)
            writing = sequencer.busy & (layer.out_ram == index)
            host_name = f"activations{index}"
            # Port 1 reads for the datapath; port 0 writes the layer's results, or else reads (a reduction
            # layer may read and write one RAM: it reads on port 1 only).
            with m.If(reading):
                m.d.comb += [ram.b.address.eq(sequencer.row_address1), ram.b.read_enable.eq(sequencer.row_read)]
            with m.If(writing):
                m.d.comb += [ram.a.address.eq(writer.write_address), ram.a.write_data.eq(writer.write_data),
                             ram.a.write_enable.eq(Mux(writer.busy, writer.write_enable, 0))]
            with m.Elif(reading):
                m.d.comb += [ram.a.address.eq(sequencer.row_address0), ram.a.read_enable.eq(sequencer.row_read)]
            with m.Else():
                host = getattr(memory, host_name)
                m.d.comb += [ram.a.address.eq(host.address), ram.a.write_data.eq(host.write_data),
                             ram.a.read_enable.eq(host.read), ram.a.write_enable.eq(Mux(host.write, -1, 0))]
        for index, slice_ in enumerate(weight_slices):
            m.d.comb += [slice_.b.address.eq(memory.weights.address),
                         slice_.b.write_data.eq(memory.weights.write_data.word_select(index, vector_bits)),
                         slice_.b.read_enable.eq(memory.weights.read),
                         slice_.b.write_enable.eq(memory.weights.write)]
        return m
