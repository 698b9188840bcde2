"""Each rule's documentation examples are tests: "Example" triggers the rule, "Use instead" is clean.

Keeps docs/rules/, the rule registry and the analysis from disagreeing.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcjax_lint.engine import analyze_project
from mcjax_lint.rules import RULES

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"


def _block(text: str, heading: str) -> str:
    section = text.split(heading, 1)[1]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, f"no python block under {heading}"
    return m.group(1)


@pytest.mark.parametrize("code", sorted(RULES))
def test_example_triggers_rule_and_use_instead_is_clean(code: str):
    text = (DOCS / f"{code}.md").read_text(encoding="utf-8")
    info = RULES[code]
    assert text.startswith(f"# {code}: {info.name}\n"), "title must be '# CODE: name'"
    assert f"Severity: {info.severity.value}" in text
    assert (info.precision == "medium") == ("## Precision: medium" in text)
    assert "## Known limitations" in text
    bad, _ = analyze_project({"example.py": _block(text, "## Example")})
    assert code in {f.code for f in bad}, [(f.line, f.code, f.message) for f in bad]
    assert {f.code for f in bad} == {code}, [(f.line, f.code, f.message) for f in bad]
    # The page says how the rule grades its evidence, and its example is a certain finding at the
    # rule's own severity (a guess would make it a "possible" warning).
    assert "## Evidence" in text
    assert all(f.confidence == "certain" and f.severity == info.severity for f in bad), \
        [(f.line, f.severity, f.confidence, f.message) for f in bad]
    good, errors = analyze_project({"example.py": _block(text, "## Use instead")})
    assert errors == [] and good == [], [(f.line, f.code, f.message) for f in good]
    if info.fixable:
        assert any(f.fix is not None for f in bad if f.code == code)
