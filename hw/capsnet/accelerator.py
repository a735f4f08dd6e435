"""The CapsNet accelerator (SPEC section 3): conv and matrix-vector engines, RAMs, descriptor table, host port."""

import enum

from amaranth.hdl import Module
from amaranth.lib import wiring

from nnaccel.hw.capsnet.config import CapsNetConfig, OPERAND_BITS
from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.descriptor import descriptor_layout
from nnaccel.hw.capsnet.layer_sequencer import CapsNetLayerSequencer, EngineOwner
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.hw.shared.banked_buffer import instantiate_banked_buffer
from nnaccel.hw.shared.buffer_port_demux import BufferPortDemux
from nnaccel.hw.shared.buffer_port_mux import BufferPortMux
from nnaccel.hw.shared.host_memory_bridge import HostMemoryBridge
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

    Blocks: :class:`~hw.capsnet.layer_sequencer.CapsNetLayerSequencer` takes HostControl's ``run`` and runs each
    engine through an :class:`~hw.capsnet.engine_control.EngineControlSignature`; every RAM port is a
    :class:`~hw.shared.dual_port_buffer.BufferPortSignature`: the engines' weight, bias and prediction ports on
    port a of their RAMs and the host (:class:`~hw.shared.host_memory_bridge.HostMemoryBridge`) on port b; each engine's
    activation port reaches either activation RAM through a :class:`~hw.shared.buffer_port_demux.BufferPortDemux`
    (the descriptor's ``in_ram`` / ``out_ram``), and port a of each activation RAM is shared by the two engines'
    reads and the host through a :class:`~hw.shared.buffer_port_mux.BufferPortMux` (the sequencer's
    ``activation_owner``); all joined by ``wiring.connect``.  Only the muxes' and demuxes' selects are assigned.

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

        def ram(instance_name, width, depth):
            return instantiate_banked_buffer(m, width=width, depth=depth, bank_depth=BANK_DEPTH,
                                             granularity=OPERAND_BITS, instance_name=instance_name)

        activations = [ram(f"activations{index}", config.activation_word_bits, config.activation_depth)
                       for index in range(2)]
        conv_weights = ram("conv_weights", config.conv_weight_word_bits, config.conv_weight_depth)
        biases = ram("biases", config.bias_word_bits, config.bias_depth)
        matvec_weights = ram("matvec_weights", config.matvec_word_bits, config.matvec_weight_depth)
        predictions = ram("predictions", config.matvec_word_bits, config.prediction_depth)

        # ---- Host control and the layer sequencer ---------------------------------------------------------
        m.submodules.control = control = HostControl(
            data_bits=config.host_data_bits, max_layers=config.max_layers, descriptor_layout=descriptor_layout(config),
            memories={CapsNetMemory.CONV_WEIGHTS: config.conv_weight_word_bits,
                      CapsNetMemory.BIASES: config.bias_word_bits,
                      CapsNetMemory.MATVEC_WEIGHTS: config.matvec_word_bits,
                      CapsNetMemory.ACTIVATIONS0: config.activation_word_bits,
                      CapsNetMemory.ACTIVATIONS1: config.activation_word_bits,
                      CapsNetMemory.PREDICTIONS: config.matvec_word_bits})
        wiring.connect(m, wiring.flipped(self.host), control.host)
        m.submodules.sequencer = sequencer = CapsNetLayerSequencer(config=config)
        wiring.connect(m, control.run, sequencer.run)
        wiring.connect(m, sequencer.conv, conv.control)
        wiring.connect(m, sequencer.matvec, matvec.control)

        def host_port(target, ram_port):
            """The host's port into ``ram_port`` (a RAM's port, or a multiplexer's initiator)."""
            bridge = m.submodules[f"host_{target.name.lower()}"] = HostMemoryBridge(buffer=ram_port.signature.flip())
            wiring.connect(m, getattr(control.memory, target.name.lower()), bridge.host)
            wiring.connect(m, bridge.buffer, ram_port)

        # ---- Weights and predictions: the engine on port a, the host on port b -------------------------------
        wiring.connect(m, conv.weights, conv_weights.a)
        wiring.connect(m, conv.biases, biases.a)
        wiring.connect(m, matvec.weights, matvec_weights.a)
        wiring.connect(m, matvec.predictions, predictions.a)
        host_port(CapsNetMemory.CONV_WEIGHTS, conv_weights.b)
        host_port(CapsNetMemory.BIASES, biases.b)
        host_port(CapsNetMemory.MATVEC_WEIGHTS, matvec_weights.b)
        host_port(CapsNetMemory.PREDICTIONS, predictions.b)

        # ---- Activations: port a read by the running engine (in_ram) or used by the host, port b written ----
        # by the conv engine (out_ram).
        ram_ports = {f"ram{index}": ram.a.signature.flip() for index, ram in enumerate(activations)}
        m.submodules.conv_reads = conv_reads = BufferPortDemux(initiator=conv.inputs.signature, targets=ram_ports)
        m.submodules.matvec_reads = matvec_reads = BufferPortDemux(initiator=matvec.inputs.signature,
                                                                   targets=ram_ports)
        m.submodules.conv_writes = conv_writes = BufferPortDemux(initiator=conv.outputs.signature, targets=ram_ports)
        wiring.connect(m, conv.inputs, conv_reads.initiator)
        wiring.connect(m, matvec.inputs, matvec_reads.initiator)
        wiring.connect(m, conv.outputs, conv_writes.initiator)
        # The RAM an engine reads and the one the conv engine writes: the current descriptor's fields.
        layer = control.run.descriptor
        m.d.comb += [conv_reads.select.eq(layer.in_ram), matvec_reads.select.eq(layer.in_ram),
                     conv_writes.select.eq(layer.out_ram)]
        for index, ram in enumerate(activations):
            name = f"ram{index}"
            shared = m.submodules[f"activations{index}_port_a"] = BufferPortMux(port=ram_ports[name],
                                                                               count=len(EngineOwner))
            wiring.connect(m, shared.target, ram.a)
            wiring.connect(m, getattr(conv_reads.targets, name), shared.initiators[EngineOwner.CONV])
            wiring.connect(m, getattr(matvec_reads.targets, name), shared.initiators[EngineOwner.MATVEC])
            host_port(CapsNetMemory(CapsNetMemory.ACTIVATIONS0 + index), shared.initiators[EngineOwner.HOST])
            # Every RAM's shared port goes to the same owner: the running engine (its demultiplexer picks the RAM).
            m.d.comb += shared.select.eq(sequencer.activation_owner)
            wiring.connect(m, getattr(conv_writes.targets, name), ram.b)
        return m
