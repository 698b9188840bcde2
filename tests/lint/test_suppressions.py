"""Suppression comments: which lines they cover, which codes, and MCJ900 for unused ones.

These exercise the suppression machinery on findings placed by hand; the end-to-end tests in
test_cli.py check the same comments against findings the analysis really produces."""

from __future__ import annotations

from mcjax_lint.fixes import apply_fixes
from mcjax_lint.model import Finding, Severity
from mcjax_lint.suppressions import apply, scan


def _f(line: int, code: str = "MCJ101") -> Finding:
    return Finding("m.py", line, 4, line, 10, code, Severity.ERROR, "msg")


SRC = '''\
import jax
x = f()  # mcjax: ignore[MCJ101]
y = g(  # mcjax: ignore[MCJ101, MCJ201]
    a,
    b,
)
z = h()  # mcjax: ignore
w = k()  # noqa: E501, MCJ203
if (a and
        b):  # mcjax: ignore[MCJ102]
    pass
s = """
# mcjax: ignore[MCJ101]  (inside a string: not a comment)
"""
'''


def test_scan_finds_comments_and_their_logical_lines():
    sups = {s.line: s for s in scan(SRC)}
    assert set(sups) == {2, 3, 7, 8, 10}
    assert sups[2].codes == ("MCJ101",) and (sups[2].start_line, sups[2].end_line) == (2, 2)
    assert sups[3].codes == ("MCJ101", "MCJ201") and (sups[3].start_line, sups[3].end_line) == (3, 6)
    assert sups[7].codes is None
    assert sups[8].kind == "noqa" and sups[8].codes == ("MCJ203",)  # other linters' codes are not ours
    assert (sups[10].start_line, sups[10].end_line) == (9, 10)  # the whole `if` header


def test_no_marker_no_tokenize():
    assert scan("x = 1  # noqa: E501\n# just mcjax talk\n") == []


def _all(code: str) -> bool:
    return True


def test_apply_suppresses_on_any_line_of_the_statement_and_only_listed_codes():
    sups = scan(SRC)
    findings = [
        _f(2),  # suppressed (same line)
        _f(2, "MCJ201"),  # not listed: kept
        _f(5, "MCJ201"),  # a line inside the multi-line call: suppressed
        _f(7, "MCJ301"),  # bare ignore: suppressed
        _f(8, "MCJ203"),  # noqa: suppressed
        _f(9, "MCJ102"),  # the if header's first line: suppressed by the comment on its last line
        _f(11, "MCJ102"),  # the body is not covered
    ]
    out = apply(findings, sups, "m.py", _all)
    kept = [(f.line, f.code) for f in out if f.code != "MCJ900"]
    assert kept == [(2, "MCJ201"), (11, "MCJ102")]
    unused = [(f.line, f.message) for f in out if f.code == "MCJ900"]
    # line 3 suppressed MCJ201 only; MCJ101 there matched nothing
    assert unused == [(3, "Unused suppression of MCJ101: no such finding on this statement")]


def test_unused_reported_only_for_selected_codes():
    sups = scan("x = f()  # mcjax: ignore[MCJ101]\n")
    assert [f.code for f in apply([], sups, "m.py", _all)] == ["MCJ900"]
    assert apply([], sups, "m.py", lambda c: c != "MCJ101") == []  # MCJ101 not selected
    assert apply([], sups, "m.py", lambda c: c != "MCJ900") == []  # MCJ900 itself not selected


def test_unused_bare_ignore_and_its_fix_removes_the_comment():
    src = "x = f()  # mcjax: ignore\ny = 2\n"
    out = apply([], scan(src), "m.py", _all)
    assert [f.code for f in out] == ["MCJ900"]
    assert apply_fixes(src, out).source == "x = f()\ny = 2\n"


def test_fix_keeps_the_used_codes():
    src = "x = f()  # mcjax: ignore[MCJ101, MCJ201]\n"
    out = apply([_f(1, "MCJ201")], scan(src), "m.py", _all)
    assert [f.code for f in out] == ["MCJ900"]
    assert apply_fixes(src, out).source == "x = f()  # mcjax: ignore[MCJ201]\n"


def test_fix_of_noqa_keeps_other_linters_codes():
    src = "x = f()  # noqa: E501,MCJ101\n"
    out = apply([], scan(src), "m.py", _all)
    assert apply_fixes(src, out).source == "x = f()  # noqa: E501\n"


def test_comment_only_line_is_removed_whole():
    src = "a = 1\n# mcjax: ignore[MCJ101]\nb = 2\n"
    out = apply([], scan(src), "m.py", _all)
    assert apply_fixes(src, out).source == "a = 1\nb = 2\n"


def test_a_directive_quoted_in_prose_is_not_one():
    src = "x = 1  # bare `# mcjax: ignore` suppresses every code\ny = 2  # see `# noqa: MCJ101`\n"
    assert scan(src) == []
    two = scan("x = f()  # keep this note  # mcjax: ignore[MCJ101]\n")
    assert [s.codes for s in two] == [("MCJ101",)]


def test_fix_keeps_other_comment_text():
    src = "x = f()  # keep this note  # mcjax: ignore[MCJ101]\n"
    out = apply([], scan(src), "m.py", _all)
    assert apply_fixes(src, out).source == "x = f()  # keep this note\n"
    src = "x = f()  # mcjax: ignore[MCJ101]  # and a note\n"
    out = apply([], scan(src), "m.py", _all)
    assert apply_fixes(src, out).source == "x = f()  # and a note\n"
