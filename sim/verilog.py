"""Turning an Amaranth component into Verilog text, the single entry point every build and lint uses.

:func:`generate_design` converts the component with ``amaranth.back.verilog.convert`` on the build's platform
:class:`sim.separate_modules.SeparateModules`: the modules that ask for it (``hw.shared.stand_in``: the DQN matrix
module, the dual-port RAM) are generated once each and instantiated, their Verilog appended; the rest is the
component's own conversion, unedited.  Without that platform (``verilog.convert(top)``) the same design comes out
in one piece.

A component may define ``verilog_cache_key`` (a string naming its configuration); its Verilog is
then kept in the build cache, keyed by that string and a digest of the ``hw`` sources, and not
generated again while neither changes.
"""

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

import amaranth

import nnaccel.hw as hw
from nnaccel.models.shared.cache import cache_root

from .separate_modules import SeparateModules, component_ports

__all__ = ["GeneratedDesign", "generate_design", "has_cached_design", "generate_verilog", "check_module_name",
           "HIERARCHY_CHOICES"]

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Which separately generated modules a Verilator build compiles as hierarchical blocks: those the design asks
# for, all of them, or none (sim.verilator_options.VerilatorOptions.hierarchy).
HIERARCHY_CHOICES = ("marked", "separate", "none")


def check_module_name(name):
    if not isinstance(name, str) or not _MODULE_NAME.match(name):
        raise ValueError(f"Verilog module name must be an identifier such as 'fmul_binary32_l2', not {name!r}")


@dataclass(frozen=True)
class GeneratedDesign:
    """A component's Verilog: ``text`` (the top module ``name`` and every separately generated module), ``ports``
    (the top module's port names: ``clk``, ``rst`` and the signature's members), ``separate_modules`` (names of the
    modules generated once) and ``hierarchical_blocks`` (those the design asks Verilator to compile once)."""

    text: str
    name: str
    ports: tuple
    separate_modules: tuple = ()
    hierarchical_blocks: tuple = ()

    def blocks_for(self, hierarchy):
        """The hierarchical blocks of a build with ``hierarchy`` (one of :data:`HIERARCHY_CHOICES`)."""
        if hierarchy not in HIERARCHY_CHOICES:
            raise ValueError(f"hierarchy must be one of {', '.join(HIERARCHY_CHOICES)}, not {hierarchy!r}")
        return {"marked": self.hierarchical_blocks, "separate": self.separate_modules, "none": ()}[hierarchy]


def generate_design(component, name):
    """The :class:`GeneratedDesign` of ``component`` with top module ``name`` (cached under its
    ``verilog_cache_key``, if it has one)."""
    check_module_name(name)
    cache_key = getattr(component, "verilog_cache_key", None)
    cached = _verilog_cache_path(name, cache_key) if cache_key is not None else None
    if cached is not None and cached.exists():
        # The cached design stands for the component, which is therefore used though not elaborated here;
        # tell Amaranth so (it warns about elaboratables it never saw elaborated).
        component._MustUse__used = True
        fields = json.loads(cached.read_text())
        return GeneratedDesign(**{key: tuple(value) if isinstance(value, list) else value
                                  for key, value in fields.items()})
    platform = SeparateModules()
    text = platform.convert(component, name)
    design = GeneratedDesign(
        text="\n".join([text, *platform.texts]), name=name,
        ports=("clk", "rst", *(port_name for port_name, _, _ in component_ports(component))),
        separate_modules=platform.names, hierarchical_blocks=platform.hierarchical_blocks)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(asdict(design)))
        partial.replace(cached)
    return design


def has_cached_design(component, name):
    """Whether :func:`generate_design` would find ``component``'s design in the cache (it has a
    ``verilog_cache_key`` and was generated with the current hardware sources), without generating it."""
    cache_key = getattr(component, "verilog_cache_key", None)
    return cache_key is not None and _verilog_cache_path(name, cache_key).exists()


def generate_verilog(component, name):
    """Verilog text for ``component`` with top module ``name`` (:func:`generate_design`'s ``text``)."""
    return generate_design(component, name).text


@cache
def _hardware_sources_digest():
    """Digest of every source file of the ``hw`` package and of this generator."""
    digest = hashlib.sha256(amaranth.__version__.encode())
    for path in sorted(Path(hw.__file__).parent.rglob("*.py")) + [Path(__file__), Path(__file__).with_name(
            "separate_modules.py")]:
        digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()


def _verilog_cache_path(name, cache_key):
    """Where the design of a component with a ``verilog_cache_key`` is kept: large designs (the DQN
    accelerator) take a minute or more to generate, and their text only changes with the hardware sources."""
    key = hashlib.sha256(f"{name}\0{cache_key}\0{_hardware_sources_digest()}".encode()).hexdigest()[:20]
    return cache_root() / "verilog" / f"{name}-{key}.json"
