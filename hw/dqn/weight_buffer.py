"""The DQN accelerator's weight RAM: one slice per matrix module, addressed together."""

from amaranth.hdl import Cat, Module
from amaranth.lib.wiring import In

from nnaccel.hw.dqn.config import DqnBlock, DqnConfig, check_config
from nnaccel.hw.shared.dual_port_buffer import BufferPortSignature, DualPortBuffer

__all__ = ["WeightBuffer"]


class WeightBuffer(DqnBlock):
    """A ``weight_depth`` x ``modules * lanes``-element true dual-port RAM built from ``modules`` slices of
    ``lanes`` elements: word ``k`` holds the vectors of product ``k``, slot ``m`` (slice ``m``) feeding module ``m``.

    Ports: ``a``, ``b`` In(BufferPortSignature(width=weight_word_bits, depth=depth, granularity=granularity)): every
    slice takes the port's ``address``, ``read_enable``, ``write_enable`` (with a ``granularity``: its slot's
    enables) and its slot of ``write_data``; ``read_data`` is the slices' words side by side.  ``depth``:
    ``config.weight_depth`` by default (a half of it for each of the two halves of external weights, which are
    written a bus word at a time: ``granularity=8``).
    Timing: :class:`~hw.shared.dual_port_buffer.DualPortBuffer`'s (one-cycle reads).

    The slices are identical :class:`~hw.shared.dual_port_buffer.DualPortBuffer` s, so a build that generates each
    distinct module once (``hw.shared.stand_in``) converts one slice, not a word of ``modules`` slices (Amaranth
    writes a memory's initial contents bit by bit: a 4096 x 512-bit slice takes seconds, the 8,192-bit word
    minutes).  FPGA: ``modules`` x ``ceil(vector bits / 20)`` x ``ceil(weight_depth / 1024)`` M20K blocks on
    Stratix V (16 x 26 x 4 = 1,664 for the thesis).
    """

    def __init__(self, *, config=DqnConfig(), depth=None, granularity=None):
        check_config(config)
        self._depth = config.weight_depth if depth is None else depth
        self._granularity = granularity
        port = BufferPortSignature(width=config.weight_word_bits, depth=self._depth, granularity=granularity)
        super().__init__(config, {"a": In(port), "b": In(port)})

    def elaborate(self, platform):
        m = Module()
        config = self._config
        vector_bits = config.lanes * config.fmt.width
        slices = []
        for index in range(config.modules):
            m.submodules[f"slice{index}"] = slice_ = DualPortBuffer(width=vector_bits, depth=self._depth,
                                                                    granularity=self._granularity)
            slices.append(slice_)
        for name in ("a", "b"):
            port = getattr(self, name)
            for index, slice_ in enumerate(slices):
                slice_port = getattr(slice_, name)
                enables = len(slice_port.write_enable)
                write_enable = port.write_enable if self._granularity is None else \
                    port.write_enable.word_select(index, enables)
                m.d.comb += [slice_port.address.eq(port.address), slice_port.read_enable.eq(port.read_enable),
                             slice_port.write_enable.eq(write_enable),
                             slice_port.write_data.eq(port.write_data.word_select(index, vector_bits))]
            m.d.comb += port.read_data.eq(Cat(getattr(slice_, name).read_data for slice_ in slices))
        return m
