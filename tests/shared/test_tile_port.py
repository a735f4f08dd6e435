# amaranth: UnusedElaboratable=no
"""hw.shared.tile_port.TilePort's parameters and lint, and its cycle model (models.shared.tile_port) on cases worked
by hand from the SDRAM model's defaults (CAS 3, tRCD 2, one cycle of command and of read-return latency, 2 SDRAM
beats per 32-bit word).  The model against the hardware: tests/capsnet/test_streaming_accelerator.py."""

import pytest

from nnaccel.hw.shared.tile_port import TilePort
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.sim.lint import lint_verilog

TAKEN = 100


def test_single_word_load():
    # Decided on 101, requested and accepted on 102, ACTIVATE on 103, READs on 105 and 106, the word's last beat
    # on readdatavalid at 106 + 3 + 1 = 110, out of the FIFO on 112.
    assert TilePortModel().load(TAKEN, 0, 1) == TAKEN + 12


def test_the_read_fifo_credit_holds_back_the_second_burst():
    # Two bursts of 16 words.  Word w of the first arrives on 110 + 2w (its last on 140).  With a FIFO of 16 words
    # the second burst waits for the first's last word to leave the FIFO: decided on 143, accepted on 144, READs
    # from 145 (row open): its words arrive on 150 + 2w, the last on 180, out on 182.  With 32 words of FIFO both
    # bursts go at once and the SDRAM reads without a gap: the last word arrives on 110 + 62 = 172, out on 174.
    assert TilePortModel(max_burst=16, fifo_depth=16).load(TAKEN, 0, 32) == TAKEN + 82
    assert TilePortModel(max_burst=16, fifo_depth=32).load(TAKEN, 0, 32) == TAKEN + 74


def test_single_word_store():
    # Decided on 101, the word offered and accepted on 102.
    model = TilePortModel()
    assert model.store(TAKEN, 0, 1) == TAKEN + 2
    assert (model.bytes_written, model.bytes_read) == (4, 0)


@pytest.mark.parametrize("kwargs, message", [
    ({"ram_bits": 48, "ram_address_bits": 4}, "ram_bits must be a positive multiple of data_bits \\(32\\), not 48"),
    ({"ram_bits": 64, "ram_address_bits": 0}, "ram_address_bits must be an integer from 1 to 32, not 0"),
])
def test_parameter_errors(kwargs, message):
    with pytest.raises(ValueError, match=f"^{message}$"):
        TilePort(**kwargs)


def test_lint_clean():
    port = TilePort(ram_bits=128, ram_address_bits=10, max_burst=16, fifo_depth=32)
    assert lint_verilog(port, "tile_port_r128") == []
