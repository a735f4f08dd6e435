"""The CapsNet accelerator's routing engine (steps 3-6): sums of the prediction vectors, shift squash, lengths, class."""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.capsnet.config import MULTIPLIER_STYLES, OPERAND_BITS, SHIFT_BITS
from nnaccel.hw.capsnet.int_matrix_module import multiply_int8, requantize
from nnaccel.hw.shared.parameters import check_int

__all__ = ["CapsNetRoutingEngine", "routing_sum_bits", "routing_length_bits", "routing_finish_cycles",
           "digit_caps_layout"]

INT8_MAGNITUDE = 1 << (OPERAND_BITS - 1)         # the largest |int8|: 128


def routing_sum_bits(max_capsules):
    """Bits of a signed sum of ``max_capsules`` int8 values: 19 for the CapsNet's 1,152 capsules."""
    return (max_capsules * INT8_MAGNITUDE).bit_length() + 1


def routing_length_bits(dims):
    """Bits of ``|v|^2`` for ``dims`` int8 elements: 19 for 16 (at most 16 * 128**2 = 2**18)."""
    return (dims * INT8_MAGNITUDE * INT8_MAGNITUDE).bit_length()


def routing_finish_cycles(classes, dims):
    """Cycles from the last vector to the last class's beat when every beat is taken at once: ``dims`` per class
    and one to offer its beat (170 for the CapsNet)."""
    return classes * (dims + 1)


def digit_caps_layout(classes, dims, max_capsules):
    """Payload of the engine's ``digit_caps`` stream (see :class:`CapsNetRoutingEngine`)."""
    return data.StructLayout({"sums": dims * routing_sum_bits(max_capsules), "caps": dims * OPERAND_BITS,
                              "squared_length": routing_length_bits(dims), "label": range(classes), "last": 1})


