"""Configuration of the CapsNet accelerator that streams from SDRAM (:mod:`hw.capsnet.streaming_accelerator`)."""

from dataclasses import dataclass

from nnaccel.hw.capsnet.config import MULTIPLIER_STYLES, OPERAND_BITS, CapsNetConfig
from nnaccel.hw.shared.parameters import check_int

__all__ = ["CapsNetStreamConfig", "SMALL_STREAM_CONFIG", "BUS_BYTES"]

BUS_BYTES = 4           # the Avalon port's 32-bit words


@dataclass(frozen=True)
class CapsNetStreamConfig:
    """Sizes of the streaming CapsNet accelerator.

    classes, digit_dims, primary_dims
        J output capsules (digit classes) of ``digit_dims`` elements (the matrix-vector lanes, a multiple of 4 so
        a prediction vector is whole bus words); input capsules of ``primary_dims`` (N) elements.
    grid, tile_columns
        The PrimaryCaps grid is ``grid x grid`` capsules per type (6 for MNIST); a step-2 tile is ``tile_columns``
        capsules of one grid row (a divisor of ``grid``: 3, half a row, halves the weight and prediction tiles).
    row_bytes
        Bytes of one PrimaryCaps row in SDRAM and in the input tile (``grid`` padded to whole bus words: 8).
    max_types
        Most capsule types a run may have (32 for the full CapsNet): sizes the routing engine's sums.
    multipliers
        ``"dsp"`` or ``"logic"`` for the matrix-vector engine's and the routing engine's multipliers.
    requantize_cycles
        The matrix-vector engine's ``matvec_requantize_cycles``: ``digit_dims / requantize_cycles`` shared
        requantizers (at most ``primary_dims`` cycles: a result comes every ``primary_dims`` cycles).
    conv_modules, conv_lanes, conv_rows, conv_multipliers
        The convolution engine of step 1 (:class:`~hw.capsnet.conv_engine.CapsNetConvEngine` in its tiled mode):
        ``conv_modules`` (M) output channels by ``conv_lanes`` (L) output columns by ``conv_rows`` output rows
        per pass (accumulators per lane); its multipliers in DSP blocks or ALMs.
    conv_row_bytes, max_map_rows, max_kernel_words, max_blocks
        Step 1's tiles: the widest feature row (28, the image; a multiple of 4), the most rows of an input map
        (28), kernel words of a slab (81 = 9 x 9), channel blocks of a layer (biases held on chip: 32 for the
        full PrimaryCaps and conv1 with M = 8).
    max_burst, fifo_depth, address_bits
        The Avalon master (:class:`hw.shared.avalon_master.AvalonBurstMaster`): burst limit, read FIFO words,
        byte address width (26: the DE1-SoC's 64 MB).
    """

    classes: int = 10
    digit_dims: int = 16
    primary_dims: int = 8
    grid: int = 6
    tile_columns: int = 3
    row_bytes: int = 8
    max_types: int = 32
    multipliers: str = "dsp"
    requantize_cycles: int = 8
    conv_modules: int = 8
    conv_lanes: int = 6
    conv_rows: int = 6
    conv_multipliers: str = "logic"
    conv_row_bytes: int = 28
    max_map_rows: int = 28
    max_kernel_words: int = 81
    max_blocks: int = 32
    max_burst: int = 128
    fifo_depth: int = 256
    address_bits: int = 26

    def __post_init__(self):
        check_int("classes", self.classes, 1, 64)
        check_int("digit_dims", self.digit_dims, BUS_BYTES, 64)
        if self.digit_dims % BUS_BYTES:
            raise ValueError(f"digit_dims must be a multiple of {BUS_BYTES}, not {self.digit_dims!r}")
        check_int("primary_dims", self.primary_dims, 1, 64)
        check_int("grid", self.grid, 1, 64)
        check_int("tile_columns", self.tile_columns, 1, self.grid)
        if self.grid % self.tile_columns:
            raise ValueError(f"tile_columns must divide grid ({self.grid}), not {self.tile_columns!r}")
        check_int("row_bytes", self.row_bytes, BUS_BYTES, 256)
        if self.row_bytes % BUS_BYTES or self.row_bytes < self.grid:
            raise ValueError(f"row_bytes must be a multiple of {BUS_BYTES} of at least grid ({self.grid}), "
                             f"not {self.row_bytes!r}")
        check_int("max_types", self.max_types, 1, 255)
        if self.multipliers not in MULTIPLIER_STYLES:
            raise ValueError(f"multipliers must be one of {MULTIPLIER_STYLES}, not {self.multipliers!r}")
        check_int("requantize_cycles", self.requantize_cycles, 1, min(self.primary_dims, self.digit_dims))
        if self.digit_dims % self.requantize_cycles:
            raise ValueError(f"requantize_cycles must divide digit_dims ({self.digit_dims}), "
                             f"not {self.requantize_cycles!r}")
        check_int("address_bits", self.address_bits, 16, 32)
        check_int("conv_modules", self.conv_modules, 1, 64)
        if self.conv_modules % BUS_BYTES:
            raise ValueError(f"conv_modules must be a multiple of {BUS_BYTES} (a kernel word is whole bus words), "
                             f"not {self.conv_modules!r}")
        check_int("conv_lanes", self.conv_lanes, 1, 32)
        check_int("conv_rows", self.conv_rows, 1, 32)
        if self.conv_multipliers not in MULTIPLIER_STYLES:
            raise ValueError(f"conv_multipliers must be one of {MULTIPLIER_STYLES}, not {self.conv_multipliers!r}")
        check_int("conv_row_bytes", self.conv_row_bytes, BUS_BYTES, 256)
        if self.conv_row_bytes % BUS_BYTES or self.conv_row_bytes < self.row_bytes:
            raise ValueError(f"conv_row_bytes must be a multiple of {BUS_BYTES} of at least row_bytes "
                             f"({self.row_bytes}), not {self.conv_row_bytes!r}")
        check_int("max_map_rows", self.max_map_rows, 1, 1024)
        check_int("max_kernel_words", self.max_kernel_words, 1, 1024)
        check_int("max_blocks", self.max_blocks, 1, 256)

    @property
    def max_capsules(self):
        return self.max_types * self.grid * self.grid

    @property
    def row_tiles(self):
        """Step-2 tiles of one grid row: ``grid / tile_columns``."""
        return self.grid // self.tile_columns

    @property
    def tile_weight_words(self):
        """Matrix-vector weight words (``digit_dims`` bytes) of one tile: ``tile_columns * classes * primary_dims``."""
        return self.tile_columns * self.classes * self.primary_dims

    @property
    def tile_predictions(self):
        """Prediction vectors of one tile: ``tile_columns * classes``."""
        return self.tile_columns * self.classes

    @property
    def type_rows(self):
        """Input rows of one capsule type: ``primary_dims * grid`` (channel-major, then grid row)."""
        return self.primary_dims * self.grid

    @property
    def vector_bytes(self):
        return self.digit_dims * OPERAND_BITS // 8

    @property
    def matvec_config(self):
        """The :class:`~hw.capsnet.config.CapsNetConfig` of the matrix-vector engine on the tile RAMs (two slots each)."""
        return CapsNetConfig(matvec_lanes=self.digit_dims, matvec_multipliers=self.multipliers,
                             matvec_requantize_cycles=self.requantize_cycles,
                             row_elements=self.row_bytes, activation_depth=2 * self.type_rows,
                             matvec_weight_depth=2 * self.tile_weight_words, prediction_depth=2 * self.tile_predictions,
                             max_layers=2)

    @property
    def conv_config(self):
        """The :class:`~hw.capsnet.config.CapsNetConfig` of the convolution engine on the step-1 tile RAMs: input
        maps and output staging in two slots each, kernel slabs in two slots, the biases of every block."""
        return CapsNetConfig(conv_modules=self.conv_modules, conv_lanes=self.conv_lanes, conv_rows=self.conv_rows,
                             conv_tiled=True,
                             conv_multipliers=self.conv_multipliers, row_elements=self.conv_row_bytes,
                             activation_depth=max(2 * self.max_map_rows, self.staging_words),
                             conv_weight_depth=2 * self.max_kernel_words, bias_depth=max(2, self.max_blocks),
                             max_layers=2)

    @property
    def tile_rams(self):
        """``{name: (width bits, depth)}`` of the tile RAMs with byte enables (the accelerator builds its RAMs from
        this; the routing results and the tile port's FIFO come on top): step 1's input maps, kernel slabs, biases
        and output staging (the inputs as deep as the staging: one engine address), step 2's input rows, weights
        and predictions."""
        conv = self.conv_config
        return {"conv_inputs": (8 * self.conv_row_bytes, conv.activation_depth),
                "conv_slabs": (8 * self.conv_modules, 2 * self.max_kernel_words),
                "conv_biases": (32 * self.conv_modules, max(2, self.max_blocks)),
                "conv_staging": (8 * self.conv_row_bytes, conv.activation_depth),
                "inputs": (8 * self.row_bytes, 2 * self.type_rows),
                "weights": (8 * self.vector_bytes, 2 * self.tile_weight_words),
                "predictions": (8 * self.vector_bytes, 2 * self.tile_predictions)}

    @property
    def tile_ram_bits(self):
        return sum(width * depth for width, depth in self.tile_rams.values())

    @property
    def staging_words(self):
        """Words of the output staging RAM: two slots of ``conv_modules * conv_rows`` rows."""
        return 2 * self.conv_modules * self.conv_rows

    @property
    def port_ram_bits(self):
        """The tile port's RAM word: the widest of a feature row, a bias word, a prediction vector."""
        return 8 * max(self.conv_row_bytes, 4 * self.conv_modules, self.vector_bytes, self.row_bytes)

    @property
    def name(self):
        return (f"capsnet_stream_j{self.classes}_d{self.digit_dims}_n{self.primary_dims}"
                f"_g{self.grid}x{self.tile_columns}_r{self.row_bytes}_t{self.max_types}_{self.multipliers}"
                f"_q{self.requantize_cycles}_c{self.conv_modules}x{self.conv_lanes}x{self.conv_rows}"
                f"{self.conv_multipliers}_w{self.conv_row_bytes}_m{self.max_map_rows}_k{self.max_kernel_words}"
                f"_o{self.max_blocks}_b{self.max_burst}_f{self.fifo_depth}_a{self.address_bits}")


# A small instance for unit tests: the CapsNet's classes and vectors (route_fixed's), 3-element capsules on a 3 x 3
# grid in tiles of one capsule, 8 shared requantizers (2 cycles per result), short bursts so that the FIFO credit
# matters.
# Step 1 in the small instance: M = 4 output channels, 3 lanes, 2 rows per pass, on maps of up to 12 rows of 12 bytes.
SMALL_STREAM_CONFIG = CapsNetStreamConfig(classes=10, digit_dims=16, primary_dims=3, grid=3, tile_columns=1,
                                          row_bytes=4, max_types=4, requantize_cycles=2,
                                          conv_modules=4, conv_lanes=3, conv_rows=2, conv_row_bytes=12,
                                          max_map_rows=12, max_kernel_words=9, max_blocks=4, max_burst=16,
                                          fifo_depth=32)
