"""Instantiating one component many times from a single generated Verilog module.

Amaranth elaborates every instance of a component on its own, so a design with 16 matrix modules
of 16 lanes is elaborated and converted 16 times over (minutes of generation, megabytes of
Verilog).  :func:`instantiate_separately` puts a Verilog instance of a module generated once in
its place; :func:`sim.verilog.generate_verilog` generates each such module once and appends it.
The behaviour is identical: the instance is the component's own Verilog.
"""

from amaranth.hdl import ClockSignal, Instance, ResetSignal
from amaranth.lib import wiring

from nnaccel.hw.shared.verilog_ports import verilog_ports

__all__ = ["instantiate_separately", "separate_modules", "hierarchical_blocks"]

_REGISTRY_ATTRIBUTE = "_separately_generated_modules"
_HIERARCHICAL_ATTRIBUTE = "_hierarchical_blocks"


def instantiate_separately(m, parent, make_component, *, module_name, instance_name, hierarchical_block=True):
    """Add to ``m`` an instance named ``instance_name`` of the Verilog module ``module_name``.

    ``make_component()`` builds the component the module is generated from; it is called for the first
    instance of ``module_name`` only, so every instance of one name is the same design.  ``parent`` is
    the component being elaborated; it records the module for Verilog generation.  Returns an
    interface with the component's signature (drive its inputs, read its outputs) in its place.

    ``hierarchical_block``: simulate the module as a Verilator hierarchical block (``sim.verilog``), compiled
    once and called for each instance.  Worth it for a large module with many instances (the DQN matrix
    module); a module of little logic and wide ports (a RAM) simulates faster inlined, because every call
    copies its ports.  Synthesis sees the same Verilog either way.
    """
    registry = parent.__dict__.setdefault(_REGISTRY_ATTRIBUTE, {})
    blocks = parent.__dict__.setdefault(_HIERARCHICAL_ATTRIBUTE, set())
    if module_name not in registry:
        registry[module_name] = make_component()
        if hierarchical_block:
            blocks.add(module_name)
    elif hierarchical_block != (module_name in blocks):
        raise ValueError(f"module {module_name!r} was instantiated with hierarchical_block={not hierarchical_block}, "
                         f"now with {hierarchical_block!r}")
    component = registry[module_name]
    interface = component.signature.create(path=(instance_name,))
    ports = {("i_" if member.flow == wiring.In else "o_") + name: value
             for name, member, value in verilog_ports(interface)}
    m.submodules[instance_name] = Instance(module_name, i_clk=ClockSignal(), i_rst=ResetSignal(), **ports)
    return interface


def separate_modules(component):
    """``{module name: component}`` that ``component`` instantiated separately (known after elaboration)."""
    return dict(component.__dict__.get(_REGISTRY_ATTRIBUTE, {}))


def hierarchical_blocks(component):
    """Names of the modules ``component`` instantiated separately as hierarchical blocks (after elaboration)."""
    return frozenset(component.__dict__.get(_HIERARCHICAL_ATTRIBUTE, ()))
