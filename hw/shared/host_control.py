"""The host control block both accelerators share: control registers, performance counters, the descriptor table
and the host read-back path, behind one :class:`~hw.shared.host_port.HostPortSignature` port.

Host map (what every accelerator has; each adds its memories and its own registers)
-----------------------------------------------------------------------------------
Targets (:class:`HostTarget`): ``CONTROL`` (0), the registers below; ``DESCRIPTORS`` (1), the descriptor table,
write-only, entry ``i`` at address ``i``; then the system's memories, numbered from 2 in the order its
:class:`MemoryTarget` subclass declares them.

Control registers (target ``CONTROL``; reads give :data:`COUNTER_BITS`-bit values, zero-extended)::

    0  START           write n: run layers 0 .. n-1 (ignored while busy)
    1  STATUS          bit 0 busy, bit 1 done
    2  TOTAL_CYCLES    cycles of the last run (busy cycles since START)
    8 .. 15            the system's own registers (SYSTEM_REGISTER_BASE, a SystemRegister subclass)
    16 + 4*l + c       counter c (LayerCounter) of layer l (layer_counter_address(l, c))

How a system adds its registers: it subclasses :class:`SystemRegister` (members numbered from
:data:`SYSTEM_REGISTER_BASE` with ``enum.auto()``), passes ``registers={member: width}`` and drives the port
``system_registers`` (one field per register, named after the member in lower case).  Its memories likewise:
a :class:`MemoryTarget` subclass, ``memories={member: width}``, the port ``memory_read_data``.
"""

import enum

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.counter_ram import CounterRam
from nnaccel.hw.shared.descriptor_ram import DescriptorRam
from nnaccel.hw.shared.host_port import ADDRESS_BITS, TARGET_BITS, HostPortSignature
from nnaccel.hw.shared.parameters import check_int
from nnaccel.hw.shared.run_control import COUNTER_EVENTS, HostMemorySignature, RunSignature

__all__ = ["HostControl", "HostTarget", "MemoryTarget", "ControlRegister", "SystemRegister", "LayerCounter",
           "COUNTER_BITS", "COUNTERS_PER_LAYER", "SYSTEM_REGISTER_BASE", "MAX_SYSTEM_REGISTERS", "LAYER_COUNTER_BASE",
           "layer_counter_address"]


class HostTarget(enum.IntEnum):
    """The host targets every accelerator has; its memories follow (:class:`MemoryTarget`)."""
    CONTROL = 0
    DESCRIPTORS = 1


class MemoryTarget(enum.IntEnum):
    """Base of a system's memory targets: ``enum.auto()`` numbers them from ``len(HostTarget)`` in declaration order."""

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        return len(HostTarget) + count


class ControlRegister(enum.IntEnum):
    """The control registers every accelerator has (target ``CONTROL``)."""
    START = 0
    STATUS = 1
    TOTAL_CYCLES = 2


class LayerCounter(enum.IntEnum):
    """The performance counters of each layer, in address order."""
    CYCLES = 0              # cycles the layer was the current one
    PRODUCT_CYCLES = 1      # cycles a product issued
    STALL_CYCLES = 2        # cycles a product could not issue
    DRAIN_CYCLES = 3        # cycles spent waiting for the layer's last results


COUNTER_BITS = 40                   # 2**40 cycles: three hours at 100 MHz
COUNTERS_PER_LAYER = len(LayerCounter)
SYSTEM_REGISTER_BASE = 8            # after the common registers, with room for more of them
MAX_SYSTEM_REGISTERS = 8
LAYER_COUNTER_BASE = SYSTEM_REGISTER_BASE + MAX_SYSTEM_REGISTERS


class SystemRegister(enum.IntEnum):
    """Base of a system's own control registers: ``enum.auto()`` numbers them from :data:`SYSTEM_REGISTER_BASE`."""

    @staticmethod
    def _generate_next_value_(name, start, count, last_values):
        return SYSTEM_REGISTER_BASE + count


