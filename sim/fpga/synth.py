"""Resource estimates without Quartus: Yosys maps a design's Verilog to Cyclone V cells and counts them.

This is a Yosys estimate, not a Quartus fit.  Yosys' ``synth_intel_alm -family cyclonev`` maps logic to
6-input LUTs (``MISTRAL_ALUT*``), carry chains (``MISTRAL_ALUT_ARITH``), flip-flops, DSP multipliers
(``MISTRAL_MUL27X27`` / ``MUL18X18`` / ``MUL9X9``) and small memories to MLAB LUT-RAM.  Yosys 0.23 only knows the
M10K in simple dual-port mode, so block RAMs are first mapped by ``memory_libmap`` with the true dual-port
description in ``yosys/m10k_tdp.txt`` (the mode Quartus uses for :class:`hw.shared.dual_port_buffer.DualPortBuffer`).

The design is synthesized hierarchically (``-noflatten``): every distinct Verilog module (``sim.verilog``
already emits identical modules once) is mapped once and its counts are multiplied by its instance count.  It
forgoes optimisation across module boundaries (a constant input is not propagated into a module), so the estimate
leans high.  Quartus also packs LUTs and flip-flops into ALMs, which Yosys does not: :attr:`Resources.alms` is an
estimate from the cell counts (see there).

Each module is synthesized in a Yosys run of its own (:func:`estimate_verilog`), under a wrapper that passes its
ports through (so that it is mapped as a module of a hierarchy, as in the whole design), the modules it
instantiates read as black boxes (ports only); the top's totals are composed from the modules' counts along the
instance tree.  Each module's counts are cached under its logic (:meth:`sim.fpga.verilog_modules.VerilogModules.
logic_key`: its text without the top's name and Amaranth's global port numbers, its children's ports, the Yosys
version, the mapping files and the script), so two designs that share a module (two DQN configurations with
different RAM depths share their matrix modules, writer, argmax ...; a design before and after a change to one of
its blocks) synthesize it once: the 256-MAC DQN accelerator took 45 minutes in one run on a busy 2-core machine,
and a change to one block re-runs that block.  The dual-port RAMs (:class:`hw.shared.dual_port_buffer.DualPortBuffer`
modules) are not given to Yosys: their cells follow from their shape (:mod:`sim.fpga.block_ram`), where Yosys took
up to 52 minutes for a wide granular RAM.  ``per_module=False`` runs the whole design, RAMs included, in one Yosys
run instead (cached by the whole text), the cross-check of the composition (``tests/sim/test_synth_modules.py``).
A configuration synthesized module by module leaves a record, so that a report (:func:`cached_design_estimate`)
finds its estimate again after an edit of the hardware sources that left its modules' Verilog as it was.
"""

import hashlib
import json
import math
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, fields
from functools import cache
from pathlib import Path

from nnaccel.models.shared.cache import cache_root
from nnaccel.sim.build_cache import build_key
from nnaccel.sim.progress import current_listener, report_stage
from nnaccel.sim.verilog import generate_verilog, has_cached_design

from .block_ram import dual_port_buffer_cells
from .devices import M20K_MODES, block_count
from .verilog_modules import WRAPPER, VerilogModules

__all__ = ["Resources", "SynthReport", "YosysError", "YosysNotFound", "cell_resources", "estimate",
           "cached_design_estimate", "estimate_verilog", "format_table"]

_LIBRARY = Path(__file__).with_name("yosys")
_M10K_RULES = _LIBRARY / "m10k_tdp.txt"
_M10K_CELLS = _LIBRARY / "m10k_tdp_cells.v"
_M10K_MAP = _LIBRARY / "m10k_tdp_map.v"
YOSYS_INSTALL_HINT = "install it with `apt-get install yosys` (Debian's Yosys 0.23 or newer)"
ESTIMATE_NOTE = ("Yosys estimate (synth_intel_alm -family cyclonev, hierarchical), not a Quartus fit: ALMs are "
                 "estimated from LUT, carry and flip-flop counts; Quartus packing and optimisation will differ.")

