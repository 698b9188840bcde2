"""Applying fixes: edits in source order, overlaps deferred, invalid results refused, diffs."""

from __future__ import annotations

from mcjax_lint.fixes import apply_fixes, unified_diff
from mcjax_lint.model import Edit, Finding, Fix, Severity


def _wrap_sorted(line: int, col: int, end_col: int, code: str = "MCJ201") -> Finding:
    fix = Fix("Wrap in sorted(...)", (Edit(line, col, line, col, "sorted("), Edit(line, end_col, line, end_col, ")")))
    return Finding("m.py", line, col, line, end_col, code, Severity.ERROR, "set order", fix=fix)


def test_two_fixes_in_one_file_apply_in_order():
    src = "for k in s:\n    pass\nfor k in t:\n    pass\n"
    res = apply_fixes(src, [_wrap_sorted(3, 9, 10), _wrap_sorted(1, 9, 10)])
    assert res.error is None and len(res.applied) == 2
    assert res.source == "for k in sorted(s):\n    pass\nfor k in sorted(t):\n    pass\n"


def test_overlapping_fix_waits_for_the_next_round():
    src = "x = 1\n"
    a = Finding("m.py", 1, 0, 1, 5, "MCJ201", Severity.ERROR, "", fix=Fix("a", (Edit(1, 0, 1, 5, "y = 2"),)))
    b = Finding("m.py", 1, 4, 1, 5, "MCJ201", Severity.ERROR, "", fix=Fix("b", (Edit(1, 4, 1, 5, "3"),)))
    res = apply_fixes(src, [a, b])
    assert res.source == "y = 2\n" and res.applied == [a]


def test_fix_that_breaks_the_syntax_is_refused():
    src = "x = (1)\n"
    bad = Finding("m.py", 1, 4, 1, 5, "MCJ201", Severity.ERROR, "", fix=Fix("bad", (Edit(1, 4, 1, 5, ""),)))
    res = apply_fixes(src, [bad])
    assert res.source == src and res.applied == [] and "invalid Python" in res.error


def test_crlf_and_non_ascii_columns_are_preserved():
    src = "é = 1\r\nfor k in s:\r\n    pass\r\n"
    res = apply_fixes(src, [_wrap_sorted(2, 9, 10)])
    assert res.source == "é = 1\r\nfor k in sorted(s):\r\n    pass\r\n"


def test_unified_diff_names_both_sides():
    d = unified_diff("pkg/m.py", "for k in s:\n", "for k in sorted(s):\n")
    assert d.splitlines()[:2] == ["--- a/pkg/m.py", "+++ b/pkg/m.py"]
    assert "-for k in s:" in d and "+for k in sorted(s):" in d


# --- end to end: real findings, real files --------------------------------------------------

from cli_helpers import demo_project, run_cli  # noqa: E402


def test_fix_wraps_set_iteration_in_sorted_and_relints(tmp_path):
    demo_project(tmp_path)
    order = tmp_path / "pkg" / "order.py"
    before = order.read_text()
    out = run_cli(tmp_path, "--diff")
    assert out.returncode == 1
    assert "-    for name in set(names):" in out.stdout and "+    for name in sorted(set(names)):" in out.stdout
    assert order.read_text() == before  # --diff writes nothing

    out = run_cli(tmp_path, "--fix", "pkg/order.py")
    assert "Fixed 1 finding." in out.stderr
    assert "for name in sorted(set(names)):" in order.read_text()
    assert out.returncode == 0, out.stdout  # re-linted: nothing left in that file
    assert run_cli(tmp_path, "--diff", "pkg/order.py").returncode == 0


def test_fix_never_touches_unfixable_findings(tmp_path):
    demo_project(tmp_path)
    ckpt = tmp_path / "pkg" / "ckpt.py"
    before = ckpt.read_text()
    out = run_cli(tmp_path, "--fix", "pkg/ckpt.py")
    assert out.returncode == 1 and "MCJ101" in out.stdout
    assert ckpt.read_text() == before
