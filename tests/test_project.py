"""Project-level promises: CI runs exactly the README's test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_test_command():
    readme_commands = re.findall(r"```sh\n(.*?)\n```", (ROOT / "README.md").read_text(), re.S)
    test_command = readme_commands[1].strip()
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert ci_lines[-1] == test_command
