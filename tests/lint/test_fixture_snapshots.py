"""Every lint fixture's findings pinned with their messages, one `file:line:col CODE message` a
line, in `fixtures/lint/expected/<kind>/<fixture>.txt` (as TorchFix's `.txt` files and ruff's
snapshots pin theirs). A message that changes shows up in review as a diff of that file.

Test ids start with the rule codes the fixture is about: `pytest -k MCJ203` runs that rule's
hazards and benign look-alikes. After an intended change, regenerate and review the diff:

    MCJAX_UPDATE_SNAPSHOTS=1 python -m pytest tests/lint/test_fixture_snapshots.py -q
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from test_fixtures import CASES, IDS, analysed

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
EXPECTED = FIXTURES / "lint" / "expected"
LINT_CASES = [(c, i) for c, i in zip(CASES, IDS) if c[0].startswith("lint/")]


def render(path: Path) -> str:
    _, findings, errors = analysed(path)
    base = path if path.is_dir() else path.parent
    lines = [f"{Path(f.path).relative_to(base)}:{f.line}:{f.column} {f.code} {f.message}" for f in findings]
    lines += [f"{Path(e.path).relative_to(base)}: error: {e.message}" for e in errors]
    return "".join(line + "\n" for line in lines)


def snapshot_path(name: str) -> Path:
    kind, fixture = name.split("/")[1:]
    return EXPECTED / kind / f"{Path(fixture).stem if fixture.endswith('.py') else fixture}.txt"


@pytest.mark.parametrize("name,path", [c for c, _ in LINT_CASES], ids=[i for _, i in LINT_CASES])
def test_findings_match_the_pinned_snapshot(name: str, path: Path):
    got = render(path)
    snap = snapshot_path(name)
    if os.environ.get("MCJAX_UPDATE_SNAPSHOTS"):
        snap.parent.mkdir(parents=True, exist_ok=True)
        snap.write_text(got, encoding="utf-8")
    assert snap.is_file(), f"no snapshot {snap}: run with MCJAX_UPDATE_SNAPSHOTS=1 and review it"
    assert got == snap.read_text(encoding="utf-8")


def test_every_snapshot_belongs_to_a_fixture():
    wanted = {snapshot_path(name) for (name, _), _ in LINT_CASES}
    assert set(EXPECTED.rglob("*.txt")) - wanted == set(), "a snapshot whose fixture is gone"
