"""The template cost model beside two peers: SCALE-Sim 3 and ZigZag (the ``peers`` extra).

    python benchmarks/dse/bench_peers.py [--cases N] [--samples S] [--seed X] [--skip-dqn] [--skip-rtl]
                                         [--skip-template]

1. The thesis' DQN network (SPEC sections 1 and 6) on a 16x16 array: SCALE-Sim's compute cycles
   per dataflow (os / ws / is) and ZigZag's cycles with its TPU-like template resized to 16x16,
   spatial unrolling K16 | C16 and K16 | OX16; this template model's; the RTL family's cost model
   (nnaccel's accelerator, 16 modules x 16 lanes, the compiler's mapping) and the RTL itself
   (the simulated accelerator's counters on a recorded state; the cached full-size build, minutes).
2. N random template cases (layer, hardware, dataflow): ZigZag (its own temporal-mapping search,
   LOMA, for latency) on an accelerator built from the template point, against this model's best
   latency over S random legal mappings with the same spatial unrolling. Prints Spearman's rank
   correlation and the mean relative difference of latency and of energy.

Every peer run works in its own temporary directory. Needs ``pip install -e .[peers]``; SCALE-Sim
3.0.0 needs NumPy older than 2.4, so ``--scalesim-python`` can name another environment's
interpreter for it (one with ``scalesim`` and ``numpy<2.4``).
"""

import argparse
import configparser
import contextlib
import csv
import io
import logging
import tempfile
import time
from pathlib import Path

import json
import os
import subprocess
import sys

import numpy as np

from nnaccel.dse.shared import energy_table
from nnaccel.dse.shared.layer import Layer, LayerType, dqn_layers
from nnaccel.dse.template.cost_model import evaluate_batch, pack
from nnaccel.dse.template.hardware import TemplateHardware
from nnaccel.dse.template.sampler import sample_hardware, sample_mappings

ZIGZAG_DIMS = {"N": "B", "K": "K", "C": "C", "Y": "OY", "X": "OX", "R": "FY", "S": "FX"}
# The template's dataflows as ZigZag spatial unrollings: (array rows D1, array columns D2).
DATAFLOW_UNROLLING = {"WS": ("K", "C"), "OS": ("K", "X"), "RS": ("R", "Y")}
SHAPES = (
    *dqn_layers(),
    Layer.conv(in_channels=3, in_size=34, out_channels=32, kernel=3, name="conv3x3"),
    Layer.conv(in_channels=32, in_size=18, out_channels=64, kernel=3, name="conv3x3b"),
    Layer.conv(in_channels=64, in_size=17, out_channels=64, kernel=3, stride=2, name="conv3x3/2"),
    Layer.conv(in_channels=64, in_size=8, out_channels=128, kernel=1, name="conv1x1"),
    Layer.conv(in_channels=1, in_size=28, out_channels=16, kernel=5, name="lenet5x5"),
    Layer.dense(in_features=512, out_features=64, name="fc512"),
)


# ---- SCALE-Sim ---------------------------------------------------------------------------