# Part of the cache key: bump when what is kept from a Yosys run changes.
_RESULT_FORMAT = 3


class YosysError(RuntimeError):
    """Yosys failed (the message holds the end of its log)."""


class YosysNotFound(YosysError):
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


def cell_resources(cells):
    """:class:`Resources` of ``{Yosys cell type: count}`` (cell types of other modules left out)."""
    return sum((resources for cell_type, count in cells.items()
                if (resources := _cell_resources(cell_type, count)) is not None), Resources())


@dataclass(frozen=True)
class SynthRow:
    """One line of a report: ``count`` instances of module ``module``, ``resources`` for all of them."""

    label: str
    module: str
    count: int
    resources: Resources


@dataclass(frozen=True)
class SynthReport:
    """Yosys' Cyclone V estimate of a design: one row per kind of submodule of the top, the top's own logic, total.

    ``memories``: ``(width, depth, write-enable groups, instances)`` of every block-RAM memory (for the M20K count
    of a Stratix V, :attr:`m20k`); ``seconds``: Yosys' time for all of it (the runs that made the cached results
    included); ``synthesized``: the modules Yosys ran on in this call (the others came from the cache).
    """

    name: str
    rows: tuple
    total: Resources
    seconds: float
    memories: tuple = ()
    synthesized: tuple = ()

    @property
    def m20k(self):
        """Stratix V M20K blocks the memories would take in true dual-port mode (:func:`sim.fpga.devices.
        block_count`; Yosys maps to Cyclone V's M10K only)."""
        return sum(block_count(width, depth, groups, M20K_MODES) * count
                   for width, depth, groups, count in self.memories)

    def as_dict(self):
        return {"name": self.name, "note": ESTIMATE_NOTE, "seconds": round(self.seconds, 1),
                "synthesized_now": list(self.synthesized),
                "rows": [{"label": r.label, "module": r.module, "count": r.count, **r.resources.as_dict()}
                         for r in self.rows],
                "total": {**self.total.as_dict(), "m20k_stratix_v": self.m20k}}


# synth_intel_alm's map_luts step (``help synth_intel_alm`` lists it) without its ``autoname``: that command only
# renames the mapped cells for a netlist written out, which is never written here, and it was the one pass growing
# faster than the rest (a third of the flat lane window's CPU). The cells of every type are the same.
_MAP_LUTS_WITHOUT_AUTONAME = (
    "techmap -map +/intel_alm/common/abc9_map.v",
    "abc9 -maxlut 6 -W 600",
    "techmap -map +/intel_alm/common/abc9_unmap.v",
    "techmap -map +/intel_alm/common/alm_map.v",
    "opt -fast",
    "clean",
)


def _script(name, workdir, library, *, black_boxes=False):
    common = f"-family cyclonev -top {name} -noiopad -noclkbuf -noflatten"
    return "\n".join([
        f"read_verilog {workdir / 'design.v'}",
        *([f"read_verilog -lib {workdir / 'black_boxes.v'}"] if black_boxes else []),
        f"read_verilog -lib {library / _M10K_CELLS.name}",
        f"synth_intel_alm {common} -run begin:map_bram",
        f"write_json {workdir / 'memories.json'}",
        f"memory_libmap -lib {library / _M10K_RULES.name}",
        f"techmap -map {library / _M10K_MAP.name}",
        f"synth_intel_alm {common} -run map_bram:map_luts",
        *_MAP_LUTS_WITHOUT_AUTONAME,
        f"synth_intel_alm {common} -run check:",
        f"tee -q -o {workdir / 'stat.json'} stat -json",
    ]) + "\n"


# Yosys 0.23's ``stat -json`` prints the instance tree of a design with more than two levels of hierarchy
# ("    name    count" lines) into its JSON; those lines are not needed and are dropped.
_HIERARCHY_LINE = re.compile(r'^\s+[^\s"{}]\S*\s+\d+$')


