"""Window feeder of the DQN accelerator: row shift registers that give each matrix module its scalar."""

from amaranth.hdl import Array, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.config import DqnConfig

__all__ = ["WindowFeeder"]


class WindowFeeder(wiring.Component):
    """Two row registers of ``row_elements`` elements, shifting one element per product, tapped per module.

    A convolution step ``(c, kh)`` needs, for each output position of the group, the input row
    ``oy*stride + kh`` of channel ``c``; a group's positions lie on at most two output rows, so two
    rows (slots 0 and 1) serve all modules.  Module ``m`` reads element ``tap_column[m]`` of slot
    ``tap_slot[m]``: the window's first column.  Loading a row puts the step's ``kw = 0`` elements
    under the taps; each shift moves the next column under them, so the taps stay fixed for a whole
    group and the registers shift by one element per cycle (the thesis' shift-register feeder,
    with the window start chosen by the tap instead of by further shifts).

    Ports (control is sampled at a clock edge and acts on the next cycle's ``scalars``):
    ``row0``, ``row1`` (In, ``row_elements`` x width: element 0 first): the activation RAMs' read data;
    ``load`` (In 1): copy both rows into the registers; ``shift`` (In 1): shift both registers down one
    element; ``bias`` (In 1): the next cycle's scalars are all 1.0 (the bias product);
    ``tap_slot`` (In modules), ``tap_column`` (In modules x column bits): each module's tap;
    ``scalars`` (Out, ``modules`` x width: module ``m``'s scalar is element ``m``).

    Timing: ``scalars`` on cycle n+1 reflect ``load``/``shift``/``bias`` of cycle n (one register stage).
    Throughput: one scalar per module per cycle, no stall.

    FPGA: 2 x ``row_elements`` x width flip-flops (2 x 84 x 32 = 5,376 for the thesis) with a 3:1 input
    mux each, and per module a 2 x ``row_elements``:1 mux of width bits (ALMs).
    """

    def __init__(self, *, config=DqnConfig()):
        if not isinstance(config, DqnConfig):
            raise TypeError(f"config must be a DqnConfig, not {config!r}")
        self._config = config
        row = data.ArrayLayout(config.fmt.width, config.row_elements)
        super().__init__({
            "row0": In(row), "row1": In(row),
            "load": In(1), "shift": In(1), "bias": In(1),
            "tap_slot": In(config.modules),
            "tap_column": In(data.ArrayLayout(range(config.row_elements), config.modules)),
            "scalars": Out(data.ArrayLayout(config.fmt.width, config.modules)),
        })

    @property
    def config(self):
        return self._config

    def elaborate(self, platform):
        m = Module()
        config = self._config
        width, elements = config.fmt.width, config.row_elements
        registers = [Signal(elements * width, name=f"row_register{slot}") for slot in range(2)]
        for register, row in zip(registers, (self.row0, self.row1)):
            with m.If(self.load):
                m.d.sync += register.eq(row)
            with m.Elif(self.shift):
                m.d.sync += register.eq(register >> width)
        bias = Signal()
        m.d.sync += bias.eq(self.bias)

        one = Const(config.fmt.bias << config.fmt.mantissa_bits, width)
        slot_elements = [Array(register[e * width:(e + 1) * width] for e in range(elements)) for register in registers]
        for module in range(config.modules):
            column = self.tap_column[module]
            tapped = Mux(self.tap_slot[module], slot_elements[1][column], slot_elements[0][column])
            m.d.comb += self.scalars[module].eq(Mux(bias, one, tapped))
        return m
