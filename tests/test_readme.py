"""README's two commands stay true: .ci/run runs exactly the README's test command."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, re.S)
    return [line.strip() for b in blocks[:2] for line in b.splitlines() if line.strip()]


def test_readme_opens_with_two_one_line_commands():
    cmds = _readme_commands()
    assert len(cmds) == 2, cmds
    assert "demo" in cmds[0]
    assert "pytest" in cmds[1]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    test_cmd = _readme_commands()[1]
    assert f'"{test_cmd}"' in ci, (test_cmd, ci)
