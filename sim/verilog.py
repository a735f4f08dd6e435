"""Turning an Amaranth component into Verilog text, the single entry point every build and lint uses.

Amaranth elaborates every instance of a component on its own and names each after its place in
the hierarchy, so a matrix module of 16 lanes comes out as 16 textually identical multiplier
modules (and the DQN accelerator as hundreds).  :func:`deduplicate_modules` keeps one copy of each
distinct module body and points every instantiation at it, which leaves the design unchanged and
lets Verilator compile each distinct module once.

A component may define ``verilog_cache_key`` (a string naming its configuration); its Verilog is
then kept in the build cache, keyed by that string and a digest of the ``hw`` sources, and not
generated again while neither changes.
"""

import hashlib
import os
import re
from functools import cache
from pathlib import Path

import amaranth
from amaranth.back import verilog
from amaranth.hdl._ir import PortDirection      # what verilog.convert itself uses for a component's ports
from amaranth.lib import wiring

import nnaccel.hw as hw
from nnaccel.hw.shared.separate_module import hierarchical_blocks, separate_modules
from nnaccel.hw.shared.verilog_ports import verilog_ports

from nnaccel.models.shared.cache import cache_root

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# A module with the attribute lines "(* ... *)" in front of it.
_MODULE_START = re.compile(r"^(?:\(\*.*\*\)\n)*module (\\\S+ |\w+)\(", re.M)
# Yosys numbers a per-module helper register globally ("...dump_module$18"); the number is not part
# of what the module does.
_YOSYS_COUNTER = re.compile(r"dump_module\$\d+")


def check_module_name(name):
    if not isinstance(name, str) or not _MODULE_NAME.match(name):
        raise ValueError(f"Verilog module name must be an identifier such as 'fmul_binary32_l2', not {name!r}")


def generate_verilog(component, name):
    """Verilog text for ``component`` with top module ``name`` (ports as the signature's flattened names).

    Modules the design instantiates through :func:`hw.shared.separate_module.instantiate_separately` are
    generated once each and appended, those it asks for marked as Verilator hierarchical blocks.
    """
    check_module_name(name)
    cache_key = getattr(component, "verilog_cache_key", None)
    cached = _verilog_cache_path(name, cache_key) if cache_key is not None else None
    if cached is not None and cached.exists():
        # The cached text stands for the component, which is therefore used though not elaborated here;
        # tell Amaranth so (it warns about elaboratables it never saw elaborated).
        component._MustUse__used = True
        return cached.read_text()
    text = verilog.convert(component, name=name, emit_src=False, ports=_port_list(component))
    blocks = hierarchical_blocks(component)
    for module_name, submodule in separate_modules(component).items():
        module_text = generate_verilog(submodule, module_name).split("\n", 1)[1]    # without the banner line
        mark = HIERARCHICAL_BLOCK_MARK if module_name in blocks else SEPARATE_MODULE_MARK
        text += "\n" + _mark_module(module_text, module_name, mark)
    text = deduplicate_modules(text)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
        partial.write_text(text)
        partial.replace(cached)
    return text


def _port_list(component):
    """The ports ``verilog.convert`` would list for ``component``, less the constant ``ready`` of always-ready
    streams (see :mod:`hw.shared.verilog_ports`); the directions are those ``verilog.convert`` gives."""
    return {name: (value, PortDirection.Input if member.flow == wiring.In else PortDirection.Output)
            for name, member, value in verilog_ports(component)}


@cache
def _hardware_sources_digest():
    """Digest of every source file of the ``hw`` package and of this generator."""
    digest = hashlib.sha256(amaranth.__version__.encode())
    for path in sorted(Path(hw.__file__).parent.rglob("*.py")) + [Path(__file__)]:
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _verilog_cache_path(name, cache_key):
    """Where the Verilog of a component with a ``verilog_cache_key`` is kept: large designs (the DQN
    accelerator) take a minute or more to generate, and their text only changes with the hardware sources."""
    key = hashlib.sha256(f"{name}\0{cache_key}\0{_hardware_sources_digest()}".encode()).hexdigest()[:20]
    return cache_root() / "verilog" / f"{name}-{key}.v"


