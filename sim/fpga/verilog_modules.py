"""A generated design's Verilog as its modules: each module's text, the modules it instantiates, and a key for its
logic that is the same in every design holding the same module.

:mod:`sim.fpga.synth` synthesizes a design one module at a time and caches each module's cells under
:meth:`VerilogModules.logic_key`; what the key leaves out is what differs between two designs holding the same
logic (two DQN configurations with different RAM depths share their matrix modules, feeder, writer, argmax ...):

- the top module's name, which prefixes the names of the modules Amaranth generates inside it
  (``dqn_m16_..._d8_ml2_al2.feeder``) and names the configuration: replaced by ``TOP``;
- the numbers Amaranth gives the ports it adds to a module (``\\port$25090$0``): drawn from one counter over the
  whole design, so a change in one module renumbers its neighbours'.  Each module's are renumbered in order of
  appearance (a renaming: Yosys' cell counts do not depend on names).

A module's key holds its own text and the port declarations of the modules it instantiates (synthesized as black
boxes: their widths are all the parent sees of them), not their contents: a change inside the feeder re-runs the
feeder alone.  A design's top is synthesized as a top and every other module under a wrapper
(:mod:`sim.fpga.synth`); the two never share a key, as the top's own name is the one replaced by ``TOP``.
"""

import hashlib
import re
from dataclasses import dataclass
from functools import cached_property

__all__ = ["VerilogModules", "TOP_PLACEHOLDER", "WRAPPER"]

TOP_PLACEHOLDER = "TOP"
# The top that passes a module's ports through when it is synthesized on its own (:meth:`VerilogModules.wrapped`).
WRAPPER = "nnaccel_synth_wrapper"

# "module \name (ports);" or "module name(ports);" at the start of a line, up to "endmodule"; Yosys' writer (which
# Amaranth uses) puts attribute lines "(* ... *)" before it, which are kept with the module.
_MODULE = re.compile(r"^(?:\(\*[^\n]*\*\)\n)*module (\\\S+|[A-Za-z_][\w$]*)\s*\(.*?^endmodule$", re.M | re.S)
# An instance: "  \type  \name (" or "  type name (" at the start of a line.
_INSTANCE = re.compile(r"^\s+(\\\S+|[A-Za-z_][\w$]*)\s+(?:\\\S+|[A-Za-z_][\w$]*)\s*\(", re.M)
_PORT_DECLARATION = re.compile(r"^\s*(?:input|output|inout)\b[^;]*;", re.M)
_PORT_NUMBER = re.compile(r"port\$(\d+)\$")
_HEADER = re.compile(r"^module (?:\\\S+|[\w$]+)\s*\((.*?)\);", re.M | re.S)


def _plain(name):
    """A Verilog name without the escape backslash (as Yosys reports it)."""
    return name[1:] if name.startswith("\\") else name


def _escaped(name):
    """``name`` as Verilog writes it: escaped (backslash, trailing space) unless it is a plain identifier."""
    return name if re.fullmatch(r"[A-Za-z_][\w$]*", name) else f"\\{name} "


@dataclass(frozen=True)
class VerilogModules:
    """The modules of the Verilog ``text`` whose top module is ``top``."""

    text: str
    top: str

    @cached_property
    def texts(self):
        """``{module name: its text}`` (names without the escape backslash)."""
        texts = {_plain(match.group(1)): match.group(0) for match in _MODULE.finditer(self.text)}
        if self.top not in texts:
            raise ValueError(f"the Verilog has no module {self.top!r} (modules: {', '.join(texts) or 'none'})")
        return texts

    def children(self, module):
        """The modules ``module`` instantiates (each once, sorted)."""
        return sorted({_plain(match.group(1)) for match in _INSTANCE.finditer(self.texts[module])} & set(self.texts))

    def tree(self):
        """Every module the top instantiates, directly or not, and the top: each once, children before parents."""
        order = []

        def visit(module):
            if module not in order:
                for child in self.children(module):
                    visit(child)
                order.append(module)

        visit(self.top)
        return order

    def canonical_name(self, module):
        """``module``'s name with the top's name replaced by :data:`TOP_PLACEHOLDER`."""
        return module.replace(self.top, TOP_PLACEHOLDER)

    def _canonical_text(self, text):
        numbers = {}
        text = text.replace(self.top, TOP_PLACEHOLDER)
        return _PORT_NUMBER.sub(lambda match: f"port${numbers.setdefault(match.group(1), len(numbers))}$", text)

    def is_black_box(self, module):
        """Whether ``module`` is declared a black box (ports only, ``(* blackbox *)``)."""
        return "(* blackbox *)" in self.texts[module].split("module ", 1)[0]

    def port_declarations(self, module, *, canonical=True):
        """``module``'s input / output declarations (what an instance of it as a black box shows), canonical or as
        written."""
        text = self.texts[module]
        return "\n".join(_PORT_DECLARATION.findall(self._canonical_text(text) if canonical else text))

    def ports(self, module):
        """The names in ``module``'s header, in order (as written, escaped names with their backslash)."""
        header = _HEADER.search(self.texts[module])
        return [port.strip() for port in header.group(1).split(",") if port.strip()]

    def wrapped(self, module, wrapper=WRAPPER):
        """Verilog of a top ``wrapper`` with ``module``'s ports that only instantiates it, followed by ``module``'s
        text (not its children's): synthesized so, ``module`` is mapped as a module of a hierarchy, as in the whole
        design, not as the top (whose ports Yosys treats differently)."""
        ports = self.ports(module)
        return "\n".join([f"module {wrapper}({', '.join(f'{port} ' for port in ports)});",
                          self.port_declarations(module, canonical=False),
                          f"  {_escaped(module)} wrapped (" + ", ".join(f".{port} ({port} )" for port in ports) + ");",
                          "endmodule", self.texts[module]])

    def black_box(self, module):
        """Verilog of ``module`` as a black box: its header and port declarations, ``(* blackbox *)``."""
        ports = ", ".join(f"{port} " for port in self.ports(module))
        return "\n".join(["(* blackbox *)", f"module {_escaped(module)}({ports});",
                          self.port_declarations(module, canonical=False), "endmodule"])

    def logic_key(self, module, **context):
        """A digest of ``module``'s canonical text, its children's names and port declarations, and ``context``
        (the tool's version, the script ...)."""
        digest = hashlib.sha256(self._canonical_text(self.texts[module]).encode())
        for child in self.children(module):
            digest.update(f"\0{self.canonical_name(child)}\0{self.port_declarations(child)}".encode())
        for name, value in sorted(context.items()):
            digest.update(f"\0{name}={value}".encode())
        return digest.hexdigest()[:24]
