"""Configuration of the CapsNet accelerator (SPEC section 3): one object from which every size derives.

The layer compiler (:mod:`models.capsnet.plan`), the testbench and the report read the same object,
so hardware and software never disagree on a width, a depth or an address.
"""

from dataclasses import dataclass

from nnaccel.hw.shared.parameters import check_int

__all__ = ["CapsNetConfig", "SMALL_CONFIG", "MULTIPLIER_STYLES", "OPERAND_BITS", "ACCUMULATOR_BITS", "SHIFT_BITS",
           "cyclone_v_dsp_blocks"]

OPERAND_BITS = 8          # int8 activations and weights
ACCUMULATOR_BITS = 32     # exact int8 x int8 sums (models/capsnet/int8_layers.py)
SHIFT_BITS = 5            # requantize shift 0..31
MULTIPLIER_STYLES = ("dsp", "logic")
MULTIPLIERS_PER_DSP_BLOCK = 3   # a Cyclone V variable-precision DSP block: three 9x9 multipliers


def cyclone_v_dsp_blocks(multipliers):
    """Cyclone V DSP blocks that ``multipliers`` signed 8x8 multipliers take when each is a 9x9 DSP multiplier."""
    return -(-multipliers // MULTIPLIERS_PER_DSP_BLOCK)


@dataclass(frozen=True)
class CapsNetConfig:
    """Sizes of a CapsNet accelerator instance.

    conv_modules, conv_lanes, conv_rows
        The convolution engine (step 1): ``conv_modules`` integer matrix modules, one output channel each,
        of ``conv_lanes`` lanes, one output position (column of an output row) each: ``conv_modules *
        conv_lanes`` int8 MACs (default 32 x 6 = 192; 6 = the PrimaryCaps output width), each lane with
        ``conv_rows`` accumulators (output rows of one pass: 1, or 6 for the streamed engine).
    conv_tiled
        The convolution engine takes its inputs and weights from two-slot tile RAMs and writes to a staging RAM
        (the streamed accelerator, :class:`~hw.capsnet.conv_engine.CapsNetConvEngine`'s tiled mode).
    matvec_lanes
        The matrix-vector engine (step 2): one integer matrix module of ``matvec_lanes`` lanes (default 16 =
        the DigitCaps dimension): one row of a prediction matrix per lane.
    matvec_requantize_cycles
        Cycles the matrix-vector engine takes to requantize one result: ``matvec_lanes / matvec_requantize_cycles``
        requantizers shared by the lanes (1: one per lane, inside the matrix module).  Sharing saves most of the
        engine's logic (a requantizer is several times a lane's MAC) and needs a result no more often than every
        ``matvec_requantize_cycles`` cycles (``in_dims`` of every matrix-vector layer at least that).
    conv_multipliers, matvec_multipliers
        How each engine builds its 8x8 multipliers: ``"dsp"``, a ``*`` that synthesis maps to a DSP multiplier
        (three per Cyclone V DSP block); ``"logic"``, explicit shift-and-add partial products in ALMs, no DSP
        block.  The choice changes resources only, never the cycle count.
    row_elements
        Elements (int8) in one activation word: the widest image row a layer reads or writes (28, MNIST).
    activation_depth
        Words in each of the two activation RAMs (ping-pong between layers).
    conv_weight_depth, bias_depth
        Words of the convolution weight RAM (``conv_modules`` int8 per word, slot ``m`` feeding module ``m``)
        and of the bias RAM (``conv_modules`` int32 per word).
    matvec_weight_depth, prediction_depth
        Words of the matrix-vector weight RAM and of the prediction RAM (``matvec_lanes`` int8 per word).
    max_layers
        Entries of the layer descriptor table.
    """

    conv_modules: int = 32
    conv_lanes: int = 6
    conv_rows: int = 1
    conv_tiled: bool = False
    matvec_lanes: int = 16
    matvec_requantize_cycles: int = 1
    conv_multipliers: str = "dsp"
    matvec_multipliers: str = "dsp"
    row_elements: int = 28
    activation_depth: int = 8192
    conv_weight_depth: int = 42 * 4096        # the full CapsNet: 166,536 words
    bias_depth: int = 64
    matvec_weight_depth: int = 23 * 4096      # full: 92,160
    prediction_depth: int = 3 * 4096          # full: 11,520
    max_layers: int = 4

    def __post_init__(self):
        check_int("conv_modules", self.conv_modules, 1, 64)
        check_int("conv_lanes", self.conv_lanes, 1, 32)
        check_int("conv_rows", self.conv_rows, 1, 32)
        if not isinstance(self.conv_tiled, bool):
            raise TypeError(f"conv_tiled must be a bool, not {self.conv_tiled!r}")
        check_int("matvec_lanes", self.matvec_lanes, 1, 64)
        check_int("matvec_requantize_cycles", self.matvec_requantize_cycles, 1, self.matvec_lanes)
        if self.matvec_lanes % self.matvec_requantize_cycles:
            raise ValueError(f"matvec_requantize_cycles must divide matvec_lanes ({self.matvec_lanes}), "
                             f"not {self.matvec_requantize_cycles!r}")
        for name in ("conv_multipliers", "matvec_multipliers"):
            if getattr(self, name) not in MULTIPLIER_STYLES:
                raise ValueError(f"{name} must be one of {MULTIPLIER_STYLES}, not {getattr(self, name)!r}")
        check_int("row_elements", self.row_elements, 1, 256)
        check_int("activation_depth", self.activation_depth, 2, 1 << 16)
        check_int("conv_weight_depth", self.conv_weight_depth, 2, 1 << 20)
        check_int("bias_depth", self.bias_depth, 2, 1 << 12)
        check_int("matvec_weight_depth", self.matvec_weight_depth, 2, 1 << 20)
        check_int("prediction_depth", self.prediction_depth, 2, 1 << 16)
        check_int("max_layers", self.max_layers, 1, 16)

    @property
    def conv_macs(self):
        return self.conv_modules * self.conv_lanes

    @property
    def macs(self):
        """Multipliers of the whole accelerator (both engines)."""
        return self.conv_macs + self.matvec_lanes

    @property
    def dsp_blocks(self):
        """Cyclone V DSP blocks of the multipliers: ``ceil(n / 3)`` per engine with ``"dsp"``, 0 with ``"logic"``."""
        return sum(cyclone_v_dsp_blocks(multipliers) for multipliers, style in
                   ((self.conv_macs, self.conv_multipliers), (self.matvec_lanes, self.matvec_multipliers))
                   if style == "dsp")

    @property
    def activation_word_bits(self):
        return self.row_elements * OPERAND_BITS

    @property
    def conv_weight_word_bits(self):
        return self.conv_modules * OPERAND_BITS

    @property
    def bias_word_bits(self):
        return self.conv_modules * ACCUMULATOR_BITS

    @property
    def matvec_word_bits(self):
        return self.matvec_lanes * OPERAND_BITS

    @property
    def host_data_bits(self):
        """Width of the host data port: the widest memory word or descriptor."""
        from nnaccel.hw.capsnet.descriptor import descriptor_bits      # the descriptor layout derives from this config

        return max(self.activation_word_bits, self.conv_weight_word_bits, self.bias_word_bits, self.matvec_word_bits,
                   descriptor_bits(self))

    @property
    def name(self):
        rows = ("" if self.conv_rows == 1 else f"x{self.conv_rows}") + ("t" if self.conv_tiled else "")
        return (f"capsnet_c{self.conv_modules}x{self.conv_lanes}{rows}{self.conv_multipliers}_v{self.matvec_lanes}"
                f"{self.matvec_multipliers}_r{self.row_elements}")

    @property
    def module_name(self):
        """Verilog module name of an accelerator built from this config: every size that changes the hardware."""
        requantizers = "" if self.matvec_requantize_cycles == 1 else f"_q{self.matvec_requantize_cycles}"
        return (f"{self.name}{requantizers}_a{self.activation_depth}_w{self.conv_weight_depth}_b{self.bias_depth}_"
                f"m{self.matvec_weight_depth}_p{self.prediction_depth}_d{self.max_layers}")


# A small instance of the same engines: what unit tests, lint and quick checks use.
SMALL_CONFIG = CapsNetConfig(conv_modules=4, conv_lanes=3, matvec_lanes=4, row_elements=12, activation_depth=512,
                             conv_weight_depth=1024, bias_depth=16, matvec_weight_depth=1024, prediction_depth=128)
