"""GTKWave save files that open a component's ports grouped: clock and reset, inputs, outputs."""

from amaranth.lib import wiring

from .separate_modules import component_ports


def port_list(component):
    """``[(verilog_name, width, direction)]`` of the component's ports as ``verilog.convert`` names them."""
    return [(name, len(value), "input" if flow == wiring.In else "output")
            for name, flow, value in component_ports(component)]


def write_gtkw(component, dump_path, gtkw_path):
    """Write a GTKWave save file for ``dump_path`` and return its path.

    Both simulators put the top module in a scope named after it (Verilator adds a ``TOP``
    scope above); GTKWave matches ``TOP.name.port`` and ``name.port`` alike by its search,
    so the file names signals by the module's own scope.
    """
    scope = gtkw_path.stem
    lines = [f'[dumpfile] "{dump_path}"', f'[savefile] "{gtkw_path}"', "[timestart] 0"]

    def group(title, signals):
        lines.extend(["@800200", f"-{title}", "@22"])
        for name, width in signals:
            lines.append(f"{scope}.{name}" + (f"[{width - 1}:0]" if width > 1 else ""))
        lines.extend(["@1000200", f"-{title}"])

    ports = port_list(component)
    group("clock and reset", [("clk", 1), ("rst", 1)])
    group("inputs", [(n, w) for n, w, d in ports if d == "input"])
    group("outputs", [(n, w) for n, w, d in ports if d == "output"])
    gtkw_path.write_text("\n".join(lines) + "\n")
    return gtkw_path
