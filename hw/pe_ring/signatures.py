"""Named interfaces between the PE ring's blocks (:class:`hw.pe_ring.ring.PERing`).

:class:`IssueSignature` is the sequencer's broadcast to every PE (one driver, many receivers: every member flows
from the sequencer, so ``wiring.connect`` joins the sequencer to all PEs at once); :class:`RingLinkSignature` is a
PE's ring register as its right-hand neighbour sees it.  A PE's local memory as the host sees it is a
:class:`~hw.shared.dual_port_buffer.BufferPortSignature`.
"""

from amaranth.lib import data, wiring
from amaranth.lib.wiring import Out

from nnaccel.hw.pe_ring.isa import InstructionLayout, Opcode

__all__ = ["PE_INSTRUCTION_LAYOUT", "IssueSignature", "RingLinkSignature"]

# What a PE decodes of an instruction: the operation and its register / source / destination codes.
PE_INSTRUCTION_LAYOUT = data.StructLayout({"opcode": Opcode, **{field: InstructionLayout[field].shape
                                                                 for field in ("dst", "a", "b", "c")}})


class IssueSignature(wiring.Signature):
    """The sequencer's instruction bus to the PEs of a ring with ``lm_depth`` local-memory words, seen from the
    sequencer (every member is ``Out``).

    Members: ``busy`` (a program runs: the PEs' local memories belong to the instruction stream, not the host),
    ``valid`` (execute ``instruction`` this cycle), ``sra`` (the ring moves this cycle), ``instruction``
    (:data:`PE_INSTRUCTION_LAYOUT`), ``read_address`` (the LM word the *next* instruction reads: the LM read is
    synchronous), ``write_address`` (the LM word this instruction writes).
    """

    def __init__(self, *, lm_depth):
        self._lm_depth = lm_depth
        super().__init__({"busy": Out(1), "valid": Out(1), "sra": Out(1), "instruction": Out(PE_INSTRUCTION_LAYOUT),
                          "read_address": Out(range(lm_depth)), "write_address": Out(range(lm_depth))})

    @property
    def lm_depth(self):
        return self._lm_depth

    def __eq__(self, other):
        return isinstance(other, IssueSignature) and other.lm_depth == self._lm_depth

    def __hash__(self):
        return hash((IssueSignature, self._lm_depth))

    def __repr__(self):
        return f"IssueSignature(lm_depth={self._lm_depth})"


class RingLinkSignature(wiring.Signature):
    """One step of the ring, seen from the PE that sends: ``data`` Out(shape), the sender's ring register ``x``."""

    def __init__(self, shape):
        self._shape = shape
        super().__init__({"data": Out(shape)})

    def __eq__(self, other):
        return isinstance(other, RingLinkSignature) and repr(other._shape) == repr(self._shape)

    def __hash__(self):
        return hash((RingLinkSignature, repr(self._shape)))

    def __repr__(self):
        return f"RingLinkSignature({self._shape!r})"
