"""What the two-operand float units share: constructor parameters, their checks and the ports."""

from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.float_format import BINARY32, FloatFormat
from nnaccel.hw.shared.parameters import check_non_negative
from nnaccel.hw.shared.stand_in import platform_stand_in

__all__ = ["FloatOperator", "operand_layout"]


def operand_layout(fmt):
    """The payload of a two-operand float unit's input stream: ``a`` (bits 0 ..) and ``b``, raw ``fmt`` floats."""
    return data.StructLayout({"a": fmt.width, "b": fmt.width})


class FloatOperator(wiring.Component):
    """Base of :class:`hw.shared.float_multiplier.FloatMultiplier` and :class:`hw.shared.float_adder.FloatAdder`.

    Ports: ``operands`` (``In``, an always-ready stream of :func:`operand_layout`: fields ``a`` and ``b`` of
    ``fmt.width`` bits) and ``result`` (``Out``, an always-ready stream of ``fmt.width`` bits). ``result``
    shows the operation on the operands of the beat ``latency`` cycles earlier, with ``valid`` when that
    beat was valid; a new operation may start every cycle (the units never stall: no ``ready``).

    Subclasses name their pipeline cut points in ``CUT_PRIORITY`` (first = registered first) and the
    prefix of their Verilog module name in ``MODULE_PREFIX``, and build their logic in ``elaborate_logic``.
    Elaboration asks the platform to stand in for a pipelined unit first (:mod:`hw.shared.stand_in`: a build that
    generates each distinct unit once, e.g. the 256 multipliers of the DQN accelerator as one module).
    """

    CUT_PRIORITY = ()
    MODULE_PREFIX = ""

    def __init__(self, *, fmt=BINARY32, latency=2, flush_to_zero=False):
        if not isinstance(fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {fmt!r}")
        check_non_negative("latency", latency)
        if not isinstance(flush_to_zero, bool):
            raise TypeError(f"flush_to_zero must be a bool, not {flush_to_zero!r}")
        self._fmt = fmt
        self._latency = latency
        self._flush_to_zero = flush_to_zero
        super().__init__({
            "operands": In(stream.Signature(operand_layout(fmt), always_ready=True)),
            "result": Out(stream.Signature(fmt.width, always_ready=True)),
        })

    @property
    def fmt(self):
        return self._fmt

    @property
    def latency(self):
        return self._latency

    @property
    def flush_to_zero(self):
        return self._flush_to_zero

    def elaborate(self, platform):
        # A module generated once is instantiated with the clock and reset; a combinational unit (latency 0) has
        # neither, and is elaborated in place.
        stand_in = platform_stand_in(platform, self, hierarchical_block=False) if self._latency else None
        return stand_in if stand_in is not None else self.elaborate_logic(platform)

    def elaborate_logic(self, platform):
        """The unit's own logic (an Amaranth ``Module``)."""
        raise NotImplementedError(f"{type(self).__name__} must define elaborate_logic")

    @property
    def module_name(self):
        """Verilog module name carrying the parameters, e.g. ``float_multiplier_binary32_l2``."""
        return f"{self.MODULE_PREFIX}_{self._fmt.name}_l{self._latency}" + ("_ftz" if self._flush_to_zero else "")
