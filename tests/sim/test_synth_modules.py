"""sim.fpga.synth module by module (sim.fpga.verilog_modules): the instance tree, logic keys that two configurations
share, the composed totals against one whole-design Yosys run, each module run once, the dual-port RAMs by rule
(sim.fpga.block_ram) against Yosys; sim.fpga.devices' block count."""

from dataclasses import replace

import numpy as np
import pytest
from amaranth import Module
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG
from nnaccel.hw.shared.dual_port_buffer import DualPortBuffer
from nnaccel.hw.shared.float_format import BINARY16
from nnaccel.hw.shared.float_multiplier import FloatMultiplier
from nnaccel.hw.shared.float_operator import operand_layout
from nnaccel.sim.fpga import synth
from nnaccel.sim.fpga.block_ram import buffer_shape
from nnaccel.sim.fpga.devices import M10K_MODES, M20K_MODES, block_count, block_mapping
from nnaccel.sim.fpga.synth import estimate
from nnaccel.sim.fpga.verilog_modules import VerilogModules
from nnaccel.sim.verilog import generate_verilog


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NNACCEL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


class BufferedMultipliers(wiring.Component):
    """``units`` binary16 multipliers (one module generated once) beside a dual-port RAM: a two-level hierarchy
    whose top has logic of its own (the RAM reads at the first product, writes it at the second)."""

    def __init__(self, units=2):
        self._units = units
        unit = wiring.Signature({"operands": In(stream.Signature(operand_layout(BINARY16), always_ready=True)),
                                 "result": Out(stream.Signature(BINARY16.width, always_ready=True))})
        super().__init__({**{f"unit{index}": Out(unit) for index in range(units)}, "read_data": Out(20)})

    def elaborate(self, platform):
        m = Module()
        for index in range(self._units):
            m.submodules[f"unit{index}"] = unit = FloatMultiplier(fmt=BINARY16, latency=1)
            wiring.connect(m, wiring.flipped(getattr(self, f"unit{index}")), unit)
        m.submodules.ram = ram = DualPortBuffer(width=20, depth=512)
        m.d.comb += [ram.a.address.eq(self.unit0.result.payload), ram.a.read_enable.eq(1),
                     self.read_data.eq(ram.a.read_data),
                     ram.b.address.eq(self.unit1.result.payload), ram.b.write_data.eq(self.unit0.result.payload),
                     ram.b.write_enable.eq(self.unit1.result.valid)]
        return m


def _dqn_modules(config):
    accelerator = DqnAccelerator(config=config)
    return VerilogModules(generate_verilog(accelerator, accelerator.module_name), accelerator.module_name)


def test_modules_and_their_instance_tree():
    design = BufferedMultipliers()
    modules = VerilogModules(generate_verilog(design, "synth_buffered"), "synth_buffered")
    unit, ram = "float_multiplier_binary16_l1", "dual_port_buffer_w20_d512_g0"
    assert modules.children("synth_buffered") == sorted([unit, ram])
    assert modules.tree()[-1] == "synth_buffered" and set(modules.tree()) == {unit, ram, "synth_buffered"}
    assert "input [31:0] operands__payload;" in modules.port_declarations(unit)
    with pytest.raises(ValueError, match="no module 'elsewhere'"):
        VerilogModules(modules.text, "elsewhere").tree()


def test_configurations_share_the_keys_of_the_modules_they_share():
    """Two reduced DQN configurations, 8 and 13 descriptors: the descriptor table (control) and the sequencer's layer
    index differ; the feeder, the writer, the argmax, the RAMs and the matrix modules are the same logic under other
    names (the top's, and Amaranth's port numbers), so their keys are equal."""
    small, large = _dqn_modules(REDUCED_CONFIG), _dqn_modules(replace(REDUCED_CONFIG, max_layers=13))
    small_keys = {small.canonical_name(module): small.logic_key(module) for module in small.tree()}
    large_keys = {large.canonical_name(module): large.logic_key(module) for module in large.tree()}
    assert small_keys.keys() == large_keys.keys()
    differing = {name for name in small_keys if small_keys[name] != large_keys[name]}
    assert {"TOP.control", "TOP"} <= differing
    assert differing.isdisjoint({"TOP.feeder", "TOP.writer", "TOP.argmax", "TOP.weights",
                                 f"matrix_module_w{REDUCED_CONFIG.lanes}_binary32_m2_a2_c16"})
    feeder = f"{small.top}.feeder"
    assert small.logic_key(feeder, yosys="a") != small.logic_key(feeder, yosys="b")


