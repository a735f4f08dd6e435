"""The per-layer performance counters in block RAM: four counters for the running layer, the others in a RAM."""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.parameters import check_int
from nnaccel.hw.shared.run_control import COUNTER_EVENTS

__all__ = ["CounterRam"]


class CounterRam(wiring.Component):
    """``max_layers`` layers' four counters (cycles, product cycles, stalls, drain cycles) of ``counter_bits`` each:
    the running layer's in registers, every layer's word in a RAM of ``max_layers`` x ``4 * counter_bits`` bits.

    Parameters (keyword-only, read-only properties): ``max_layers``, ``counter_bits``.

    Ports: ``start`` (In 1: a run starts; the running counters clear and count for layer 0), ``busy`` (In 1),
    ``layer_index`` (In range(max_layers)) and ``events`` (In :data:`~hw.shared.run_control.COUNTER_EVENTS`): each
    busy cycle counts for ``layer_index``, ``issue``, ``stall`` and ``draining`` as their counters; ``read_layer``
    (In range(max_layers)): the layer whose word ``read_data`` (Out ``4 * counter_bits``: cycles in the low bits,
    then product cycles, stalls, drain cycles) gives on the next cycle.

    Timing: the running counters are written to the layer's word on the first cycle of the next layer, or on the
    first idle cycle after the run, and a read on that cycle returns the written word (the read port is transparent
    to the write), so the host reads a run's counters from the cycle ``done`` is set.  A layer the run did not reach
    keeps what an earlier run wrote (zero after configuration).  Every layer must keep ``layer_index`` one cycle or
    more (it does: the sequencer moves it by one).

    FPGA mapping: the RAM in M10K blocks (``4 * counter_bits`` bits wide: eight blocks of 512 x 20 for 40-bit
    counters, up to 512 layers); in ALMs four counters with their adders, the layer register and compare: in place
    of ``4 * max_layers`` counters with an adder each and their read multiplexer.
    """

    def __init__(self, *, max_layers, counter_bits):
        check_int("max_layers", max_layers, 1, 1 << 16)
        check_int("counter_bits", counter_bits, 1, 64)
        self._max_layers, self._counter_bits = max_layers, counter_bits
        super().__init__({
            "start": In(1), "busy": In(1), "layer_index": In(range(max_layers)), "events": In(COUNTER_EVENTS),
            "read_layer": In(range(max_layers)), "read_data": Out(4 * counter_bits),
        })

    @property
    def max_layers(self):
        return self._max_layers

    @property
    def counter_bits(self):
        return self._counter_bits

    def elaborate(self, platform):
        m = Module()
        m.submodules.words = words = Memory(shape=4 * self._counter_bits, depth=self._max_layers, init=[])
        write = words.write_port()
        read = words.read_port(transparent_for=(write,))
        m.d.comb += [read.addr.eq(self.read_layer), self.read_data.eq(read.data)]

        counted = Signal.like(self.layer_index)                 # the layer the running counters belong to
        running = [Signal(self._counter_bits, name=name) for name in ("cycles", "products", "stalls", "drains")]
        increments = [1, self.events.issue, self.events.stall, self.events.draining]
        was_busy = Signal()
        m.d.sync += was_busy.eq(self.busy)
        m.d.comb += [write.addr.eq(counted), write.data.eq(Cat(running))]
        with m.If(self.start):
            m.d.sync += [counted.eq(0)] + [counter.eq(0) for counter in running]
        with m.Elif(self.busy & (self.layer_index != counted)):
            # The next layer: the running counters to the RAM, this cycle's events the new layer's first.
            m.d.comb += write.en.eq(1)
            m.d.sync += [counted.eq(self.layer_index)] + [counter.eq(step) for counter, step in zip(running, increments)]
        with m.Elif(self.busy):
            m.d.sync += [counter.eq(counter + step) for counter, step in zip(running, increments)]
        with m.Elif(was_busy):
            m.d.comb += write.en.eq(1)                           # the run's last layer
        return m
