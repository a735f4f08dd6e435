"""Quartus projects for a system on a Terasic board: Verilog, ``.qpf``, ``.qsf``, ``.sdc`` and a build script.

The project files come from Amaranth's own Intel platform (:class:`amaranth.vendor.IntelPlatform`, Quartus
toolchain) and the board descriptions of amaranth-boards (DE1-SoC, DE10-Nano); amaranth-boards has no DE5-Net,
so :class:`DE5NetPlatform` describes the one resource a project needs, its 50 MHz clock.

The top level is a board wrapper (:class:`BoardTop`) that Amaranth's platform elaborates: the board's
clock pin drives the system's ``clk`` through Amaranth's clock buffer, Amaranth's power-on reset synchronizer
drives ``rst``, and every other port of the system is a top-level port with Quartus' ``VIRTUAL_PIN``
assignment.  The accelerators' host ports are far wider than any board's pins (the DQN accelerator's host
data bus alone is 2 x 16,384 bits); a virtual pin keeps the logic behind it (Quartus neither removes it as
unobserved nor tries to place it on a pin), so the fit reports the system's own resources and timing.
Wiring the host port to a real interface (the HPS bridge on the Cyclone V SoC boards, PCIe on the DE5-Net)
is a separate design.

The ``.sdc`` constrains the clock pin at the requested frequency (100 MHz by default): a timing target for
the fit.  The boards' oscillators run at 50 MHz; running the design faster on the board needs a PLL between
the pin and ``clk``.
"""

from pathlib import Path

from amaranth.build import Attrs, Clock, Pins, Resource
from amaranth.hdl import ClockSignal, Elaboratable, Instance, IOBufferInstance, IOPort, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.vendor import IntelPlatform

from nnaccel.sim.separate_modules import component_ports
from nnaccel.sim.verilog import check_module_name, generate_verilog

__all__ = ["BOARDS", "DE5NetPlatform", "BoardTop", "board_platform_class", "write_project", "DEFAULT_CLOCK_MHZ"]

DEFAULT_CLOCK_MHZ = 100.0


class DE5NetPlatform(IntelPlatform):
    """Terasic DE5-Net: Stratix V GX 5SGXEA7N2F45C2; its 50 MHz oscillator OSC_50_B3B on pin AW35 (1.5 V bank),
    from Terasic's pin assignments.  Only the clock: the projects use no other board I/O."""

    device = "5SGXEA7N2"
    package = "F45"
    speed = "C2"
    default_clk = "clk50"
    resources = [Resource("clk50", 0, Pins("AW35", dir="i"), Clock(50e6), Attrs(io_standard="1.5 V"))]
    connectors = []


BOARDS = ("de1soc", "de10nano", "de5net")


def board_platform_class(board):
    """The Amaranth platform class of ``board`` (one of :data:`BOARDS`)."""
    if board not in BOARDS:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {board!r}")
    if board == "de5net":
        return DE5NetPlatform
    try:
        from amaranth_boards.de1_soc import DE1SoCPlatform
        from amaranth_boards.de10_nano import DE10NanoPlatform
    except ImportError as error:
        raise RuntimeError(f"the {board} needs amaranth-boards: `pip install amaranth-boards` ({error})") from None
    return {"de1soc": DE1SoCPlatform, "de10nano": DE10NanoPlatform}[board]


class _VirtualPin:
    """Pin metadata of a top-level port that is a Quartus virtual pin: no location, no I/O standard."""

    name = None
    attrs = {}


def _tcl_quote(text):
    """``text`` as a Tcl string, brackets escaped, the way Amaranth's templates quote port names."""
    return '"' + text.replace("\\", "\\\\").replace("[", "\\[").replace("$", "\\$") + '"'


