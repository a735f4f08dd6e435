"""The CapsNet accelerator on the DE1-SoC's SDRAM: a whole image streamed through double-buffered tiles (conv1 and
PrimaryCaps on the convolution engine, step 2 on the matrix-vector engine), routing on chip."""

import enum

from amaranth.hdl import Module, Mux
from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from nnaccel.hw.capsnet.conv_engine import CapsNetConvEngine
from nnaccel.hw.capsnet.conv_tile_program import ConvTileProgram
from nnaccel.hw.capsnet.matvec_engine import CapsNetMatvecEngine
from nnaccel.hw.capsnet.routing_engine import CapsNetRoutingEngine
from nnaccel.hw.capsnet.stream_config import CapsNetStreamConfig
from nnaccel.hw.capsnet.stream_descriptor import (PORT_BEATS_BITS, StreamStep, beats_per_word_bits,
                                                  image_descriptor_layout, port_ram_address_bits, routing_word_layout)
from nnaccel.hw.capsnet.stream_sequencer import CapsNetStreamSequencer, PortOwner
from nnaccel.hw.shared.buffer_port_demux import BufferPortDemux
from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.hw.shared.host_memory_bridge import HostMemoryBridge
from nnaccel.hw.shared.host_control import HostControl, MemoryTarget
from nnaccel.hw.shared.host_port import HostPortAccelerator
from nnaccel.hw.shared.tile_port import TilePort

__all__ = ["CapsNetStreamingAccelerator", "StreamMemory"]


class StreamMemory(MemoryTarget):
    """The streaming accelerator's memory on the host port: the routing result, one word per class."""
    ROUTING = enum.auto()


