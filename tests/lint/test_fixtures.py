"""Every lint fixture is a test: the findings must be exactly the `# expect:` markers.

A fixture is a file, or a directory analysed as one project (its files can import each other).
`fixtures/lint/hazards/` and `fixtures/lint/benign/` belong to the linter; the runnable programs
in `fixtures/programs/` (`hazard_*`/`clean_*`) are checked the same way. A missing finding and an
extra finding both fail. See fixtures/README.md for the marker convention.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from mcjax_lint.engine import analyze_project
from mcjax_lint.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
MARKER = re.compile(r"#\s*expect:\s*(MCJ\d{3}(?:\s*,\s*MCJ\d{3})*)")


def _cases() -> list[tuple[str, Path]]:
    cases = []
    for kind in ("hazards", "benign"):
        base = FIXTURES / "lint" / kind
        for p in sorted(base.iterdir()):
            if p.suffix == ".py" or (p.is_dir() and any(p.rglob("*.py"))):
                cases.append((f"lint/{kind}/{p.name}", p))
    programs = FIXTURES / "programs"
    if programs.is_dir():
        for p in sorted(programs.glob("*.py")):
            if p.name.startswith(("hazard_", "clean_")):
                cases.append((f"programs/{p.name}", p))
    return cases


def _project(p: Path) -> dict[str, str]:
    files = [p] if p.is_file() else sorted(p.rglob("*.py"))
    return {str(f): f.read_text(encoding="utf-8") for f in files}


@functools.lru_cache(maxsize=None)
def analysed(path: Path) -> tuple[dict[str, str], tuple, tuple]:
    """(files, findings, errors) of one fixture, analysed once per test run: this module checks
    the findings against the markers, test_fixture_snapshots against the pinned messages and
    test_fixtures_locations where they point (the analysis is deterministic; each test checks a
    different property of the same result). Tuples: no test can change what another reads."""
    files = _project(path)
    findings, errors = analyze_project(files)
    return files, tuple(findings), tuple(errors)


def expected_markers(files: dict[str, str]) -> set[tuple[str, int, str]]:
    out = set()
    for path, text in files.items():
        for i, line in enumerate(text.splitlines(), 1):
            m = MARKER.search(line)
            if m:
                for code in re.split(r"\s*,\s*", m.group(1)):
                    out.add((path, i, code))
    return out


CASES = _cases()
BENIGN_FOR = re.compile(r"benign-for:\s*(MCJ\d{3}(?:\s*,\s*MCJ\d{3})*)")


def case_id(name: str, path: Path) -> str:
    """The test id: the rule codes a fixture is about, then its name, so that `pytest -k MCJ203`
    selects that rule's hazards and look-alikes."""
    files = _project(path)
    codes = sorted({c for _, _, c in expected_markers(files)}
                   | {c for text in files.values() for m in BENIGN_FOR.finditer(text) for c in re.split(r"\s*,\s*", m.group(1))})
    return f"{'+'.join(codes) or 'none'}-{name}"


IDS = [case_id(*c) for c in CASES]


@pytest.mark.parametrize("name,path", CASES, ids=IDS)
def test_fixture_findings_match_markers(name: str, path: Path):
    files, findings, errors = analysed(path)
    assert errors == (), errors
    got = {(f.path, f.line, f.code) for f in findings}
    want = expected_markers(files)
    rel = lambda s: sorted((str(Path(p).relative_to(FIXTURES)), ln, c) for p, ln, c in s)  # noqa: E731
    detail = "\n".join(f"  {f.path}:{f.line} {f.code} {f.message}" for f in findings)
    assert rel(got - want) == [] and rel(want - got) == [], (
        f"unexpected: {rel(got - want)}\nmissing: {rel(want - got)}\nall findings:\n{detail}")
    if name.startswith(("lint/benign", "programs/clean_")):
        assert want == set(), "benign fixtures must not carry expect markers"
    else:
        assert want, "hazard fixtures must expect at least one finding"


def test_every_rule_has_a_hazard_and_a_benign_fixture_and_a_docs_page():
    hazard_codes: set[str] = set()
    for name, path in CASES:
        if name.startswith("lint/hazards") or name.startswith("programs/hazard_"):
            hazard_codes |= {c for _, _, c in expected_markers(_project(path))}
    benign = {name for name, _ in CASES if name.startswith("lint/benign")}
    for code in RULES:
        assert code in hazard_codes, f"{code} has no hazard fixture"
        assert (ROOT / "docs" / "rules" / f"{code}.md").is_file(), f"{code} has no docs page"
        # Benign look-alikes name the rule they imitate in their docstring (`benign-for: MCJxxx`).
        assert any(f"benign-for: {code}" in "".join(_project(p).values()) or f"benign-for: {code}" in name
                   for n, p in CASES if n in benign), f"{code} has no benign look-alike"


def test_fixture_counts():
    hazards = [n for n, _ in CASES if n.startswith("lint/hazards")]
    benign = [n for n, _ in CASES if n.startswith("lint/benign")]
    assert len(hazards) >= 40, len(hazards)
    assert len(benign) >= 25, len(benign)