class BoardTop(Elaboratable):
    """The board's top level: an instance of Verilog module ``module_name`` (the Verilog of ``component``),
    its ``clk``/``rst`` from the platform's clock domain, its other ports top-level virtual-pin ports of the
    same names (:attr:`virtual_ports`: name -> width)."""

    def __init__(self, component, module_name):
        check_module_name(module_name)
        self._component = component
        self._module_name = module_name
        self._ports = [(name, flow, len(value)) for name, flow, value in
                       component_ports(component.signature.create())]

    @property
    def virtual_ports(self):
        return {name: width for name, _, width in self._ports}

    def elaborate(self, platform):
        m = Module()
        connections = {}
        for name, flow, width in self._ports:
            signal = Signal(width, name=name)
            port = IOPort(width, name=name, metadata=tuple(_VirtualPin() for _ in range(width)))
            if flow == wiring.In:
                m.submodules[f"pin_{name}"] = IOBufferInstance(port, i=signal)
                connections[f"i_{name}"] = signal
            else:
                m.submodules[f"pin_{name}"] = IOBufferInstance(port, o=signal)
                connections[f"o_{name}"] = signal
        m.submodules.system = Instance(self._module_name, i_clk=ClockSignal(), i_rst=ResetSignal(), **connections)
        return m


def _project_platform(board, clock_hz):
    """An instance of ``board``'s platform whose clock resource carries ``clock_hz`` and whose ``.qsf`` has no
    location assignments for virtual pins."""
    base = board_platform_class(board)
    clock = next(r for r in base.resources if (r.name, r.number) == (base.default_clk, 0))
    retimed = Resource(clock.name, clock.number, *clock.ios, Clock(clock_hz), clock.attrs)

    class ProjectPlatform(base):
        resources = [retimed if resource is clock else resource for resource in base.resources]

        def iter_port_constraints_bits(self):
            for port_name, pin_name, attrs in super().iter_port_constraints_bits():
                if pin_name is not None:
                    yield port_name, pin_name, attrs

    return ProjectPlatform()


def _virtual_pin_settings(ports):
    lines = ["# Every port of the system except the clock is a virtual pin (see sim/fpga/quartus_project.py): the host",
             "# ports are wider than the board's pins; a virtual pin keeps the logic behind it in the fit."]
    for name, width in ports.items():
        target = name if width == 1 else f"{name}[*]"
        lines.append(f"set_instance_assignment -name VIRTUAL_PIN ON -to {_tcl_quote(target)}")
    return "\n".join(lines)


def _check_clock(clock_mhz):
    if isinstance(clock_mhz, bool) or not isinstance(clock_mhz, (int, float)) or not 1 <= clock_mhz <= 1000:
        raise ValueError(f"clock_mhz must be a number from 1 to 1000, not {clock_mhz!r}")


def write_project(component, module_name, *, board, out_dir, clock_mhz=DEFAULT_CLOCK_MHZ, project_name=None):
    """Write the Quartus project of ``component`` (Verilog module ``module_name``) for ``board`` into ``out_dir``.

    Returns ``(project_name, [paths written])``.  ``board`` is one of :data:`BOARDS`; ``clock_mhz`` is the clock
    constraint in the ``.sdc``.  Run ``sh build_<project_name>.sh`` there (Quartus on PATH) to compile.
    """
    board_platform_class(board)
    _check_clock(clock_mhz)
    project_name = project_name or f"{module_name}_{board}"
    check_module_name(project_name)
    top = BoardTop(component, module_name)
    platform = _project_platform(board, clock_mhz * 1e6)
    platform.add_file(f"{module_name}.v", generate_verilog(component, module_name))
    # Amaranth's templates have no project file (quartus_map would create one); write the minimal one.
    platform.add_file(f"{project_name}.qpf", f'# Quartus project of {module_name} on the {board}\n'
                                             f'PROJECT_REVISION = "{project_name}"\n')
    plan = platform.prepare(top, name=project_name, add_settings=_virtual_pin_settings(top.virtual_ports),
                            add_constraints="derive_clock_uncertainty")
    plan.extract(out_dir)
    return project_name, [Path(out_dir) / filename for filename in plan.files]
