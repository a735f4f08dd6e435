# amaranth: UnusedElaboratable=no
"""testbench/shared/sdram_model.v (the SDRAM model inside the simulator) against models.shared.sdram.SdramModel on
every cycle (testbench.shared.sdram_model_tb), its lint, its wrapper's parameters, and the backdoor's file format."""

import numpy as np
import pytest

from nnaccel.models.shared.sdram import SdramTiming
from nnaccel.sim.harness import simulate
from nnaccel.sim.lint import lint_verilog_text
from nnaccel.testbench.shared.avalon_passthrough import AvalonPassthrough
from nnaccel.testbench.shared.sdram_backdoor import hex_lines, parse_hex_lines
from nnaccel.testbench.shared.sdram_model import SDRAM_MODEL_SOURCE, WithSdramModel

# small geometries, short refresh intervals, every latency at its edge; the DE1-SoC's own timing
SMALL = {"banks": 2, "rows": 16, "columns": 32, "cas_latency": 2, "trcd": 1, "trp": 1, "tras": 3, "twr": 0,
         "trfc": 3, "refresh_interval": 25, "command_latency": 2, "read_return_cycles": 0, "queue_depth": 2}
TIGHT = {"banks": 4, "rows": 8, "columns": 16, "refresh_interval": 12, "queue_depth": 1}
CASES = {
    "de1soc": dict(timing={}, data_bits=32, burstcount_bits=8, memory_bytes=1 << 16, transactions=300,
                   max_burst=128, longest_gap=2000),
    "small-64bit": dict(timing=SMALL, data_bits=64, burstcount_bits=4, memory_bytes=SdramTiming(**SMALL).size_bytes,
                        transactions=400, max_burst=8, longest_gap=80),
    "tight-16bit": dict(timing=TIGHT, data_bits=16, burstcount_bits=3, memory_bytes=SdramTiming(**TIGHT).size_bytes,
                        transactions=400, max_burst=4, longest_gap=40),
}


def run(case, *, seed=1, simulator="verilator", transactions=None):
    case = {**CASES[case], **({"transactions": transactions} if transactions else {})}
    timing = SdramTiming(**case["timing"])
    top = WithSdramModel(AvalonPassthrough(data_bits=case["data_bits"], address_bits=26,
                                           burstcount_bits=case["burstcount_bits"]),
                         timing=timing, memory_bytes=case["memory_bytes"])
    image = np.random.default_rng(seed + 100).integers(0, 256, size=case["memory_bytes"], dtype=np.uint8)
    config = {key: case[key] for key in ("timing", "memory_bytes", "transactions", "max_burst", "longest_gap")}
    name = f"sdram_model_{case['data_bits']}_{case['burstcount_bits']}"
    result = simulate(top, name=name, test_module="nnaccel.testbench.shared.sdram_model_tb", stimulus={"image": image},
                      config={**config, "seed": seed}, simulator=simulator)
    return result.outputs, timing


@pytest.mark.parametrize("case", CASES)
def test_matches_the_python_model_on_every_cycle(case):
    out, timing = run(case)
    beats, row_hits, opens, row_misses, refreshes = out["statistics"]
    # the traffic did what the test is for: full queues, row misses, refreshes, idle gaps past the refresh interval
    assert out["waitrequest_cycles"] > 0 and row_misses > 0 and opens > 0 and row_hits > 0
    assert refreshes >= out["cycles"] // timing.refresh_interval - 1
    assert out["longest_gap"] > timing.refresh_interval
    assert out["read_words"] > 0 and out["write_words"] > 0


def test_matches_on_icarus():
    out, _ = run("small-64bit", seed=2, simulator="icarus", transactions=100)
    assert out["read_words"] > 0 and out["write_words"] > 0


def test_verilog_is_lint_clean():
    assert lint_verilog_text(SDRAM_MODEL_SOURCE.read_text(), "sdram_model") == []


def test_wrapper_parameters():
    top = WithSdramModel(AvalonPassthrough(), memory_bytes=3 << 20)
    assert top.memory_words == 1 << 20                        # 3 MB rounded up to 4 MB of 32-bit words
    parameters = top.model_parameters
    assert (parameters["BANK_BITS"], parameters["COLUMN_BITS"], parameters["REFRESH_INTERVAL"]) == (2, 10, 781)
    assert parameters["RESPONSE_WORDS_LOG2"] == 10            # 4 entries of 128 words in flight, and the latency


@pytest.mark.parametrize("kwargs, error, message", [
    ({"timing": SdramTiming(command_latency=0)}, ValueError,
     "the SDRAM model needs timing.command_latency >= 1, not 0"),
    ({"memory_bytes": 2}, ValueError, "memory_bytes must be an integer from 4 to the SDRAM's 67108864, not 2"),
    ({"timing": "DE1"}, TypeError, "timing must be an SdramTiming, not 'DE1'"),
])
def test_wrapper_errors(kwargs, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        WithSdramModel(AvalonPassthrough(), **kwargs)


def test_backdoor_file_format():
    words = np.arange(24, dtype=np.uint8).reshape(6, 4)
    text = hex_lines(words)
    assert text.splitlines()[0] == b"03020100"
    np.testing.assert_array_equal(parse_hex_lines("// 0x00000000\n" + text.decode(), 4), words.ravel())
    with pytest.raises(ValueError, match="unknown"):
        parse_hex_lines("xxxxxxxx\n", 4)
