"""The seeds' template accelerator (DANCE's Eyeriss-like space, SPEC section 4): a PE_y x PE_x
array of processing elements, each one MAC and a register file (RF), one global buffer (GB) that
feeds the array, and off-chip memory (HBM class, about 128 GB/s).

Design space (``TemplateSpace``): PE_x and PE_y from 8 to 24, RF per PE 4 to 64 words (sampled
from the powers of two, as a one-hot choice), dataflow weight-, output- or row-stationary.

What a dataflow means here (it constrains the mapping, see ``Mapping.validate``):
- which layer dimensions may be unrolled over the PEs (``parallel_dims``), and
- which dimension the RF level may iterate innermost (``rf_innermost_dims``), i.e. which tensor
  stays in the RF while the innermost loop runs:

  ========  =====================  ======================  =================================
  dataflow  parallel dims          innermost RF loop       stays in the RF
  ========  =====================  ======================  =================================
  WS        K, C                   N, Y or X               the weights (TPU / NVDLA style)
  OS        N, K, Y, X             C, R or S               the partial sums (ShiDianNao)
  RS        R, Y, K, C             S or X                  a filter row and a psum row (Eyeriss)
  ========  =====================  ======================  =================================

Number formats set the word size of every tensor and the MAC's energy and area.
"""

from dataclasses import asdict, dataclass
from enum import Enum

NUMBER_FORMAT_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "int8": 8}


class Dataflow(str, Enum):
    WS = "WS"
    OS = "OS"
    RS = "RS"

    @property
    def parallel_dims(self):
        return _PARALLEL_DIMS[self]

    @property
    def rf_innermost_dims(self):
        return _RF_INNERMOST_DIMS[self]


_PARALLEL_DIMS = {Dataflow.WS: ("K", "C"), Dataflow.OS: ("N", "K", "Y", "X"),
                  Dataflow.RS: ("R", "Y", "K", "C")}
_RF_INNERMOST_DIMS = {Dataflow.WS: ("N", "Y", "X"), Dataflow.OS: ("C", "R", "S"),
                      Dataflow.RS: ("S", "X")}


@dataclass(frozen=True)
class TemplateSpace:
    """Bounds and choices of the template's hardware parameters."""

    pe_min: int = 8
    pe_max: int = 24
    rf_words_choices: tuple = (4, 8, 16, 32, 64)
    dataflows: tuple = (Dataflow.WS, Dataflow.OS, Dataflow.RS)

    @property
    def rf_min(self):
        return min(self.rf_words_choices)

    @property
    def rf_max(self):
        return max(self.rf_words_choices)


TEMPLATE_SPACE = TemplateSpace()


@dataclass(frozen=True, kw_only=True)
class TemplateHardware:
    """One point of the template: array, RF, GB, off-chip bandwidth, clock, number format.

    ``gb_kib`` is the global buffer's size in KiB (Eyeriss: 108), ``gb_words_per_cycle`` the
    words it moves to or from the array per cycle, ``dram_gbps`` the off-chip bandwidth in GB/s
    (1e9 bytes per second) and ``clock_mhz`` the array's clock.
    """

    pe_x: int
    pe_y: int
    rf_words: int
    dataflow: Dataflow
    gb_kib: int = 108
    gb_words_per_cycle: int = 32
    dram_gbps: float = 128.0
    clock_mhz: float = 1000.0
    number_format: str = "fp16"

    def __post_init__(self):
        space = TEMPLATE_SPACE
        for name in ("pe_x", "pe_y"):
            value = getattr(self, name)
            if not isinstance(value, int) or not space.pe_min <= value <= space.pe_max:
                raise ValueError(f"{name} must be an integer in {space.pe_min}..{space.pe_max}, "
                                 f"not {value!r}")
        if not isinstance(self.rf_words, int) or not space.rf_min <= self.rf_words <= space.rf_max:
            raise ValueError(f"rf_words must be an integer in {space.rf_min}..{space.rf_max}, "
                             f"not {self.rf_words!r}")
        try:
            object.__setattr__(self, "dataflow", Dataflow(self.dataflow))
        except ValueError:
            raise ValueError(f"dataflow must be one of WS, OS, RS, not {self.dataflow!r}") from None
        for name in ("gb_kib", "gb_words_per_cycle"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        for name in ("dram_gbps", "clock_mhz"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        if self.number_format not in NUMBER_FORMAT_BITS:
            raise ValueError(f"number_format must be one of {sorted(NUMBER_FORMAT_BITS)}, "
                             f"not {self.number_format!r}")

    @property
    def pes(self):
        return self.pe_x * self.pe_y

    @property
    def word_bits(self):
        return NUMBER_FORMAT_BITS[self.number_format]

    @property
    def gb_words(self):
        return self.gb_kib * 1024 * 8 // self.word_bits

    @property
    def dram_words_per_cycle(self):
        return self.dram_gbps * 1e9 / (self.clock_mhz * 1e6) / (self.word_bits / 8)

    def to_dict(self):
        data = asdict(self)
        data["dataflow"] = self.dataflow.value
        return data

    @classmethod
    def from_dict(cls, data):
        return cls(**data)