def _parse_stat(path):
    return json.loads("\n".join(line for line in path.read_text().splitlines() if not _HIERARCHY_LINE.match(line)))


def _memories(netlist_path):
    """``{module: [[width, depth, write-enable groups], ...]}`` of the memories (``$mem_v2`` cells) each module
    holds itself, counting those with a clocked read port (block RAM candidates), not the small asynchronous ROMs
    Yosys makes of case statements.  The groups are the distinct enable bits of the first write port (a
    :class:`hw.shared.dual_port_buffer.DualPortBuffer` with a granularity writes its words in parts)."""
    memories = {}
    for module, body in json.loads(netlist_path.read_text())["modules"].items():
        for cell in body.get("cells", {}).values():
            if cell["type"] == "$mem_v2" and "1" in cell["parameters"]["RD_CLK_ENABLE"]:
                size, width = (int(cell["parameters"][key], 2) for key in ("SIZE", "WIDTH"))
                enables = cell["connections"].get("WR_EN", [])[:width]
                memories.setdefault(_module_name(module), []).append([width, size, max(1, len(set(map(str, enables))))])
    return memories


# An all-zero memory initialisation as Amaranth writes it ("initial begin", one "mem[i] = N'h0;" per word,
# "end").  The M10K powers up to zero anyway, and Yosys carries a large memory's initial contents as one
# constant through every optimisation pass (the DQN weight RAM's 2 Mbit made it crawl): dropped before Yosys.
_ZERO_MEMORY_INIT = re.compile(r"^ *initial begin\n(?: *\S+\[\d+\] = \d+'h0+;\n)+ *end\n", re.M)


def without_zero_memory_init(verilog_text):
    return _ZERO_MEMORY_INIT.sub("", verilog_text)


def _run_yosys(verilog_text, name, black_boxes=""):
    """Yosys on ``verilog_text`` with top ``name`` (``black_boxes``: Verilog read for its modules' ports only):
    ``{"modules": {module: {cell type: count}}, "memories": {module: [...]}}`` (names as Yosys writes them)."""
    with tempfile.TemporaryDirectory(prefix="nnaccel-synth-") as directory:
        workdir = Path(directory)
        (workdir / "design.v").write_text(without_zero_memory_init(verilog_text))
        (workdir / "black_boxes.v").write_text(black_boxes)
        (workdir / "script.ys").write_text(_script(name, workdir, _LIBRARY, black_boxes=bool(black_boxes)))
        result = subprocess.run([yosys_command(), "-q", "-l", str(workdir / "yosys.log"), "-s",
                                 str(workdir / "script.ys")], capture_output=True, text=True, cwd=workdir)
        if result.returncode != 0 or not (workdir / "stat.json").exists():
            log = (workdir / "yosys.log").read_text() if (workdir / "yosys.log").exists() else result.stderr
            raise YosysError(f"Yosys failed on {name} (exit {result.returncode}):\n"
                             + "\n".join(log.splitlines()[-25:]))
        modules = _parse_stat(workdir / "stat.json")["modules"]
        memories = _memories(workdir / "memories.json")
    return {"modules": {_module_name(module): {_module_name(cell_type): count
                                               for cell_type, count in body["num_cells_by_type"].items()}
                        for module, body in modules.items()},
            "memories": memories}


def _module_name(yosys_name):
    return yosys_name[1:] if yosys_name.startswith("\\") else yosys_name