def _assert_composition_matches(composed, whole):
    """The per-module composition against the whole-design run: flip-flops, carry bits, multipliers, MLAB and M10K
    blocks and memory bits exactly; LUTs within 6 %: ABC's LUT mapping of a module depends on the order in which
    Yosys holds its cells, which follows the order its names were first seen in the run, so the same module's LUTs
    differ between runs that read it with different neighbours (binary16 multiplier: 217 LUTs as a top, 222 in this
    test's whole design, 234 alone under a wrapper; each run repeatable; the reduced DQN accelerator's total: 25,784
    composed, 25,767 whole)."""
    assert [row.label for row in composed.rows] == [row.label for row in whole.rows]
    for mine, theirs in [*((row.resources, other.resources) for row, other in zip(composed.rows, whole.rows)),
                         (composed.total, whole.total)]:
        exact = ("flip_flops", "carry", "mul27", "mul18", "mul9", "m10k", "memory_bits", "mlab")
        assert {name: getattr(mine, name) for name in exact} == {name: getattr(theirs, name) for name in exact}
        assert mine.luts == pytest.approx(theirs.luts, rel=0.06, abs=2)
    assert composed.memories == whole.memories


def test_composed_modules_match_the_whole_design_run():
    design = BufferedMultipliers()
    composed = estimate(design, "synth_buffered")
    whole = estimate(BufferedMultipliers(), "synth_buffered", per_module=False)
    _assert_composition_matches(composed, whole)
    assert composed.total.m10k == 1 and composed.total.mul18 == 2


@pytest.mark.extended
def test_reduced_dqn_accelerator_composed_matches_the_whole_design_run():
    """The reduced DQN accelerator (17 modules, 4 levels): minutes of Yosys on a machine without the cache."""
    accelerator = DqnAccelerator(config=REDUCED_CONFIG)
    composed = estimate(accelerator, accelerator.module_name, jobs=2)
    whole = estimate(DqnAccelerator(config=REDUCED_CONFIG), accelerator.module_name, per_module=False)
    _assert_composition_matches(composed, whole)
    assert composed.total.m10k == sum(block_count(width, depth, groups, M10K_MODES) * count
                                      for width, depth, groups, count in composed.memories)


def test_each_module_runs_once_and_a_change_reruns_only_the_changed_module(fresh_cache, monkeypatch):
    ran = []
    synthesize = synth._synthesize_module
    monkeypatch.setattr(synth, "_synthesize_module", lambda modules, module, path: ran.append(module) or synthesize(
        modules, module, path))
    first = estimate(BufferedMultipliers(), "synth_buffered")
    assert sorted(ran) == sorted(first.synthesized) == sorted(["synth_buffered", "float_multiplier_binary16_l1"])
    ran.clear()
    assert estimate(BufferedMultipliers(), "synth_buffered").total == first.total and ran == []
    assert estimate(BufferedMultipliers(), "synth_buffered", cached_only=True).total == first.total
    # three multipliers instead of two: only the top changed (the multiplier and the RAM come from the cache)
    bigger = estimate(BufferedMultipliers(units=3), "synth_renamed")
    assert ran == ["synth_renamed"] and bigger.synthesized == ("synth_renamed",)
    three, two = (next(row for row in report.rows if row.count > 1) for report in (bigger, first))
    assert three.count == 3 and three.resources * 2 == two.resources * 3
    assert estimate(BufferedMultipliers(units=4), "synth_four", cached_only=True) is None


class ConfiguredMultipliers(BufferedMultipliers):
    """:class:`BufferedMultipliers` named by a configuration, ``verilog_cache_key`` (as a DQN accelerator is by its
    ``DqnConfig``): its Verilog kept in the Verilog cache under that key and the hardware sources' digest."""

    verilog_cache_key = "two binary16 multipliers beside a 512-word RAM"


