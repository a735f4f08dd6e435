"""Register placement for fixed-latency, full-throughput datapaths.

A datapath is written once, as a chain of combinational stages separated by named *cut points*.
:class:`Pipeline` decides, from the requested latency, which cut points get a register stage, and
carries the ``valid`` bit along with the data so that the output's ``valid`` marks the same element
that entered with the input's. Latency 0 gives a purely combinational circuit.

Cut points are filled in the order of ``cut_priority`` (the first one named is the first to be
registered). A latency larger than the number of cut points puts the surplus register stages at the
output, where synthesis retiming can move them into the logic.

Usage inside ``elaborate``::

    pipeline = Pipeline(m, latency=self.latency, cut_priority=("product", "result"), valid=self.operands.valid)
    product = pipeline.cut("product", {"sig": sig, "exp": exp})   # registered or passed through
    ...
    result = pipeline.cut("result", rounded)
    m.d.comb += [self.result.payload.eq(result), self.result.valid.eq(pipeline.valid)]
    pipeline.check_complete()

Data registers have no reset (they need none: ``valid`` says when they hold an element); the valid
registers reset to 0.
"""

from amaranth.hdl import Signal, Value
from amaranth.lib import data

__all__ = ["Pipeline"]


class Pipeline:
    """Places ``latency`` register stages at named cut points of a datapath built in ``m``.

    ``cut_priority`` names every cut point of the datapath; the datapath must call :meth:`cut` for
    each of them exactly once, in data-flow order, and the last call is the output cut (it receives
    any stages beyond ``len(cut_priority)``).
    """

    def __init__(self, m, *, latency, cut_priority, valid):
        if len(set(cut_priority)) != len(cut_priority) or not cut_priority:
            raise ValueError(f"cut_priority must name distinct cut points, not {cut_priority!r}")
        self._m = m
        self._stages = {cut: int(rank < latency) for rank, cut in enumerate(cut_priority)}
        self._surplus = max(0, latency - len(cut_priority))
        self._pending = list(cut_priority)
        self._valid = valid

    @property
    def valid(self):
        """The valid bit that travels with the data at the current point of the datapath."""
        return self._valid

    def cut(self, name, value):
        """Pass ``value`` (a value, a ``data.View`` or a dict of them) across cut point ``name``."""
        if name not in self._pending:
            raise ValueError(f"cut point {name!r} is not pending; pending cut points: {self._pending!r}")
        self._pending.remove(name)
        count = self._stages[name] + (self._surplus if not self._pending else 0)
        for stage in range(count):
            suffix = f"{name}_q{stage + 1}" if count > 1 else f"{name}_q"
            value = self._register(value, suffix)
            valid = Signal(name=f"{suffix}_valid")
            self._m.d.sync += valid.eq(self._valid)
            self._valid = valid
        return value

    def check_complete(self):
        if self._pending:
            raise ValueError(f"cut points never placed: {self._pending!r}")

    def _register(self, value, suffix):
        if isinstance(value, dict):
            return {key: self._register(item, f"{suffix}_{key}") for key, item in value.items()}
        shape = value.shape() if isinstance(value, data.View) else Value.cast(value).shape()
        register = Signal(shape, name=suffix, reset_less=True)
        self._m.d.sync += register.eq(value)
        return register
