"""The DQN accelerator with its weights in external memory (``DqnConfig(external_weights=True)``): the reduced
network on the reduced configuration with a weight RAM of two 32-word halves (every pass a tile of its own, loaded
into one half while the pass before computes; the dense layer's 37 words streamed through its half), the SDRAM
model behind the Avalon port, bit for bit against the golden model and every counter against
:func:`models.dqn.weight_stream.stream_counters`."""

from dataclasses import replace

import numpy as np
from amaranth.hdl import Shape
import pytest

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.dqn.streamed_weights import load_entry_layout
from nnaccel.hw.shared.float_format import BINARY16
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import reduced_layers
from nnaccel.models.dqn.timing import pass_counters
from nnaccel.models.dqn.weight_stream import (Load, compile_streamed, encode_load, ring_base, run_timing_arguments,
                                              stream_counters)
from nnaccel.models.shared.random_delay_sdram import RandomDelaySdram
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM
from nnaccel.models.shared.tile_port import TilePortModel
from nnaccel.sim.lint import lint_verilog
from nnaccel.testbench.dqn.host import COUNTER_NAMES, run_on_accelerator
from tests.dqn.test_accelerator import reduced_states
from tests.dqn.test_plan import MIXED_MAPPING, mixed_layers

SEED = 2929
EXTERNAL = replace(REDUCED_CONFIG, external_weights=True, weight_depth=64)
# A memory slower in every respect than the DE1-SoC's, refreshing often, with a short queue.
SLOW_SDRAM = replace(DE1_SOC_SDRAM, cas_latency=2, trcd=3, trp=3, tras=7, refresh_interval=300, queue_depth=2)


def _weights(rng, layers):
    return [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
             rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]


def _stream(rng, config=EXTERNAL):
    layers = reduced_layers()
    return compile_streamed(config, layers, _weights(rng, layers), split="always")


def _predicted(stream, run, timing):
    """Each run's TOTAL_CYCLES and counters from the formula, one SDRAM model carried across the runs."""
    port = TilePortModel(timing=timing, port_bits=stream.config.external_bus_bits)
    predicted = [stream_counters(stream, int(start), port) for start in run.start_cycles]
    return ([counters.total for counters in predicted],
            [[[counter[name] for name in COUNTER_NAMES] for counter in counters.passes] for counters in predicted])


def _check_run(stream, states, run, timing):
    for index, state in enumerate(states):
        golden = golden_forward(stream.plan, state)
        assert np.array_equal(run.q_values[index], golden.q_values)
        assert (run.actions[index], run.action_values[index]) == (golden.action, golden.action_value)
    totals, counters = _predicted(stream, run, timing)
    assert run.total_cycles.tolist() == totals
    assert run.layer_counters.tolist() == counters


@pytest.fixture(scope="module")
def sdram_run():
    rng = np.random.default_rng(SEED)
    stream = _stream(rng)
    states = reduced_states(rng)[:2]
    return stream, states, run_on_accelerator(DqnAccelerator(config=EXTERNAL), stream, states)


def test_every_pass_is_a_tile_in_the_order_of_use(sdram_run):
    stream, _, _ = sdram_run
    plan = stream.plan
    assert [layer.name for layer in plan.layers] == ["c1", "c2", "c2 tail", "c2 sum", "d1", "d2 partials", "d2 sum"]
    assert list(stream.tile_words) == [layer.products + 1 for layer in plan.layers]
    assert stream.streamed == ["d1"]
    # d1: 36 products + its bias in a 32-word half as a ring of two 16-word slots: product k at (12 + k) mod 32, the
    # bias at 16, loaded first; then products 0..3, then a slot at a time once the words it overwrites are read.
    assert [layer.descriptor["weight_base"] for layer in plan.layers] == [0, 0, 0, 0, 12, 0, 0]
    d1 = stream.tile_addresses[4]
    word_bytes = EXTERNAL.weight_word_bits // 8
    assert [load for load in stream.loads if load.tile == 4] == [
        Load(4, d1 + 36 * word_bytes, 1, 16, 0, 0, False, False), Load(4, d1, 4, 12, 0, 4, False, False),
        Load(4, d1 + 4 * word_bytes, 16, 16, 1, 20, False, False),
        Load(4, d1 + 20 * word_bytes, 16, 0, 4, 36, True, False)]
    assert all(load.whole and load.last and load.ram_base == 0 for load in stream.loads if load.tile != 4)
    for layer, address, words in zip(plan.layers, stream.tile_addresses, stream.tile_words):
        tile = stream.image[address:address + words * word_bytes].view("<u4").reshape(words, -1)
        assert np.array_equal(tile, layer.weight_words)
    assert stream.weight_bytes == sum(stream.tile_words) * word_bytes


def test_the_sdram_run_is_bit_exact_with_every_counter_as_the_formula(sdram_run):
    stream, states, run = sdram_run
    _check_run(stream, states, run, DE1_SOC_SDRAM)
    # The reduced machine waits for its weights (a 256-bit word per product, the SDRAM gives 16 bits a cycle).
    assert run.layer_counters[:, :, 2].sum() > 0


def test_a_slower_memory_on_a_wider_port_of_the_python_slave_is_timed_as_exactly():
    """binary16 (the DE1-SoC board's format; 20-element rows: 20 x 16 bits hold a descriptor with external weights)
    on a 64-bit Avalon port (a weight word is 2 bus words; the SDRAM's 16 bits take 4 beats a bus word)."""
    wide = replace(EXTERNAL, external_bus_bits=64, fmt=BINARY16, row_elements=20)
    rng = np.random.default_rng(SEED + 1)
    stream = _stream(rng, wide)
    states = reduced_states(rng)[:1]
    run = run_on_accelerator(DqnAccelerator(config=wide), stream, states, sdram_inside=False,
                             sdram_timing=SLOW_SDRAM)
    _check_run(stream, states, run, SLOW_SDRAM)


