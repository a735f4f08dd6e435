"""The Atari DQN accelerator (SPEC section 1): matrix modules, feeder, writer and RAMs under a host interface."""

from amaranth.hdl import Array, Cat, Module, Mux, Signal
from amaranth.lib import wiring

from hw.dqn.config import DqnConfig
from hw.shared.host_port import host_port_members
from hw.shared.dual_port_buffer import DualPortBuffer
from hw.dqn.float_argmax import FloatArgmax
from hw.dqn.descriptor import descriptor_layout
from hw.dqn.sequencer import LayerSequencer
from hw.dqn.matrix_module import MatrixModule
from hw.dqn.result_writer import ResultWriter
from hw.shared.separate_module import instantiate_separately
from hw.dqn.window_feeder import WindowFeeder

__all__ = ["DqnAccelerator", "HostTarget", "ControlRegister", "COUNTERS_PER_LAYER", "LAYER_COUNTER_BASE"]


class HostTarget:
    CONTROL, DESCRIPTORS, WEIGHTS, ACTIVATIONS0, ACTIVATIONS1 = range(5)


class ControlRegister:
    START, STATUS, ACTION, ACTION_VALUE, TOTAL_CYCLES = range(5)


LAYER_COUNTER_BASE = 16
COUNTERS_PER_LAYER = 4          # cycles, product cycles, stall cycles, drain cycles
COUNTER_BITS = 40


