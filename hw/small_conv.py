"""A small convolution layer end to end (issue 3): image buffer -> ConvFeeder -> matrix modules, weight buffer."""

import numpy as np
from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .conv_feeder import FEEDER_LATENCY, ConvFeeder, ConvGeometry
from .dual_port_buffer import DualPortBuffer
from .float_format import BINARY32, FloatFormat
from .matrix_module import MatrixModule, matrix_module_latency
from .separate_module import instantiate_separately

__all__ = ["SmallConv", "WEIGHT_READ_LATENCY"]

WEIGHT_READ_LATENCY = 1
"""Cycles between the feeder's ``weight_index`` and the weight vector it selects (the buffer's read latency)."""

GROUP_FIELDS = ("output_row", "head_count", "active")


def _check_raw_bits(name, array, shape):
    array = np.asarray(array)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, not {array.shape!r}")
    if array.dtype.kind != "u":
        raise ValueError(f"{name} must hold raw bits (unsigned integers), not dtype {array.dtype}")
    return array


class SmallConv(wiring.Component):
    """One convolution layer computed by a :class:`~hw.conv_feeder.ConvFeeder` feeding ``positions`` matrix modules
    (:class:`~hw.matrix_module.MatrixModule`, one lane per filter), image and weights in block RAM.

    The image and weights are the buffers' initial contents (there is no load port): a fixed layer, the issue's
    end-to-end check of feeder, buffers and matrix modules together.  ``positions = 1`` (a single matrix module)
    is accepted by the feeder only for output rows of at most 2 positions; for wider rows use the smallest
    ``positions`` it accepts (5-wide rows: 4).

    Datapath
    --------
    The image (``channels`` x ``image_size`` x ``image_size``) sits in a :class:`~hw.dual_port_buffer.DualPortBuffer`
    one image row per word, both ports owned by the feeder.  The weights (``channels`` x ``kernel_size`` x
    ``kernel_size`` x ``filters``, stored [in_channel, filter_h, filter_w, out_channel]) sit in a second buffer
    whose word ``weight_index`` is the ``filters``-wide vector of that product.  Each cycle the feeder emits one
    scalar per output position of the current group and ``weight_index``; the weight buffer reads that word
    (port ``a``; port ``b`` is unused), and the scalars wait one register stage (``WEIGHT_READ_LATENCY = 1``) so
    that scalar and vector meet at the matrix modules.  Matrix module ``m`` takes scalar ``m`` and the shared
    weight vector; every accumulation has ``count = channels * kernel_size**2`` products and the ``relu`` flag of
    the layer.  Summation order: the matrix module's (``models.small_conv.small_conv_groups`` repeats it).

    Ports
    -----
    start : In(1)
        Pulse to compute the layer (ignored while the feeder is busy; a new layer may start on the cycle after the
        feeder's last product, while the matrix modules still drain the previous one).
    out_valid : Out(1)
        High on one cycle per group, ``groups = ceil(output_size**2 / positions)`` times per layer.
    result : Out(positions * filters * fmt.width)
        The group's outputs: module ``m``'s ``filters`` values at bits ``(m * filters + f) * fmt.width``.
    output_row, head_count, active : Out
        The feeder's description of the group (see :class:`~hw.conv_feeder.ConvFeeder`): module ``m < head_count``
        computed output ``(output_row, m)``, the others ``(output_row - 1, m + output_size - positions)``; bit ``m``
        of ``active`` is low for an idle module of the ragged last group (its ``result`` is the sum of ``0 * w``).

    Timing (cycles counted from the cycle ``start`` is high)
    --------------------------------------------------------
    The feeder's beat ``t`` leaves on cycle ``FEEDER_LATENCY + t`` (``FEEDER_LATENCY = 4``), one beat per cycle
    without a stall; its scalars reach the matrix modules ``WEIGHT_READ_LATENCY = 1`` cycle later, and a
    group's result comes ``L = MatrixModule.latency`` (``Lm + La * (1 + ceil(log2(max(La, 1))))``) cycles after
    its last product entered.  Group ``g`` (``g = 0 .. groups - 1``) therefore comes out on cycle

        ``result_cycle(g) = FEEDER_LATENCY + WEIGHT_READ_LATENCY + (g + 1) * products - 1 + L``

    and the last result on ``cycles = FEEDER_LATENCY + groups * products + L`` (with ``WEIGHT_READ_LATENCY = 1``).
    Throughput: ``positions * filters`` multiply-adds per cycle, one group per ``products`` cycles.
    Example: 2x12x12 image, 4 filters 4x4, stride 2, 4 positions (5x5 output, 7 groups of 32 products),
    ``Lm = La = 2`` (``L = 6``): results on cycles 4 + 32 (g + 1) + 6, the last on 4 + 224 + 6 = 234.

    Resources
    ---------
    The feeder's registers and multiplexers (ALMs), ``positions`` matrix modules (``positions * filters``
    multipliers: DSP blocks on Stratix V / Cyclone V, adders in ALMs), the image buffer
    (``ceil(image_size * width / 20) * ceil(channels * image_size / 1024)`` M20K) and the weight buffer
    (``ceil(filters * width / 20) * ceil(products / 1024)`` M20K), plus ``positions * width + 1`` bits of scalar
    delay and ``(1 + L)`` copies of the group description.

    Parameters
    ----------
    channels, image_size, kernel_size, stride, positions : int
        The layer's geometry (:class:`~hw.conv_feeder.ConvGeometry` says which ``positions`` are accepted).
    image : numpy array
        ``(channels, image_size, image_size)`` raw bits of ``fmt``, unsigned.
    weights : numpy array
        ``(channels, kernel_size, kernel_size, filters)`` raw bits of ``fmt``, unsigned; ``filters`` is the
        matrix modules' lane count.
    relu : bool
        Apply ReLU to every output.
    fmt : FloatFormat
        Number format of the image, weights and results.
    multiplier_latency, adder_latency : int
        The matrix modules' float unit latencies ``Lm``, ``La``.
    """

    def __init__(self, *, channels, image_size, kernel_size, stride, positions, image, weights, relu=True,
                 fmt=BINARY32, multiplier_latency=2, adder_latency=2):
        if not isinstance(fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {fmt!r}")
        self._geometry = ConvGeometry(channels=channels, image_size=image_size, kernel_size=kernel_size,
                                      stride=stride, positions=positions)
        self._image = _check_raw_bits("image", image, (channels, image_size, image_size))
        weights = np.asarray(weights)
        if weights.ndim != 4 or weights.shape[:3] != (channels, kernel_size, kernel_size) or not weights.shape[3]:
            raise ValueError(f"weights must have shape ({channels}, {kernel_size}, {kernel_size}, filters), "
                             f"not {weights.shape!r}")
        self._weights = _check_raw_bits("weights", weights, weights.shape)
        if not isinstance(relu, bool):
            raise ValueError(f"relu must be a bool, not {relu!r}")
        for parameter, value in (("multiplier_latency", multiplier_latency), ("adder_latency", adder_latency)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{parameter} must be a non-negative integer, not {value!r}")
        self._relu = relu
        self._fmt = fmt
        self._multiplier_latency = multiplier_latency
        self._adder_latency = adder_latency
        super().__init__({
            "start": In(1),
            "out_valid": Out(1),
            "result": Out(positions * self.filters * fmt.width),
            "output_row": Out(range(self._geometry.output_size + 1)),
            "head_count": Out(range(positions + 1)),
            "active": Out(positions),
        })

    @property
    def geometry(self):
        return self._geometry

    @property
    def filters(self):
        return self._weights.shape[3]

    @property
    def relu(self):
        return self._relu

    @property
    def fmt(self):
        return self._fmt

    @property
    def multiplier_latency(self):
        return self._multiplier_latency

    @property
    def adder_latency(self):
        return self._adder_latency

    @property
    def matrix_module_latency(self):
        """``L``: cycles from an accumulation's last product to its result."""
        return matrix_module_latency(self._multiplier_latency, self._adder_latency)

    def result_cycle(self, group):
        """Cycle (after the ``start`` cycle) on which group ``group``'s result leaves (see Timing)."""
        return (FEEDER_LATENCY + WEIGHT_READ_LATENCY + (group + 1) * self._geometry.products - 1
                + self.matrix_module_latency)

    @property
    def cycles(self):
        """Cycles from the ``start`` cycle to the last result: ``result_cycle(groups - 1)``."""
        return self.result_cycle(self._geometry.groups - 1)

    @property
    def module_name(self):
        """Verilog module name carrying the parameters, e.g. ``small_conv_c2_i12_k4_s2_p4_f4_binary32_m2_a2_relu``."""
        geometry = self._geometry
        return (f"small_conv_c{geometry.channels}_i{geometry.image_size}_k{geometry.kernel_size}"
                f"_s{geometry.stride}_p{geometry.positions}_f{self.filters}_{self._fmt.name}"
                f"_m{self._multiplier_latency}_a{self._adder_latency}" + ("_relu" if self._relu else ""))

    def _blocks(self):
        """``{block: factory}`` of the separately generated blocks (built when first instantiated)."""
        geometry, fmt = self._geometry, self._fmt
        rows = geometry.channels * geometry.image_size
        return {
            "feeder": lambda: ConvFeeder(channels=geometry.channels, image_size=geometry.image_size,
                                         kernel_size=geometry.kernel_size, stride=geometry.stride,
                                         positions=geometry.positions, fmt=fmt),
            "image_buffer": lambda: DualPortBuffer(width=geometry.image_size * fmt.width, depth=rows,
                                                   init=self._image.reshape(rows, geometry.image_size)),
            "weight_buffer": lambda: DualPortBuffer(width=self.filters * fmt.width, depth=geometry.products,
                                                    init=self._weights.reshape(geometry.products, self.filters)),
        }

    def elaborate(self, platform):
        m = Module()
        width = self._fmt.width
        geometry = self._geometry
        # Every block is its own Verilog module with its whole port list (the feeder is the very module
        # tests/test_conv_feeder.py checks); outputs this layer does not need (the feeder's first/last, the
        # weight buffer's port b) are left unconnected instead of being optimized away inside the block.
        blocks = {block: instantiate_separately(m, self, factory, module_name=f"{self.module_name}_{block}",
                                                instance_name=block)
                  for block, factory in self._blocks().items()}
        feeder, image_buffer, weight_buffer = blocks["feeder"], blocks["image_buffer"], blocks["weight_buffer"]
        wiring.connect(m, feeder.upper, image_buffer.a)
        wiring.connect(m, feeder.lower, image_buffer.b)
        m.d.comb += [
            feeder.start.eq(self.start),
            weight_buffer.a.address.eq(feeder.weight_index),
            weight_buffer.a.read_enable.eq(feeder.out_valid),
        ]

        # ---- Weight read stage: the scalars wait for the weight vector ---------------------------------------
        product_valid = Signal()
        scalars = Signal(len(feeder.scalars), reset_less=True)
        m.d.sync += [product_valid.eq(feeder.out_valid), scalars.eq(feeder.scalars)]

        # ---- Matrix modules (one generated Verilog module, instantiated positions times) --------------------
        def make_matrix_module():
            return MatrixModule(lanes=self.filters, fmt=self._fmt, multiplier_latency=self._multiplier_latency,
                                adder_latency=self._adder_latency, count_bits=geometry.products.bit_length())

        results = []
        for position in range(geometry.positions):
            module = instantiate_separately(m, self, make_matrix_module,
                                            module_name=f"{self.module_name}_matrix_module",
                                            instance_name=f"matrix_module{position}")
            m.d.comb += [
                module.in_valid.eq(product_valid),
                module.scalar.eq(scalars.word_select(position, width)),
                module.vector.eq(weight_buffer.a.read_data),
                module.count.eq(geometry.products),
                module.relu.eq(self._relu),
            ]
            results.append(module.result)
            if position == 0:
                m.d.comb += self.out_valid.eq(module.out_valid)
        m.d.comb += self.result.eq(Cat(*results))

        # ---- Group description, delayed to the result ----------------------------------------------------------
        # Constant during a group, so the feeder's value on the group's last beat, delayed by the weight read and
        # the matrix modules' latency, is the one that goes with the result.
        for name in GROUP_FIELDS:
            value = getattr(feeder, name)
            for stage in range(WEIGHT_READ_LATENCY + self.matrix_module_latency):
                delayed = Signal(Value.cast(value).shape(), name=f"{name}_d{stage + 1}", reset_less=True)
                m.d.sync += delayed.eq(value)
                value = delayed
            m.d.comb += getattr(self, name).eq(value)
        return m