@pytest.mark.parametrize("layers, mapping", [(reduced_layers(), None), (mixed_layers(), MIXED_MAPPING)])
def test_the_descriptors_give_the_compilers_on_chip_counters(layers, mapping):
    """Read back from the descriptors (RAM compares, handoffs, layouts) the timing's arguments give the on-chip
    prediction when no pass waits for its weights."""
    rng = np.random.default_rng(SEED)
    stream = compile_streamed(replace(EXTERNAL, weight_depth=1 << 12), layers, _weights(rng, layers), mapping=mapping)
    counters = pass_counters(**run_timing_arguments(EXTERNAL, stream.plan))
    for index, layer in enumerate(stream.plan.layers):
        assert {name: int(counters[name][index]) for name in COUNTER_NAMES} == layer.predicted


def test_a_pass_of_several_groups_larger_than_a_half_is_refused():
    config = replace(EXTERNAL, weight_depth=32)
    layers = reduced_layers()
    with pytest.raises(ValueError, match=r"^c1: its weights are 19 words, a half of the weight RAM holds 16, and only "
                                         r"a pass of one group streams its weights \(it has 8\)$"):
        compile_streamed(config, layers, _weights(np.random.default_rng(SEED), layers))


@pytest.mark.parametrize("products, base", [(36, 12), (2592, 224), (2816, 0), (4, 12), (1, 15), (512, None)])
def test_the_ring_base_keeps_the_bias_out_of_the_first_load(products, base):
    assert ring_base(products, 32 if products < 100 else 512) == base


def test_a_load_table_too_small_is_refused():
    layers = reduced_layers()
    with pytest.raises(ValueError, match=r"^the weights need 10 loads, the load table holds 8$"):
        compile_streamed(replace(EXTERNAL, weight_loads=8), layers, _weights(np.random.default_rng(SEED), layers),
                         split="always")


def test_the_on_chip_compiler_is_not_asked_for_external_weights():
    layers = reduced_layers()
    with pytest.raises(ValueError, match="compile_streamed needs a configuration with external_weights=True"):
        compile_streamed(REDUCED_CONFIG, layers, _weights(np.random.default_rng(SEED), layers))


@pytest.mark.parametrize("kwargs, message", [
    (dict(weight_depth=96), r"external weights need a weight_depth of a power of two from 4 and weight words of "
                            r"whole 32-bit bus words, not 96 words of 256 bits"),
    (dict(external_weights=1), r"external_weights must be a bool, not 1"),
    (dict(external_bus_bits=48), r"external_bus_bits must be a power of two, not 48"),
    (dict(external_bus_bits=512), r"external weights need a weight_depth of a power of two from 4 and weight words of "
                                  r"whole 512-bit bus words, not 64 words of 256 bits"),
])
def test_bad_configurations_are_refused(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=f"^{message}$"):
        replace(EXTERNAL, **kwargs)


def test_load_entries_pack_their_fields():
    layout = load_entry_layout(EXTERNAL)
    load = Load(3, 0x12344, 16, 5, after_reads=7, available=20, last=True, whole=False)
    entry = encode_load(EXTERNAL, load)
    for name in ("address", "words", "ram_base", "after_reads", "available", "last", "whole"):
        field = layout[name]
        assert entry >> field.offset & (1 << Shape.cast(field.shape).width) - 1 == int(getattr(load, name))
    with pytest.raises(ValueError, match="^a load's address must be a bus-word address below 2\\*\\*26, not 2$"):
        encode_load(EXTERNAL, load._replace(address=2))
    with pytest.raises(ValueError, match=r"^a load moves 1 .. 32 words, not 33$"):
        encode_load(EXTERNAL, load._replace(words=33))


def test_the_external_build_is_lint_clean():
    accelerator = DqnAccelerator(config=EXTERNAL)
    assert lint_verilog(accelerator, accelerator.module_name) == []


def test_the_on_chip_build_has_no_external_port():
    on_chip, external = DqnAccelerator(config=DqnConfig()), DqnAccelerator(config=EXTERNAL)
    for accelerator in (on_chip, external):
        accelerator._MustUse__used = True       # never elaborated here: tell Amaranth (as sim.verilog's cache does)
    assert "avalon" not in on_chip.signature.members
    assert "avalon" in external.signature.members


def test_a_slave_with_random_stalls_and_late_reads_is_timed_as_exactly():
    """A slave that stalls on a fifth of the cycles and returns each read burst 0 to 40 cycles late (seeded, so the
    formula's port sees the same delays): bit-exact, every counter equal to the formula."""
    rng = np.random.default_rng(SEED + 2)
    stream = _stream(rng)
    states = reduced_states(rng)[:2]
    delays = {"seed": 29, "stall_percent": 20, "max_delay": 40}
    run = run_on_accelerator(DqnAccelerator(config=EXTERNAL), stream, states, sdram_inside=False, sdram_delays=delays)
    for index, state in enumerate(states):
        assert np.array_equal(run.q_values[index], golden_forward(stream.plan, state).q_values)
    port = TilePortModel(sdram=RandomDelaySdram(keep_read_data=False, **delays))
    plain = TilePortModel()
    for index, start in enumerate(run.start_cycles):
        predicted = stream_counters(stream, int(start), port)
        assert run.total_cycles[index] == predicted.total
        assert run.layer_counters[index].tolist() == [[counter[name] for name in COUNTER_NAMES]
                                                      for counter in predicted.passes]
        # the delays matter: the plain SDRAM's formula gives other counters
        assert stream_counters(stream, int(start), plain).total != predicted.total
