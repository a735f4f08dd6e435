"""The simulator build's platform: every distinct module that asks for it (``hw.shared.stand_in``) is generated once
and instantiated where it is used.

Amaranth elaborates and converts every instance of a component on its own: the full-size DQN accelerator's 16
matrix modules of 48 float units, 16 weight-RAM slices and two activation RAMs would take minutes to convert
(a RAM's initial contents go through the converter bit by bit), and Verilator would generate code for each
instance of the float units (84 MB of C++ and a 15-minute build; docs/simulation_speed.md).
:class:`SeparateModules` is the ``platform`` :func:`sim.verilog.generate_design` hands to
``amaranth.back.verilog.convert``: asked to stand in for a component, it converts the component once under its
``module_name`` (public API: ``verilog.convert`` with the component's ports) and returns an ``Instance`` of that
module wired to the component's ports (``signature.flatten``).  The modules asked for as hierarchical blocks are
listed for Verilator's configuration file (``hier_block -module "NAME"``, :func:`hierarchical_blocks_control`);
the Verilog text itself is Amaranth's, unedited.
"""

from amaranth.back import verilog
from amaranth.hdl import ClockSignal, Const, Instance, ResetSignal, ValueCastable
from amaranth.lib import wiring

__all__ = ["SeparateModules", "component_ports", "convert_component", "hierarchical_blocks_control"]


def component_ports(component):
    """``[(name, flow, value)]``: the members of ``component``'s signature that are signals, named as
    ``verilog.convert`` names them (the path joined by ``__``).  The constant members (the ``ready`` of an
    always-ready stream, which Amaranth 0.5 cannot make a port: amaranth-lang/amaranth issue 1574) are left out."""
    ports = []
    for path, member, value in component.signature.flatten(component):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        if not isinstance(value, Const):
            ports.append(("__".join(str(part) for part in path), member.flow, value))
    return ports


def convert_component(component, name, platform=None):
    """Verilog text of ``component`` as module ``name`` with the ports :func:`component_ports` lists, plus ``clk``
    and ``rst`` when it has a clock domain.  Amaranth gives each port the direction its use implies (an input is
    read and not driven, an output driven); every ``Out`` member of this project's components is driven."""
    ports = {port_name: (value, None) for port_name, _, value in component_ports(component)}
    return verilog.convert(component, name=name, platform=platform, emit_src=False, ports=ports)


class SeparateModules:
    """The platform of a build that generates each distinct separate module once (see the module's docstring).

    After ``verilog.convert(top, platform=this)``: :attr:`texts` the modules' Verilog (each a complete
    ``verilog.convert`` output), :attr:`hierarchical_blocks` the names of those asked for as Verilator
    hierarchical blocks, :attr:`names` all of them.
    """

    def __init__(self):
        self._modules = {}           # name -> (signature, hierarchical_block, Verilog text)
        self._converting = None      # the component whose own module is being generated

    def get_separate_module(self, component, *, hierarchical_block):
        """An ``Instance`` of ``component``'s module (generated on its first call); None while that module itself
        is generated (the component elaborates its own logic there)."""
        if component is self._converting:
            return None
        name = component.module_name
        if name not in self._modules:
            self._modules[name] = (component.signature, hierarchical_block, self.convert(component, name))
        signature, block, _ = self._modules[name]
        if signature != component.signature or block != hierarchical_block:
            raise ValueError(f"two different components ask to be module {name!r}")
        # The instance itself stands in for the component: it takes the component's place (and name) in the
        # parent's hierarchy, no wrapper module around it.
        connections = {("i_" if flow == wiring.In else "o_") + port_name: value
                       for port_name, flow, value in component_ports(component)}
        return Instance(name, i_clk=ClockSignal(), i_rst=ResetSignal(), **connections)

    def convert(self, component, name):
        """Verilog text of ``component`` as module ``name`` on this platform: the component's own logic, its
        separate submodules as instances (their modules collected here)."""
        outer, self._converting = self._converting, component
        try:
            return convert_component(component, name, self)
        finally:
            self._converting = outer

    @property
    def names(self):
        return tuple(self._modules)

    @property
    def hierarchical_blocks(self):
        return tuple(name for name, (_, block, _) in self._modules.items() if block)

    @property
    def texts(self):
        return tuple(text for _, _, text in self._modules.values())


def hierarchical_blocks_control(names):
    """A Verilator configuration file that makes the modules ``names`` hierarchical blocks (with ``--hierarchical``:
    each compiled once and called per instance)."""
    lines = ["`verilator_config", "// Modules compiled once and called per instance (sim.separate_modules)."]
    lines += [f'hier_block -module "{name}"' for name in names]
    return "\n".join(lines) + "\n"
