"""docs/pytest.md's example runs as the page says: one test passes, the other fails naming both lines."""

import re
from pathlib import Path

import pytest
from plugin_helpers import run

DOC = Path(__file__).resolve().parents[2] / "docs" / "pytest.md"


def example() -> tuple[str, str]:
    m = re.search(r"<!-- runnable: (\S+) .*?-->\n```python\n(.*?)```", DOC.read_text(), re.S)
    assert m, "docs/pytest.md lost its runnable example"
    return m.group(1), m.group(2)


@pytest.mark.timeout(200)
def test_docs_example_runs_as_documented(pytester: pytest.Pytester) -> None:
    name, code = example()
    path = pytester.makepyfile(**{name[:-3]: code})
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    lines = path.read_text().splitlines()
    only0 = next(i for i, s in enumerate(lines, 1) if "only process 0 joins" in s)
    assert f"process 0 ran jit(_reduce_max) at {path}:{only0}" in out
    assert f"process 1 ran jit(mean_square) at {path}:{only0 + 1}" in out
    assert "FAILED test_allreduce.py::test_log_on_process_0 - mcjax DIVERGENCE" in out
    # The page quotes these lines of the real output.
    text = DOC.read_text()
    for quoted in ("(ran in 2 processes, strict mode; the guard stopped it)",
                   "process 0: the guard's strict check raised DivergenceError in call (report above)"):
        assert quoted in text and quoted in out
