"""The DQN accelerator's on-chip buffer (SPEC section 1, thesis section 4.2): a true dual-port block RAM."""

import hashlib

import numpy as np
from amaranth.hdl import Module, Mux, ResetSignal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from nnaccel.hw.shared.parameters import check_positive
from nnaccel.hw.shared.stand_in import platform_stand_in

__all__ = ["BufferPortSignature", "DualPortBuffer", "block_ram_count", "pack_words",
           "reads_only", "writes_only"]


class BufferPortSignature(wiring.Signature):
    """One port of a :class:`DualPortBuffer`, seen from the block that drives it (the initiator).

    Members: ``address`` Out(range(depth)), ``read_enable`` Out(1), ``write_enable``
    Out(width // granularity) (one bit per ``granularity``-bit element, element 0 at the LSB; a single bit
    when ``granularity`` is None), ``write_data`` Out(width), ``read_data`` In(width).
    """

    def __init__(self, *, width, depth, granularity=None):
        check_positive("width", width)
        check_positive("depth", depth)
        if granularity is not None:
            check_positive("granularity", granularity)
            if width % granularity:
                raise ValueError(f"granularity must divide the width {width}, not {granularity!r}")
        self._width = width
        self._depth = depth
        self._granularity = granularity
        super().__init__({
            "address": Out(range(depth)),
            "read_enable": Out(1),
            "write_enable": Out(1 if granularity is None else width // granularity),
            "write_data": Out(width),
            "read_data": In(width),
        })

    @property
    def width(self):
        return self._width

    @property
    def depth(self):
        return self._depth

    @property
    def granularity(self):
        return self._granularity

    def __eq__(self, other):
        return (isinstance(other, BufferPortSignature)
                and (self._width, self._depth, self._granularity) == (other.width, other.depth, other.granularity))

    def __hash__(self):
        return hash((BufferPortSignature, self._width, self._depth, self._granularity))

    def __repr__(self):
        return f"BufferPortSignature(width={self._width}, depth={self._depth}, granularity={self._granularity})"


def reads_only(m, port):
    """Drive the write members of ``port`` (a :class:`BufferPortSignature` interface a block only reads through)
    to 0: every ``Out`` member of a component is driven, so its generated module keeps them as outputs."""
    m.d.comb += [port.write_enable.eq(0), port.write_data.eq(0)]


def writes_only(m, port):
    """Drive ``read_enable`` of ``port`` (a :class:`BufferPortSignature` interface a block only writes through) to
    0; its ``read_data`` stays unread (a waived lint finding, ``sim/verilator_waivers.vlt``)."""
    m.d.comb += port.read_enable.eq(0)


def block_ram_count(width, depth, *, block_depth, block_width=20):
    """Blocks of ``block_depth`` x ``block_width`` bits that a ``depth`` x ``width`` true dual-port RAM takes."""
    return -(-width // block_width) * -(-depth // block_depth)


def pack_words(init, *, width, depth):
    """Python-int words of a ``width``-bit memory from ``init``: an unsigned ``(depth,)`` or ``(depth, lanes)`` array.

    A 2-D array packs lane 0 in the least significant ``width // lanes`` bits of each word (``lanes`` must divide
    ``width``); every element must fit in its word (1-D) or lane (2-D).
    """
    array = np.asarray(init)
    if array.dtype.kind != "u":
        raise ValueError(f"init must be an array of unsigned integers (raw bits), not dtype {array.dtype}")
    if array.ndim not in (1, 2) or array.shape[0] != depth:
        raise ValueError(f"init must have shape ({depth},) or ({depth}, lanes), not {array.shape!r}")
    lanes = 1 if array.ndim == 1 else array.shape[1]
    if lanes < 1 or width % lanes:
        raise ValueError(f"init has {lanes} lanes, which do not divide the {width}-bit word")
    lane_bits = width // lanes
    if array.size and lane_bits < 64 and int(array.max()) >> lane_bits:
        raise ValueError(f"init holds {int(array.max())}, which does not fit in {lane_bits} bits")
    if array.ndim == 1:
        return [int(value) for value in array]
    return [sum(int(value) << (lane * lane_bits) for lane, value in enumerate(row)) for row in array]


class DualPortBuffer(wiring.Component):
    """A ``depth`` x ``width``-bit RAM with two identical ports, each doing one read or one write per cycle.

    Ports
    -----
    a, b : In(BufferPortSignature(width=width, depth=depth, granularity=granularity))
        ``address``, ``read_enable``, ``write_enable``, ``write_data`` driven by the user; ``read_data`` returned.

    Timing
    ------
    Reads are synchronous with a latency of one cycle: with ``read_enable`` high on cycle ``n``, ``read_data`` shows
    the word at ``address`` from cycle ``n + 1`` on, and keeps showing it (the output register holds) until the
    next cycle with ``read_enable`` high.  A write with ``write_enable`` high on cycle ``n`` stores ``write_data``
    at the end of cycle ``n``.  Both ports work on every cycle (throughput: two accesses per cycle).  Writes are
    ignored while ``rst`` is high, so contents loaded before a reset (weights, the initial image) survive it
    whatever the write ports' drivers do during the reset; reads and the contents are not reset.

    Read during write
    -----------------
    - Same port (``read_enable`` and ``write_enable`` both high): ``read_data`` shows the word just written
      ("new data", a mode the M20K/M10K offer for the same port).
    - Other port (one port reads the address the other writes on the same cycle): ``read_data`` shows the word
      as it was before the write ("old data").  An M20K in true dual-port mode only guarantees "don't care" here,
      so designs meant for the FPGA must not rely on it.
    - Both ports writing one address on the same cycle is undefined (as on the FPGA); do not do it.

    FPGA mapping
    ------------
    Amaranth emits an inferrable memory: on Stratix V it becomes true dual-port M20K block RAM, on Cyclone V
    M10K.  In true dual-port mode an M20K is at most 20 bits wide (1024 x 20) and an M10K 512 x 20, so a wide word
    is built from ``ceil(width / 20)`` blocks side by side, stacked ``ceil(depth / 1024)`` (M20K) or
    ``ceil(depth / 512)`` (M10K) deep: :attr:`m20k_blocks`, :attr:`m10k_blocks`.  The read-data register is the
    blocks' output register (its clock enable is ``read_enable``).  ``size_bits`` is the storage asked for.

    Parameters
    ----------
    width : int
        Word size in bits (Table 4.1's "word").
    depth : int
        Number of words.
    init : numpy array or None
        Initial contents (raw bits, unsigned): ``(depth,)`` one value per word, or ``(depth, lanes)`` with lane 0 in
        the least significant bits of each word.  ``None`` means all zeros.
    granularity : int or None
        With a granularity, ``write_enable`` has one bit per ``granularity``-bit element and a write stores only
        the enabled elements (the M20K/M10K byte-enable feature, used for 32-bit elements of a wide row word).
    """

    def __init__(self, *, width, depth, init=None, granularity=None):
        port = BufferPortSignature(width=width, depth=depth, granularity=granularity)
        self._width = width
        self._depth = depth
        self._granularity = granularity
        self._init = None if init is None else pack_words(init, width=width, depth=depth)
        super().__init__({"a": In(port), "b": In(port)})

    @property
    def width(self):
        return self._width

    @property
    def depth(self):
        return self._depth

    @property
    def granularity(self):
        return self._granularity

    @property
    def size_bits(self):
        """Storage in bits: ``width * depth``."""
        return self._width * self._depth

    @property
    def m20k_blocks(self):
        """Stratix V M20K blocks in true dual-port mode (1024 x 20 each)."""
        return block_ram_count(self._width, self._depth, block_depth=1024)

    @property
    def m10k_blocks(self):
        """Cyclone V M10K blocks in true dual-port mode (512 x 20 each)."""
        return block_ram_count(self._width, self._depth, block_depth=512)

    @property
    def module_name(self):
        """Verilog module name when generated once for all instances (``hw.shared.stand_in``): its size, and a digest
        of its initial contents if it has any, e.g. ``dual_port_buffer_w512_d4096_g0``."""
        name = f"dual_port_buffer_w{self._width}_d{self._depth}_g{self._granularity or 0}"
        if self._init is None:
            return name
        return name + "_i" + hashlib.sha256(repr(self._init).encode()).hexdigest()[:12]

    def elaborate(self, platform):
        stand_in = platform_stand_in(platform, self, hierarchical_block=False)
        if stand_in is not None:
            return stand_in
        m = Module()
        m.submodules.memory = memory = Memory(shape=self._width, depth=self._depth, init=self._init or [])
        for port in (self.a, self.b):
            write = memory.write_port(granularity=self._granularity)
            read = memory.read_port(transparent_for=(write,))
            m.d.comb += [
                write.addr.eq(port.address),
                write.en.eq(Mux(ResetSignal(), 0, port.write_enable)),
                write.data.eq(port.write_data),
                read.addr.eq(port.address),
                read.en.eq(port.read_enable),
                port.read_data.eq(read.data),
            ]
        return m
