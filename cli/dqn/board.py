"""``--board de1soc`` of ``nnaccel run dqn`` and ``nnaccel play``: the thesis network on the DQN accelerator sized
for the DE1-SoC (``hw.dqn.config.DE1_SOC_BINARY16_CONFIG``, which fits its 5CSEMA5), its weights in the SDRAM model
behind the Avalon port; every counter checked against the cycle formula with that model in it, the time per inference
against the thesis' on the DE5-Net and against the SDRAM's bandwidth bound."""

from dataclasses import replace

from nnaccel.hw.dqn.config import DE1_SOC_BINARY16_CONFIG
from nnaccel.models.dqn.plan import COUNTERS
from nnaccel.models.dqn.weight_stream import model_base as sized_model_base
from nnaccel.models.dqn.weight_stream import formula_mismatches, on_chip_twin, stream_plan
from nnaccel.models.shared.sdram import DE1_SOC_SDRAM, sustained_read_bytes_per_cycle

__all__ = ["BOARDS", "BOARD_MAX_CYCLES", "compile_config", "model_base", "board_config", "board_stream",
           "formula_mismatches", "board_report"]

BOARDS = {"de1soc": DE1_SOC_BINARY16_CONFIG}
LARGEST_LOAD_TABLE = 1 << 12
THESIS_MS = 0.15            # the thesis' inference on the DE5-Net (16 x 16 MACs, every weight on chip)
BOARD_MAX_CYCLES = 50_000_000   # a run's timeout in the simulation (the DE1-SoC's run: 1 M cycles)


def compile_config(board):
    """The configuration the network is compiled for before its weights are cut into tiles."""
    return on_chip_twin(BOARDS[board])


def model_base(board):
    """The base an imported model (``run mlperf-tiny --board``) is sized from: :func:`models.dqn.weight_stream.
    model_base` of the board's configuration."""
    return sized_model_base(BOARDS[board])


def board_config(board, compiled):
    """The board's configuration for a plan compiled for ``compiled`` (:func:`compile_config`, or a model's grown
    :func:`model_base`): ``compiled`` with the board's weight halves in place of the on-chip weight RAM."""
    return replace(compiled, external_weights=True, weight_depth=BOARDS[board].weight_depth)


def board_stream(board, plan):
    """``plan`` (compiled for :func:`compile_config` or a grown :func:`model_base`) with its weights in the board's
    external memory; a load table grown to the power of two that holds a model's loads."""
    def with_loads(loads):             # the load table is a field of the plan's configuration too (on_chip_twin)
        return replace(plan, config=replace(plan.config, weight_loads=loads))

    config = board_config(board, plan.config)
    needed = len(stream_plan(replace(config, weight_loads=LARGEST_LOAD_TABLE), with_loads(LARGEST_LOAD_TABLE)).loads)
    loads = max(config.weight_loads, 1 << (needed - 1).bit_length())
    return stream_plan(replace(config, weight_loads=loads), with_loads(loads))


def board_report(board, plan, run, clock_hz, *, thesis=True):
    """Print the board's lines (the counters against the formula, ms per inference (``thesis``: against the
    thesis'), the bandwidth bound, the Yosys estimate if cached); returns ``(counters equal, JSON fields)``."""
    from nnaccel.sim.fpga.dqn_configurations import cached_estimate, resources_summary

    stream = board_stream(board, plan)
    mismatches, predicted = formula_mismatches(stream, run)
    counters = len(run.total_cycles) * (1 + len(COUNTERS) * len(stream.plan.layers))
    print(f"\n{board}: counters: {'all' if not mismatches else 'NOT all'} {counters:,} (TOTAL_CYCLES and every pass's "
          f"four, every input) equal to the cycle formula with the SDRAM model in it "
          f"(models.dqn.weight_stream.stream_counters)")
    for line in mismatches[:20]:
        print(f"    {line}")
    total = int(run.total_cycles[0])
    ms = total / clock_hz * 1e3
    per_cycle = sustained_read_bytes_per_cycle(DE1_SOC_SDRAM)
    bound = stream.weight_bytes / per_cycle
    stalls = int(run.layer_counters[0][:, COUNTERS.index("stall_cycles")].sum())
    config = stream.config
    thesis_note = (f" (thesis: {THESIS_MS} ms on the DE5-Net, 16 x 16 binary32 MACs with every weight on chip: "
                   f"{ms / THESIS_MS:.0f} times as long)" if thesis else "")
    print(f"{board}: {total:,} cycles = {ms:.3f} ms per inference at {clock_hz / 1e6:g} MHz on "
          f"{config.modules} x {config.lanes} {config.fmt.name} MACs{thesis_note}")
    streamed = f"{len(stream.streamed)} pass{'' if len(stream.streamed) == 1 else 'es'} streamed through their half"
    print(f"{board}: weights from SDRAM: {stream.weight_bytes:,} bytes per inference in {len(stream.loads)} loads "
          f"({streamed}); the SDRAM model sustains "
          f"{per_cycle:.3f} bytes/cycle: bandwidth bound {bound:,.0f} cycles = {bound / clock_hz * 1e3:.3f} ms; the "
          f"run takes {total / bound:.2f} times the bound ({stalls:,} cycles waiting for weights or the writer)")
    resources = cached_estimate(config, generate=True)     # a board configuration's Verilog: about 1.5 minutes
    estimate = resources_summary(resources) if resources is not None else None
    print(f"{board}: Yosys estimate: {estimate}" if estimate else
          f"{board}: Yosys estimate: not in the cache; `nnaccel synth dqn --dqn-config FILE.json` with this "
          f"configuration makes it (long)")
    fields = {"board": board, "config": config.module_name, "cycles": total, "formula_equal": not mismatches,
              "formula_mismatches": mismatches,
              "ms_per_inference": ms, "thesis_ms": THESIS_MS, "weight_bytes": stream.weight_bytes,
              "loads": len(stream.loads), "sdram_bytes_per_cycle": per_cycle, "bandwidth_bound_cycles": bound,
              "formula_total_cycles": predicted.total, "resources": estimate}
    return not mismatches, fields
