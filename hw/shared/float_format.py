"""IEEE-754 style binary floating-point formats.

One table (exponent width, mantissa width) from which every other size derives: total width, bias, the
exponent range and the bit layout ``sign | exponent | mantissa`` (sign at the most significant end).

NaN produced by the float units of this project: the *canonical NaN* is the positive quiet NaN with only the
top mantissa bit set (binary32 ``0x7FC00000``, binary16 ``0x7E00``, bfloat16 ``0x7FC0``). Every operation
whose result is NaN returns exactly this pattern, whatever the NaN operands were (no payload propagation).
"""

from amaranth.lib import data

from nnaccel.hw.shared.parameters import check_int

__all__ = ["FloatFormat", "BINARY32", "BINARY16", "BFLOAT16", "PRESETS", "float_format"]


class FloatFormat:
    """A binary interchange-style float format: 1 sign bit, ``exponent_bits``, ``mantissa_bits``.

    Subnormals, signed zeros, infinities (exponent all ones, mantissa zero) and NaNs (exponent all ones,
    mantissa non-zero) follow IEEE-754. ``mantissa_bits`` counts the stored fraction bits (the hidden bit is
    not stored): binary32 is ``FloatFormat(exponent_bits=8, mantissa_bits=23)``.

    The limits (exponent 2..16 bits, mantissa 1..30 bits) keep every internal quantity of the golden model
    (:mod:`models.shared.float_arith`, exact significand products of up to 62 bits) inside 64-bit integers.
    """

    MAX_EXPONENT_BITS = 16
    MAX_MANTISSA_BITS = 30

    def __init__(self, *, exponent_bits, mantissa_bits):
        check_int("exponent_bits", exponent_bits, 2, self.MAX_EXPONENT_BITS)
        check_int("mantissa_bits", mantissa_bits, 1, self.MAX_MANTISSA_BITS)
        self._exponent_bits = exponent_bits
        self._mantissa_bits = mantissa_bits

    @property
    def exponent_bits(self):
        return self._exponent_bits

    @property
    def mantissa_bits(self):
        """Stored fraction bits (precision is ``mantissa_bits + 1`` with the hidden bit)."""
        return self._mantissa_bits

    @property
    def width(self):
        return 1 + self._exponent_bits + self._mantissa_bits

    @property
    def bias(self):
        return (1 << (self._exponent_bits - 1)) - 1

    @property
    def exponent_all_ones(self):
        """Biased exponent field of infinities and NaNs."""
        return (1 << self._exponent_bits) - 1

    @property
    def name(self):
        """The preset name (``"binary32"``...) or ``"e{exponent_bits}m{mantissa_bits}"``."""
        for name, preset in PRESETS.items():
            if preset == self:
                return name
        return f"e{self._exponent_bits}m{self._mantissa_bits}"

    @property
    def layout(self):
        """``amaranth.lib.data`` layout of one encoded value (fields listed from the LSB)."""
        return data.StructLayout({
            "mantissa": self._mantissa_bits,
            "exponent": self._exponent_bits,
            "sign": 1,
        })

    @property
    def canonical_nan(self):
        """The only NaN the float units produce: sign 0, exponent all ones, top mantissa bit set."""
        return (self.exponent_all_ones << self._mantissa_bits) | (1 << (self._mantissa_bits - 1))

    def infinity(self, sign=0):
        return (sign << (self.width - 1)) | (self.exponent_all_ones << self._mantissa_bits)

    def __eq__(self, other):
        return (isinstance(other, FloatFormat)
                and (self._exponent_bits, self._mantissa_bits)
                == (other._exponent_bits, other._mantissa_bits))

    def __hash__(self):
        return hash((FloatFormat, self._exponent_bits, self._mantissa_bits))

    def __repr__(self):
        return f"FloatFormat(exponent_bits={self._exponent_bits}, mantissa_bits={self._mantissa_bits})"


PRESETS = {}
BINARY32 = PRESETS["binary32"] = FloatFormat(exponent_bits=8, mantissa_bits=23)
BINARY16 = PRESETS["binary16"] = FloatFormat(exponent_bits=5, mantissa_bits=10)
BFLOAT16 = PRESETS["bfloat16"] = FloatFormat(exponent_bits=8, mantissa_bits=7)


def float_format(name):
    """Look a preset up by name: ``float_format("bfloat16") is BFLOAT16``."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown float format {name!r}; presets are {', '.join(PRESETS)}") from None
