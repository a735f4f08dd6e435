"""Configuration of the DQN accelerator: one object from which every size of the hardware derives.

Software (the layer compiler, the testbench, the report) reads the same object, so hardware and
software never disagree on a width, a depth or an address.
"""

from dataclasses import dataclass, field, replace

from amaranth.lib import wiring

from nnaccel.hw.shared.float_format import BINARY16, BINARY32, FloatFormat
from nnaccel.hw.shared.parameters import check_int

__all__ = ["DqnConfig", "REDUCED_CONFIG", "MLPERF_CONFIG", "DE1_SOC_CONFIG", "DE1_SOC_BINARY16_CONFIG", "DqnBlock",
           "check_config"]


@dataclass(frozen=True)
class DqnConfig:
    """Sizes of a DQN accelerator instance.

    modules, lanes
        Matrix modules and lanes per module (16 x 16 = 256 float MACs in the thesis). ``modules`` must
        be a power of two (output positions are spread over modules by shifts).
    fmt, multiplier_latency, adder_latency
        Number format and pipeline depths of the float units inside each matrix module.
    row_elements
        Elements in one activation word: the widest image row a layer may read or write (84).
    pad_columns
        Zero elements in front of each row register of the window feeder: the widest left padding of a
        convolution (zeros at and past a row's width and rows outside the image are zeroed as they load, so the
        right, top and bottom padding have no limit).
    activation_depth
        Words in each of the two activation RAMs (ping-pong between layers).
    weight_depth
        Words in the weight RAM; a weight word holds ``modules * lanes`` elements, slot ``m`` feeding
        module ``m``.
    max_layers
        Entries of the layer descriptor table (passes of one run): at most 64 in flip-flops, 1,024 with
        ``descriptor_ram``.
    descriptor_ram
        Keep the descriptor table in block RAM (:class:`~hw.shared.descriptor_ram.DescriptorRam`, read one entry
        ahead: no counter changes) instead of ``max_layers`` descriptor registers and their read multiplexer
        (default False: the build unchanged).
    counter_ram
        Keep the per-layer performance counters in block RAM (:class:`~hw.shared.counter_ram.CounterRam`: the
        running layer's four in registers) instead of ``4 * max_layers`` counters with their adders (default False:
        the build unchanged).
    max_pooling
        Build the matrix modules with their max mode (``MatrixModule(maximum=True)``) and give the descriptor its
        ``maximum`` bit: max pooling runs on the accelerator (default False: no max mode, none of its area; the
        matrix module docstring gives the cost, +15 % ALMs per 16-lane binary32 module).
    external_weights
        Keep the weights in external memory behind an Avalon-MM master (the ``avalon`` port) instead of loading
        them through the host port: the weight RAM becomes two halves of ``weight_depth / 2`` words (a power of
        two), each pass's weights a tile loaded into one half while the pass before computes from the other, or,
        for a one-group pass larger than a half, streamed through its half as a ring
        (:class:`~hw.dqn.streamed_weights.StreamedWeights`; default False: on-chip weights, the build unchanged).
    weight_loads
        With external weights: entries of the load table (the tile loads of a run, a few per streamed pass).
    external_bus_bits
        With external weights: the Avalon-MM port's data width (32: the DE1-SoC's SDRAM controller port; a power
        of two dividing a weight word).
    argmax_tiles
        The argmax spans a last layer cut into channel tiles: the descriptor carries its pass's ``first_channel``,
        every pass writing the network's output has the ``last`` bit, and the writer offsets the argmax index by the
        tile's first channel (default False: only the run's last pass feeds the argmax, the build unchanged).
    flat_slots, flat_window_words
        The flat map (docs/dqn_accelerator.md, "The flat map's datapath"): with ``flat_slots`` 1, 2 or 4 the feeder has
        a :class:`~hw.dqn.flat_lane_window.FlatLaneWindow` of ``flat_window_words`` words per slot, the writer a
        :class:`~hw.dqn.flat_word_packer.FlatWordPacker` and the descriptor the flat fields: a stride-1 depthwise
        layer runs with the lanes over output positions, each slot's (``modules / flat_slots`` modules) of one
        channel, a group over ``flat_slots`` channels (default 0: no flat map, the build unchanged).
    """

    modules: int = 16
    lanes: int = 16
    fmt: FloatFormat = field(default=BINARY32)
    multiplier_latency: int = 2
    adder_latency: int = 2
    row_elements: int = 84
    pad_columns: int = 4
    activation_depth: int = 1024
    weight_depth: int = 4096
    max_layers: int = 8
    descriptor_ram: bool = False
    counter_ram: bool = False
    max_pooling: bool = False
    external_weights: bool = False
    weight_loads: int = 64
    external_bus_bits: int = 32
    argmax_tiles: bool = False
    flat_slots: int = 0
    flat_window_words: int = 6

    def __post_init__(self):
        check_int("modules", self.modules, 1, 64)
        if self.modules & (self.modules - 1):
            raise ValueError(f"modules must be a power of two, not {self.modules!r}")
        check_int("lanes", self.lanes, 1, 64)
        if not isinstance(self.fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {self.fmt!r}")
        check_int("multiplier_latency", self.multiplier_latency, 0, 8)
        check_int("adder_latency", self.adder_latency, 0, 8)
        check_int("row_elements", self.row_elements, 1, 1024)
        check_int("pad_columns", self.pad_columns, 0, 16)
        check_int("activation_depth", self.activation_depth, 2, 1 << 16)
        check_int("weight_depth", self.weight_depth, 2, 1 << 20)
        for name in ("descriptor_ram", "counter_ram"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {getattr(self, name)!r}")
        check_int("max_layers", self.max_layers, 1, 1 << 10 if self.descriptor_ram else 64)
        if not isinstance(self.max_pooling, bool):
            raise TypeError(f"max_pooling must be a bool, not {self.max_pooling!r}")
        if not isinstance(self.external_weights, bool):
            raise TypeError(f"external_weights must be a bool, not {self.external_weights!r}")
        if not isinstance(self.argmax_tiles, bool):
            raise TypeError(f"argmax_tiles must be a bool, not {self.argmax_tiles!r}")
        check_int("weight_loads", self.weight_loads, 1, 1 << 12)
        check_int("external_bus_bits", self.external_bus_bits, 32, 1024)
        bus = self.external_bus_bits
        if bus & (bus - 1):
            raise ValueError(f"external_bus_bits must be a power of two, not {bus!r}")
        if self.external_weights and (self.weight_depth & (self.weight_depth - 1) or self.weight_depth < 4
                                      or self.weight_word_bits % bus):
            raise ValueError(f"external weights need a weight_depth of a power of two from 4 and weight words of whole "
                             f"{bus}-bit bus words, not {self.weight_depth} words of {self.weight_word_bits} bits")
        check_int("flat_slots", self.flat_slots, 0, 4)
        if self.flat_slots and self.modules % self.flat_slots:
            raise ValueError(f"flat_slots must divide the {self.modules} modules, not {self.flat_slots!r}")
        check_int("flat_window_words", self.flat_window_words, 2, 64)
        if self.flat_slots and (self.flat_slots * self.flat_window_words % 2 or self.external_weights
                                or self.fmt.width < 12
                                or self.flat_window_words * self.row_elements < self.flat_group_lanes):
            raise ValueError(f"the flat map needs windows of at least {self.flat_group_lanes} elements, an even "
                             f"number of window words over the slots, on-chip weights and elements of 12 bits or "
                             f"more (the lanes' coordinates), not {self.flat_slots} x {self.flat_window_words} words "
                             f"of {self.row_elements} {self.fmt.name} elements"
                             + (" with external weights" if self.external_weights else ""))

    @property
    def macs(self):
        return self.modules * self.lanes

    @property
    def element_bits(self):
        return self.fmt.width

    @property
    def activation_word_bits(self):
        return self.row_elements * self.fmt.width

    @property
    def weight_word_bits(self):
        return self.modules * self.lanes * self.fmt.width

    @property
    def weight_half_depth(self):
        """Words of one half of the weight RAM with external weights: the largest tile loaded whole."""
        return self.weight_depth // 2

    @property
    def weight_address_depth(self):
        """Words a weight address reaches: the weight RAM, or with external weights a half (addresses wrap)."""
        return self.weight_half_depth if self.external_weights else self.weight_depth

    @property
    def host_data_bits(self):
        """Width of the host data port: the widest memory word."""
        return max(self.activation_word_bits, self.weight_word_bits)

    @property
    def name(self):
        return f"dqn_m{self.modules}_l{self.lanes}_{self.fmt.name}"

    @property
    def module_name(self):
        """Verilog module name of an accelerator built from this config: every size that changes the hardware."""
        return (f"{self.name}_r{self.row_elements}_p{self.pad_columns}_a{self.activation_depth}_w{self.weight_depth}_"
                f"d{self.max_layers}_ml{self.multiplier_latency}_al{self.adder_latency}"
                + ("_max" if self.max_pooling else "")
                + (f"_ext{self.weight_loads}" if self.external_weights else "")
                + (f"_bus{self.external_bus_bits}" if self.external_weights and self.external_bus_bits != 32 else "")
                + ("_at" if self.argmax_tiles else "") + ("_dr" if self.descriptor_ram else "")
                + ("_cr" if self.counter_ram else "")
                + (f"_flat{self.flat_slots}w{self.flat_window_words}" if self.flat_slots else ""))

    @property
    def flat_group_lanes(self):
        """A flat group's positions of one channel: a channel slot's lanes (``macs / flat_slots``)."""
        return self.macs // max(1, self.flat_slots)

    @property
    def flat_loads(self):
        """The read cycles that load a flat group's windows: every slot's words, two a cycle (the activation RAM's
        two read ports), slot 0's first."""
        return self.flat_slots * self.flat_window_words // 2


# A small instance running the same controller code as the 16 x 16 machine: what unit tests, lint and quick
# benchmarks use (with models.dqn.network.reduced_layers).
REDUCED_CONFIG = DqnConfig(modules=2, lanes=4, row_elements=12, pad_columns=2, activation_depth=128, weight_depth=256,
                           max_layers=8)

# The 16 x 16 binary32 machine sized for the MLPerf Tiny reference models: 96-element rows (the visual wake words
# image), deep activation and weight RAMs and a descriptor table for MobileNetV1's passes.
MLPERF_CONFIG = DqnConfig(row_elements=96, activation_depth=4096, weight_depth=8192, max_layers=64)

# The thesis network toward a DE1-SoC (Cyclone V 5CSEMA5: 397 M10K, 87 DSP blocks): 2 x 4 binary32 MACs, the thesis'
# 84-element rows in two 512-word activation RAMs, the weights in the board's SDRAM through two 512-word halves
# (FC_1's channel tiles, 2,593 words each, stream through their half), 64 descriptors and the layers' counters in
# block RAM for the 41 passes, 512 loads, the argmax across FC_2's channel tiles. In binary32 it does not fit the
# 5CSEMA5's ALMs (docs/dqn_accelerator.md, "Fit on the 5CSEMA5"); the external-weight design space's default.
DE1_SOC_CONFIG = DqnConfig(modules=2, lanes=4, activation_depth=512, weight_depth=1024, max_layers=64,
                           descriptor_ram=True, counter_ram=True, external_weights=True, weight_loads=512,
                           argmax_tiles=True)

# The same in binary16: it fits the 5CSEMA5 by `nnaccel synth`'s estimate (half the adders, multipliers, activation
# steering, row registers, M10K and SDRAM bytes); the configuration `--board de1soc` builds.
DE1_SOC_BINARY16_CONFIG = replace(DE1_SOC_CONFIG, fmt=BINARY16)


def check_config(config):
    """``config`` if it is a :class:`DqnConfig`; a TypeError naming it otherwise."""
    if not isinstance(config, DqnConfig):
        raise TypeError(f"config must be a DqnConfig, not {config!r}")
    return config


class DqnBlock(wiring.Component):
    """Base of the DQN accelerator's blocks: the :class:`DqnConfig` they are built for (checked; the read-only
    ``config``) and their ports (``members``).  No hardware of its own: each block's docstring gives its ports,
    timing and FPGA mapping."""

    def __init__(self, config, members):
        self._config = check_config(config)
        super().__init__(members)

    @property
    def config(self):
        return self._config