def _report(name, stats, seconds, synthesized=()):
    """The :class:`SynthReport` of top ``name`` from ``stats``: ``{"modules": {module: {cell type: count}},
    "memories": {module: [[width, depth, groups], ...]}}``, every module of the design's tree in it."""
    cells = stats["modules"]
    totals, memories = {}, {}

    def own_memory_bits(module):
        return sum(width * depth for width, depth, _ in stats["memories"].get(module, []))

    def total(module):
        if module not in totals:
            resources = Resources(memory_bits=own_memory_bits(module))
            shapes = {}
            for shape in stats["memories"].get(module, []):
                shapes[tuple(shape)] = shapes.get(tuple(shape), 0) + 1
            for cell_type, count in cells[module].items():
                if cell_type in cells:
                    resources += total(cell_type) * count
                    for shape, instances in memories[cell_type].items():
                        shapes[shape] = shapes.get(shape, 0) + instances * count
                elif (own := _cell_resources(cell_type, count)) is not None:
                    resources += own
            totals[module], memories[module] = resources, shapes
        return totals[module]

    rows = []
    own = Resources(memory_bits=own_memory_bits(name))
    for cell_type, count in cells[name].items():
        if cell_type in cells:
            rows.append(SynthRow(cell_type, cell_type, count, total(cell_type) * count))
        elif (resources := _cell_resources(cell_type, count)) is not None:
            own += resources
    rows.sort(key=lambda row: row.label)
    if rows:
        rows.append(SynthRow(f"{name} (own logic)", name, 1, own))
    top_total = total(name)
    return SynthReport(name=name, rows=tuple(rows), total=top_total, seconds=seconds,
                       memories=tuple((*shape, count) for shape, count in sorted(memories[name].items())),
                       synthesized=tuple(synthesized))


def _context(name):
    """What besides the Verilog decides a Yosys result: the version, the mapping files by content and the script
    with placeholder directories (every checkout of the same sources finds the same entry, wherever it lives)."""
    library = hashlib.sha256(b"".join(p.read_bytes() for p in (_M10K_RULES, _M10K_CELLS, _M10K_MAP))).hexdigest()
    return {"yosys": yosys_version(), "format": _RESULT_FORMAT, "library": library,
            "script": _script(name, Path("/"), Path("/"), black_boxes=True)}


def _cache_file(kind, name, key):
    return cache_root() / "synth" / kind / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)[:120]}-{key}.json"


def _store(path, document):
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.partial")
    partial.write_text(json.dumps(document))
    partial.replace(path)


def _synthesize_module(modules, module, path):
    """Yosys on one module, its children black boxes: ``{"cells", "memories", "seconds"}``, cell types canonical,
    stored in the cache file ``path``; or what ``path`` holds by the time its turn comes (another process sharing
    the cache, ``nnaccel synth`` on a configuration with this module, synthesized it meanwhile)."""
    if path.exists():
        return json.loads(path.read_text())
    start = time.perf_counter()
    children = "\n".join(modules.texts[child] for child in modules.children(module))
    if module == modules.top:
        stats = _run_yosys(modules.texts[module], module, children)
    else:
        stats = _run_yosys(modules.wrapped(module), WRAPPER, children)
    cells = {modules.canonical_name(cell_type): count for cell_type, count in stats["modules"][module].items()}
    entry = {"cells": cells, "memories": stats["memories"].get(module, []), "seconds": time.perf_counter() - start}
    _store(path, entry)
    return entry


def _per_module_stats(modules, *, cached_only, jobs):
    """``(stats for _report, Yosys seconds, modules synthesized now)`` of every module in the design's tree, each
    from the cache or a Yosys run of its own (``jobs`` at a time); ``None`` if ``cached_only`` and one is missing."""
    tree = modules.tree()
    entries, missing = {}, []
    for module in tree:
        if modules.is_black_box(module):
            entries[module] = {"cells": {}, "memories": [], "seconds": 0.0}
            continue
        if (buffer := dual_port_buffer_cells(module)) is not None:
            entries[module] = {**buffer, "seconds": 0.0}        # by rule, from its shape (sim.fpga.block_ram)
            continue
        path = _cache_file("modules", modules.canonical_name(module), modules.logic_key(module, **_context(WRAPPER)))
        if path.exists():
            entries[module] = json.loads(path.read_text())
        else:
            missing.append((module, path))
    if missing and cached_only:
        return None
    if missing:
        report_stage(f"Yosys, {len(missing)} of {len(tree)} modules", len(missing))
        listener = current_listener()
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            runs = {pool.submit(_synthesize_module, modules, module, path): module for module, path in missing}
            for done, run in enumerate(as_completed(runs), 1):
                entries[runs[run]] = run.result()
                if listener is not None:
                    listener.update(done, len(missing))
    actual = {modules.canonical_name(module): module for module in tree}
    stats = {"modules": {module: {actual.get(cell_type, cell_type): count
                                  for cell_type, count in entries[module]["cells"].items()} for module in tree},
             "memories": {module: entries[module]["memories"] for module in tree}}
    return stats, sum(entry["seconds"] for entry in entries.values()), tuple(module for module, _ in missing)


