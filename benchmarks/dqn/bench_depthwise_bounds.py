"""Depthwise layers of the MLPerf Tiny models: today's predicted cycles against the product cycles of two
lanes-over-positions mappings, and the flat map as its built units would run it (a design study for the second
dataflow; the units are built and tested, the pass is not in the accelerator yet).

    python benchmarks/dqn/bench_depthwise_bounds.py [--model kws|vww ...]

For each depthwise layer (groups == channels) of the model, compiled as ``nnaccel run mlperf-tiny`` compiles it
(``cli.dqn.accelerator_run.compile_model``: the smallest configuration like 16 x 16 binary32 that holds it):

``today``     the compiler's predicted cycles of the layer's passes (block-diagonal channel tiles, set-up and
              drain included): what ``nnaccel run mlperf-tiny --no-rtl`` counts;
``two rows``  lanes over the positions of one channel's output row, modules over row segments of the two output
              rows the feeder's two row registers serve: ``C * ceil(H / 2) * ceil(2 * ceil(W / lanes) / modules)``
              groups of ``kh * kw`` product cycles;
``flat map``  lanes over the positions of one channel's output map in raster order (``H * W`` positions over
              ``ceil(H * W / lanes)`` module slots), as many channels per group as fill the modules (or a channel
              over several groups): ``kh * kw`` product cycles per group, and at least half the row words the
              group's modules read (the input rows of its positions, ``floor(row_elements / in_width)`` of them a
              flattened word) when the two read ports are the bound;
``units S``   the flat map with the built units (hw/dqn/flat_lane_window.py, hw/dqn/flat_word_packer.py) and ``S``
              channel slots, on the stride-1 layers whose output rows are as wide as their input rows
              (``models.dqn.flat_map.flat_map_applies``) where it takes fewer cycles, the others as today: per group
              ``kh * kw`` steps, or the ``S * window_words / 2`` cycles that load the next group's windows (two
              words a cycle, into the back windows during the steps) where those are more; ``S`` channels a group
              where a map fits a slot, else a channel over ``ceil(H * W / (modules * lanes))`` groups; set-up,
              drain and the writes (a few flat words per slot, two a cycle, beside the next group's steps) not
              counted.
"""

import argparse
import math

from nnaccel.cli.dqn.accelerator_run import compile_model, model_macs
from nnaccel.hw.dqn.config import DqnConfig
from nnaccel.models.dqn.flat_map import flat_map_applies, window_words_needed
from nnaccel.models.dqn.mlperf_tiny import model_path
from nnaccel.models.dqn.network import ConvLayer


def two_rows_cycles(layer, config):
    segments = math.ceil(layer.out_width / config.lanes)
    groups = layer.out_channels * math.ceil(layer.out_height / 2) * math.ceil(2 * segments / config.modules)
    return groups * layer.kernel_height * layer.kernel_width


def flat_map_cycles(layer, config):
    taps = layer.kernel_height * layer.kernel_width
    positions = layer.out_height * layer.out_width
    slots = math.ceil(positions / config.lanes)
    rows_per_word = max(1, config.row_elements // layer.in_width)
    if slots <= config.modules:
        channels = config.modules // slots
        groups = math.ceil(layer.out_channels / channels)
        words = channels * math.ceil(layer.in_height / rows_per_word)
    else:
        group_positions = config.modules * config.lanes
        groups = layer.out_channels * math.ceil(positions / group_positions)
        out_rows = math.ceil(group_positions / layer.out_width) + 1
        in_rows = (out_rows - 1) * layer.stride_y + layer.kernel_height
        words = math.ceil(in_rows / rows_per_word) + 1
    return groups * max(taps, math.ceil(words / 2))


def flat_units_cycles(layer, config, slots, today):
    if not flat_map_applies(layer):
        return today
    slot_lanes = config.modules // slots * config.lanes
    positions = layer.out_height * layer.out_width
    if positions <= slot_lanes:
        groups = math.ceil(layer.out_channels / slots)
    else:
        groups = layer.out_channels * math.ceil(positions / (config.modules * config.lanes))
    words = window_words_needed(layer, config.row_elements, slot_lanes)
    return min(today, groups * max(slots * math.ceil(words / 2), layer.kernel_height * layer.kernel_width))


SLOTS = (1, 2, 4)


def layer_passes(plan, name):
    return [planned for planned in plan.layers if planned.name == name or planned.name.startswith(name + " ")]


def report(task):
    graph, lowered, plan = compile_model(model_path(task), DqnConfig())
    config = plan.config
    macs_per_cycle = config.modules * config.lanes
    rows = []
    today_total = flat_total = 0
    units_total = dict.fromkeys(SLOTS, 0)
    for layer in lowered.layers:
        if not isinstance(layer, ConvLayer) or layer.groups != layer.in_channels or layer.groups == 1:
            continue
        macs = layer.out_channels * layer.out_height * layer.out_width * layer.kernel_height * layer.kernel_width
        today = sum(planned.predicted["cycles"] for planned in layer_passes(plan, layer.name))
        two_rows, flat = two_rows_cycles(layer, config), flat_map_cycles(layer, config)
        units = {slots: flat_units_cycles(layer, config, slots, today) for slots in SLOTS}
        today_total += today
        flat_total += flat
        for slots in SLOTS:
            units_total[slots] += units[slots]
        rows.append(f"  {layer.name:<22} {layer.in_channels:>4} x {layer.out_height:>2} x {layer.out_width:>2} "
                    f"{layer.kernel_height}x{layer.kernel_width}/{layer.stride_y} {macs:>9,} MACs  "
                    + "  ".join(f"{label} {cycles:>6,} ({macs / (cycles * macs_per_cycle):6.1%})"
                                for label, cycles in (("today", today), ("two rows", two_rows), ("flat map", flat),
                                                      *((f"units {slots}", units[slots]) for slots in SLOTS))))
    total, macs = plan.estimated_cycles, model_macs(graph)
    with_flat = total - today_total + flat_total
    budget = macs / (0.8 * macs_per_cycle) - (total - today_total)
    print(f"{task}: {config.modules} x {config.lanes} {config.fmt.name}, {total:,} cycles predicted, "
          f"{macs / (total * macs_per_cycle):.1%} MAC use; depthwise layers {today_total:,} cycles")
    print("\n".join(rows))
    print(f"  with the flat map: {with_flat:,} cycles, {macs / (with_flat * macs_per_cycle):.1%} MAC use; "
          f"80 % MAC use leaves the depthwise layers {budget:,.0f} cycles")
    for slots in SLOTS:
        with_units = total - today_total + units_total[slots]
        print(f"  with the built units, {slots} slot(s): depthwise layers {units_total[slots]:,} cycles, the model "
              f"{with_units:,} cycles, {macs / (with_units * macs_per_cycle):.1%} MAC use")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", choices=("kws", "vww"))
    for task in parser.parse_args().model or ("kws", "vww"):
        report(task)


if __name__ == "__main__":
    main()
