"""The descriptor table in block RAM: what lets an accelerator hold hundreds of passes."""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.run_control import RunSignature

__all__ = ["DescriptorRam"]


class DescriptorRam(wiring.Component):
    """A descriptor table of ``max_layers`` entries in one RAM with a registered read, giving the running layer's
    descriptor on the cycle its ``layer_index`` takes it, as the flip-flop table of
    :class:`~hw.shared.host_control.HostControl` does.

    Parameter (keyword-only, a read-only property): ``run``, the :class:`~hw.shared.run_control.RunSignature` of the
    host control block it serves (its ``max_layers`` entries of its ``descriptor_layout``).

    Ports: ``write`` (In 1) with ``write_address`` (In range(max_layers)) and ``write_data`` (In descriptor_layout):
    the host writes an entry (the word is in the RAM from the next cycle); ``busy`` (In 1: a run goes on) and
    ``layer_index`` (In range(max_layers): the running layer, a register of the sequencer); ``descriptor`` (Out
    descriptor_layout): entry ``layer_index``.

    Timing: the RAM is read one entry ahead: while idle entry 0, while busy entry ``layer_index + 1``.  On the
    first cycle of a layer (a run's first busy cycle, or a pass's set-up after the previous pass's last product)
    ``descriptor`` is the RAM's read word, read on the cycle before: that entry; the ``current`` register takes it
    at the end of that cycle and gives it while ``layer_index`` stays.  So every layer must keep its
    ``layer_index`` for two cycles or more (a DQN pass: its set-up and a product at least); an entry written on a
    cycle is read correctly by a run STARTed on the next (the earliest a host can write START).  No counter of a
    run changes against the flip-flop table.

    FPGA mapping: the RAM, ``max_layers`` x ``descriptor_layout.size`` bits, in M10K blocks (one to a few for 64
    entries; an MLAB's 32 words for up to 32); in ALMs the ``current`` register (``descriptor_layout.size``
    flip-flops), its index and valid flag, a 2:1 multiplexer per descriptor bit, an index compare and the
    read address's incrementer: in place of the flip-flop table's ``max_layers`` registers and its
    ``max_layers``:1 read multiplexer.
    """

    def __init__(self, *, run):
        if not isinstance(run, RunSignature):
            raise TypeError(f"run must be a RunSignature, not {run!r}")
        self._run = run
        super().__init__({
            "write": In(1), "write_address": In(range(run.max_layers)), "write_data": In(run.descriptor_layout),
            "busy": In(1), "layer_index": In(range(run.max_layers)), "descriptor": Out(run.descriptor_layout),
        })

    @property
    def run(self):
        return self._run

    def elaborate(self, platform):
        m = Module()
        m.submodules.table = table = Memory(shape=self._run.descriptor_layout, depth=self._run.max_layers, init=[])
        write, read = table.write_port(), table.read_port()
        m.d.comb += [write.en.eq(self.write), write.addr.eq(self.write_address), write.data.eq(self.write_data)]

        current = Signal(self._run.descriptor_layout)               # entry held_index, taken on its layer's first cycle
        held_index = Signal.like(self.layer_index)
        held = Signal()                                         # a run was busy on the cycle before
        m.d.comb += [read.addr.eq(Mux(self.busy, self.layer_index + 1, 0)),
                     self.descriptor.eq(Mux(held & (held_index == self.layer_index), current, read.data))]
        m.d.sync += [current.eq(self.descriptor), held_index.eq(self.layer_index), held.eq(self.busy)]
        return m