def scalesim_cycles(layers, dataflow, array=16):
    """Per-layer 'Total Cycles' of SCALE-Sim 3 (trace-based, no DRAM stalls modelled: CALC)."""
    from scalesim.scale_sim import scalesim

    with tempfile.TemporaryDirectory(prefix="nnaccel-scalesim-") as workdir:
        work = Path(workdir)
        config = configparser.ConfigParser()
        config.optionxform = str
        config["general"] = {"run_name": "dqn"}
        config["architecture_presets"] = {
            "ArrayHeight": array, "ArrayWidth": array, "IfmapSramSzkB": 6144,
            "FilterSramSzkB": 6144, "OfmapSramSzkB": 2048, "IfmapOffset": 0,
            "FilterOffset": 10000000, "OfmapOffset": 20000000, "Dataflow": dataflow,
            "Bandwidth": 10, "ReadRequestBuffer": 32, "WriteRequestBuffer": 32}
        config["layout"] = {"IfmapCustomLayout": "False", "IfmapSRAMBankBandwidth": 10,
                            "IfmapSRAMBankNum": 10, "IfmapSRAMBankPort": 2,
                            "FilterCustomLayout": "False", "FilterSRAMBankBandwidth": 10,
                            "FilterSRAMBankNum": 10, "FilterSRAMBankPort": 2}
        config["sparsity"] = {"SparsitySupport": "false", "SparseRep": "ellpack_block",
                              "OptimizedMapping": "false", "BlockSize": 8,
                              "RandomNumberGeneratorSeed": 40}
        config["run_presets"] = {"InterfaceBandwidth": "CALC", "UseRamulatorTrace": "False"}
        with open(work / "dqn.cfg", "w") as handle:
            config.write(handle)
        with open(work / "dqn.csv", "w") as handle:
            handle.write("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                         "Channels, Num Filter, Strides,\n")
            for layer in layers:
                handle.write(f"{layer.name}, {layer.y}, {layer.x}, {layer.r}, {layer.s}, "
                             f"{layer.c}, {layer.k}, {layer.stride},\n")
        # The layout file is required but unused without custom layouts: the topology serves.
        simulator = scalesim(save_disk_space=True, verbose=False, config=str(work / "dqn.cfg"),
                             topology=str(work / "dqn.csv"), layout=str(work / "dqn.csv"))
        with contextlib.redirect_stdout(io.StringIO()):
            simulator.run_scale(top_path=str(work))
        report = next(work.rglob("COMPUTE_REPORT.csv"))
        with open(report) as handle:
            rows = list(csv.DictReader(handle, skipinitialspace=True))
        return [int(float(row["Total Cycles"])) for row in rows]


# ---- ZigZag ------------------------------------------------------------------------------

def zigzag_layer(layer, index, bits):
    dims = ("N", "K", "C", "Y", "X", "R", "S")
    sizes = dict(zip(dims, layer.loop_bounds()))
    entry = {"id": index, "name": layer.name or f"layer{index}",
             "operand_precision": {"W": bits, "I": bits, "O": 2 * bits, "O_final": bits}}
    if layer.type == LayerType.DENSE:
        entry.update(operator_type="Gemm", equation="O[b][k]+=W[k][c]*I[b][c]",
                     loop_dims=["B", "K", "C"], loop_sizes=[sizes["N"], sizes["K"], sizes["C"]])
    else:
        entry.update(operator_type="Conv",
                     equation="O[b][k][oy][ox]+=W[k][c][fy][fx]*I[b][c][iy][ix]",
                     dimension_relations=[f"ix={layer.stride}*ox+1*fx",
                                          f"iy={layer.stride}*oy+1*fy"],
                     loop_dims=[ZIGZAG_DIMS[d] for d in dims],
                     loop_sizes=[sizes[d] for d in dims])
    return entry


def scalesim_dqn_cycles(dataflow, python):
    """SCALE-Sim's DQN cycles, run by the interpreter ``python`` (SCALE-Sim 3.0.0 stops with a
    TypeError under NumPy 2.4 and later: it converts 1-element arrays with int())."""
    if python == sys.executable:
        return scalesim_cycles(dqn_layers(), dataflow)
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    output = subprocess.run([python, __file__, "--scalesim-json", dataflow], env=env, check=True,
                            capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def zigzag_run(layers, accelerator, unrolling, bits, lpf_limit=6):
    """ZigZag's (energy, cycles) per layer, each layer searched on its own for latency."""
    import yaml
    from zigzag.api import get_hardware_performance_zigzag

    results = []
    with tempfile.TemporaryDirectory(prefix="nnaccel-zigzag-") as workdir:
        work = Path(workdir)
        (work / "accelerator.yaml").write_text(yaml.safe_dump(accelerator, sort_keys=False))
        for index, layer in enumerate(layers):
            mapping = [{"name": "default",
                        "spatial_mapping": {axis: [f"{ZIGZAG_DIMS[dim]}, {size}"]
                                            for axis, (dim, size) in zip(("D1", "D2"),
                                                                         unrolling[index])},
                        "memory_operand_links": {"O": "O", "W": "I2", "I": "I1"}}]
            (work / "mapping.yaml").write_text(yaml.safe_dump(mapping, sort_keys=False))
            with contextlib.redirect_stdout(io.StringIO()):
                energy, cycles, _ = get_hardware_performance_zigzag(
                    workload=[zigzag_layer(layer, 0, bits)],
                    accelerator=str(work / "accelerator.yaml"),
                    mapping=str(work / "mapping.yaml"), opt="latency",
                    dump_folder=str(work / f"out{index}"), lpf_limit=lpf_limit,
                    loma_show_progress_bar=False)
            results.append((energy, cycles))
    return results


def tpu_like_16x16():
    """ZigZag's shipped TPU-like accelerator with its array resized to 16 x 16."""
    from importlib import resources

    import yaml

    text = resources.files("zigzag").joinpath("inputs", "hardware", "tpu_like.yaml").read_text()
    accelerator = yaml.safe_load(text)
    accelerator["operational_array"]["sizes"] = [16, 16]
    return accelerator


def memory(size_bits, operands, bandwidth_bits, pj, served):
    reads = [f"{op}, tl" for op in operands] + (["O, th"] if "O" in operands else [])
    writes = [f"{op}, fh" for op in operands] + (["O, fl"] if "O" in operands else [])
    return {"size": int(size_bits), "r_cost": float(pj), "w_cost": float(pj), "area": 0,
            "latency": 1, "operands": operands,
            "ports": [{"name": "r_port_1", "type": "read", "bandwidth_min": int(bandwidth_bits),
                       "bandwidth_max": int(bandwidth_bits), "allocation": reads},
                      {"name": "w_port_1", "type": "write", "bandwidth_min": int(bandwidth_bits),
                       "bandwidth_max": int(bandwidth_bits), "allocation": writes}],
            "served_dimensions": served}


def template_accelerator(hardware):
    """The template point as a ZigZag accelerator: RF per PE, one GB, HBM; costs per access of
    a port's width from the same energy table as the model."""
    bits = hardware.word_bits
    operands = ["I1", "I2", "O"]
    gb_bits = hardware.gb_words_per_cycle * bits
    dram_bits = int(hardware.dram_words_per_cycle * bits)
    return {
        "name": "template",
        "memories": {
            "rf": memory(hardware.rf_words * bits, operands, bits,
                         energy_table.storage_pj_per_word(hardware.rf_words, bits), []),
            "gb": memory(hardware.gb_words * bits, operands, gb_bits,
                         energy_table.storage_pj_per_word(hardware.gb_words, bits)
                         * hardware.gb_words_per_cycle, ["D1", "D2"]),
            "dram": memory(10**12, operands, dram_bits,
                           energy_table.dram_pj_per_word(bits) * dram_bits / bits, ["D1", "D2"]),
        },
        "operational_array": {"unit_energy": float(energy_table.mac_pj(hardware.number_format)),
                              "unit_area": float(energy_table.mac_um2(hardware.number_format)),
                              "dimensions": ["D1", "D2"], "sizes": [hardware.pe_y, hardware.pe_x]},
    }


def largest_divisor(value, limit):
    return max(d for d in range(1, min(value, limit) + 1) if value % d == 0)


def unrolling_for(layer, hardware):
    """(dim, size) on the array rows and columns for the hardware's dataflow."""
    bounds = dict(zip(("N", "K", "C", "Y", "X", "R", "S"), layer.loop_bounds()))
    rows_dim, cols_dim = DATAFLOW_UNROLLING[hardware.dataflow.value]
    return ((rows_dim, largest_divisor(bounds[rows_dim], hardware.pe_y)),
            (cols_dim, largest_divisor(bounds[cols_dim], hardware.pe_x)))


def model_best(layer, hardware, unrolling, samples, seed):
    """This model's lowest-latency mapping among ``samples`` random ones with the unrolling."""
    (rows_dim, rows), (cols_dim, cols) = unrolling
    parallel = (("N", 1), (rows_dim, rows), (cols_dim, cols))  # DRAM: batch 1, on 1 PE
    mappings = sample_mappings(layer, hardware, samples, seed=seed, parallel=parallel)
    costs = evaluate_batch(pack([(hardware, m, layer) for m in mappings]))
    best = int(np.argmin(costs["latency_cycles"]))
    return costs["latency_cycles"][best], costs["energy_pj"][best], mappings[best]


# ---- the benchmark -----------------------------------------------------------------------

def model_dqn_table(samples, seed):
    """This model on the DQN layers, 16x16 template, fp32 (the thesis' format): per dataflow the
    best of ``samples`` random mappings per layer for latency."""
    for dataflow in ("WS", "OS", "RS"):
        hardware = TemplateHardware(pe_x=16, pe_y=16, rf_words=64, dataflow=dataflow,
                                    number_format="fp32")
        latency, compute = [], []
        for index, layer in enumerate(dqn_layers()):
            mappings = sample_mappings(layer, hardware, samples, seed=seed + index)
            costs = evaluate_batch(pack([(hardware, m, layer) for m in mappings]))
            best = int(np.argmin(costs["latency_cycles"]))
            latency.append(round(costs["latency_cycles"][best]))
            compute.append(round(costs["compute_cycles"][best]))
        print(f"  this model, template 16x16 RF 64 fp32 {dataflow}: {sum(latency):>9,} cycles  "
              f"per layer {latency}  (compute-bound part {sum(compute):,})")


def rtl_dqn_rows(simulate):
    """nnaccel's RTL family on the thesis' configuration: the cost model's cycles per layer and, with
    ``simulate``, the simulated RTL's cycle counters summed per layer."""
    from nnaccel.dse.rtl.cost_model import evaluate_network
    from nnaccel.hw.dqn.config import DqnConfig
    from nnaccel.models.dqn.network import dqn_layers as thesis_layers

    config = DqnConfig()
    mapping, per_layer, totals = evaluate_network(config, thesis_layers(18))
    cycles = [round(row["latency_cycles"]) for row in per_layer]
    print(f"  RTL family model, 16x16 fp32, compiler's mapping: {sum(cycles):>9,} cycles  per layer {cycles}  "
          f"(mapping {mapping.describe()})")
    if not simulate:
        return
    from nnaccel.hw.dqn.accelerator import DqnAccelerator
    from nnaccel.models.dqn.atari import recorded_states
    from nnaccel.models.dqn.network import seeded_weights
    from nnaccel.models.dqn.plan import compile_network
    from nnaccel.testbench.dqn.host import run_on_accelerator

    start = time.perf_counter()
    plan = compile_network(config, thesis_layers(18), seeded_weights(), mapping=mapping)
    run = run_on_accelerator(DqnAccelerator(config=config), plan, recorded_states(1))
    measured = {}
    for layer, counters in zip(plan.layers, run.layer_counters[0]):
        measured[layer.network_layer] = measured.get(layer.network_layer, 0) + int(counters[0])
    print(f"  RTL (simulated, Verilator), same mapping:        {int(run.total_cycles[0]):>9,} cycles  per layer "
          f"{list(measured.values())}  ({time.perf_counter() - start:.0f} s)")


def dqn_table(scalesim_python, samples, seed, simulate_rtl):
    layers = dqn_layers()
    print("DQN (4 layers, 18 actions) on a 16x16 array")
    rtl_dqn_rows(simulate_rtl)
    model_dqn_table(samples, seed)
    for dataflow in ("os", "ws", "is"):
        start = time.perf_counter()
        cycles = scalesim_dqn_cycles(dataflow, scalesim_python)
        print(f"  SCALE-Sim 3 {dataflow}: {sum(cycles):>9,} cycles  per layer {cycles}  "
              f"({time.perf_counter() - start:.1f} s)")
    for label, second in (("K16 | C16", "C"), ("K16 | OX16", "X")):
        unrolling = [(("K", 16), (second, 16)) for _ in layers]
        start = time.perf_counter()
        results = zigzag_run(layers, tpu_like_16x16(), unrolling, bits=8)
        cycles = [round(c) for _, c in results]
        print(f"  ZigZag tpu_like 16x16 {label}: {sum(cycles):>9,} cycles  per layer {cycles}  "
              f"({time.perf_counter() - start:.1f} s)")


def template_comparison(cases, samples, seed, lpf_limit):
    from scipy.stats import spearmanr

    rng = np.random.default_rng(seed)
    rows = []
    start = time.perf_counter()
    for index in range(cases):
        layer = SHAPES[index % len(SHAPES)]
        hardware = sample_hardware(rng, dataflow=("WS", "OS", "RS")[index % 3])
        unrolling = unrolling_for(layer, hardware)
        latency, energy, _ = model_best(layer, hardware, unrolling, samples, seed + index)
        (zz_energy, zz_latency), = zigzag_run([layer], template_accelerator(hardware),
                                              [unrolling], hardware.word_bits, lpf_limit)
        rows.append((layer.name, hardware.dataflow.value, latency, zz_latency, energy, zz_energy))
    seconds = time.perf_counter() - start
    model_latency, zz_latency = np.array([r[2] for r in rows]), np.array([r[3] for r in rows])
    model_energy, zz_energy = np.array([r[4] for r in rows]), np.array([r[5] for r in rows])
    print(f"\n{cases} template cases (layer, PE_x x PE_y, RF, dataflow): this model's best of "
          f"{samples} mappings vs ZigZag (LOMA, lpf_limit {lpf_limit}, latency), {seconds:.0f} s")
    for name, ours, theirs in (("latency", model_latency, zz_latency),
                               ("energy", model_energy, zz_energy)):
        rho = spearmanr(ours, theirs).statistic
        relative = np.mean((ours - theirs) / theirs)
        absolute = np.mean(np.abs(ours - theirs) / theirs)
        print(f"  {name:8s} Spearman {rho:.3f}  mean relative difference (model - ZigZag) / "
              f"ZigZag {relative:+.1%}  mean absolute {absolute:.1%}")
    for dataflow in ("WS", "OS", "RS"):
        pick = np.array([r[1] == dataflow for r in rows])
        rho = spearmanr(model_latency[pick], zz_latency[pick]).statistic
        ratio = np.median(model_latency[pick] / zz_latency[pick])
        print(f"  {dataflow}: {pick.sum()} cases, latency Spearman {rho:.3f}, median model/ZigZag "
              f"{ratio:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=120)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--lpf-limit", type=int, default=4,
                        help="ZigZag LOMA's loop-prime-factor limit for the template cases")
    parser.add_argument("--skip-dqn", action="store_true")
    parser.add_argument("--skip-rtl", action="store_true", help="leave out the simulated RTL (the cost model stays)")
    parser.add_argument("--skip-template", action="store_true", help="leave out the random template cases")
    parser.add_argument("--scalesim-python", default=sys.executable,
                        help="interpreter to run SCALE-Sim with (one whose NumPy is older than 2.4)")
    parser.add_argument("--scalesim-json", metavar="DATAFLOW",
                        help="only print SCALE-Sim's DQN cycles for DATAFLOW as JSON (internal)")
    args = parser.parse_args()
    logging.disable(logging.CRITICAL)
    if args.scalesim_json:
        print(json.dumps(scalesim_cycles(dqn_layers(), args.scalesim_json)))
        return
    if not args.skip_dqn:
        dqn_table(args.scalesim_python, args.samples, args.seed, not args.skip_rtl)
    if not args.skip_template:
        template_comparison(args.cases, args.samples, args.seed, args.lpf_limit)


if __name__ == "__main__":
    main()
