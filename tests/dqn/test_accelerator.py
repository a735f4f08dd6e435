"""The DQN accelerator in simulation, bit for bit against the golden model.

Two builds: a reduced configuration (2 modules x 4 lanes, 12-element rows) running a small conv-conv-dense-dense
network through the same descriptor-driven controller, and the full-size default configuration running the
thesis network on a recorded Atari state (``system``).  Each is simulated once per session (module-scoped
fixtures; the harness caches the builds) and the tests check different aspects of that one run.
"""

import dataclasses
import json

import numpy as np
import pytest

from nnaccel.hw.dqn.accelerator import DqnAccelerator
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.shared.float_format import BFLOAT16, BINARY16, BINARY32
from nnaccel.models.dqn.atari import recorded_states
from nnaccel.models.dqn.golden import golden_forward
from nnaccel.models.dqn.network import AddLayer, ConvLayer, DenseLayer, dqn_layers, reduced_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network
from nnaccel.sim.lint import lint_verilog
from nnaccel.cli.main import main
from tests.dqn.test_plan import MIXED_MAPPING, mixed_layers
from nnaccel.testbench.dqn.host import run_on_accelerator
from nnaccel.testbench.dqn.raw_verilator import run_raw
from nnaccel.testbench.dqn.accelerator_tb import int_to_words, words_to_ints

SEED = 4042
def reduced_states(rng):
    """Three ordinary inputs, then one with NaN and infinities (the hardware's behaviour on them is the golden
    model's: canonical NaNs)."""
    states = [(rng.standard_normal((2, 10, 10)) * np.exp2(rng.integers(-6, 6, (2, 10, 10)))).astype(np.float32)
              for _ in range(3)]
    special = states[0].copy()
    special[0, 0, 0], special[1, 9, 9], special[1, 4, 4] = np.nan, np.inf, -np.inf
    return states + [special]


def compare_layers(plan, states, run):
    """(layer, state) pairs whose meaningful output elements differ from the golden model."""
    wrong = []
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        for layer, expected, observed in zip(plan.layers, golden.activations, run.layer_words):
            width = layer.output.shape[2]
            if layer.output.packed:
                same = np.array_equal(observed[index][:, :width].reshape(-1)[:layer.output.elements],
                                      expected[:, :width].reshape(-1)[:layer.output.elements])
            else:
                same = np.array_equal(observed[index][:, :width], expected[:, :width])
            if not same:
                wrong.append((layer.name, index))
    return wrong


def reduced_plan(rng):
    """The reduced network with random weights, compiled with every kind of pass (``split="always"``)."""
    layers = reduced_layers()
    weights = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    return compile_network(REDUCED_CONFIG, layers, weights, split="always")


@pytest.fixture(scope="module")
def reduced_run():
    rng = np.random.default_rng(SEED)
    plan = reduced_plan(rng)
    states = reduced_states(rng)
    return plan, states, run_on_accelerator(DqnAccelerator(config=REDUCED_CONFIG), plan, states, read_layers=True)


def test_reduced_configuration_is_bit_exact_in_every_layer(reduced_run):
    plan, states, run = reduced_run
    assert [layer.name for layer in plan.layers] == ["c1", "c2", "c2 tail", "c2 sum", "d1", "d2 partials", "d2 sum"]
    assert compare_layers(plan, states, run) == []
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        assert np.array_equal(run.q_values[index], golden.q_values)
        assert (run.actions[index], run.action_values[index]) == (golden.action, golden.action_value)


def test_non_finite_inputs_give_the_golden_nans(reduced_run):
    plan, states, run = reduced_run
    assert np.all(run.q_values[3] == BINARY32.canonical_nan) and run.actions[3] == 0


def test_reduced_counters(reduced_run):
    plan, states, run = reduced_run
    assert np.array_equal(run.load_cycles, [plan.input.words] * len(states))
    for counters in run.layer_counters:
        assert [int(c) for c in counters[:, 1]] == [layer.product_cycles for layer in plan.layers]
        # The compiler's timing model (set-up, products, drain) is the hardware's, cycle for cycle.
        assert [int(c) for c in counters[:, 0]] == [layer.estimated_cycles for layer in plan.layers]
    assert np.all(run.total_cycles == sum(layer.estimated_cycles for layer in plan.layers))
    assert len(set(run.total_cycles.tolist())) == 1