class CapsNetRoutingEngine(wiring.Component):
    """Steps 3-6 of the CapsNet with one routing iteration, exactly as ``models.capsnet.golden.route_fixed``:
    ``s_j = sum_i u_hat_j|i`` (exact), ``v_j = requantize(s_j, shift)`` (round half up, int8 saturation: the
    uniform coupling c_ij = 1/10 ~ 2**-4 and the squash both as one shift), ``|v_j|^2 = sum_k v_jk**2`` and the
    class = the first j of the largest ``|v_j|^2``.

    Ports
    -----
    ``predictions`` (In stream): payload ``vector`` (``dims`` int8, element 0 at the LSB: one prediction vector
    u_hat_j|i) and ``last`` (the image's final vector).  Vectors come capsule-major, class-minor (``i*classes + j``),
    a whole number of capsules (at most ``max_capsules``) per image; ``ready`` is high while the engine accumulates.
    ``shift`` (In 5): the requantization shift, ``squash_shift + COUPLING_SHIFT``; stable until the image's last
    result is taken.
    ``digit_caps`` (Out stream), one beat per class ``j`` in order: ``sums`` (``dims`` signed sums of
    :func:`routing_sum_bits` bits, element 0 at the LSB), ``caps`` (``dims`` int8: v_j), ``squared_length``
    (unsigned, :func:`routing_length_bits` bits), ``label`` (the class of the largest length among classes 0..j,
    so the class of the image on the last beat) and ``last`` (the beat of class ``classes - 1``).

    Structure
    ---------
    The sums live in a ring of ``classes`` words of ``dims`` accumulators: an accepted vector is added to the head
    word, which moves to the tail (the ring turns by one word), so class ``j``'s sum is at the head whenever a
    vector of class ``j`` arrives, and after whole capsules class 0 is at the head again.  After ``last`` the
    ring turns by one element per cycle: the head element is requantized and squared (one requantizer, one 8x8
    multiplier) into the class's result registers while zeros enter the tail, leaving the ring cleared for the
    next image.

    Timing
    ------
    One vector per cycle while accumulating (no stall).  The vector with ``last`` accepted on cycle ``L``: class
    ``j``'s beat is valid from cycle ``L + (j + 1) * (dims + 1)`` when every beat is taken at once (``dims`` cycles
    per class, one to offer the beat), i.e. ``classes * (dims + 1)`` = 170 cycles of finish for the CapsNet; new
    vectors are taken from the cycle after the last beat is taken.

    FPGA mapping (Cyclone V)
    ------------------------
    ``classes * dims`` accumulators of :func:`routing_sum_bits` bits in flip-flops (3,040 for the CapsNet) with a
    3:1 input mux each (hold, word turn with add, element turn), ``dims`` adders of that width, one requantizer,
    one 8x8 multiplier (a DSP 9x9 multiplier, or ALMs with ``multipliers="logic"``), the result registers and a
    comparator in ALMs.  No block RAM.
    """

    def __init__(self, *, classes=10, dims=16, max_capsules=1152, multipliers="dsp"):
        for name, value, high in (("classes", classes, 64), ("dims", dims, 64), ("max_capsules", max_capsules, 1 << 20)):
            check_int(name, value, 1, high)
        if multipliers not in MULTIPLIER_STYLES:
            raise ValueError(f"multipliers must be one of {MULTIPLIER_STYLES}, not {multipliers!r}")
        self._classes, self._dims, self._max_capsules, self._multipliers = classes, dims, max_capsules, multipliers
        self._sum_bits, self._length_bits = routing_sum_bits(max_capsules), routing_length_bits(dims)
        super().__init__({
            "predictions": In(stream.Signature(data.StructLayout({"vector": dims * OPERAND_BITS, "last": 1}))),
            "shift": In(SHIFT_BITS),
            "digit_caps": Out(stream.Signature(digit_caps_layout(classes, dims, max_capsules))),
        })

    @property
    def classes(self):
        return self._classes

    @property
    def dims(self):
        return self._dims

    @property
    def sum_bits(self):
        return self._sum_bits

    @property
    def length_bits(self):
        return self._length_bits

    @property
    def finish_cycles(self):
        return routing_finish_cycles(self._classes, self._dims)

    @property
    def module_name(self):
        return f"capsnet_routing_engine_j{self._classes}_d{self._dims}_c{self._max_capsules}_{self._multipliers}"

    def elaborate(self, platform):
        m = Module()
        classes, dims, sum_bits = self._classes, self._dims, self._sum_bits
        ring = [[Signal(signed(sum_bits), name=f"sum_{j}_{k}") for k in range(dims)] for j in range(classes)]
        elements = [element for word in ring for element in word]      # the ring as one chain, head first
        incoming, result = self.predictions, self.digit_caps

        element = Signal(range(dims))
        class_index = Signal(range(classes))
        head = elements[0]
        capsule = requantize(head, self.shift, Const(0))
        square = multiply_int8(capsule, capsule, self._multipliers)
        sums = Signal(dims * sum_bits)
        caps = Signal(dims * OPERAND_BITS)
        length = Signal(self._length_bits)
        best_length = Signal(self._length_bits)
        best_label = Signal(range(classes))
        payload = result.payload

        with m.FSM():
            with m.State("ACCUMULATE"):
                m.d.comb += incoming.ready.eq(1)
                with m.If(incoming.valid):
                    for j in range(classes - 1):
                        m.d.sync += [current.eq(following) for current, following in zip(ring[j], ring[j + 1])]
                    vector = incoming.payload.vector
                    m.d.sync += [tail.eq(headword + vector.word_select(k, OPERAND_BITS).as_signed())
                                 for k, (tail, headword) in enumerate(zip(ring[-1], ring[0]))]
                    with m.If(incoming.payload.last):
                        m.d.sync += [element.eq(0), class_index.eq(0)]
                        m.next = "FINISH"
            with m.State("FINISH"):
                m.d.sync += [current.eq(following) for current, following in zip(elements, elements[1:])]
                m.d.sync += [elements[-1].eq(0), element.eq(element + 1),
                             sums.eq(Cat(sums[sum_bits:], head)), caps.eq(Cat(caps[OPERAND_BITS:], capsule)),
                             length.eq(Mux(element == 0, 0, length) + square)]
                with m.If(element == dims - 1):
                    m.next = "OFFER"
            with m.State("OFFER"):
                wins = (class_index == 0) | (length > best_length)
                label = Mux(wins, class_index, best_label)
                m.d.comb += [result.valid.eq(1), payload.sums.eq(sums), payload.caps.eq(caps),
                             payload.squared_length.eq(length), payload.label.eq(label),
                             payload.last.eq(class_index == classes - 1)]
                with m.If(result.ready):
                    m.d.sync += [best_label.eq(label), best_length.eq(Mux(wins, length, best_length)),
                                 element.eq(0), class_index.eq(class_index + 1)]
                    with m.If(class_index == classes - 1):
                        m.next = "ACCUMULATE"
                    with m.Else():
                        m.next = "FINISH"
        return m
