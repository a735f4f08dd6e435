"""Configuration of the CapsNet accelerator that streams from SDRAM (:mod:`hw.capsnet.streaming_accelerator`)."""

from dataclasses import dataclass

from hw.capsnet.config import MULTIPLIER_STYLES, OPERAND_BITS, CapsNetConfig

__all__ = ["CapsNetStreamConfig", "SMALL_STREAM_CONFIG", "BUS_BYTES"]

BUS_BYTES = 4           # the Avalon port's 32-bit words


def _check_range(name, value, low, high):
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")


@dataclass(frozen=True)
class CapsNetStreamConfig:
    """Sizes of the streaming CapsNet accelerator.

    classes, digit_dims, primary_dims
        J output capsules (digit classes) of ``digit_dims`` elements (the matrix-vector lanes, a multiple of 4 so
        a prediction vector is whole bus words); input capsules of ``primary_dims`` (N) elements.
    grid
        The PrimaryCaps grid is ``grid x grid`` capsules per type (6 for MNIST); a tile is one grid row.
    row_bytes
        Bytes of one PrimaryCaps row in SDRAM and in the input tile (``grid`` padded to whole bus words: 8).
    max_types
        Most capsule types a run may have (32 for the full CapsNet): sizes the routing engine's sums.
    multipliers
        ``"dsp"`` or ``"logic"`` for the matrix-vector engine's and the routing engine's multipliers.
    max_burst, fifo_depth, address_bits
        The Avalon master (:class:`hw.shared.avalon_master.AvalonBurstMaster`): burst limit, read FIFO words,
        byte address width (26: the DE1-SoC's 64 MB).
    """

    classes: int = 10
    digit_dims: int = 16
    primary_dims: int = 8
    grid: int = 6
    row_bytes: int = 8
    max_types: int = 32
    multipliers: str = "dsp"
    max_burst: int = 128
    fifo_depth: int = 256
    address_bits: int = 26

    def __post_init__(self):
        _check_range("classes", self.classes, 1, 64)
        _check_range("digit_dims", self.digit_dims, BUS_BYTES, 64)
        if self.digit_dims % BUS_BYTES:
            raise ValueError(f"digit_dims must be a multiple of {BUS_BYTES}, not {self.digit_dims!r}")
        _check_range("primary_dims", self.primary_dims, 1, 64)
        _check_range("grid", self.grid, 1, 64)
        _check_range("row_bytes", self.row_bytes, BUS_BYTES, 256)
        if self.row_bytes % BUS_BYTES or self.row_bytes < self.grid:
            raise ValueError(f"row_bytes must be a multiple of {BUS_BYTES} of at least grid ({self.grid}), "
                             f"not {self.row_bytes!r}")
        _check_range("max_types", self.max_types, 1, 255)
        if self.multipliers not in MULTIPLIER_STYLES:
            raise ValueError(f"multipliers must be one of {MULTIPLIER_STYLES}, not {self.multipliers!r}")
        _check_range("address_bits", self.address_bits, 16, 32)

    @property
    def max_capsules(self):
        return self.max_types * self.grid * self.grid

    @property
    def tile_weight_words(self):
        """Matrix-vector weight words (``digit_dims`` bytes) of one tile: ``grid * classes * primary_dims``."""
        return self.grid * self.classes * self.primary_dims

    @property
    def tile_predictions(self):
        """Prediction vectors of one tile: ``grid * classes``."""
        return self.grid * self.classes

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
                             row_elements=self.row_bytes, activation_depth=2 * self.type_rows,
                             matvec_weight_depth=2 * self.tile_weight_words, prediction_depth=2 * self.tile_predictions,
                             max_layers=2)

    @property
    def name(self):
        return (f"capsnet_stream_j{self.classes}_d{self.digit_dims}_n{self.primary_dims}_g{self.grid}_r{self.row_bytes}"
                f"_t{self.max_types}_{self.multipliers}_b{self.max_burst}_f{self.fifo_depth}_a{self.address_bits}")


# A small instance for unit tests: the CapsNet's classes and vectors (route_fixed's), 3-element capsules on a 3 x 3
# grid, short bursts so that the FIFO credit matters.
SMALL_STREAM_CONFIG = CapsNetStreamConfig(classes=10, digit_dims=16, primary_dims=3, grid=3, row_bytes=4, max_types=4,
                                          max_burst=16, fifo_depth=32)
