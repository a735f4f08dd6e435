"""The FPGAs a resource estimate is checked against, their block RAMs' shapes, and whether a design fits.

Figures from Intel's device overviews and Quartus' fitter reports (sources above :data:`CYCLONE_V_5CSEMA5`): the
DE1-SoC's Cyclone V SE 5CSEMA5 (32,070 ALMs, 87 variable-precision DSP blocks, 397 M10K blocks) and the DE5-Net's
Stratix V GX 5SGXEA7 (the thesis' board: 234,720 ALMs, 256 variable-precision DSP blocks, 2,560 M20K blocks).
Both families' ALMs hold two adaptive LUTs and four registers, and both DSP blocks are one 27 x 27, two 18 x 18 or
three 9 x 9 multipliers, so the Cyclone V estimate's ALMs and DSP blocks stand for the Stratix V too; the block RAMs
differ (M10K against M20K), and Yosys maps only the M10K: :func:`block_count` counts a memory's blocks in either from
its shape.
"""

import math

__all__ = ["CYCLONE_V_5CSEMA5", "STRATIX_V_5SGXEA7", "DEVICES", "M10K_MODES", "M20K_MODES", "block_count",
           "block_mapping", "device_usage", "over_capacity", "fit_summary"]

# A block RAM's true dual-port shapes, (depth, width): Cyclone V M10K (10,240 bits; as yosys/m10k_tdp.txt maps)
# and Stratix V M20K (20,480 bits; 512 x 40 is simple dual-port only).
M10K_MODES = ((8192, 1), (4096, 2), (2048, 5), (1024, 10), (512, 20))
M20K_MODES = ((16384, 1), (8192, 2), (4096, 5), (2048, 10), (1024, 20))
# Byte enables: a block of 10 or more bits a word has one per 10 bits; narrower modes have none.
_BYTE_BITS = 10

# The devices' resources, checked 2026-11 against the totals Quartus' fitter reports for each part (public fitter
# summaries of designs on it), which agree with Intel's device overviews:
# - 5CSEMA5 (DE1-SoC's 5CSEMA5F31C6): "ALMs x / 32,070", "DSP blocks x / 87", "RAM blocks x / 397 M10Ks", "block
#   memory bits x / 4,065,280" (= 397 x 10,240); Intel, Cyclone V Device Overview (683694), Cyclone V SE.
# - 5SGXEA7 (DE5-Net's 5SGXEA7N2F45C2): "ALMs x / 234,720"; Intel, Stratix V Device Overview (683258), Stratix V
#   GX A7: 256 variable-precision DSP blocks, 2,560 M20K blocks (50 Mbit; 20,480 bits per M20K: Stratix V Device
#   Handbook vol. 1 (683665), "Embedded Memory Features").  The thesis' fit (256 DSP blocks, 2,454 M20K) is within.
CYCLONE_V_5CSEMA5 = {"name": "Cyclone V 5CSEMA5", "board": "DE1-SoC", "alms": 32_070, "dsp_blocks": 87,
                     "block_ram": "m10k", "block_rams": 397}
STRATIX_V_5SGXEA7 = {"name": "Stratix V 5SGXEA7", "board": "DE5-Net", "alms": 234_720, "dsp_blocks": 256,
                     "block_ram": "m20k", "block_rams": 2_560}
DEVICES = (CYCLONE_V_5CSEMA5, STRATIX_V_5SGXEA7)


def block_mapping(width, depth, groups, modes):
    """``(blocks, blocks in depth)`` of the cheapest of ``modes`` (:data:`M10K_MODES`, :data:`M20K_MODES`) for a
    ``depth`` x ``width`` memory written in ``groups`` equal parts (write enables): (blocks side by side) x (blocks
    deep), a tie going to the mode with fewer blocks in depth (no read multiplexer), as Yosys' ``memory_libmap``
    decides.  Side by side, each part starts in a new byte of the block (parts of a word are padded to whole bytes
    where the mode has byte enables, to whole blocks where it has none)."""
    if width < 1 or depth < 1 or groups < 1 or width % groups:
        raise ValueError(f"a memory of {depth} x {width} bits in {groups} write groups is not a memory shape")
    part = width // groups
    options = []
    for mode_depth, mode_width in modes:
        if groups == 1:
            across = math.ceil(width / mode_width)
        elif mode_width >= _BYTE_BITS:
            across = math.ceil(groups * math.ceil(part / _BYTE_BITS) * _BYTE_BITS / mode_width)
        else:
            across = groups * math.ceil(part / mode_width)
        deep = math.ceil(depth / mode_depth)
        options.append((across * deep, deep))
    return min(options)


def block_count(width, depth, groups, modes):
    """Blocks of ``modes`` holding a ``depth`` x ``width`` memory written in ``groups`` equal parts
    (:func:`block_mapping`)."""
    return block_mapping(width, depth, groups, modes)[0]


def device_usage(report, device):
    """``{resource: (needed, available)}`` of ``report`` (a :class:`sim.fpga.synth.SynthReport`) on ``device``."""
    total = report.total
    block_rams = total.m10k if device["block_ram"] == "m10k" else report.m20k
    return {"ALMs": (total.alms, device["alms"]), "DSP blocks": (total.dsp_blocks, device["dsp_blocks"]),
            device["block_ram"].upper(): (block_rams, device["block_rams"])}


def over_capacity(report, device):
    """The resources of ``device`` that ``report``'s total exceeds (empty: it fits)."""
    return [kind for kind, (need, have) in device_usage(report, device).items() if need > have]


def fit_summary(report, device=CYCLONE_V_5CSEMA5):
    """One line: whether ``report``'s total fits ``device``, and by how much each resource is used."""
    used = device_usage(report, device)
    over = over_capacity(report, device)
    shares = ", ".join(f"{kind} {need:,.0f}/{have:,} ({100 * need / have:.0f}%)" for kind, (need, have) in used.items())
    verdict = "fits" if not over else f"does NOT fit ({', '.join(over)} exceeded)"
    return f"{report.name} on {device['name']}: {verdict}: {shares}"