@pytest.mark.extended
def test_cpp_testbench_gives_the_harness_bits(reduced_run):
    """The simulation-speed benchmark's anchor (the same Verilog under a C++ testbench, no cocotb) reads back
    the words and counters the cocotb run read."""
    plan, states, run = reduced_run
    raw = run_raw(DqnAccelerator(config=REDUCED_CONFIG), plan, states)
    assert np.array_equal(raw.output_words, run.output_words)
    assert np.array_equal(raw.layer_counters, run.layer_counters) and np.array_equal(raw.total_cycles, run.total_cycles)
    assert np.array_equal(raw.actions, run.actions) and np.array_equal(raw.action_values, run.action_values)
    assert np.all(raw.run_wall_seconds > 0)


def predicted_counters(plan):
    return [[layer.predicted[name] for name in ("cycles", "product_cycles", "stall_cycles", "drain_cycles")]
            for layer in plan.layers]


def mixed_mapping_run(config):
    """The mixed layers compiled with :data:`MIXED_MAPPING` for ``config``, run on 2 inputs: ``(plan, states,
    run)``."""
    rng = np.random.default_rng([SEED, 7])
    layers = mixed_layers()
    weights = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    plan = compile_network(config, layers, weights, mapping=MIXED_MAPPING)
    states = reduced_states(rng)[:2]
    return plan, states, run_on_accelerator(DqnAccelerator(config=config), plan, states, read_layers=True)


def test_a_mapping_of_segments_splits_and_stalls_runs_as_predicted():
    """A mapping the compiler would not choose: segments in a shuffled order with their own column blocks, a
    K-split position inside a convolution, a 1x1 convolution whose groups wait for the writer and the walker:
    bit-exact, and every pass's four counters as the timing model predicts."""
    plan, states, run = mixed_mapping_run(REDUCED_CONFIG)
    assert compare_layers(plan, states, run) == []
    assert [[int(c) for c in counters] for counters in run.layer_counters[0]] == predicted_counters(plan)
    assert sum(counters[2] for counters in predicted_counters(plan)) > 0


def test_the_descriptor_table_and_counters_in_block_ram_change_no_counter():
    """``descriptor_ram`` (the table in a RAM read one entry ahead, 100 entries) and ``counter_ram`` (the layers'
    counters in a RAM): the mapping above, whose passes follow one another after a few cycles, bit-exact, every
    counter as the on-chip timing predicts; lint-clean."""
    config = dataclasses.replace(REDUCED_CONFIG, descriptor_ram=True, counter_ram=True, max_layers=100)
    accelerator = DqnAccelerator(config=config)
    assert lint_verilog(accelerator, accelerator.module_name) == []
    plan, states, run = mixed_mapping_run(config)
    assert compare_layers(plan, states, run) == []
    for counters in run.layer_counters:
        assert [[int(c) for c in layer] for layer in counters] == predicted_counters(plan)
    assert np.all(run.total_cycles == plan.estimated_cycles)


