"""The CapsNet accelerator (SPEC section 3): conv and matrix-vector engines, RAMs, descriptor table, host port."""

import enum

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring

from nnaccel.hw.capsnet.config import CapsNetConfig, OPERAND_BITS
from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.descriptor import LayerKind, descriptor_layout
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.hw.shared.banked_buffer import instantiate_banked_buffer
from nnaccel.hw.shared.host_control import HostControl, MemoryTarget
from nnaccel.hw.shared.host_port import HostPortAccelerator

__all__ = ["CapsNetAccelerator", "CapsNetMemory"]

BANK_DEPTH = 4096               # words per RAM bank (see hw.shared.banked_buffer)


class CapsNetMemory(MemoryTarget):
    """The CapsNet accelerator's memories on the host port (after the common targets of :class:`HostTarget`)."""
    CONV_WEIGHTS = enum.auto()
    BIASES = enum.auto()
    MATVEC_WEIGHTS = enum.auto()
    ACTIVATIONS0 = enum.auto()
    ACTIVATIONS1 = enum.auto()
    PREDICTIONS = enum.auto()


class CapsNetAccelerator(HostPortAccelerator):
    """Steps 1 and 2 of the CapsNet (convolutions, prediction vectors) from a table of layer descriptors.

    Datapath: :class:`~hw.capsnet.conv_engine.CapsNetConvEngine` (``conv_modules x conv_lanes`` int8 MACs) runs the
    convolution layers between two ping-pong activation RAMs; :class:`~hw.capsnet.matvec_engine.CapsNetMatvecEngine`
    (``matvec_lanes`` MACs) reads the PrimaryCaps output in place and writes the prediction vectors to the
    prediction RAM, which the host reads for the routing (steps 3-6).  Memories (all
    :class:`~hw.shared.dual_port_buffer.DualPortBuffer`): activation RAMs 0/1 (``row_elements`` int8 per word, byte write
    enables), conv weights (``conv_modules`` int8 per word), biases (``conv_modules`` int32), matrix-vector
    weights and predictions (``matvec_lanes`` int8), deep ones built from banks of 4,096 words
    (:mod:`hw.shared.banked_buffer`).  docs/capsnet_accelerator.md has the mapping, the descriptor and the register map.

    Ports: ``host`` (In :class:`~hw.shared.host_port.HostPortSignature` of ``config.host_data_bits``: requests,
    reads answered on the next cycle, ``busy`` and ``done``; ``done`` stays high from the end of a run until the
    next START), served by :class:`~hw.shared.host_control.HostControl` with the memories
    :class:`CapsNetMemory`.  Host memory accesses are ignored while ``busy``.

    Timing: a layer starts 1 cycle after the previous one's engine reports done; the engines' own timing is in
    their docstrings.  Counters per layer (cycles, product cycles, stall cycles, drain cycles) and the run's
    total are readable as control registers.

    FPGA (Cyclone V 5CSEMA5): the engines' multipliers in DSP blocks (``config.dsp_blocks``) or ALMs; the RAMs in
    M10K blocks for the reduced CapsNet; the full CapsNet's weights (5.3 MB) exceed the chip's 4 Mbit and would
    stream from SDRAM (see docs/capsnet_accelerator.md for the bandwidth this needs).
    """

    def __init__(self, *, config=CapsNetConfig()):
        super().__init__(config, CapsNetConfig)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        m.submodules.conv = conv = CapsNetConvEngine(config=config)
        m.submodules.matvec = matvec = CapsNetMatvecEngine(config=config)

        def ram(instance_name, width, depth, granularity=None):
            return instantiate_banked_buffer(m, width=width, depth=depth, bank_depth=BANK_DEPTH,
                                             granularity=granularity, instance_name=instance_name)

        activations = [ram(f"activations{index}", config.activation_word_bits, config.activation_depth, OPERAND_BITS)
                       for index in range(2)]
        conv_weights = ram("conv_weights", config.conv_weight_word_bits, config.conv_weight_depth)
        biases = ram("biases", config.bias_word_bits, config.bias_depth)
        matvec_weights = ram("matvec_weights", config.matvec_word_bits, config.matvec_weight_depth)
        predictions = ram("predictions", config.matvec_word_bits, config.prediction_depth)

        # ---- Host control, descriptor table and the layer sequencer ---------------------------------------
        # The port of each memory the host uses (the one the engines leave free, or share when idle).
        host_ports = {CapsNetMemory.CONV_WEIGHTS: conv_weights.b, CapsNetMemory.BIASES: biases.b,
                      CapsNetMemory.MATVEC_WEIGHTS: matvec_weights.b, CapsNetMemory.ACTIVATIONS0: activations[0].a,
                      CapsNetMemory.ACTIVATIONS1: activations[1].a, CapsNetMemory.PREDICTIONS: predictions.b}
        m.submodules.control = control = HostControl(
            data_bits=config.host_data_bits, max_layers=config.max_layers, descriptor_layout=descriptor_layout(config),
            memories={target: len(port.read_data) for target, port in host_ports.items()})
        wiring.connect(m, wiring.flipped(self.host), control.host)
        layer_index = Signal(range(config.max_layers))
        layer_count = Signal.like(control.run.layer_count)
        busy, done = Signal(), Signal()
        run = control.run
        layer = run.descriptor
        m.d.comb += [run.layer_index.eq(layer_index), run.busy.eq(busy), run.done.eq(done),
                     conv.layer.eq(layer), matvec.layer.eq(layer),
                     run.events.issue.eq(conv.issue | matvec.issue), run.events.stall.eq(conv.stall),
                     run.events.draining.eq(conv.draining | matvec.draining)]
        is_conv = layer.kind == LayerKind.CONV
        engine_done = Mux(is_conv, conv.done, matvec.done)
        with m.FSM():
            with m.State("IDLE"):
                with m.If(run.start):
                    m.d.sync += [layer_index.eq(0), layer_count.eq(run.layer_count), done.eq(0)]
                    m.next = "LAUNCH"
            with m.State("LAUNCH"):
                m.d.comb += [busy.eq(1), conv.start.eq(is_conv), matvec.start.eq(~is_conv)]
                m.next = "WAIT"
            with m.State("WAIT"):
                m.d.comb += busy.eq(1)
                with m.If(engine_done):
                    with m.If(layer_index + 1 >= layer_count):
                        m.d.sync += done.eq(1)
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += layer_index.eq(layer_index + 1)
                        m.next = "LAUNCH"

        # ---- Memory ports: the engines while busy, the host otherwise ----------------------------------------
        def host_port(target):
            port, host = host_ports[target], getattr(control.memory, target.name.lower())
            m.d.comb += [port.address.eq(host.address), port.write_data.eq(host.write_data),
                         port.write_enable.eq(Mux(host.write, -1, 0)), port.read_enable.eq(host.read)]

        for index, ram in enumerate(activations):
            conv_reads = conv.busy & (layer.in_ram == index)
            matvec_reads = matvec.busy & (layer.in_ram == index)
            with m.If(conv_reads):
                m.d.comb += [ram.a.address.eq(conv.row_address), ram.a.read_enable.eq(conv.row_read)]
            with m.Elif(matvec_reads):
                m.d.comb += [ram.a.address.eq(matvec.read_address), ram.a.read_enable.eq(matvec.read_enable)]
            with m.Else():
                host_port(CapsNetMemory(CapsNetMemory.ACTIVATIONS0 + index))
            with m.If(conv.busy & (layer.out_ram == index)):
                m.d.comb += [ram.b.address.eq(conv.write_address), ram.b.write_data.eq(conv.write_data),
                             ram.b.write_enable.eq(conv.write_enable)]
        input_ram = layer.in_ram
        m.d.comb += [conv.row_data.eq(Mux(input_ram, activations[1].a.read_data, activations[0].a.read_data)),
                     matvec.read_data.eq(Mux(input_ram, activations[1].a.read_data, activations[0].a.read_data))]

        engine_reads = ((conv_weights, conv.weight_address, conv.weight_read, conv.weight_data,
                         CapsNetMemory.CONV_WEIGHTS),
                        (biases, conv.bias_address, conv.bias_read, conv.bias_data, CapsNetMemory.BIASES),
                        (matvec_weights, matvec.weight_address, matvec.weight_read, matvec.weight_data,
                         CapsNetMemory.MATVEC_WEIGHTS))
        for ram, address, read, data, target in engine_reads:
            m.d.comb += [ram.a.address.eq(address), ram.a.read_enable.eq(read), data.eq(ram.a.read_data)]
            host_port(target)
        m.d.comb += [predictions.a.address.eq(matvec.write_address), predictions.a.write_data.eq(matvec.write_data),
                     predictions.a.write_enable.eq(matvec.write_enable)]
        host_port(CapsNetMemory.PREDICTIONS)
        for target, port in host_ports.items():
            m.d.comb += getattr(control.memory, target.name.lower()).read_data.eq(port.read_data)
        return m
