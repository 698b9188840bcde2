"""Output formats render findings faithfully (formatter tests on findings placed by hand; the
CLI tests check the same formats on findings the analysis produces)."""

from __future__ import annotations

import io
import json

from mcjax_lint.model import Edit, FileError, Finding, Fix, Severity
from mcjax_lint.output import OutputContext, get_renderer
from mcjax_lint.output import statistics, text

SRC = ["import jax", "if jax.process_index() == 0:", "    y = step(x)", ""]
F1 = Finding("pkg/a.py", 3, 4, 3, 15, "MCJ101", Severity.ERROR, "process-dependent branch around `step`",
             related=(("source of divergence: jax.process_index()", 2, 3),))
F2 = Finding("pkg/a.py", 2, 0, 2, 5, "MCJ201", Severity.WARNING, "set order, with: a comma, 100% sure",
             fix=Fix("Wrap in sorted(...)", (Edit(2, 0, 2, 0, "sorted("),)))


def _ctx(**kw) -> OutputContext:
    base = dict(findings=[F1, F2], read_lines=lambda p: SRC if p == "pkg/a.py" else None)
    base.update(kw)
    return OutputContext(**base)


def test_text_has_location_code_severity_source_and_caret():
    out = text.render(_ctx())
    lines = out.splitlines()
    assert lines[0] == "pkg/a.py:3:5: MCJ101 [error] process-dependent branch around `step`"
    assert lines[2] == "3 |     y = step(x)"
    assert lines[3] == "  |     ^^^^^^^^^^^"
    assert "  = pkg/a.py:2:4: source of divergence: jax.process_index()" in lines
    assert "  = fix: Wrap in sorted(...) (apply with --fix)" in lines
    assert lines[-1] == "Found 2 findings (1 fixable with `--fix`)."


def test_text_without_source_and_without_findings():
    out = text.render(_ctx(show_source=False))
    assert "|" not in out and out.splitlines()[0].startswith("pkg/a.py:3:5: MCJ101")
    assert text.render(_ctx(findings=[])) == "All checks passed!\n"
    assert text.render(_ctx(findings=[]), summary=False) == ""


def test_text_in_color_goes_through_rich():
    buf = io.StringIO()
    text.print_segments(text.render_segments(_ctx()), buf, color=True)
    colored = buf.getvalue()
    assert "\x1b[" in colored
    assert "MCJ101" in colored and "^^^^" in colored


def test_json_keys():
    data = json.loads(get_renderer("json")(_ctx()))
    assert [d["code"] for d in data] == ["MCJ101", "MCJ201"]
    d = data[0]
    for key in ("path", "line", "column", "end_line", "end_column", "code", "severity", "message", "fix", "related"):
        assert key in d
    assert d["severity"] == "error" and d["fix"] is None
    assert d["related"] == [{"message": "source of divergence: jax.process_index()", "line": 2, "column": 3}]
    assert data[1]["fix"]["edits"][0] == {"line": 2, "column": 0, "end_line": 2, "end_column": 0, "replacement": "sorted("}


def test_github_workflow_commands_escape_properties_and_data():
    out = get_renderer("github")(_ctx(file_errors=[FileError("bad.py", "not valid UTF-8")])).splitlines()
    assert out[0] == ("::error file=pkg/a.py,line=3,col=5,endLine=3,endColumn=16,title=MCJ101::"
                      "MCJ101 process-dependent branch around `step`")
    assert out[1] == ("::warning file=pkg/a.py,line=2,col=1,endLine=2,endColumn=6,title=MCJ201::"
                      "MCJ201 set order, with: a comma, 100%25 sure")
    assert out[2] == "::error file=bad.py,title=mcjax-lint::not valid UTF-8"


def test_statistics_counts_per_code():
    ctx = _ctx(findings=[F1, F1, F2], rules={})
    rows = statistics.counts(ctx)
    assert [(r["code"], r["count"], r["fixable"]) for r in rows] == [("MCJ101", 2, 0), ("MCJ201", 1, 1)]
    assert statistics.render(ctx).splitlines()[0].split("\t")[:3] == ["2", "MCJ101", "[error]"]