class CapsNetStreamingAccelerator(HostPortAccelerator):
    """The CapsNet with every parameter and feature in SDRAM (docs/capsnet_accelerator.md, "On the DE1-SoC"): one
    Avalon-MM master port moves every tile; a run is conv1, PrimaryCaps, step 2 and routing
    (:class:`~hw.capsnet.stream_descriptor.StreamStep`),
    each from its descriptor-table entry; the class comes out on chip.

    Step 1 (conv1, PrimaryCaps)
    ---------------------------
    :class:`~hw.capsnet.conv_engine.CapsNetConvEngine` in its tiled mode on two-slot RAMs (input maps, kernel
    slabs, output staging) and a bias RAM, fed by :class:`~hw.capsnet.conv_tile_program.ConvTileProgram` (its
    docstring has the program).  A layer with no tiles is skipped.

    Step 2 and routing
    ------------------
    Tile ``k = (t*G + y)*P + p`` is part ``p`` of grid row ``y`` of capsule type ``t`` (``G = grid``, ``P =
    row_tiles``: capsules ``p*X .. p*X + X - 1`` of the row, ``X = tile_columns``): its ``X*J*N`` weight words,
    and with ``y = p = 0`` the type's ``N*G`` input rows.  The matrix-vector engine
    (:class:`~hw.capsnet.matvec_engine.CapsNetMatvecEngine`) runs each tile as one layer (``X*J*N`` product
    cycles, ``column_base = p*X``) on the tile RAMs; its prediction vectors go to the
    prediction tile RAM and, as a stream, to the routing engine
    (:class:`~hw.capsnet.routing_engine.CapsNetRoutingEngine`).  Double buffering: weights and predictions in two
    slots (tile parity), inputs in two slots (type parity).  Port program (one
    :class:`~hw.shared.tile_port.TilePort` command at a time): load tile 0, load tile 1, then for every ``k``:
    store the predictions of tile ``k``, load tile ``k + 2``; a load needs the store of the tile two before it to
    have finished (its slots are then free), a store the tile's products to be done.  A tile's products start
    when it is loaded and the engine is idle.  The run ends when the routing engine's last class is stored in the
    routing RAM and the last store has finished.

    Blocks and their connections
    ----------------------------
    The top is wiring: :class:`~hw.capsnet.stream_sequencer.CapsNetStreamSequencer` (the steps, step 2's port
    program and the routing engine's feed) takes HostControl's ``run`` and runs each engine and the convolution
    program through an :class:`~hw.capsnet.engine_control.EngineControlSignature`; the program and the conv engine
    meet at a :class:`~hw.capsnet.tile_handshake.TileHandshakeSignature`; every RAM port is a
    :class:`~hw.shared.dual_port_buffer.BufferPortSignature` (the engines on port b / a, the tile port's loads and
    stores through one :class:`~hw.shared.buffer_port_demux.BufferPortDemux` each, the host through a
    :class:`~hw.shared.host_memory_bridge.HostMemoryBridge`); all joined by ``wiring.connect``.  Three single control
    inputs are assigned: the routing shift and the two demultiplexers' selects.

    Ports
    -----
    ``host`` (In :class:`~hw.shared.host_port.HostPortSignature`): :class:`~hw.shared.host_control.HostControl`
    with entries of :func:`~hw.capsnet.stream_descriptor.image_descriptor_layout` (entry ``s`` for step ``s``;
    START with any count runs all four), the memory ``ROUTING`` (word ``j`` =
    :func:`~hw.capsnet.stream_descriptor.routing_word_layout`: s_j, v_j, |v_j|^2, the class so far; the image's
    class in word ``J - 1``; host writes reach it too, while idle), the counters of every :class:`StreamStep` (cycles, product cycles,
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
    ``32*M``; step 2: weights ``2*X*J*N`` x ``8*D``, inputs ``2*N*G`` x ``8*row_bytes``, predictions ``2*X*J`` x
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
        m.submodules.control = control = HostControl(
            data_bits=len(self.host.write_data), max_layers=len(StreamStep),
            descriptor_layout=image_descriptor_layout(config), memories={StreamMemory.ROUTING: self._routing_word.size})
        wiring.connect(m, wiring.flipped(self.host), control.host)
        m.submodules.sequencer = sequencer = CapsNetStreamSequencer(config=config)
        wiring.connect(m, control.run, sequencer.run)
        m.submodules.port = port = TilePort(
            ram_bits=config.port_ram_bits, ram_address_bits=port_ram_address_bits(config),
            address_bits=config.address_bits, max_burst=config.max_burst, beats_bits=PORT_BEATS_BITS,
            fifo_depth=config.fifo_depth)
        wiring.connect(m, wiring.flipped(self.avalon), port.avalon)

        # ---- Step 1: the convolution engine on its tile RAMs, fed by its port program ------------------------
        conv_config = config.conv_config
        m.submodules.conv = conv = CapsNetConvEngine(config=conv_config)
        m.submodules.conv_program = program = ConvTileProgram(
            address_bits=config.address_bits, ram_address_bits=port_ram_address_bits(config),
            beats_bits=PORT_BEATS_BITS, beats_per_word_bits=beats_per_word_bits(config))
        conv_inputs, conv_slabs, conv_biases, conv_staging = self._tile_rams(
            m, "conv_inputs", "conv_slabs", "conv_biases", "conv_staging")

        # ---- Step 2 and routing: the matrix-vector and routing engines, their tile RAMs, the result RAM -------
        m.submodules.matvec = matvec = CapsNetMatvecEngine(config=config.matvec_config)
        m.submodules.routing = routing = CapsNetRoutingEngine(
            classes=config.classes, dims=config.digit_dims, max_capsules=config.max_capsules,
            multipliers=config.multipliers)
        inputs, weights, predictions = self._tile_rams(m, "inputs", "weights", "predictions")
        m.submodules.results = results = DualPortBuffer(width=self._routing_word.size, depth=max(2, config.classes))
        m.submodules.results_host = results_host = HostMemoryBridge(buffer=results.b.signature.flip())

        # ---- The tile port's RAM side: loads into the tile RAMs' port a, stores from staging or predictions ------
        loads = {"conv_biases": conv_biases.a, "conv_inputs": conv_inputs.a, "conv_slabs": conv_slabs.a,
                 "inputs": inputs.a, "weights": weights.a}      # the first three in ConvTarget order
        stores = {"conv_staging": conv_staging.b, "predictions": predictions.b}       # in PortOwner order
        loads_demux = self._demultiplexer(m, "loads", port.ram_write, loads)
        stores_demux = self._demultiplexer(m, "stores", port.ram_read, stores)

        # ---- Every block-to-block connection (initiator, target) --------------------------------------------------
        for initiator, target in (
                (sequencer.port, port.client), (sequencer.conv, conv.control),
                (sequencer.conv_program, program.control), (program.port, sequencer.conv_port),
                (program.tiles, conv.tiles), (conv.inputs, conv_inputs.b), (conv.weights, conv_slabs.b),
                (conv.biases, conv_biases.b), (conv.outputs, conv_staging.a),
                (sequencer.matvec, matvec.control), (matvec.inputs, inputs.b), (matvec.weights, weights.b),
                (matvec.predictions, sequencer.matvec_predictions), (sequencer.predictions, predictions.a),
                (sequencer.routing, routing.predictions), (routing.digit_caps, sequencer.digit_caps),
                (sequencer.results, results.a), (control.memory.routing, results_host.host),
                (results_host.buffer, results.b)):
            wiring.connect(m, initiator, target)
        # Lone control inputs (connect joins interfaces, not single signals): the run's routing shift, the
        # demultiplexers' selects.
        m.d.comb += routing.shift.eq(sequencer.routing_shift)
        # The RAM a load goes to: the convolution program's target (a ConvTarget) in its steps, step 2's input or
        # weight RAM after them (a Mux of the two programs' targets); stores read the port owner's RAM.
        step2_loads = list(loads).index("inputs")
        m.d.comb += [loads_demux.select.eq(Mux(sequencer.port_owner == PortOwner.CONVOLUTION, program.load_target,
                                               step2_loads + sequencer.step2_load_target)),
                     stores_demux.select.eq(sequencer.port_owner)]
        return m

    def _tile_rams(self, m, *names):
        """The tile RAMs ``names`` of the configuration's
        :attr:`~hw.capsnet.stream_config.CapsNetStreamConfig.tile_rams`, added as submodules in that order."""
        rams = []
        for name in names:
            width, depth = self._config.tile_rams[name]
            m.submodules[name] = ram = DualPortBuffer(width=width, depth=depth, granularity=8)
            rams.append(ram)
        return rams

    @staticmethod
    def _demultiplexer(m, name, initiator, rams):
        """A :class:`~hw.shared.buffer_port_demux.BufferPortDemux` from ``initiator`` to the RAM ports ``rams``
        (``{name: port}``, in ``select`` order), connected."""
        m.submodules[name] = demux = BufferPortDemux(
            initiator=initiator.signature, targets={target: ram.signature.flip() for target, ram in rams.items()})
        wiring.connect(m, initiator, demux.initiator)
        for target, ram in rams.items():
            wiring.connect(m, getattr(demux.targets, target), ram)
        return demux
