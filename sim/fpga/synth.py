"""Resource estimates without Quartus: Yosys maps a design's Verilog to Cyclone V cells and counts them.

This is a Yosys estimate, not a Quartus fit.  Yosys' ``synth_intel_alm -family cyclonev`` maps logic to
6-input LUTs (``MISTRAL_ALUT*``), carry chains (``MISTRAL_ALUT_ARITH``), flip-flops, DSP multipliers
(``MISTRAL_MUL27X27`` / ``MUL18X18`` / ``MUL9X9``) and small memories to MLAB LUT-RAM.  Yosys 0.23 only knows the
M10K in simple dual-port mode, so block RAMs are first mapped by ``memory_libmap`` with the true dual-port
description in ``yosys/m10k_tdp.txt`` (the mode Quartus uses for :class:`hw.shared.dual_port_buffer.DualPortBuffer`).

The design is synthesized hierarchically (``-noflatten``): every distinct Verilog module (``sim.verilog``
already emits identical modules once) is mapped once and its counts are multiplied by its instance count.
That keeps the 256-MAC DQN accelerator tractable (45 minutes on a busy 2-core machine, most of it Yosys'
generic optimisation of the top level's wide multiplexers); it forgoes optimisation across module boundaries
(a constant input is not propagated into a module), so the estimate leans high.  Quartus also packs LUTs
and flip-flops into ALMs, which Yosys does not: :attr:`Resources.alms` is an estimate from the cell counts
(see there).  Results are cached by a hash of the Verilog, the Yosys version and the mapping files.
"""

import hashlib
import json
import math
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path

from nnaccel.models.shared.cache import cache_root
from nnaccel.sim.build_cache import build_key
from nnaccel.sim.verilog import generate_verilog

__all__ = ["Resources", "SynthReport", "YosysNotFound", "estimate", "estimate_verilog", "format_table"]

_LIBRARY = Path(__file__).with_name("yosys")
_M10K_RULES = _LIBRARY / "m10k_tdp.txt"
_M10K_CELLS = _LIBRARY / "m10k_tdp_cells.v"
_M10K_MAP = _LIBRARY / "m10k_tdp_map.v"
YOSYS_INSTALL_HINT = "install it with `apt-get install yosys` (Debian's Yosys 0.23 or newer)"
ESTIMATE_NOTE = ("Yosys estimate (synth_intel_alm -family cyclonev, hierarchical), not a Quartus fit: ALMs are "
                 "estimated from LUT, carry and flip-flop counts; Quartus packing and optimisation will differ.")

# Part of the cache key: bump when what is kept from a Yosys run changes.
_RESULT_FORMAT = 2


class YosysNotFound(RuntimeError):
    """Yosys is not on PATH; the message says how to install it."""


def yosys_command():
    path = shutil.which("yosys")
    if path is None:
        raise YosysNotFound(f"`nnaccel synth` needs Yosys, which was not found on PATH: {YOSYS_INSTALL_HINT}")
    return path


@cache
def yosys_version():
    return subprocess.run([yosys_command(), "-V"], capture_output=True, text=True, check=True).stdout.strip()


