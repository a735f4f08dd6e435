"""The tree's import rules, checked on the import graph of every module (imports inside functions too).

Floors, lowest first: ``hw`` -> ``models`` -> ``train`` -> ``sim`` -> ``testbench`` -> ``dse`` -> ``cli``.  A module imports
from its own floor or the floors below it, never above.  Inside a floor, a system's room (``dqn``, ``pe_ring``,
``capsnet``; ``dcp`` and ``dance`` in ``dse``) imports its own room and the floor's ``shared`` room, never another
system's room, and ``shared`` imports no system's room.  In ``dse`` there is a second kind of room, the design-space
*families* (``template``, ``rtl``: a hardware family's design space, cost model, sampler and labelling): the search
rooms (``dcp``, ``dance``) may import the families (they consume any family through one protocol each,
``dse.dcp.space`` and ``dse.dance.hardware_space``), a family imports only itself and ``shared``, never a search
room nor another family.  In ``cli`` one module per job (the modules ``cli.main``
imports, its only link to them): a job imports no other job.  What every job shares is ``cli.report``; what the jobs
of one system share lives in that system's room beside them (``cli.dqn``: ``run dqn`` and ``play`` in ``atari``,
``run net`` in ``net``, their simulation and report helpers in ``accelerator_run``), which other rooms' jobs do not
import.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ("hw", "models", "train", "sim", "testbench", "dse", "cli")
PACKAGE = "nnaccel"     # installed, every floor is a subpackage of it (setup.py)
SHARED_ROOM = "shared"
FAMILY_ROOMS = {"dse": ("template", "rtl")}     # rooms the floor's other rooms may import (never the reverse)
CLI_ENTRY, CLI_SHARED = "cli.main", "cli.report"


def module_name(path, root=ROOT):
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path, root=ROOT):
    """Dotted names of the project modules ``path`` imports (``from package import module`` counts as the module)."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {module.removeprefix(f"{PACKAGE}.") for module in found
            if module.startswith(f"{PACKAGE}.") and _exists(module.removeprefix(f"{PACKAGE}."), root)}


def bare_floor_imports(root=ROOT):
    """``file: module`` for every import of a floor by its folder name (``from hw.dqn ...``) instead of through the
    package (``from nnaccel.hw.dqn ...``): it works only from the repository's root and would load a second copy of
    the module beside the installed one."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if {".venv", "build", ".git"} & set(path.relative_to(root).parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(root)}: {name}" for name in names if name.split(".")[0] in FLOORS]
    return found


def _exists(module, root):
    path = root.joinpath(*module.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def room_of(module):
    """(floor, room): the room is the subpackage under the floor (``None`` for the floor's own top modules)."""
    parts = module.split(".")
    room = parts[1] if len(parts) > 2 or (len(parts) == 2 and _is_package(parts)) else None
    return parts[0], room


def _is_package(parts):
    return (ROOT.joinpath(*parts) / "__init__.py").exists()


def violations(root=ROOT):
    """One line per broken rule: ``importer -> imported: why``."""
    broken = []
    for floor in FLOORS:
        for path in sorted((root / floor).rglob("*.py")):
            importer = module_name(path, root)
            for imported in sorted(imported_modules(path, root)):
                reason = _rule_broken(importer, imported)
                if reason:
                    broken.append(f"{importer} -> {imported}: {reason}")
    return broken


def cli_jobs(root=ROOT):
    """The job modules: the modules (not packages) of ``cli`` that ``cli.main`` imports."""
    return {module for module in imported_modules(root / "cli" / "main.py", root)
            if module.startswith("cli.") and module != CLI_SHARED and not _is_package(module.split("."))}


def _rule_broken(importer, imported):
    (floor, room), (imported_floor, imported_room) = room_of(importer), room_of(imported)
    if FLOORS.index(imported_floor) > FLOORS.index(floor):
        return f"floor {floor!r} must not import from the floor above it, {imported_floor!r}"
    if floor == "cli" and imported_floor == "cli":
        return _cli_rule_broken(importer, imported, room, imported_room)
    if floor != imported_floor or room == imported_room or imported_room in (None, SHARED_ROOM):
        return None
    if room is None:
        return None     # a floor's top-level module (e.g. sim.harness) may use the rooms below it on its floor
    if room == SHARED_ROOM:
        return f"the shared room must not import the system room {imported_floor}.{imported_room}"
    families = FAMILY_ROOMS.get(floor, ())
    if room in families:
        kind = "another family" if imported_room in families else "a search room"
        return f"family room {floor}.{room} must not import {kind}, {imported_floor}.{imported_room}"
    if imported_room in families:
        return None     # a search room consumes the families
    return f"room {floor}.{room} must not import another system's room, {imported_floor}.{imported_room}"


def _cli_rule_broken(importer, imported, room, imported_room):
    if importer == CLI_ENTRY or imported in (CLI_SHARED, "cli", importer):
        return None
    if imported in cli_jobs():
        return "a job imports no other job (what jobs share lives in cli.report, or in their system's room)"
    if room is None or room != imported_room:
        return f"{importer} must not import {imported}: outside its system's room only cli.report is shared"
    return None


def test_the_tree_keeps_its_import_rules():
    broken = violations()
    assert not broken, "import rules broken:\n" + "\n".join(broken)


def test_every_import_goes_through_the_package():
    bare = bare_floor_imports()
    assert not bare, "imports of a floor by its folder name instead of nnaccel.<floor>:\n" + "\n".join(bare)


@pytest.mark.parametrize("importer, imported, message", [
    ("hw.dqn.accelerator", "models.dqn.plan", "floor 'hw' must not import from the floor above it, 'models'"),
    ("sim.harness", "testbench.shared.exchange", "floor 'sim' must not import from the floor above it, 'testbench'"),
    ("hw.capsnet.accelerator", "hw.dqn.config", "room hw.capsnet must not import another system's room, hw.dqn"),
    ("hw.shared.host_port", "hw.dqn.config", "the shared room must not import the system room hw.dqn"),
    ("cli.capsnet", "cli.dqn.atari", "a job imports no other job"),
    ("cli.dqn.net", "cli.dqn.atari", "a job imports no other job"),
    ("cli.capsnet", "cli.dqn.accelerator_run", "cli.capsnet must not import cli.dqn.accelerator_run"),
    ("cli.dqn.net", "cli.dqn.accelerator_run", None),
    ("cli.capsnet", "cli.report", None),
    ("dse.dcp.space", "dse.rtl.dataflow_space", None),
    ("dse.dance.hardware_space", "dse.template.hardware_space", None),
    ("dse.template.hardware_space", "dse.dance.network_space",
     "family room dse.template must not import a search room"),
    ("dse.rtl.cost_model", "dse.template.cost_model", "family room dse.rtl must not import another family"),
    ("dse.dcp.search", "dse.dance.evaluator", "room dse.dcp must not import another system's room"),
    ("testbench.dqn.host", "sim.harness", None),
    ("models.dqn.plan", "hw.dqn.config", None),
    ("models.dqn.network", "train.dqn.network", "floor 'models' must not import from the floor above it, 'train'"),
    ("train.dqn.trainer", "models.dqn.episodes", None),
])
def test_each_rule_names_what_it_forbids(importer, imported, message):
    reason = _rule_broken(importer, imported)
    assert (reason is None) if message is None else (reason is not None and reason.startswith(message))
