"""docs/rules/ has exactly one page per rule code (the analysis rules and MCJ900), in the
ruff-style shape, so docs, codes and SARIF help links never disagree."""

from __future__ import annotations

import re
from pathlib import Path

from mcjax_lint.rules import RULES
from mcjax_lint.suppressions import UNUSED_SUPPRESSION

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"
SECTIONS = ("## What it does", "## Why is this bad?", "## Example", "## Use instead")


def _codes() -> set[str]:
    return set(RULES) | {UNUSED_SUPPRESSION.code}


def test_a_page_for_every_code_and_none_for_unknown_codes():
    pages = {p.stem for p in DOCS.glob("*.md") if re.fullmatch(r"MCJ\d{3}", p.stem)}
    assert sorted(_codes() - pages) == [], "rules without a page"
    assert sorted(pages - _codes()) == [], "pages for codes that do not exist"


def test_pages_name_their_rule_and_have_the_sections():
    for code in sorted(_codes()):
        text = (DOCS / f"{code}.md").read_text(encoding="utf-8")
        first = text.splitlines()[0]
        assert first.startswith(f"# {code}"), (code, first)
        name = RULES[code].name if code in RULES else UNUSED_SUPPRESSION.name
        assert name in first, (code, first)
        for section in SECTIONS:
            assert section in text, (code, section)