@dataclass(frozen=True)
class Resources:
    """Cyclone V cells counted by Yosys for one module (with everything it instantiates) or a whole design.

    ``luts`` counts LUTs (``MISTRAL_ALUT2`` .. ``ALUT6`` and ``MISTRAL_NOT``), ``lut6`` those of six inputs among
    them, ``carry`` the carry-chain adder bits (``MISTRAL_ALUT_ARITH``), ``mlab`` 32 x 1 LUT-RAM cells, ``m10k``
    M10K blocks and ``memory_bits`` the bits of the design's memories (contents, not block capacity).
    """

    luts: int = 0
    lut6: int = 0
    carry: int = 0
    flip_flops: int = 0
    mlab: int = 0
    m10k: int = 0
    memory_bits: int = 0
    mul27: int = 0
    mul18: int = 0
    mul9: int = 0

    def __add__(self, other):
        return Resources(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def __mul__(self, count):
        return Resources(**{f.name: getattr(self, f.name) * count for f in fields(self)})

    @property
    def dsp_blocks(self):
        """DSP blocks the multipliers need, packed as densely as a block allows (may be fractional per module): a
        Cyclone V variable-precision DSP block is one 27x27, two 18x18 or three 9x9 multipliers (Cyclone V
        Device Handbook, "Variable Precision DSP Blocks")."""
        return self.mul27 + self.mul18 / 2 + self.mul9 / 3

    @property
    def alms(self):
        """ALMs estimated from the cell counts (an ALM holds two LUTs of up to five inputs or one 6-LUT, two
        carry bits and four flip-flops; an MLAB of 20 cells takes 10 ALMs): the larger of the logic bound
        ``lut6 + (other LUTs + carry) / 2 + mlab / 2`` and the register bound ``flip_flops / 4``."""
        logic = self.lut6 + (self.luts - self.lut6 + self.carry) / 2 + self.mlab / 2
        return math.ceil(max(logic, self.flip_flops / 4))

    def as_dict(self):
        return {**asdict(self), "alms": self.alms, "dsp_blocks": self.dsp_blocks}


def _cell_resources(cell_type, count):
    if cell_type.startswith("MISTRAL_ALUT") and cell_type != "MISTRAL_ALUT_ARITH" or cell_type == "MISTRAL_NOT":
        return Resources(luts=count, lut6=count if cell_type == "MISTRAL_ALUT6" else 0)
    kinds = {"MISTRAL_ALUT_ARITH": "carry", "MISTRAL_FF": "flip_flops", "MISTRAL_MLAB": "mlab",
             "NNACCEL_M10K": "m10k", "MISTRAL_M10K": "m10k", "MISTRAL_MUL27X27": "mul27",
             "MISTRAL_MUL18X18": "mul18", "MISTRAL_MUL9X9": "mul9"}
    if cell_type in kinds:
        return Resources(**{kinds[cell_type]: count})
    return None


@dataclass(frozen=True)
class SynthRow:
    """One line of a report: ``count`` instances of module ``module``, ``resources`` for all of them."""

    label: str
    module: str
    count: int
    resources: Resources


@dataclass(frozen=True)
class SynthReport:
    """Yosys' Cyclone V estimate of a design: one row per kind of submodule of the top, the top's own logic, total."""

    name: str
    rows: tuple
    total: Resources
    seconds: float

    def as_dict(self):
        return {"name": self.name, "note": ESTIMATE_NOTE, "seconds": round(self.seconds, 1),
                "rows": [{"label": r.label, "module": r.module, "count": r.count, **r.resources.as_dict()}
                         for r in self.rows],
                "total": self.total.as_dict()}


def _script(name, workdir, library):
    common = f"-family cyclonev -top {name} -noiopad -noclkbuf -noflatten"
    return "\n".join([
        f"read_verilog {workdir / 'design.v'}",
        f"read_verilog -lib {library / _M10K_CELLS.name}",
        f"synth_intel_alm {common} -run begin:map_bram",
        f"write_json {workdir / 'memories.json'}",
        f"memory_libmap -lib {library / _M10K_RULES.name}",
        f"techmap -map {library / _M10K_MAP.name}",
        f"synth_intel_alm {common} -run map_bram:",
        f"tee -q -o {workdir / 'stat.json'} stat -json",
    ]) + "\n"


# Yosys 0.23's ``stat -json`` prints the instance tree of a design with more than two levels of hierarchy
# ("    name    count" lines) into its JSON; those lines are not needed and are dropped.
_HIERARCHY_LINE = re.compile(r'^\s+[^\s"{}]\S*\s+\d+$')


def _parse_stat(path):
    return json.loads("\n".join(line for line in path.read_text().splitlines() if not _HIERARCHY_LINE.match(line)))


def _memory_bits(netlist_path):
    """``{module: bits}`` of the memories (``$mem_v2`` cells) each module holds itself, counting those with a
    clocked read port (block RAM candidates), not the small asynchronous ROMs Yosys makes of case statements."""
    bits = {}
    for module, body in json.loads(netlist_path.read_text())["modules"].items():
        for cell in body.get("cells", {}).values():
            if cell["type"] == "$mem_v2" and "1" in cell["parameters"]["RD_CLK_ENABLE"]:
                size, width = (int(cell["parameters"][key], 2) for key in ("SIZE", "WIDTH"))
                bits[_module_name(module)] = bits.get(_module_name(module), 0) + size * width
    return bits


# An all-zero memory initialisation as Amaranth writes it ("initial begin", one "mem[i] = N'h0;" per word,
# "end").  The M10K powers up to zero anyway, and Yosys carries a large memory's initial contents as one
# constant through every optimisation pass (the DQN weight RAM's 2 Mbit made it crawl): dropped before Yosys.
_ZERO_MEMORY_INIT = re.compile(r"^ *initial begin\n(?: *\S+\[\d+\] = \d+'h0+;\n)+ *end\n", re.M)


def without_zero_memory_init(verilog_text):
    return _ZERO_MEMORY_INIT.sub("", verilog_text)


def _run_yosys(verilog_text, name):
    with tempfile.TemporaryDirectory(prefix="nnaccel-synth-") as directory:
        workdir = Path(directory)
        (workdir / "design.v").write_text(without_zero_memory_init(verilog_text))
        (workdir / "script.ys").write_text(_script(name, workdir, _LIBRARY))
        result = subprocess.run([yosys_command(), "-q", "-l", str(workdir / "yosys.log"), "-s",
                                 str(workdir / "script.ys")], capture_output=True, text=True, cwd=workdir)
        if result.returncode != 0 or not (workdir / "stat.json").exists():
            log = (workdir / "yosys.log").read_text() if (workdir / "yosys.log").exists() else result.stderr
            raise RuntimeError(f"Yosys failed on {name} (exit {result.returncode}):\n"
                               + "\n".join(log.splitlines()[-25:]))
        modules = _parse_stat(workdir / "stat.json")["modules"]
        memory_bits = _memory_bits(workdir / "memories.json")
    return {"modules": {module: body["num_cells_by_type"] for module, body in modules.items()},
            "memory_bits": memory_bits}


def _module_name(yosys_name):
    return yosys_name[1:] if yosys_name.startswith("\\") else yosys_name


def _report(name, stats, seconds):
    # stat names a module "\\name" and an instance's cell type "name"
    cells = {_module_name(module): {_module_name(cell_type): count for cell_type, count in types.items()}
             for module, types in stats["modules"].items()}
    totals = {}

    def total(module):
        if module not in totals:
            resources = Resources(memory_bits=stats["memory_bits"].get(module, 0))
            for cell_type, count in cells[module].items():
                if cell_type in cells:
                    resources += total(cell_type) * count
                elif (own := _cell_resources(cell_type, count)) is not None:
                    resources += own
            totals[module] = resources
        return totals[module]

    top = name
    rows = []
    own = Resources(memory_bits=stats["memory_bits"].get(name, 0))
    for cell_type, count in cells[top].items():
        if cell_type in cells:
            rows.append(SynthRow(cell_type, cell_type, count, total(cell_type) * count))
        elif (resources := _cell_resources(cell_type, count)) is not None:
            own += resources
    rows.sort(key=lambda row: row.label)
    if rows:
        rows.append(SynthRow(f"{name} (own logic)", name, 1, own))
    return SynthReport(name=name, rows=tuple(rows), total=total(top), seconds=seconds)


def estimate_verilog(verilog_text, name, *, cached_only=False):
    """:class:`SynthReport` for the Verilog ``verilog_text`` with top module ``name``; cached by content.  With
    ``cached_only``, ``None`` instead of a Yosys run when the cache does not hold it."""
    # The mapping files by content and the script with placeholder directories: every checkout of the same
    # sources finds the same entry, wherever it lives.
    key = build_key(verilog_text, yosys=yosys_version(), format=_RESULT_FORMAT,
                    library=hashlib.sha256(b"".join(p.read_bytes() for p in (_M10K_RULES, _M10K_CELLS, _M10K_MAP)))
                    .hexdigest(), script=_script(name, Path("/"), Path("/")))
    cached = cache_root() / "synth" / f"{name}-{key}.json"
    if cached.exists():
        stored = json.loads(cached.read_text())
        return _report(name, stored["stats"], stored["seconds"])
    if cached_only:
        return None
    start = time.perf_counter()
    stats = _run_yosys(verilog_text, name)
    seconds = time.perf_counter() - start
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(cached.name + ".partial")
    partial.write_text(json.dumps({"stats": stats, "seconds": seconds}))
    partial.replace(cached)
    return _report(name, stats, seconds)


def estimate(component, name):
    """:class:`SynthReport` for an Amaranth component, its Verilog generated by :mod:`sim.verilog`."""
    return estimate_verilog(generate_verilog(component, name), name)


_COLUMNS = (("ALMs (est.)", lambda r: r.alms), ("LUTs", lambda r: r.luts), ("carry", lambda r: r.carry),
            ("FFs", lambda r: r.flip_flops), ("DSP", lambda r: f"{round(r.dsp_blocks, 1):g}"), ("M10K", lambda r: r.m10k),
            ("memory bits", lambda r: r.memory_bits))


def format_table(reports):
    """Text table of several :class:`SynthReport`: per system its rows (``name x count``) and a total line."""
    header = ["component", *(title for title, _ in _COLUMNS)]
    lines = []
    for report in reports:
        for row in report.rows:
            label = f"  {row.label}" + (f" x{row.count}" if row.count > 1 else "")
            lines.append([label, *(str(value(row.resources)) for _, value in _COLUMNS)])
        lines.append([f"{report.name}" + (" total" if report.rows else ""),
                      *(str(value(report.total)) for _, value in _COLUMNS)])
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]

    def render(line):
        return "  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(line))

    return "\n".join([render(header), render(["-" * w for w in widths]), *map(render, lines), "", ESTIMATE_NOTE])
