"""Berkeley TestFloat reference vectors (the shared ``testfloat`` directory, see its README.md).

The directory is ``$NNACCEL_TESTFLOAT_DIR`` if set, else ``shared/testfloat`` beside the repository
(``<repo>/../shared/testfloat``). Files are ``<name>.txt.gz``, one case per line, fields in hex:
``A B Z FL`` for two-operand operations (``Z`` the expected result, ``FL`` the exception flags).
"""

import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["TestFloatVectors", "reference_vector_dir", "load_testfloat", "TestFloatError"]

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


class TestFloatError(RuntimeError):
    """The vector directory or a file in it is missing or malformed; the message names the path."""

    __test__ = False        # not a pytest test class


@dataclass
class TestFloatVectors:
    """One file's cases as unsigned arrays (uint16 for f16 files, else uint32)."""

    __test__ = False

    name: str
    a: np.ndarray
    b: np.ndarray
    expected: np.ndarray
    flags: np.ndarray

    def __len__(self):
        return len(self.expected)


def reference_vector_dir():
    configured = os.environ.get("NNACCEL_TESTFLOAT_DIR")
    return Path(configured) if configured else REPOSITORY_ROOT.parent / "shared" / "testfloat"


def load_testfloat(name):
    """Load ``<name>.txt.gz`` (e.g. ``"f32_mul_1"``) of a two-operand operation."""
    directory = reference_vector_dir()
    path = directory / f"{name}.txt.gz"
    if not path.is_file():
        raise TestFloatError(f"TestFloat vector file {path} not found (directory {directory}; "
                             f"set NNACCEL_TESTFLOAT_DIR to the directory that holds the *.txt.gz files)")
    digits = 4 if name.startswith("f16") else 8
    try:
        with gzip.open(path, "rb") as compressed:
            text = compressed.read()
    except (OSError, EOFError) as error:
        raise TestFloatError(f"TestFloat vector file {path} cannot be read: {error}") from None
    # Every line has the same length: three operands/results of `digits` hex digits, 2 flag digits.
    line_format = re.compile(rb"[0-9A-F]{%d} [0-9A-F]{%d} [0-9A-F]{%d} [0-9A-F]{2}\n" % (digits, digits, digits))
    line_length = 3 * (digits + 1) + 3
    if not text or len(text) % line_length or not re.fullmatch(rb"(?:%s)+" % line_format.pattern, text):
        raise TestFloatError(_first_malformed_line(path, text, line_format, digits))
    table = np.frombuffer(text, dtype=np.uint8).reshape(-1, line_length)
    nibbles = np.where(table >= ord("A"), table - (ord("A") - 10), table - ord("0")).astype(np.uint32)

    def column(start, width):
        value = np.zeros(len(table), dtype=np.uint32)
        for offset in range(width):
            value = (value << 4) | nibbles[:, start + offset]
        return value

    dtype = np.uint16 if digits == 4 else np.uint32
    a, b, expected = (column(index * (digits + 1), digits).astype(dtype) for index in range(3))
    flags = column(3 * (digits + 1), 2).astype(np.uint8)
    return TestFloatVectors(name=name, a=a, b=b, expected=expected, flags=flags)


def _first_malformed_line(path, text, line_format, digits):
    lines = text.split(b"\n")
    for number, line in enumerate(lines[:-1] if text.endswith(b"\n") else lines, start=1):
        if not line_format.fullmatch(line + b"\n"):
            return (f"{path} line {number}: expected 'A B Z FL' with {digits}-digit uppercase hex "
                    f"operands and 2-digit flags, got {line[:80].decode(errors='replace')!r}")
    return f"TestFloat vector file {path} holds no vectors"