@pytest.mark.parametrize("fmt", [BINARY16, BFLOAT16], ids=lambda fmt: fmt.name)
def test_reduced_configuration_in_each_number_format(fmt):
    """The family's number-format parameter: weights and inputs rounded from float32 to the format, the
    hardware computing in it, bit for bit as the golden model, every pass's counters as predicted."""
    rng = np.random.default_rng([SEED, fmt.width, fmt.mantissa_bits])
    config = dataclasses.replace(REDUCED_CONFIG, fmt=fmt, row_elements=16)   # 16 x 16 bits hold a descriptor
    layers = reduced_layers()
    weights = [(rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    plan = compile_network(config, layers, weights, split="always")
    states = reduced_states(rng)[:2]
    run = run_on_accelerator(DqnAccelerator(config=config), plan, states, read_layers=True)
    assert compare_layers(plan, states, run) == []
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        assert np.array_equal(run.q_values[index], golden.q_values)
        assert (run.actions[index], run.action_values[index]) == (golden.action, golden.action_value)
        assert run.q_values[index].max() < 1 << fmt.width
    assert [[int(c) for c in counters] for counters in run.layer_counters[0]] == predicted_counters(plan)


def test_host_words_round_trip():
    rng = np.random.default_rng(SEED)
    words = rng.integers(0, 1 << 32, (3, 84), dtype=np.uint64).astype(np.uint32)
    assert all(np.array_equal(int_to_words(value, 84, 32), row) for value, row in zip(words_to_ints(words, 32), words))
    assert words_to_ints(np.array([[1, 2]], np.uint32), 32) == [1 | 2 << 32]


@pytest.mark.system
def test_thesis_network_full_size_is_bit_exact(tmp_path):
    """One recorded state through every pass, then ``nnaccel play`` on the same (cached) build: a short episode
    whose first two steps run the host loop on the accelerator (the emulator's frames, the accelerator's actions,
    each checked against the golden model) and the rest on the golden model."""
    weights = seeded_weights()
    plan = compile_network(DqnConfig(), dqn_layers(18), weights)
    states = recorded_states(1)
    run = run_on_accelerator(DqnAccelerator(config=DqnConfig()), plan, states, read_layers=True)
    golden = golden_forward(plan, states[0])
    assert compare_layers(plan, states, run) == []
    assert np.array_equal(run.q_values[0], golden.q_values)
    assert (run.actions[0], run.action_values[0]) == (golden.action, golden.action_value)
    assert [int(c) for c in run.layer_counters[0][:, 1]] == [layer.product_cycles for layer in plan.layers]
    assert [int(c) for c in run.layer_counters[0][:, 0]] == [layer.estimated_cycles for layer in plan.layers]
    assert run.load_cycles[0] == 336
    report_path = tmp_path / "play.json"
    assert main(["play", "--rtl-steps", "2", "--max-steps", "4", "--epsilon", "0", "--json", str(report_path)]) == 0
    report = json.loads(report_path.read_text())
    accelerator = report["accelerator"]
    assert report["bit_exact"] is True and accelerator["states"] == 2 and report["per_episode"][0]["steps"] == 4
    assert accelerator["actions"] == accelerator["golden_actions"] == report["per_episode"][0]["actions"][:2]
    assert accelerator["total_cycles"] == run.total_cycles[0]


@pytest.mark.icarus
def test_reduced_configuration_on_icarus():
    """The second simulator runs the same controller to the same bits (Icarus needs the harness'
    time-zero fix: without it the sequencer's busy stays X and the accelerator never starts)."""
    rng = np.random.default_rng(SEED)
    plan = reduced_plan(rng)
    states = reduced_states(rng)[:2]
    run = run_on_accelerator(DqnAccelerator(config=REDUCED_CONFIG), plan, states, simulator="icarus", max_cycles=20_000)
    for index, state in enumerate(states):
        golden = golden_forward(plan, state)
        assert np.array_equal(run.q_values[index], golden.q_values)
        assert run.actions[index] == golden.action


def graph_layers():
    """A graph on the reduced build's 8 descriptors: a stem, a padded depthwise convolution, a strided convolution
    to 8 channels and a 1 x 1 stride-2 shortcut of the stem (its ``source``), their add (a copy pass first: the
    addends' paths have two and one convolutions) and a dense layer."""
    return (ConvLayer("stem", 2, 6, 4, 3, 1, padding=1), ConvLayer("dw", 4, 6, 4, 3, 1, padding=1, groups=4),
            ConvLayer("b", 4, 6, 8, 3, 2, padding=1, relu=False),
            ConvLayer("shortcut", 4, 6, 8, 1, 2, relu=False, source="stem"),
            AddLayer("add", skip="shortcut", source="b"), DenseLayer("d", 8 * 3 * 3, 3, relu=False))


def test_a_graph_with_lifetimes_over_several_inputs():
    """Three inputs in one simulation: tensors placed by lifetimes are overwritten within each run and the RAMs
    keep the last run's words, yet every layer's output (read back after each run) and the Q-values are
    bit-exact with the golden model (which starts from zeroed RAMs), every counter as predicted."""
    rng = np.random.default_rng(SEED + 1)
    layers = graph_layers()
    weights = [(None, None) if layer.weight_shape is None else
               (rng.uniform(-1, 1, layer.weight_shape).astype(np.float32),
                rng.uniform(-1, 1, layer.weight_shape[-1]).astype(np.float32)) for layer in layers]
    plan = compile_network(REDUCED_CONFIG, layers, weights)
    assert [layer.name for layer in plan.layers] == ["stem", "dw", "b", "shortcut", "shortcut_copy [0:4]",
                                                     "shortcut_copy [4:8]", "add", "d"]
    assert plan.overwritten
    states = rng.standard_normal((3, 2, 6, 6)).astype(np.float32)
    run = run_on_accelerator(DqnAccelerator(config=REDUCED_CONFIG), plan, states, read_layers=True)
    assert compare_layers(plan, states, run) == []
    for index, state in enumerate(states):
        assert np.array_equal(run.q_values[index], golden_forward(plan, state).q_values)
        assert [int(c) for c in run.layer_counters[index][:, 0]] == [layer.estimated_cycles for layer in plan.layers]
    assert np.all(run.total_cycles == plan.estimated_cycles)
