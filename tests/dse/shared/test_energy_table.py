import math

import pytest

from nnaccel.dse.shared import energy_table


def test_every_figure_names_a_known_source():
    table = energy_table.table()
    sources = table["sources"]
    cited = [entry["source"] for entry in table["mac"].values()]
    cited += [table["sram"]["source"], table["dram"]["source"], table["dram"]["ddr3_source"],
              table["area"]["flip_flop_source"], table["area"]["sram_cell_source"],
              table["reference_ratios"]["source"]]
    assert set(cited) <= set(sources)
    assert set(table["mac"]) == {"fp32", "bf16", "fp16", "int8"}


def test_mac_energy_and_area_add_multiplier_and_adder():
    assert energy_table.mac_pj("fp32") == pytest.approx(3.7 + 0.9)
    assert energy_table.mac_pj("int8") == pytest.approx(0.2 + 0.1)
    assert energy_table.mac_um2("fp16") == 1640 + 1360


def test_storage_energy_follows_the_published_points_and_their_slopes():
    # At a published point: 32 KiB of 64-bit words costs 20 pJ per access.
    assert energy_table.storage_pj_per_word(32 * 1024 * 8 // 64, 64) == pytest.approx(20.0)
    # Between 32 KiB and 1 MiB, log-log: 108 KiB of 16-bit words.
    slope = math.log(100 / 20) / math.log(1024 / 32)
    expected = 20 * (108 / 32) ** slope * 16 / 64
    assert energy_table.storage_pj_per_word(108 * 1024 * 8 // 16, 16) == pytest.approx(expected)
    # Below 8 KiB the 8-32 KiB slope (0.5) continues: 16 words of 16 bits = 1/32 KiB.
    assert energy_table.storage_pj_per_word(16, 16) == pytest.approx(10 * (1 / 256) ** 0.5 / 4)


def test_off_chip_and_area_rules():
    assert energy_table.dram_pj_per_word(16) == pytest.approx(3.9 * 16)
    assert energy_table.register_file_um2_per_word(32) == pytest.approx(4.522 * 32)
    assert energy_table.sram_um2_per_kib() == pytest.approx(8192 * 0.346 / 0.5)
