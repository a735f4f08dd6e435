"""The RTL family's cost model against the RTL: seeded cases compiled, simulated, compared (``nnaccel dse validate``).

A case is JSON (so it can be a Dask task and a key of the result store): a hardware configuration, a network,
its weights' seed, a mapping, inputs' seed; or the thesis network at full size with the compiler's mapping
("auto") or the thesis' own one pass per layer ("never").  :func:`validate_case` compiles it
(:func:`models.dqn.plan.compile_network`), runs it on the simulated accelerator
(:func:`testbench.dqn.host.run_on_accelerator`) and checks

* every pass's output tensor, the outputs and (for a dense last layer) the argmax against the golden model, bit
  for bit;
* every pass's four counters (cycles, product, stall and drain cycles) against the prediction, and the cost
  model's latency (:func:`dse.rtl.cost_model.evaluate_network`) against TOTAL_CYCLES.

Cases carry a digest of the hardware and compiler sources, so results stored for other sources are not reused.
"""

import dataclasses
import hashlib
import time
from functools import cache
from pathlib import Path

import numpy as np

import nnaccel.hw as hw
import nnaccel.models.dqn
from nnaccel.dse.rtl.cost_model import evaluate_network
from nnaccel.dse.rtl.hardware import FORMATS, config_from_json, config_to_json, network_from_json, network_to_json
from nnaccel.dse.rtl.sampler import random_weights, sample_case
from nnaccel.hw.dqn.config import REDUCED_CONFIG, DqnConfig
from nnaccel.hw.shared.float_format import float_format
from nnaccel.models.dqn.mapping import DqnMapping
from nnaccel.models.dqn.network import DenseLayer, dqn_layers, seeded_weights
from nnaccel.models.dqn.plan import compile_network

__all__ = ["SCHEMA", "VALIDATION_SHAPES", "code_digest", "validation_configs", "reduced_configs", "validation_cases",
           "validate_case", "describe_config", "describe_network"]

SCHEMA = "nnaccel.dse.validate/1"
STATES = 2
VALIDATION_SHAPES = {"modules": (2, 4, 8), "lanes": (1, 2, 3, 4)}     # modules x lanes of validation_configs