def test_an_estimate_outlives_a_hardware_edit_that_leaves_its_modules(fresh_cache, monkeypatch):
    """``cached_design_estimate``: after an edit of the hardware sources the Verilog cache no longer holds the
    design; with ``generate`` its Verilog is made again and the modules, unchanged, come from the synthesis cache;
    a module the edit changed (three multipliers under the same configuration) drops the estimate; a design never
    estimated is not generated."""
    from nnaccel.sim import verilog

    name = "synth_configured"
    first = estimate(ConfiguredMultipliers(), name)
    monkeypatch.setattr(synth, "_run_yosys", lambda *arguments: pytest.fail("Yosys ran"))
    assert synth.cached_design_estimate(ConfiguredMultipliers(), name).total == first.total
    monkeypatch.setattr(verilog, "_hardware_sources_digest", lambda: "a hardware source edited")
    assert synth.cached_design_estimate(ConfiguredMultipliers(), name) is None     # nothing generated without it
    again = synth.cached_design_estimate(ConfiguredMultipliers(), name, generate=True)
    assert again.total == first.total and again.synthesized == ()
    assert synth.cached_design_estimate(ConfiguredMultipliers(), name).total == first.total   # its Verilog cached
    monkeypatch.setattr(verilog, "_hardware_sources_digest", lambda: "the top edited")
    assert synth.cached_design_estimate(ConfiguredMultipliers(units=3), name, generate=True) is None
    monkeypatch.setattr(synth, "generate_verilog", lambda *arguments: pytest.fail("Verilog generated"))
    assert synth.cached_design_estimate(ConfiguredMultipliers(), "synth_never_estimated", generate=True) is None


def test_block_count_follows_the_m10k_mapping():
    """The block count of a memory shape against Yosys' M10K mapping (yosys/m10k_tdp.txt) of DualPortBuffers, and
    the M20K count of the same shapes."""
    for width, depth, granularity in [(40, 512, None), (96, 2048, 32), (130, 300, None)]:
        buffer = DualPortBuffer(width=width, depth=depth, granularity=granularity)
        report = estimate(buffer, f"synth_buffer_w{width}_d{depth}_g{granularity or 0}")
        [(shape_width, shape_depth, groups, count)] = report.memories
        assert (shape_width, shape_depth, count) == (width, depth, 1)
        assert groups == (width // granularity if granularity else 1)
        assert block_count(width, depth, groups, M10K_MODES) == report.total.m10k
    assert block_count(2688, 1024, 84, M20K_MODES) == 168         # 84 words of 32 bits, each two 1K x 20 blocks
    assert block_count(512, 4096, 1, M20K_MODES) == 103           # 4K x 5
    with pytest.raises(ValueError, match="not a memory shape"):
        block_count(10, 16, 3, M10K_MODES)


@pytest.mark.parametrize("width, depth, granularity", [
    (40, 512, None),            # one block in depth: the write enables only
    (96, 2048, 32),             # granular: an enable per element and port
    (4, 16384, None),           # two blocks in depth (8K x 1): a 2:1 read multiplexer, a registered select bit
    (5, 16384, None),           # eight blocks in depth (2K x 5): 8:1 multiplexers of 6-input LUTs
    (64, 8192, 32),             # granular and four blocks in depth
])
def test_a_dual_port_buffer_by_rule_is_what_yosys_maps(width, depth, granularity):
    """The buffer's module by rule (per module: never given to Yosys) against Yosys on the same Verilog, every
    cell kind exactly."""
    buffer = DualPortBuffer(width=width, depth=depth, granularity=granularity)
    ruled = estimate(buffer, buffer.module_name)
    assert ruled.synthesized == () and ruled.seconds == 0
    mapped = estimate(DualPortBuffer(width=width, depth=depth, granularity=granularity), buffer.module_name,
                      per_module=False)
    assert ruled.total == mapped.total and ruled.memories == mapped.memories
    assert ruled.total.m10k == block_mapping(width, depth, width // granularity if granularity else 1, M10K_MODES)[0]


def _module_name(buffer):
    buffer._MustUse__used = True            # never elaborated: only its name is read (as sim.verilog's cache does)
    return buffer.module_name


def test_buffer_shapes_are_read_from_the_buffers_module_names():
    assert buffer_shape(_module_name(DualPortBuffer(width=2688, depth=1024, granularity=32))) == (2688, 1024, 84)
    assert buffer_shape(_module_name(DualPortBuffer(width=8, depth=4, init=np.arange(4, dtype=np.uint8)))) == (8, 4, 1)
    assert buffer_shape("dual_port_buffer_w8_d4_g0_extra") is None and buffer_shape("matrix_module_w4") is None
