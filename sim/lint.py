"""``verilator --lint-only -Wall`` on a component's generated Verilog, with the project's waivers.

Waivers of a whole pattern live in ``verilator_waivers.vlt`` beside this file, each with a
comment saying why it is safe for Amaranth's generated code.  One more is applied here, because a
control file cannot express it: Amaranth keeps every named signal of the design as a Verilog
``wire`` for debugging, including aliases such as a memory port's ``w__addr = addr`` that nothing
reads.  An ``UNUSEDSIGNAL`` finding on a net that is declared ``wire`` and is not a module port
is such an alias and is dropped; unused ports and registers are still reported.
:func:`lint_verilog` returns what remains.
"""

import re
import subprocess
import tempfile
from pathlib import Path

from .toolchain import verilator_command
from .verilog import generate_verilog

WAIVERS = Path(__file__).with_name("verilator_waivers.vlt")


def lint_verilog_text(verilog_text, name):
    """Warnings (list of str, one per finding) that Verilator -Wall reports for ``verilog_text``."""
    with tempfile.TemporaryDirectory(prefix="nnaccel-lint-") as workdir:
        source = Path(workdir) / f"{name}.v"
        source.write_text(verilog_text)
        result = subprocess.run(
            [*verilator_command(), "--lint-only", "-Wall", "--top-module", name, str(WAIVERS), str(source)],
            capture_output=True, text=True, cwd=workdir, check=False)
    findings = [line for line in result.stderr.splitlines() if line.startswith("%")]
    if result.returncode != 0 and not findings:
        findings = [f"verilator exited with {result.returncode}: {result.stderr.strip()}"]
    aliases = _debug_alias_wires(verilog_text)
    return [line for line in findings
            if not line.startswith("%Error: Exiting due to") and not _is_unused_alias(line, aliases)]


_UNUSED = re.compile(r"^%Warning-UNUSEDSIGNAL: [^:]+:(\d+):\d+: Signal is not used: '([^']+)'")
_PORT = re.compile(r"^\s*(?:input|output|inout)\b[^;]*?\\?(\S+)\s*;")
_WIRE = re.compile(r"^\s*wire\b[^;]*?\\?(\S+)\s*;")


def _debug_alias_wires(verilog_text):
    """``{line number: alias names of the module around that line}``: wires that are not that module's ports."""
    aliases_by_line, ports, wires, module_lines = {}, set(), set(), []
    for number, line in enumerate(verilog_text.splitlines(), start=1):
        module_lines.append(number)
        if match := _PORT.match(line):
            ports.add(match.group(1))
        elif match := _WIRE.match(line):
            wires.add(match.group(1))
        if line.startswith("endmodule"):
            aliases = wires - ports
            aliases_by_line.update(dict.fromkeys(module_lines, aliases))
            ports, wires, module_lines = set(), set(), []
    return aliases_by_line


def _is_unused_alias(finding, aliases_by_line):
    match = _UNUSED.match(finding)
    return bool(match) and match.group(2) in aliases_by_line.get(int(match.group(1)), ())


def lint_verilog(component, name):
    return lint_verilog_text(generate_verilog(component, name), name)