@cache
def code_digest():
    """Digest of the sources a result depends on: the hardware (hw/) and the DQN compiler and golden model."""
    digest = hashlib.sha256()
    for root in (Path(hw.__file__).parent, Path(nnaccel.models.dqn.__file__).parent):
        for path in sorted(root.rglob("*.py")):
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def validation_configs(rng, count):
    """``count`` small configurations (quick builds), each with its own modules x lanes (2..8 modules, so that
    mappings have position slots to choose from; 1..4 lanes): the formats in turn, multiplier and adder
    latencies 1..3, 16- or 20-element rows, small RAMs, every other one with the matrix modules' max mode (its
    networks draw max pools), every third one (binary32) with the flat map (a 6-word lane window, one channel slot
    and two, then four slots of 3-word windows, in turn: its networks draw depthwise-separable blocks).  A
    ValueError for more than the 12 shapes of :data:`VALIDATION_SHAPES`."""
    shapes_held = len(VALIDATION_SHAPES["modules"]) * len(VALIDATION_SHAPES["lanes"])
    if count > shapes_held:
        raise ValueError(f"at most {shapes_held} random configurations (each its own modules x lanes: "
                         f"{VALIDATION_SHAPES['modules']} x {VALIDATION_SHAPES['lanes']}), not {count}")
    configs, shapes = [], set()
    while len(configs) < count:
        modules, lanes = int(rng.choice(VALIDATION_SHAPES["modules"])), int(rng.choice(VALIDATION_SHAPES["lanes"]))
        if (modules, lanes) in shapes:
            continue
        shapes.add((modules, lanes))
        configs.append(DqnConfig(modules=modules, lanes=lanes, fmt=float_format(FORMATS[len(configs) % len(FORMATS)]),
                                 multiplier_latency=int(rng.integers(1, 4)), adder_latency=int(rng.integers(1, 4)),
                                 row_elements=int(rng.choice([16, 20])), activation_depth=128, weight_depth=256,
                                 max_layers=8, max_pooling=len(configs) % 2 == 1,
                                 flat_slots=0 if len(configs) % 3 else min(modules, (1, 2, 4)[len(configs) // 3 % 3]),
                                 flat_window_words=3 if len(configs) % 9 == 6 and modules >= 4 else 6))
    return configs


def reduced_configs():
    """The reduced configuration (2 modules x 4 lanes) in each number format, and in binary32 with the matrix
    modules' max mode (its networks draw max pools); 16-element rows in the 16-bit formats (the host port, as wide
    as the widest RAM word, must hold a descriptor), and in binary32 with the flat map (a 4-word lane window, one
    channel slot and two; and 4 x 4 with four slots of 3-word windows: its networks draw depthwise-separable
    blocks)."""
    configs = [dataclasses.replace(REDUCED_CONFIG, fmt=float_format(fmt),
                                   row_elements=REDUCED_CONFIG.row_elements if fmt == "binary32" else 16)
               for fmt in FORMATS]
    return configs + [dataclasses.replace(REDUCED_CONFIG, max_pooling=True),
                      dataclasses.replace(REDUCED_CONFIG, flat_slots=1, flat_window_words=4),
                      dataclasses.replace(REDUCED_CONFIG, flat_slots=2, flat_window_words=4),
                      dataclasses.replace(REDUCED_CONFIG, modules=4, flat_slots=4, flat_window_words=3)]


def validation_cases(count, *, seed, configs, thesis=True):
    """``count`` random cases spread over ``configs`` in turn (a random network and mapping each, seeded),
    plus, with ``thesis``, the thesis network at full size with the compiler's mapping and with the thesis' own."""
    rng = np.random.default_rng(seed)
    cases = []
    for index in range(count):
        config = configs[index % len(configs)]
        layers, mapping = sample_case(rng, config)
        cases.append({"kind": "random", "config": config_to_json(config), "network": network_to_json(layers),
                      "mapping": mapping.to_json(), "weights_seed": int(rng.integers(1 << 31)),
                      "inputs_seed": int(rng.integers(1 << 31)), "states": STATES, "code": code_digest()})
    if thesis:
        for split in ("auto", "never"):
            cases.append({"kind": "thesis", "config": config_to_json(DqnConfig()), "split": split, "states": 1,
                          "code": code_digest()})
    return cases


def _random_inputs(plan, layers, seed, states):
    """Inputs spread over several binades (``standard normal x 2**U(-4, 4)``), float32."""
    rng = np.random.default_rng(seed)
    first = layers[0]
    shape = (first.inputs,) if isinstance(first, DenseLayer) else (first.in_channels, first.in_height, first.in_width)
    return [(rng.standard_normal(shape) * np.exp2(rng.integers(-4, 5, shape))).astype(np.float32)
            for _ in range(states)]


def _build(case):
    """(config, layers, plan, inputs) of a case."""
    from nnaccel.models.dqn.atari import recorded_states

    config = config_from_json(case["config"])
    if case["kind"] == "thesis":
        layers = dqn_layers(18)
        plan = compile_network(config, layers, seeded_weights(), split=case["split"])
        return config, layers, plan, list(recorded_states(case["states"]))
    layers = network_from_json(case["network"])
    plan = compile_network(config, layers, random_weights(layers, case["weights_seed"]),
                           mapping=DqnMapping.from_json(case["mapping"]))
    return config, layers, plan, _random_inputs(plan, layers, case["inputs_seed"], case["states"])


def _meaningful(tensor, words):
    width = tensor.shape[2]
    values = np.asarray(words)[:tensor.words, :width]
    return values.reshape(-1)[:tensor.elements] if tensor.packed else values


def validate_case(case):
    """Compile, simulate and compare one case (see the module docstring); returns JSON data."""
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.models.dqn.golden import golden_forward
    from nnaccel.testbench.dqn.host import run_on_accelerator

    start = time.perf_counter()
    config, layers, plan, inputs = _build(case)
    run = run_on_accelerator(DqnAccelerator(config=config), plan, inputs, read_layers=True,
                             max_cycles=2 * plan.estimated_cycles + 10_000)
    wrong = []
    for index, state in enumerate(inputs):
        golden = golden_forward(plan, state)
        for layer, expected, observed in zip(plan.layers, golden.activations, run.layer_words):
            if not np.array_equal(_meaningful(layer.output, observed[index]), _meaningful(layer.output, expected)):
                wrong.append(f"input {index}: {layer.name} output differs")
        if not np.array_equal(run.q_values[index], golden.q_values):
            wrong.append(f"input {index}: outputs differ")
        if isinstance(layers[-1], DenseLayer) and (run.actions[index], run.action_values[index]) != \
                (golden.action, golden.action_value):
            wrong.append(f"input {index}: ACTION {run.actions[index]}, golden {golden.action}")
    predicted = [[layer.predicted[name] for name in ("cycles", "product_cycles", "stall_cycles", "drain_cycles")]
                 for layer in plan.layers]
    measured = run.layer_counters.astype(int).tolist()
    _, _, totals = evaluate_network(config, layers, plan.mapping, area=False)
    return {
        "passes": [layer.name for layer in plan.layers], "mapping": plan.mapping.to_json(),
        "predicted": predicted, "measured": measured[0], "measured_per_input_equal": all(m == measured[0]
                                                                                          for m in measured),
        "predicted_cycles": plan.estimated_cycles, "model_cycles": int(totals["latency_cycles"]),
        "measured_cycles": [int(cycles) for cycles in run.total_cycles],
        "bit_exact": not wrong, "mismatches": wrong[:10],
        "counters_exact": all(m == predicted for m in measured),
        "cycles_exact": all(int(cycles) == plan.estimated_cycles == int(totals["latency_cycles"])
                            for cycles in run.total_cycles),
        "inputs": len(inputs), "build_seconds": round(run.build_seconds, 1),
        "seconds": round(time.perf_counter() - start, 1)}


def describe_config(data):
    return (f"{data['modules']}x{data['lanes']} {data['fmt']} Lm{data['multiplier_latency']} "
            f"La{data['adder_latency']} r{data['row_elements']}" + (" max" if data.get("max_pooling") else "")
            + (f" flat{data['flat_window_words']}" if data.get("flat_slots") else "")
            + (f"x{data['flat_slots']}" if data.get("flat_slots", 0) > 1 else ""))


def describe_network(case):
    if case["kind"] == "thesis":
        return "DQN (thesis, full size)"
    parts = []
    for layer, entry in zip(network_from_json(case["network"]), case["network"]):
        if "conv" in entry:
            padding = f"p{'/'.join(map(str, layer.border))}" if layer.padded else ""
            groups = f"g{layer.groups}" if layer.groups > 1 else ""
            source = f" of {layer.source or 'input'}" if layer.source is not None else ""
            kind, groups = ("maxpool", "") if layer.maximum else ("conv", groups)
            geometry = f"{layer.kernel_height}x{layer.kernel_width}s{layer.stride_y}x{layer.stride_x}{padding}{groups}"
            parts.append(f"{kind}{geometry} {layer.in_channels}x{layer.in_height}x{layer.in_width}>"
                         f"{layer.out_channels}{source}")
        elif "add" in entry:
            parts.append(f"add {layer.skip or 'input'}")
        else:
            parts.append(f"fc {layer.inputs}>{layer.outputs}")
    return ", ".join(parts)
