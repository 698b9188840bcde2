"""The cached path equals a rebuild: random edits of a multi-module project (the lint fixtures
as one project), each linted through the cache as pre-commit does and compared with findings and
index facts computed from scratch (benchmarks/lint_incremental_check.py does the same on the
real corpus)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

import lint_incremental_check as chk  # noqa: E402


@pytest.fixture()
def project(tmp_path):
    return chk.fresh_copy([REPO / "fixtures" / "lint"], tmp_path / "proj")


def test_line_moves_are_served_by_moving_the_cached_index(project):
    out = chk.check(project, edits=12, seed=7, kinds=("insert_lines",), full_every=4, log=lambda s: None)
    assert out["edits"] == 12 and out["full_checks"] == 3
    assert out["mismatches"] == []
    # Moving lines does not rebuild the index (the position-free fingerprint is unchanged), except
    # where an origin cannot be told apart (two `train.py` with a source on the same line).
    assert out["how"].get("moved", 0) >= 9


def test_random_edits_of_every_kind_match_a_rebuild(project):
    out = chk.check(project, edits=24, seed=11, full_every=6, log=lambda s: None)
    assert out["edits"] == 24 and len(out["by_kind"]) >= 5
    assert out["mismatches"] == []
    # Some real changes were re-solved on the cached index rather than rebuilt.
    assert out["how"].get("re-solved", 0) >= 3


def test_the_check_sees_an_index_left_at_old_lines(project, monkeypatch):
    """The comparison can fail: with description anchors left at their old lines it must."""
    import re

    from mcjax_lint.analysis import relocate

    monkeypatch.setattr(relocate, "_ANCHOR", re.compile(r"(?!x)x"))
    out = chk.check(project, edits=10, seed=3, kinds=("insert_lines",), log=lambda s: None)
    assert out["mismatches"]


def test_the_check_sees_facts_missing_from_the_quoting_table(project, monkeypatch):
    """A cached index moves only the facts its quoting table lists: with an empty table the
    facts keep their old lines, and the comparison with a rebuild must say so."""
    from mcjax_lint.analysis import relocate

    monkeypatch.setattr(relocate, "quoting_table", lambda index: {})
    out = chk.check(project, edits=10, seed=3, kinds=("insert_lines",), log=lambda s: None)
    assert out["mismatches"]