# A module marked as a Verilator hierarchical block is compiled once and its compiled model instantiated,
# where Verilator would otherwise generate code per instance (the full-size DQN accelerator's matrix
# modules: 84 MB of C++ and a 15-minute build without it; docs/simulation_speed.md).  Every other
# separately generated module carries the second, inert mark, so that a build may still choose it.
HIERARCHICAL_BLOCK_MARK = "/*verilator hier_block*/"
SEPARATE_MODULE_MARK = "/*nnaccel separate_module*/"
HIERARCHY_CHOICES = ("marked", "separate", "none")


def _mark_module(text, module_name, mark):
    header = text.index(f"module {module_name}(")
    header_end = text.index(");", header) + 2
    return text[:header_end] + "\n  " + mark + text[header_end:]


def select_hierarchical_blocks(text, hierarchy):
    """The Verilog ``text`` with the hierarchical blocks ``hierarchy`` names: ``"marked"``, those the design
    asked for (:func:`hw.shared.separate_module.instantiate_separately`); ``"separate"``, every separately
    generated module (the harness' choice before the design could ask); ``"none"``, no block (one flat model)."""
    if hierarchy not in HIERARCHY_CHOICES:
        raise ValueError(f"hierarchy must be one of {', '.join(HIERARCHY_CHOICES)}, not {hierarchy!r}")
    if hierarchy == "separate":
        return text.replace(SEPARATE_MODULE_MARK, HIERARCHICAL_BLOCK_MARK)
    if hierarchy == "none":
        return text.replace(HIERARCHICAL_BLOCK_MARK, SEPARATE_MODULE_MARK)
    return text


def module_ports(text, name):
    """Port names of module ``name`` in the Verilog ``text``, in the order of its header."""
    header = re.search(rf"^module {re.escape(name)}\(([^)]*)\);", text, re.M)
    if header is None:
        raise ValueError(f"module {name!r} is not in the Verilog text")
    return [port.strip() for port in header.group(1).split(",") if port.strip()]


def _split_modules(text):
    """``(preamble, {name: module text})``; a module's text starts with its attribute lines."""
    starts = [(match.start(), match.group(1).strip()) for match in _MODULE_START.finditer(text)]
    if not starts:
        return text, {}
    ends = [start for start, _ in starts[1:]] + [len(text)]
    return text[:starts[0][0]], {name: text[start:end] for (start, name), end in zip(starts, ends)}


def deduplicate_modules(text):
    """Verilog text in which modules that differ only in their name are emitted once."""
    preamble, modules = _split_modules(text)
    while True:
        canonical, renames = {}, {}
        for name, body in modules.items():
            shape = _module_shape(name, body)
            if shape in canonical:
                renames[name] = canonical[shape]
            else:
                canonical[shape] = name
        if not renames:
            return preamble + "".join(modules.values())
        modules = {name: _rename_instances(body, renames) for name, body in modules.items() if name not in renames}


def _module_shape(name, body):
    """The module's text without what does not change its meaning: its own name, the order of the port
    list (instantiations connect ports by name; Yosys lists them in no fixed order), Yosys' counters."""
    header_start = body.index(f"module {name}")
    port_list_start = body.index("(", header_start) + 1
    header_end = body.index(");", port_list_start) + 2
    ports = sorted(port.strip() for port in body[port_list_start:header_end - 2].split(","))
    shape = body[:header_start] + "module (" + ", ".join(ports) + ");" + body[header_end:]
    return _YOSYS_COUNTER.sub("dump_module$", shape).rstrip()


def _rename_instances(body, renames):
    lines = body.split("\n")
    for index, line in enumerate(lines):
        stripped = line.lstrip()
        first = stripped.split(" ", 1)[0]
        if first in renames and not stripped.startswith("module "):
            lines[index] = line.replace(first, renames[first], 1)
    return "\n".join(lines)
