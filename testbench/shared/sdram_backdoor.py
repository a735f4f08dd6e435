"""A cocotb test module's access to the memory of the SDRAM model inside the simulator (``sdram_model.v``, put on
the DUT by :class:`testbench.shared.sdram_model.WithSdramModel`).

:class:`SdramBackdoor` writes and reads byte ranges of the model's memory without simulated time passing on the
Avalon port: the bytes travel as a ``$readmemh`` / ``$writememh`` file in the simulator's working directory (a
simulation's own run directory), one hex line per word, and a rising edge on the model's ``backdoor_strobe``
(written through VPI) makes the model read or write the file.  Text files rather than VPI word by word: a
7.1 MB parameter image is 1.8 M words, far too many single VPI writes.

Use between cycles (not in a ``ReadOnly`` phase) while the master makes no new request.  An access first waits
(clock edges) until the model has put every request it accepted into its memory, so it sees the memory as the
Python slave's model would (which applies a request when it accepts it); before reset, nothing is pending and the
clock need not run.
"""

from pathlib import Path

import numpy as np
from cocotb.triggers import RisingEdge, Timer

from nnaccel.testbench.shared.sdram_model import SDRAM_INSTANCE_NAME

__all__ = ["SdramBackdoor", "attach_sdram_model"]

LOAD_FILE, DUMP_FILE = "sdram_backdoor_load.hex", "sdram_backdoor_dump.hex"   # sdram_model.v's defaults
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", np.uint8)


def hex_lines(words):
    """``$readmemh`` text (bytes) of ``words``: a (count, word_bytes) uint8 array, little-endian words."""
    most_significant_first = words[:, ::-1]
    nibbles = np.stack([most_significant_first >> 4, most_significant_first & 0xF], axis=2).reshape(len(words), -1)
    lines = np.empty((len(words), nibbles.shape[1] + 1), np.uint8)
    lines[:, :-1] = _HEX_DIGITS[nibbles]
    lines[:, -1] = ord("\n")
    return lines.tobytes()


def parse_hex_lines(text, word_bytes):
    """The little-endian bytes (uint8) of the words in ``$writememh`` text (address comments skipped)."""
    digits = "".join(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("//"))
    if len(digits) % (2 * word_bytes):
        raise ValueError(f"the memory dump's {len(digits)} hex digits are not whole {word_bytes}-byte words")
    try:
        words = np.frombuffer(bytes.fromhex(digits), np.uint8).reshape(-1, word_bytes)
    except ValueError:
        raise ValueError("the memory dump holds unknown (x or z) bits: memory read before it was written") from None
    return words[:, ::-1].ravel()


class SdramBackdoor:
    """The memory of the SDRAM model instance ``instance`` in ``dut`` (the top), whose Avalon port is
    ``word_bytes`` bytes wide; files go to ``directory`` (default: the working directory)."""

    def __init__(self, dut, *, word_bytes, instance=SDRAM_INSTANCE_NAME, directory=None):
        if not isinstance(word_bytes, int) or word_bytes < 1 or word_bytes & (word_bytes - 1):
            raise ValueError(f"word_bytes must be a power of two, not {word_bytes!r}")
        self._model = getattr(dut, instance)
        self.word_bytes = word_bytes
        self.memory_bytes = word_bytes << len(self._model.backdoor_first)
        directory = Path.cwd() if directory is None else Path(directory)
        self._load_path, self._dump_path = directory / LOAD_FILE, directory / DUMP_FILE

    async def write(self, byte_address, data):
        """Store ``data`` (bytes or a uint8 array, whole words) from ``byte_address`` (word-aligned)."""
        data = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data
        if data.dtype != np.uint8 or data.ndim != 1:
            raise ValueError(f"data must be bytes or a one-dimensional uint8 array, not {data.dtype} {data.shape}")
        first, last = self._word_range(byte_address, len(data))
        self._load_path.write_bytes(hex_lines(data.reshape(-1, self.word_bytes)))
        await self._strobe(dump=False, first=first, last=last)

    async def read(self, byte_address, size):
        """The ``size`` bytes (uint8 array, whole words) from ``byte_address`` (word-aligned)."""
        first, last = self._word_range(byte_address, size)
        self._dump_path.unlink(missing_ok=True)
        await self._strobe(dump=True, first=first, last=last)
        return parse_hex_lines(self._dump_path.read_text(), self.word_bytes)

    def _word_range(self, byte_address, size):
        if byte_address % self.word_bytes or size % self.word_bytes or size <= 0 or \
                not 0 <= byte_address <= self.memory_bytes - size:
            raise ValueError(f"{size} bytes at {byte_address:#x} are not whole {self.word_bytes}-byte words inside "
                             f"the model's {self.memory_bytes}-byte memory")
        first = byte_address // self.word_bytes
        return first, first + size // self.word_bytes - 1

    async def _strobe(self, *, dump, first, last):
        model = self._model
        while model.slot_pending.value.is_resolvable and int(model.slot_pending.value):
            await RisingEdge(model.clk)
        # a time step first: the model's initial blocks (the memory's zeros) have run before the first access
        await Timer(1, unit="ps")
        model.backdoor_dump.value, model.backdoor_first.value, model.backdoor_last.value = int(dump), first, last
        model.backdoor_strobe.value = 1
        await Timer(1, unit="ps")
        model.backdoor_strobe.value = 0
        await Timer(1, unit="ps")


async def attach_sdram_model(dut, regions, *, word_bytes):
    """The :class:`SdramBackdoor` of ``dut``'s SDRAM model, with ``regions`` ({byte address: bytes}) loaded."""
    backdoor = SdramBackdoor(dut, word_bytes=word_bytes)
    for byte_address, data in regions.items():
        await backdoor.write(byte_address, data)
    return backdoor
