"""The pytest plugin's `mcjax_process_index` fixture is a process-dependent source: the rank-0
logging bug in docs/pytest.md's own example is reported by `pytest --mcjax-lint` (the lint
items only: no JAX process starts), and the example's correct test is not.

The fixture is listed in `mcjax_lint.knowledge.PROCESS_DEPENDENT_FIXTURES`; both passes seed a
test function's or fixture's parameter of that name (`analysis.semantics.fixture_param_source`).
The finer cases (a `Test*` method, a fixture, a look-alike helper) are fixtures:
`fixtures/lint/hazards/test_fixture_rank_branch.py`, `fixtures/lint/benign/test_fixture_name_in_helper.py`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


from mcjax_lint import knowledge

DOC = Path(__file__).resolve().parents[2] / "docs" / "pytest.md"


def _docs_example() -> tuple[str, str]:
    m = re.search(r"<!-- runnable: (\S+) .*?-->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert m, "docs/pytest.md lost its runnable example"
    return m.group(1), m.group(2)


def test_the_fixture_is_in_the_table():
    assert "mcjax_process_index" in knowledge.PROCESS_DEPENDENT_FIXTURES
    assert "mcjax_process_count" not in knowledge.PROCESS_DEPENDENT_FIXTURES  # equal everywhere


def test_docs_example_bug_is_reported_by_mcjax_lint(tmp_path):
    name, code = _docs_example()
    (tmp_path / name).write_text(code)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'example'\nversion = '0'\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "--mcjax-lint", "-m", "mcjax_lint", "-p", "no:cacheprovider",
                          name], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = code.splitlines()
    branch = next(i for i, s in enumerate(lines, 1) if "if mcjax_process_index == 0:" in s)
    assert out.returncode == 1, out.stdout + out.stderr
    assert re.search(rf"{re.escape(name)}:{branch}:\d+: MCJ101", out.stdout), out.stdout
    # The first test's use of the fixture (the rows each process contributes) is correct.
    assert not re.search(rf"{re.escape(name)}:(?!{branch}:)\d+:\d+: MCJ", out.stdout), out.stdout