def layer_counter_address(layer, counter):
    """Control register address of counter ``counter`` (a :class:`LayerCounter`) of layer ``layer``."""
    return LAYER_COUNTER_BASE + layer * COUNTERS_PER_LAYER + counter


def _check_widths(kind, widths, base_class, high):
    if not isinstance(widths, dict):
        raise TypeError(f"{kind} must be a dict of {base_class.__name__} members to widths, not {widths!r}")
    for key, width in widths.items():
        if not isinstance(key, base_class) or type(key) is base_class:
            raise TypeError(f"{kind} keys must be members of a {base_class.__name__} subclass, not {key!r}")
        if not isinstance(width, int) or isinstance(width, bool) or not 1 <= width <= high:
            raise ValueError(f"{kind}[{key.name}] must be a width from 1 to {high}, not {width!r}")


class HostControl(wiring.Component):
    """The accelerator's side of the host port: registers, counters, descriptor table, host reads.

    Parameters (keyword-only, read-only properties)
    -----------------------------------------------
    data_bits
        Width of the host data port (the widest memory word).
    max_layers
        Entries of the descriptor table (and layers with counters).
    descriptor_layout
        The system's descriptor (a ``data.Layout``); an entry holds the low ``descriptor_layout.size`` bits of
        the word the host writes.
    memories
        ``{MemoryTarget member: word width}``: the system's memories the host reads back.
    registers
        ``{SystemRegister member: width}``: the system's own read-only registers (at most
        :data:`MAX_SYSTEM_REGISTERS`, each at most :data:`COUNTER_BITS` wide).
    descriptor_ram
        Keep the descriptor table in block RAM (:class:`~hw.shared.descriptor_ram.DescriptorRam`: read one entry
        ahead, the same timing; every layer must keep ``layer_index`` two cycles or more) instead of flip-flops
        (default False).
    counter_ram
        Keep the layers' counters in block RAM (:class:`~hw.shared.counter_ram.CounterRam`: the running layer's in
        registers, written to the RAM when the layer changes and when the run ends; a layer the run did not reach
        reads what an earlier run left) instead of ``4 * max_layers`` counters (default False).

    Ports
    -----
    host : In(HostPortSignature(data_bits))
        The host port; this block answers every read (``read_data`` is valid on the cycle after ``read``) and
        drives ``busy`` and ``done`` from the ports below.
    run : Out(RunSignature(max_layers=max_layers, descriptor_layout=descriptor_layout))
        To the system's sequencer: ``start`` with ``layer_count`` (a START write while not busy: the system starts a
        run of ``layer_count`` layers on this cycle), ``descriptor`` (entry ``layer_index`` of the table); from it
        ``busy`` and ``done`` (shown in ``STATUS``; while ``busy`` the counters run and memory and descriptor writes
        are ignored), ``layer_index`` (its counters count) and ``events`` (:data:`COUNTER_EVENTS`: ``issue`` a
        product issued, ``stall``, ``draining``).
    memory : Out(Signature: one member per memory, named after its target in lower case,
             Out(HostMemorySignature(width=its word width, address_bits=ADDRESS_BITS)))
        The host's ``address`` and ``write_data``; ``write`` / ``read`` when the host writes / reads that memory this
        cycle and the system is idle (the system gives the memory's port to the host); ``read_data``, the memory's
        word on the cycle after ``read`` (its one-cycle read latency).
    system_registers : In(StructLayout: one field per register, named after it in lower case)
        Only when ``registers`` is not empty: the values of the system's registers.

    Timing
    ------
    ``start`` is combinational (the START write's cycle); ``TOTAL_CYCLES`` and the counters clear on that cycle's
    edge and count every following ``busy`` cycle, each layer's counters while ``layer_index`` selects it.  A
    read's register value is sampled on the read's cycle, a memory's word comes from the memory one cycle
    later; both reach ``host.read_data`` with ``valid`` on that next cycle.  Descriptor writes take effect on
    the next cycle.

    FPGA mapping: ``1 + 4 * max_layers`` counters of :data:`COUNTER_BITS` bits (adders and registers in ALMs; with
    ``counter_ram`` five and a RAM),
    the descriptor table (``max_layers * descriptor_layout.size`` flip-flops, its write decoder and read mux; with
    ``descriptor_ram`` a RAM and one descriptor register),
    the register read mux and the read-back mux over the targets (``data_bits`` wide) in ALMs; no DSP, no RAM.
    """

    def __init__(self, *, data_bits, max_layers, descriptor_layout, memories, registers=None, descriptor_ram=False,
                 counter_ram=False):
        registers = {} if registers is None else registers
        for name, value in (("descriptor_ram", descriptor_ram), ("counter_ram", counter_ram)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, not {value!r}")
        self._descriptor_ram, self._counter_ram = descriptor_ram, counter_ram
        most_layers = ((1 << ADDRESS_BITS) - LAYER_COUNTER_BASE) // COUNTERS_PER_LAYER
        check_int("max_layers", max_layers, 1, most_layers)
        if not isinstance(descriptor_layout, data.Layout):
            raise TypeError(f"descriptor_layout must be a data.Layout, not {descriptor_layout!r}")
        port = HostPortSignature(data_bits=data_bits)
        _check_widths("memories", memories, MemoryTarget, data_bits)
        _check_widths("registers", registers, SystemRegister, COUNTER_BITS)
        for target in memories:
            if target >= 1 << TARGET_BITS:
                raise ValueError(f"memory target {target.name} = {int(target)} does not fit the host port's "
                                 f"{TARGET_BITS}-bit target")
        for register in registers:
            if register >= LAYER_COUNTER_BASE:
                raise ValueError(f"register {register.name} = {int(register)} lies among the layer counters "
                                 f"(from {LAYER_COUNTER_BASE})")
        self._data_bits, self._max_layers = data_bits, max_layers
        self._memories, self._registers = dict(memories), dict(registers)
        members = {
            "host": In(port),
            "run": Out(RunSignature(max_layers=max_layers, descriptor_layout=descriptor_layout)),
            "memory": Out(wiring.Signature({
                target.name.lower(): Out(HostMemorySignature(width=width, address_bits=ADDRESS_BITS))
                for target, width in memories.items()})),
        }
        if registers:
            members["system_registers"] = In(data.StructLayout({register.name.lower(): width
                                                                for register, width in registers.items()}))
        super().__init__(members)

    @property
    def data_bits(self):
        return self._data_bits

    @property
    def max_layers(self):
        return self._max_layers

    @property
    def descriptor_ram(self):
        return self._descriptor_ram

    @property
    def counter_ram(self):
        return self._counter_ram

    @property
    def memories(self):
        return dict(self._memories)

    @property
    def registers(self):
        return dict(self._registers)

    def _counter_ram_reads(self, m, read_control):
        """The layers' counters in a :class:`~hw.shared.counter_ram.CounterRam`: the value a CONTROL read returns,
        its word's counter for a layer counter's address, else ``read_control``."""
        host, run = self.host, self.run
        m.submodules.counters = counters = CounterRam(max_layers=self._max_layers, counter_bits=COUNTER_BITS)
        offset = host.address - LAYER_COUNTER_BASE
        counter_read, counter_kind = Signal(), Signal(range(COUNTERS_PER_LAYER))
        m.d.comb += [counters.start.eq(run.start), counters.busy.eq(run.busy), counters.layer_index.eq(run.layer_index),
                     counters.events.eq(run.events), counters.read_layer.eq(offset // COUNTERS_PER_LAYER)]
        m.d.sync += [counter_read.eq((host.address >= LAYER_COUNTER_BASE)
                                     & (offset < COUNTERS_PER_LAYER * self._max_layers)),
                     counter_kind.eq(offset % COUNTERS_PER_LAYER)]
        return Mux(counter_read, counters.read_data.word_select(counter_kind, COUNTER_BITS), read_control)

    def elaborate(self, platform):
        m = Module()
        host, run = self.host, self.run
        idle = ~run.busy
        m.d.comb += [host.busy.eq(run.busy), host.done.eq(run.done)]
        for target in self._memories:
            memory = getattr(self.memory, target.name.lower())
            selected = idle & (host.target == target)
            m.d.comb += [memory.address.eq(host.address), memory.write_data.eq(host.write_data),
                         memory.write.eq(host.write & selected), memory.read.eq(host.read & selected)]

        # ---- START ---------------------------------------------------------------------------------------
        m.d.comb += [
            run.start.eq(host.write & (host.target == HostTarget.CONTROL) & (host.address == ControlRegister.START)
                         & idle),
            run.layer_count.eq(host.write_data),
        ]

        # ---- Descriptor table ----------------------------------------------------------------------------
        layout = run.descriptor.shape()
        descriptor_write = host.write & idle & (host.target == HostTarget.DESCRIPTORS)
        if self._descriptor_ram:
            m.submodules.descriptors = table = DescriptorRam(run=RunSignature(max_layers=self._max_layers,
                                                                              descriptor_layout=layout))
            m.d.comb += [table.write.eq(descriptor_write), table.write_address.eq(host.address),
                         table.write_data.eq(host.write_data[:layout.size]), table.busy.eq(run.busy),
                         table.layer_index.eq(run.layer_index), run.descriptor.eq(table.descriptor)]
        else:
            table = Array(Signal(layout, name=f"descriptor{index}") for index in range(self._max_layers))
            m.d.comb += run.descriptor.eq(table[run.layer_index])
            with m.If(descriptor_write):
                m.d.sync += table[host.address[:len(run.layer_index)]].eq(host.write_data[:layout.size])

        # ---- Performance counters ------------------------------------------------------------------------
        total_cycles = Signal(COUNTER_BITS)
        # With counter_ram the layers' counters are CounterRam's (read below); otherwise registers, listed here.
        counters = [] if self._counter_ram else [
            [Signal(COUNTER_BITS, name=f"layer{layer}_{counter.name.lower()}") for counter in LayerCounter]
            for layer in range(self._max_layers)]
        events = {LayerCounter.CYCLES: Const(1), LayerCounter.PRODUCT_CYCLES: run.events.issue,
                  LayerCounter.STALL_CYCLES: run.events.stall, LayerCounter.DRAIN_CYCLES: run.events.draining}
        with m.If(run.start):
            m.d.sync += [total_cycles.eq(0)] + [counter.eq(0) for layer in counters for counter in layer]
        with m.Elif(run.busy):
            m.d.sync += total_cycles.eq(total_cycles + 1)
            for layer, layer_counters in enumerate(counters):
                with m.If(run.layer_index == layer):
                    for kind, counter in zip(LayerCounter, layer_counters):
                        with m.If(events[kind]):
                            m.d.sync += counter.eq(counter + 1)

        # ---- Control registers, sampled on the read's cycle ----------------------------------------------
        registers = {ControlRegister.STATUS: Cat(run.busy, run.done), ControlRegister.TOTAL_CYCLES: total_cycles}
        registers.update({register: self.system_registers[register.name.lower()] for register in self._registers})
        registers.update({layer_counter_address(layer, kind): counter
                          for layer, layer_counters in enumerate(counters)
                          for kind, counter in zip(LayerCounter, layer_counters)})
        control_value = Signal(COUNTER_BITS)
        with m.Switch(host.address):
            for address, value in registers.items():
                with m.Case(address):
                    m.d.comb += control_value.eq(value)

        # ---- Host reads: one cycle later, from a register or the target's memory -------------------------
        read_target = Signal(TARGET_BITS)
        read_control = Signal(COUNTER_BITS)
        m.d.sync += [host.read_data.valid.eq(host.read), read_target.eq(host.target), read_control.eq(control_value)]
        if self._counter_ram:
            read_control = self._counter_ram_reads(m, read_control)
        with m.Switch(read_target):
            with m.Case(HostTarget.CONTROL):
                m.d.comb += host.read_data.payload.eq(read_control)
            for target in self._memories:
                with m.Case(target):
                    m.d.comb += host.read_data.payload.eq(getattr(self.memory, target.name.lower()).read_data)
        return m
