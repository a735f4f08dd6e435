"""Turning an Amaranth component into Verilog text, the single entry point every build and lint uses."""

import re

from amaranth.back import verilog

_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def check_module_name(name):
    if not isinstance(name, str) or not _MODULE_NAME.match(name):
        raise ValueError(f"Verilog module name must be an identifier such as 'fmul_binary32_l2', not {name!r}")


def generate_verilog(component, name):
    """Verilog text for ``component`` with top module ``name`` (ports as the signature's flattened names)."""
    check_module_name(name)
    return verilog.convert(component, name=name, emit_src=False)