def estimate_verilog(verilog_text, name, *, cached_only=False, per_module=True, jobs=1):
    """:class:`SynthReport` for the Verilog ``verilog_text`` with top module ``name``: per module, each cached by
    its logic (``jobs`` Yosys runs at a time), or with ``per_module=False`` in one Yosys run cached by the whole
    text.  With ``cached_only``, ``None`` instead of a Yosys run when the cache does not hold it all."""
    if per_module:
        found = _per_module_stats(VerilogModules(verilog_text, name), cached_only=cached_only, jobs=jobs)
        if found is None:
            return None
        stats, seconds, synthesized = found
        return _report(name, stats, seconds, synthesized)
    cached = _cache_file("whole", name, build_key(verilog_text, **_context(name)))
    if cached.exists():
        stored = json.loads(cached.read_text())
        return _report(name, stored["stats"], stored["seconds"])
    if cached_only:
        return None
    start = time.perf_counter()
    stats = _run_yosys(verilog_text, name)
    seconds = time.perf_counter() - start
    _store(cached, {"stats": stats, "seconds": seconds})
    return _report(name, stats, seconds, tuple(stats["modules"]))


def estimate(component, name, **options):
    """:class:`SynthReport` for an Amaranth component, its Verilog generated by :mod:`sim.verilog`; ``options``
    as :func:`estimate_verilog`'s.  A component with a ``verilog_cache_key`` (a configuration) whose every module
    was estimated per module leaves a record of it in the cache (:func:`cached_design_estimate` reads it)."""
    report = estimate_verilog(generate_verilog(component, name), name, **options)
    record = _design_record(component, name)
    if report is not None and record is not None and options.get("per_module", True) and not record.exists():
        _store(record, {"name": name, "configuration": component.verilog_cache_key})
    return report


def _design_record(component, name):
    """The cache file that says design ``name`` of ``component``'s configuration (its ``verilog_cache_key``) was
    estimated module by module, whatever the hardware sources were then; ``None`` for a component without a key."""
    configuration = getattr(component, "verilog_cache_key", None)
    if configuration is None:
        return None
    return _cache_file("designs", name, hashlib.sha256(f"{name}\0{configuration}".encode()).hexdigest()[:20])


def cached_design_estimate(component, name, *, generate=False):
    """:func:`estimate` of ``component`` from the cache alone (never Yosys), or ``None`` where a module of it is not
    cached.  Its Verilog comes from the Verilog cache (:func:`sim.verilog.has_cached_design`), which an edit of any
    hardware source empties of it.  Then, with ``generate``, the Verilog is generated again if this design was
    estimated before (:func:`estimate`'s record): its modules are cached under their logic
    (:meth:`sim.fpga.verilog_modules.VerilogModules.logic_key`), so an edit that leaves them as they were keeps the
    estimate and one that changes a module drops it.  Without ``generate`` (a large design, whose Verilog takes
    minutes) or never estimated: ``None``, nothing generated."""
    if not has_cached_design(component, name):
        record = _design_record(component, name)
        if not (generate and record is not None and record.exists()):
            component._MustUse__used = True     # never elaborated: nothing to look up (as sim.verilog's cache does)
            return None
    return estimate(component, name, cached_only=True)


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