class DqnAccelerator(wiring.Component):
    """``config.modules`` matrix modules of ``config.lanes`` float MACs running a table of layer descriptors.

    See docs/dqn_accelerator.md for the datapath, the layer mapping, the descriptor and the register
    map. Ports: ``host_write``, ``host_read`` (In 1), ``host_target`` (In 3), ``host_address`` (In 20),
    ``host_write_data`` (In ``config.host_data_bits``), ``host_read_data`` (Out, same width) with
    ``host_read_valid`` (Out 1) on the cycle after ``host_read``; ``busy`` and ``done`` (Out 1).

    Timing: ``products + 1`` cycles per group of output positions, groups back to back; per layer a
    few cycles of set-up and the drain of the last group (matrix module latency + its writes).
    The thesis network: 11,945 cycles per inference with the default configuration (`nnaccel run dqn`).

    FPGA (Stratix V, default configuration): 256 DSP blocks for the multipliers (one binary32
    multiplier each), the adders and the feeder/writer muxes in ALMs, the weight RAM (16 slices of
    4096 x 512 bits, one per matrix module) and the two activation RAMs (1024 x 2688 bits) in M20K blocks.
    """

    def __init__(self, *, config=DqnConfig()):
        if not isinstance(config, DqnConfig):
            raise TypeError(f"config must be a DqnConfig, not {config!r}")
        self._config = config
        super().__init__(host_port_members(config.host_data_bits))

    @property
    def config(self):
        return self._config

    @property
    def module_name(self):
        return self._config.module_name

    @property
    def verilog_cache_key(self):
        """Generating this design's Verilog takes a minute; ``sim.verilog`` caches it under this key."""
        return repr(self._config)

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
        width = config.fmt.width
        m.submodules.sequencer = sequencer = LayerSequencer(config=config)
        m.submodules.feeder = feeder = WindowFeeder(config=config)
        m.submodules.writer = writer = ResultWriter(config=config)
        m.submodules.argmax = argmax = FloatArgmax(fmt=config.fmt, lanes=config.lanes)
        # The weight RAM is one slice per matrix module (slot m of every word), the activation RAMs two
        # identical buffers: each distinct RAM is generated once (see hw.shared.separate_module).
        vector_bits = config.lanes * width
        weight_slices = [
            instantiate_separately(m, self, lambda: DualPortBuffer(width=vector_bits, depth=config.weight_depth),
                                   module_name=f"{config.name}_weight_slice", instance_name=f"weights{index}")
            for index in range(config.modules)]
        activations = [
            instantiate_separately(m, self, lambda: DualPortBuffer(width=config.activation_word_bits,
                                                                   depth=config.activation_depth, granularity=width),
                                   module_name=f"{config.name}_activation_ram", instance_name=f"activations{index}")
            for index in range(2)]

        # ---- Descriptor table and the current layer ---------------------------------------------
        layout = descriptor_layout(config)
        table = Array(Signal(layout, name=f"descriptor{index}") for index in range(config.max_layers))
        layer = Signal(layout)
        m.d.comb += [layer.eq(table[sequencer.layer_index]), sequencer.descriptor.eq(layer)]

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
            m.d.comb += [
                module.in_valid.eq(sequencer.product_valid),
                module.scalar.eq(feeder.scalars[index * width:(index + 1) * width]),
                module.vector.eq(self._module_vector(index, weight_slices[index].a.read_data, input_row1,
                                                     sequencer.vector_from_activations)),
                module.count.eq(layer.products + 1),
                module.relu.eq(layer.relu),
            ]
            results.append(module.result)
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
            writer.results_valid.eq(first_module.out_valid), writer.results.eq(Cat(*results)),
            writer.group_p0.eq(sequencer.group_p0), writer.group_oy0.eq(sequencer.group_oy0),
            writer.group_ox0.eq(sequencer.group_ox0),
            writer.out_base.eq(layer.out_base), writer.out_height.eq(layer.out_height),
            writer.out_width.eq(layer.out_width), writer.positions.eq(layer.positions),
            writer.out_channels.eq(layer.out_channels), writer.column_blocks_log2.eq(layer.column_blocks_log2),
            writer.packed_output.eq(layer.packed_output), writer.position_major.eq(layer.position_major),
            writer.first_position.eq(layer.first_position),
            sequencer.group_written.eq(writer.done),
        ]
        m.d.comb += [
            argmax.clear.eq(sequencer.start), argmax.in_valid.eq(writer.busy & layer.last & layer.packed_output),
            argmax.values.eq(writer.write_data[:vector_bits]), argmax.mask.eq(writer.lane_enable),
            argmax.base_index.eq(writer.packed_index),
        ]

        # ---- RAM ports: the datapath while busy, the host otherwise -------------------------------
        host_memory = ~sequencer.busy
        host_read_enable = self.host_read & host_memory
        host_write_enable = self.host_write & host_memory
        for index, ram in enumerate(activations):
            reading = sequencer.busy & (layer.in_ram == index)
            writing = sequencer.busy & (layer.out_ram == index)
            host_selected = self.host_target == HostTarget.ACTIVATIONS0 + index
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
                m.d.comb += [ram.a.address.eq(self.host_address), ram.a.write_data.eq(self.host_write_data),
                             ram.a.read_enable.eq(host_read_enable & host_selected),
                             ram.a.write_enable.eq(Mux(host_write_enable & host_selected, -1, 0))]
        weights_selected = self.host_target == HostTarget.WEIGHTS
        for index, slice_ in enumerate(weight_slices):
            m.d.comb += [slice_.b.address.eq(self.host_address),
                         slice_.b.write_data.eq(self.host_write_data[index * vector_bits:(index + 1) * vector_bits]),
                         slice_.b.read_enable.eq(host_read_enable & weights_selected),
                         slice_.b.write_enable.eq(host_write_enable & weights_selected)]
        with m.If(host_write_enable & (self.host_target == HostTarget.DESCRIPTORS)):
            m.d.sync += table[self.host_address[:6]].eq(self.host_write_data[:layout.size])

        # ---- Control: start, status, performance counters ---------------------------------------
        start = self.host_write & (self.host_target == HostTarget.CONTROL) & \
            (self.host_address == ControlRegister.START) & ~sequencer.busy
        m.d.comb += [sequencer.start.eq(start), sequencer.layer_count.eq(self.host_write_data[:6]),
                     self.busy.eq(sequencer.busy), self.done.eq(sequencer.done)]
        total_cycles = Signal(COUNTER_BITS)
        counters = [Signal(COUNTER_BITS, name=f"layer{layer_index}_counter{kind}")
                    for layer_index in range(config.max_layers) for kind in range(COUNTERS_PER_LAYER)]
        with m.If(start):
            m.d.sync += [total_cycles.eq(0)] + [counter.eq(0) for counter in counters]
        with m.Elif(sequencer.busy):
            m.d.sync += total_cycles.eq(total_cycles + 1)
            for layer_index in range(config.max_layers):
                cycles, products, stalls, drains = counters[layer_index * 4:layer_index * 4 + 4]
                with m.If(sequencer.layer_index == layer_index):
                    m.d.sync += cycles.eq(cycles + 1)
                    with m.If(sequencer.issue):
                        m.d.sync += products.eq(products + 1)
                    with m.If(sequencer.stall):
                        m.d.sync += stalls.eq(stalls + 1)
                    with m.If(sequencer.draining):
                        m.d.sync += drains.eq(drains + 1)

        registers = {ControlRegister.STATUS: Cat(sequencer.busy, sequencer.done),
                     ControlRegister.ACTION: argmax.index, ControlRegister.ACTION_VALUE: argmax.value,
                     ControlRegister.TOTAL_CYCLES: total_cycles}
        registers.update({LAYER_COUNTER_BASE + index: counter for index, counter in enumerate(counters)})
        control_value = Signal(COUNTER_BITS)
        with m.Switch(self.host_address):
            for address, value in registers.items():
                with m.Case(address):
                    m.d.comb += control_value.eq(value)

        # ---- Host reads: one cycle later, from a register or the selected RAM ---------------------
        read_target = Signal(3)
        read_control = Signal(COUNTER_BITS)
        m.d.sync += [self.host_read_valid.eq(self.host_read), read_target.eq(self.host_target),
                     read_control.eq(control_value)]
        with m.Switch(read_target):
            with m.Case(HostTarget.CONTROL):
                m.d.comb += self.host_read_data.eq(read_control)
            with m.Case(HostTarget.WEIGHTS):
                m.d.comb += self.host_read_data.eq(Cat(slice_.b.read_data for slice_ in weight_slices))
            with m.Case(HostTarget.ACTIVATIONS0):
                m.d.comb += self.host_read_data.eq(activations[0].a.read_data)
            with m.Case(HostTarget.ACTIVATIONS1):
                m.d.comb += self.host_read_data.eq(activations[1].a.read_data)
        return m
