"""The CapsNet accelerator (SPEC section 3): conv and matrix-vector engines, RAMs, descriptor table, host port."""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring

from hw.capsnet.config import CapsNetConfig, OPERAND_BITS
from hw.capsnet.conv_engine import CapsNetConvEngine
from hw.capsnet.descriptor import LayerKind, descriptor_layout
from hw.capsnet.matvec_engine import CapsNetMatvecEngine
from hw.shared.host_port import host_port_members
from hw.shared.banked_buffer import instantiate_banked_buffer

__all__ = ["CapsNetAccelerator", "HostTarget", "ControlRegister", "LAYER_COUNTER_BASE", "COUNTERS_PER_LAYER"]


class HostTarget:
    CONTROL, DESCRIPTORS, CONV_WEIGHTS, BIASES, MATVEC_WEIGHTS, ACTIVATIONS0, ACTIVATIONS1, PREDICTIONS = range(8)


class ControlRegister:
    START, STATUS, TOTAL_CYCLES = range(3)


LAYER_COUNTER_BASE = 16
COUNTERS_PER_LAYER = 4          # cycles, product cycles, stall cycles, drain cycles
COUNTER_BITS = 40
BANK_DEPTH = 4096               # words per RAM bank (see hw.shared.banked_buffer)


class CapsNetAccelerator(wiring.Component):
    """Steps 1 and 2 of the CapsNet (convolutions, prediction vectors) from a table of layer descriptors.

    Datapath: :class:`~hw.capsnet.conv_engine.CapsNetConvEngine` (``conv_modules x conv_lanes`` int8 MACs) runs the
    convolution layers between two ping-pong activation RAMs; :class:`~hw.capsnet.matvec_engine.CapsNetMatvecEngine`
    (``matvec_lanes`` MACs) reads the PrimaryCaps output in place and writes the prediction vectors to the
    prediction RAM, which the host reads for the routing (steps 3-6).  Memories (all
    :class:`~hw.shared.dual_port_buffer.DualPortBuffer`): activation RAMs 0/1 (``row_elements`` int8 per word, byte write
    enables), conv weights (``conv_modules`` int8 per word), biases (``conv_modules`` int32), matrix-vector
    weights and predictions (``matvec_lanes`` int8), deep ones built from banks of 4,096 words
    (:mod:`hw.shared.banked_buffer`).  docs/capsnet_accelerator.md has the mapping, the descriptor and the register map.

    Ports: ``host_write``, ``host_read`` (In 1), ``host_target`` (In 3, :class:`HostTarget`), ``host_address``
    (In 20), ``host_write_data`` (In ``config.host_data_bits``), ``host_read_data`` (Out, same width) with
    ``host_read_valid`` (Out 1) on the cycle after ``host_read``; ``busy``, ``done`` (Out 1; ``done`` stays high
    from the end of a run until the next START).  Host memory accesses are ignored while ``busy``.

    Timing: a layer starts 1 cycle after the previous one's engine reports done; the engines' own timing is in
    their docstrings.  Counters per layer (cycles, product cycles, stall cycles, drain cycles) and the run's
    total are readable as control registers.

    FPGA (Cyclone V 5CSEMA5): the engines' multipliers in DSP blocks (``config.dsp_blocks``) or ALMs; the RAMs in
    M10K blocks for the reduced CapsNet; the full CapsNet's weights (5.3 MB) exceed the chip's 4 Mbit and would
    stream from SDRAM (see docs/capsnet_accelerator.md for the bandwidth this needs).
    """

    def __init__(self, *, config=CapsNetConfig()):
        if not isinstance(config, CapsNetConfig):
            raise TypeError(f"config must be a CapsNetConfig, not {config!r}")
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
        return repr(self._config)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        m.submodules.conv = conv = CapsNetConvEngine(config=config)
        m.submodules.matvec = matvec = CapsNetMatvecEngine(config=config)

        def ram(instance_name, width, depth, granularity=None):
            bank = min(depth, BANK_DEPTH)
            return instantiate_banked_buffer(
                m, self, width=width, depth=depth, bank_depth=BANK_DEPTH, granularity=granularity,
                module_name=f"{config.name}_ram_w{width}_d{bank}{'_g' if granularity else ''}",
                instance_name=instance_name)

        activations = [ram(f"activations{index}", config.activation_word_bits, config.activation_depth, OPERAND_BITS)
                       for index in range(2)]
        conv_weights = ram("conv_weights", config.conv_weight_word_bits, config.conv_weight_depth)
        biases = ram("biases", config.bias_word_bits, config.bias_depth)
        matvec_weights = ram("matvec_weights", config.matvec_word_bits, config.matvec_weight_depth)
        predictions = ram("predictions", config.matvec_word_bits, config.prediction_depth)

        # ---- Descriptor table and the layer sequencer ----------------------------------------------------
        layout = descriptor_layout(config)
        table = Array(Signal(layout, name=f"descriptor{index}") for index in range(config.max_layers))
        layer_index = Signal(range(config.max_layers))
        layer_count = Signal(range(config.max_layers + 1))
        layer = Signal(layout)
        m.d.comb += [layer.eq(table[layer_index]), conv.layer.eq(layer), matvec.layer.eq(layer)]
        is_conv = layer.kind == LayerKind.CONV
        start = (self.host_write & (self.host_target == HostTarget.CONTROL)
                 & (self.host_address == ControlRegister.START) & ~self.busy)
        engine_done = Mux(is_conv, conv.done, matvec.done)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(start):
                    m.d.sync += [layer_index.eq(0), layer_count.eq(self.host_write_data[:len(layer_count)]),
                                 self.done.eq(0)]
                    m.next = "LAUNCH"
            with m.State("LAUNCH"):
                m.d.comb += [self.busy.eq(1), conv.start.eq(is_conv), matvec.start.eq(~is_conv)]
                m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += self.busy.eq(1)
                with m.If(engine_done):
                    with m.If(layer_index + 1 >= layer_count):
                        m.d.sync += self.done.eq(1)
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += layer_index.eq(layer_index + 1)
                        m.next = "LAUNCH"

        # ---- Memory ports: the engines while busy, the host otherwise -------------------------------------
        host_read = self.host_read & ~self.busy
        host_write = self.host_write & ~self.busy

        def host_port(port, target, *, read=True):
            selected = self.host_target == target
            m.d.comb += [port.address.eq(self.host_address), port.write_data.eq(self.host_write_data),
                         port.write_enable.eq(Mux(host_write & selected, -1, 0))]
            if read:
                m.d.comb += port.read_enable.eq(host_read & selected)

        for index, ram in enumerate(activations):
            conv_reads = conv.busy & (layer.in_ram == index)
            matvec_reads = matvec.busy & (layer.in_ram == index)
            with m.If(conv_reads):
                m.d.comb += [ram.a.address.eq(conv.row_address), ram.a.read_enable.eq(conv.row_read)]
            with m.Elif(matvec_reads):
                m.d.comb += [ram.a.address.eq(matvec.read_address), ram.a.read_enable.eq(matvec.read_enable)]
            with m.Else():
                host_port(ram.a, HostTarget.ACTIVATIONS0 + index)
            with m.If(conv.busy & (layer.out_ram == index)):
                m.d.comb += [ram.b.address.eq(conv.write_address), ram.b.write_data.eq(conv.write_data),
                             ram.b.write_enable.eq(conv.write_enable)]
        input_ram = layer.in_ram
        m.d.comb += [conv.row_data.eq(Mux(input_ram, activations[1].a.read_data, activations[0].a.read_data)),
                     matvec.read_data.eq(Mux(input_ram, activations[1].a.read_data, activations[0].a.read_data))]

        engine_reads = ((conv_weights, conv.weight_address, conv.weight_read, conv.weight_data,
                         HostTarget.CONV_WEIGHTS),
                        (biases, conv.bias_address, conv.bias_read, conv.bias_data, HostTarget.BIASES),
                        (matvec_weights, matvec.weight_address, matvec.weight_read, matvec.weight_data,
                         HostTarget.MATVEC_WEIGHTS))
        for ram, address, read, data, target in engine_reads:
            m.d.comb += [ram.a.address.eq(address), ram.a.read_enable.eq(read), data.eq(ram.a.read_data)]
            host_port(ram.b, target)
        m.d.comb += [predictions.a.address.eq(matvec.write_address), predictions.a.write_data.eq(matvec.write_data),
                     predictions.a.write_enable.eq(matvec.write_enable)]
        host_port(predictions.b, HostTarget.PREDICTIONS)
        with m.If(host_write & (self.host_target == HostTarget.DESCRIPTORS)):
            m.d.sync += table[self.host_address[:len(layer_index)]].eq(self.host_write_data[:layout.size])

        # ---- Performance counters -------------------------------------------------------------------------
        total_cycles = Signal(COUNTER_BITS)
        counters = [Signal(COUNTER_BITS, name=f"layer{index}_counter{kind}")
                    for index in range(config.max_layers) for kind in range(COUNTERS_PER_LAYER)]
        events = (Const(1), conv.issue | matvec.issue, conv.stall, conv.draining | matvec.draining)
        with m.If(start):
            m.d.sync += [total_cycles.eq(0)] + [counter.eq(0) for counter in counters]
        with m.Elif(self.busy):
            m.d.sync += total_cycles.eq(total_cycles + 1)
            for index in range(config.max_layers):
                with m.If(layer_index == index):
                    for counter, event in zip(counters[index * COUNTERS_PER_LAYER:], events):
                        with m.If(event):
                            m.d.sync += counter.eq(counter + 1)

        registers = {ControlRegister.STATUS: Cat(self.busy, self.done), ControlRegister.TOTAL_CYCLES: total_cycles}
        registers.update({LAYER_COUNTER_BASE + index: counter for index, counter in enumerate(counters)})
        control_value = Signal(COUNTER_BITS)
        with m.Switch(self.host_address):
            for address, value in registers.items():
                with m.Case(address):
                    m.d.comb += control_value.eq(value)

        # ---- Host reads: one cycle later ------------------------------------------------------------------
        read_target = Signal(3)
        read_control = Signal(COUNTER_BITS)
        m.d.sync += [self.host_read_valid.eq(self.host_read), read_target.eq(self.host_target),
                     read_control.eq(control_value)]
        read_sources = {HostTarget.CONTROL: read_control, HostTarget.CONV_WEIGHTS: conv_weights.b.read_data,
                        HostTarget.BIASES: biases.b.read_data, HostTarget.MATVEC_WEIGHTS: matvec_weights.b.read_data,
                        HostTarget.ACTIVATIONS0: activations[0].a.read_data,
                        HostTarget.ACTIVATIONS1: activations[1].a.read_data,
                        HostTarget.PREDICTIONS: predictions.b.read_data}
        with m.Switch(read_target):
            for target, value in read_sources.items():
                with m.Case(target):
                    m.d.comb += self.host_read_data.eq(value)
        return m
