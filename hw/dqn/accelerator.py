"""The Atari DQN accelerator (SPEC section 1): matrix modules, feeder, writer and RAMs under a host interface."""

import enum

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from nnaccel.hw.dqn.activation_buffers import ActivationBuffers
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.hw.dqn.descriptor import descriptor_layout
from nnaccel.hw.dqn.float_argmax import FloatArgmax
from nnaccel.hw.dqn.matrix_module import MatrixModule
from nnaccel.hw.dqn.result_writer import ResultWriter, packed_index_bits
from nnaccel.hw.dqn.sequencer import LayerSequencer
from nnaccel.hw.dqn.streamed_weights import StreamedWeights, load_entry_layout
from nnaccel.hw.dqn.weight_buffer import WeightBuffer
from nnaccel.hw.dqn.window_feeder import WindowFeeder
from nnaccel.hw.shared.buffer_port_mux import BufferPortMux
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature
from nnaccel.hw.shared.host_control import HostControl, MemoryTarget, SystemRegister
from nnaccel.hw.shared.host_memory_bridge import HostMemoryBridge
from nnaccel.hw.shared.host_port import HostPortAccelerator

__all__ = ["DqnAccelerator", "DqnMemory", "DqnRegister"]


class DqnMemory(MemoryTarget):
    """The DQN accelerator's memories on the host port (after the common targets of :class:`HostTarget`)."""
    WEIGHTS = enum.auto()
    ACTIVATIONS0 = enum.auto()
    ACTIVATIONS1 = enum.auto()
    WEIGHT_LOADS = enum.auto()       # external weights: the load table (hw.dqn.streamed_weights) instead of WEIGHTS


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

    Timing: ``products`` cycles per group of output positions (the bias is the accumulations' seed, read on the
    weight RAM's second port), groups back to back, the results written two row words a cycle (both ports of the
    output RAM); per pass a few cycles of set-up, overlapping the previous pass's drain, and the run's last drain
    (matrix module latency + the last group's writes).
    The thesis network: 11,698 cycles per inference with the default configuration, as the compiler predicts them
    (`nnaccel run dqn`).

    Blocks (docs/dqn_accelerator.md): :class:`HostControl`, :class:`LayerSequencer`, :class:`WindowFeeder`,
    ``modules`` x :class:`MatrixModule` (with their max mode where ``config.max_pooling``: max-pool passes, the
    descriptor's ``maximum`` bit), :class:`ResultWriter`, :class:`FloatArgmax`, :class:`WeightBuffer` and
    :class:`ActivationBuffers`, joined by their named interfaces (``wiring.connect``).

    FPGA (Stratix V, default configuration): 256 DSP blocks for the multipliers (one binary32
    multiplier each), the adders and the feeder/writer muxes in ALMs, the weight RAM (16 slices of
    4096 x 512 bits, one per matrix module) and the two activation RAMs (1024 x 2688 bits) in M20K blocks.

    With ``config.external_weights`` the weights are in external memory behind the ``avalon`` port (Out
    :class:`~hw.shared.avalon_master.AvalonMMSignature`): :class:`StreamedWeights` takes the weight RAM's place and
    the host writes the load table (target ``WEIGHT_LOADS``) instead of weight words (docs/dqn_accelerator.md,
    "Weights in external memory").  With ``config.descriptor_ram`` the host control block keeps its descriptor table
    in block RAM (:class:`~hw.shared.descriptor_ram.DescriptorRam`); with ``config.argmax_tiles`` the argmax spans
    every channel tile of the last layer (the writer offsets its index by the descriptor's ``first_channel``).
    """

    def __init__(self, *, config=DqnConfig()):
        external = config.external_weights if isinstance(config, DqnConfig) else False
        super().__init__(config, DqnConfig,
                         ports={"avalon": Out(StreamedWeights.avalon_signature(config))} if external else None)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        weight_memory = ({DqnMemory.WEIGHT_LOADS: load_entry_layout(config).size} if config.external_weights else
                         {DqnMemory.WEIGHTS: config.weight_word_bits})
        m.submodules.control = control = HostControl(
            data_bits=config.host_data_bits, max_layers=config.max_layers, descriptor_layout=descriptor_layout(config),
            memories={**weight_memory, DqnMemory.ACTIVATIONS0: config.activation_word_bits,
                      DqnMemory.ACTIVATIONS1: config.activation_word_bits},
            registers={DqnRegister.ACTION: packed_index_bits(config), DqnRegister.ACTION_VALUE: config.fmt.width},
            descriptor_ram=config.descriptor_ram, counter_ram=config.counter_ram)
        m.submodules.sequencer = sequencer = LayerSequencer(config=config)
        m.submodules.feeder = feeder = WindowFeeder(config=config)
        m.submodules.writer = writer = ResultWriter(config=config)
        m.submodules.argmax = argmax = FloatArgmax(fmt=config.fmt, lanes=config.lanes,
                                                   index_bits=packed_index_bits(config))
        m.submodules.activations = activations = ActivationBuffers(config=config)
        if config.external_weights:
            bias_port = self._streamed_weights(m, control, sequencer)
        else:
            m.submodules.weights = weights = WeightBuffer(config=config)
            weight_port = BufferPortSignature(width=config.weight_word_bits, depth=config.weight_depth)
            m.submodules.weight_host = weight_host = HostMemoryBridge(host=control.memory.weights.signature,
                                                                      buffer=weight_port)
            # The weight RAM's second port: the host's while no run is busy, the bias rows' during a run.
            m.submodules.weight_port_b = weight_port_b = BufferPortMux(port=weight_port, count=2)
            bias_port = weight_port_b.initiators[1]

        # ---- Host control: the host port, the run, the host's memory ports -----------------------------
        wiring.connect(m, wiring.flipped(self.host), control.host)
        wiring.connect(m, control.run, sequencer.run)
        if not config.external_weights:
            wiring.connect(m, control.memory.weights, weight_host.host)
            wiring.connect(m, weight_host.buffer, weight_port_b.initiators[0])
            wiring.connect(m, weight_port_b.target, weights.b)
        wiring.connect(m, control.memory.activations0, activations.host0)
        wiring.connect(m, control.memory.activations1, activations.host1)

        # ---- Datapath: sequencer -> feeder (rows and weights) -> matrix modules -> writer -> RAMs --------
        wiring.connect(m, sequencer.feeder, feeder.control)
        wiring.connect(m, sequencer.select, activations.select)
        wiring.connect(m, sequencer.group, writer.group)
        wiring.connect(m, feeder.rows0, activations.reads0)
        wiring.connect(m, feeder.rows1, activations.reads1)
        wiring.connect(m, feeder.weights, m.submodules.weights.a)
        wiring.connect(m, feeder.biases, bias_port)
        wiring.connect(m, writer.output0, activations.writes0)
        wiring.connect(m, writer.output1, activations.writes1)
        for index in range(config.modules):
            m.submodules[f"matrix_module{index}"] = module = MatrixModule(
                lanes=config.lanes, fmt=config.fmt, multiplier_latency=config.multiplier_latency,
                adder_latency=config.adder_latency, maximum=config.max_pooling)
            wiring.connect(m, feeder.operands[index], module.operands)
            wiring.connect(m, module.result, writer.results[index])

        # ---- The action: the last layer's packed writes through the argmax -----------------------------
        wiring.connect(m, writer.packed, argmax.candidates)
        # Hand connections: a run's start clears the argmax (one bit of the run port, which the sequencer
        # takes whole); the host control block's register struct is this system's own (two fields from the
        # argmax), so neither has a signature to connect.
        m.d.comb += [argmax.clear.eq(control.run.start),
                     *([] if config.external_weights else
                       [weight_port_b.select.eq(sequencer.select.busy)]),     # one bit: the run owns port b
                     control.system_registers.action.eq(argmax.index),
                     control.system_registers.action_value.eq(argmax.value)]
        return m

    def _streamed_weights(self, m, control, sequencer):
        """External weights: :class:`StreamedWeights` as ``m.submodules.weights`` on the tile table's host port,
        the sequencer's tile handshake and the ``avalon`` port; its port b (the bias rows) is returned."""
        m.submodules.weights = weights = StreamedWeights(config=self._config)
        table_port = BufferPortSignature(width=load_entry_layout(self._config).size, depth=self._config.weight_loads)
        m.submodules.load_table_host = table_host = HostMemoryBridge(host=control.memory.weight_loads.signature,
                                                                     buffer=table_port)
        wiring.connect(m, control.memory.weight_loads, table_host.host)
        wiring.connect(m, table_host.buffer, weights.table)
        wiring.connect(m, sequencer.weights, weights.tiles)
        wiring.connect(m, weights.avalon, wiring.flipped(self.avalon))
        return weights.b
