"""The reconfigurable ring (SPEC section 2): ``pes`` PEs in a ring, run as a systolic ring array (SRA) or as SIMD,
behind the host port the other accelerators have.

The sequencer (:mod:`hw.pe_ring.sequencer`) fetches the program (:mod:`hw.pe_ring.isa`, assembled by
:mod:`hw.pe_ring.assembler`) and broadcasts each PE instruction to every PE; the ``mode`` instruction switches
between SRA (each PE instruction also moves every ring register ``x`` to the right-hand neighbour, PE ``pes - 1``
feeding PE 0) and SIMD (the ring registers stay), without any change to the hardware.
"""

import enum

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring

from nnaccel.hw.pe_ring.config import RingConfig
from nnaccel.hw.pe_ring.pe import ProcessingElement
from nnaccel.hw.pe_ring.sequencer import RingSequencer, program_entry_layout
from nnaccel.hw.shared.host_control import HostControl, MemoryTarget
from nnaccel.hw.shared.host_port import HostPortAccelerator

__all__ = ["PERing", "RingMemory"]


class RingMemory(MemoryTarget):
    """The ring's memories on the host port (after the common targets of :class:`HostTarget`)."""
    PROGRAM = enum.auto()           # word a: program memory word a
    LOCAL_MEMORY = enum.auto()      # word p * lm_depth + a: word a of PE p's local memory
    RESULTS = enum.auto()           # word p: PE p's result-port register (read only)


class PERing(HostPortAccelerator):
    """A ring of :class:`~hw.pe_ring.config.RingConfig` ``config``: ``config.pes`` PEs (4 to 64) with
    ``config.registers`` registers and ``config.lm_depth`` LM words each, data in ``config.fmt``.

    Ports: ``host`` (In :class:`~hw.shared.host_port.HostPortSignature` of ``config.host_data_bits`` = 40 bits:
    requests, reads answered on the next cycle, ``busy`` and ``done``), served by
    :class:`~hw.shared.host_control.HostControl`: the memories :class:`RingMemory`, the program table as the
    descriptor table (entry ``i``: the address program ``i`` starts at), START ``n`` runs programs ``0 .. n-1``
    in turn (each to its ``halt``), TOTAL_CYCLES, and per program the counters CYCLES, PRODUCT_CYCLES (cycles a
    PE instruction issued), STALL_CYCLES (the other busy cycles: fetch bubbles and controller instructions),
    DRAIN_CYCLES (0).  See docs/pe_ring.md for the host map.

    Timing: a program takes ``instructions executed + taken branches + 1`` cycles (:mod:`hw.pe_ring.sequencer`);
    the host's memory accesses take one cycle each while the ring is idle.

    FPGA mapping: per PE one LM block RAM, one PWL-table block RAM and the ALU and PWL multipliers in
    DSP blocks (two blocks up to 18-bit formats; 74.7 for 16 PEs of Q15.16 in the Yosys estimate); the program
    memory ``program_depth`` x 36 bits block RAM; sequencer and host control in ALMs. The broadcast instruction bus
    and the PE-to-neighbour links are the only inter-PE wiring.
    """

    def __init__(self, *, config):
        super().__init__(config, RingConfig)

    def elaborate(self, platform):
        m = Module()
        config = self._config
        fmt = config.fmt
        m.submodules.control = control = HostControl(
            data_bits=config.host_data_bits, max_layers=config.max_programs,
            descriptor_layout=program_entry_layout(config),
            # The program target is as wide as the host port (the counters' 40 bits): instruction words are
            # 36 bits, the host's upper bits are dropped on writes and read back as zeros.
            memories={RingMemory.PROGRAM: config.host_data_bits, RingMemory.LOCAL_MEMORY: fmt.width,
                      RingMemory.RESULTS: fmt.width})
        m.submodules.sequencer = sequencer = RingSequencer(config=config)
        pes = [ProcessingElement(config=config) for _ in range(config.pes)]
        for index, pe in enumerate(pes):
            m.submodules[f"pe{index}"] = pe

        # ---- Host control, sequencer, instruction broadcast, the ring --------------------------------------
        wiring.connect(m, wiring.flipped(self.host), control.host)
        wiring.connect(m, control.run, sequencer.run)
        wiring.connect(m, sequencer.issue, *(pe.issue for pe in pes))
        for index, pe in enumerate(pes):
            wiring.connect(m, pes[index - 1].right, pe.left)

        # ---- The host's memory ports onto the RAMs' ports ----------------------------------------------------
        # Transformed, not connected: the host's word address is split into a PE number and the word inside
        # that PE's LM (the program memory takes its low bits), the host's write / read become the selected
        # RAM's enables, and the read data comes back from the RAM (or result register) the previous cycle's
        # read selected.
        program, local_memory, results = control.memory.program, control.memory.local_memory, control.memory.results
        m.d.comb += [sequencer.program.address.eq(program.address), sequencer.program.write_data.eq(program.write_data),
                     sequencer.program.write_enable.eq(program.write),
                     sequencer.program.read_enable.eq(program.read), program.read_data.eq(sequencer.program.read_data)]
        lm_bits = config.lm_address_bits
        selected_pe = local_memory.address[lm_bits:lm_bits + config.pe_bits]
        read_pe = Signal(range(config.pes))
        with m.If(local_memory.read):
            m.d.sync += read_pe.eq(selected_pe)
        for index, pe in enumerate(pes):
            selected = selected_pe == index
            m.d.comb += [pe.memory.address.eq(local_memory.address[:lm_bits]),
                         pe.memory.write_data.eq(local_memory.write_data),
                         pe.memory.write_enable.eq(local_memory.write & selected),
                         pe.memory.read_enable.eq(local_memory.read & selected)]
            with m.If(read_pe == index):
                m.d.comb += local_memory.read_data.eq(pe.memory.read_data)
            with m.If(results.read & (results.address == index)):
                m.d.sync += results.read_data.eq(pe.result)
        return m
