"""`--format github`: GitHub Actions workflow commands, shown as annotations on the diff."""

from __future__ import annotations

from mcjax_lint.model import Severity
from mcjax_lint.output.context import OutputContext

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def render(ctx: OutputContext) -> str:
    lines = []
    for f in ctx.findings:
        props = [
            f"file={_prop(f.path)}",
            f"line={f.line}",
            f"col={f.column + 1}",
            f"endLine={f.end_line}",
        ]
        if f.end_line == f.line:
            props.append(f"endColumn={f.end_column + 1}")
        props.append(f"title={_prop(f.code)}")
        lines.append(f"::{_LEVEL.get(f.severity, 'error')} {','.join(props)}::{_data(f'{f.code} {f.message}')}")
    for e in ctx.file_errors:
        lines.append(f"::error file={_prop(e.path)},title=mcjax-lint::{_data(e.message)}")
    return "".join(line + "\n" for line in lines)
