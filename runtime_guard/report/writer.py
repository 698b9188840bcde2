"""Write a report to a directory (report.json, report.txt, report.html) and print it to the terminal.

Callers only use `write_report` and `print_report`, so they do not change when renderers are
added. The supervisor writes before it kills the job: every file is written atomically (temp
file + rename, so a reader or a kill never sees half a file), report.json first (the source of
truth `mcjax-guard report DIR` re-renders from), and a renderer that fails costs only its own
file.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rich.console import Console

from runtime_guard.report.model import Report
from runtime_guard.report.render_text import render_text
from runtime_guard.report.view import settle_statuses

FILES = {"json": "report.json", "text": "report.txt", "html": "report.html"}


def render(report: Report, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(report.to_dict(), indent=2, default=str) + "\n"
    if fmt == "text":
        return render_text(report, color=False)
    if fmt == "html":
        from runtime_guard.report.render_html import render_html

        return render_html(report)
    raise ValueError(f"unknown report format {fmt!r}; expected json, text or html")


def write_report(report: Report, report_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write every format; returns {format: path} for the files written."""
    settle_statuses(report)
    from runtime_guard.causes import attach_causes

    attach_causes(report)  # the findings that explain it (bounded; never raises)
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for fmt, name in FILES.items():
        try:
            _atomic_write(out / name, render(report, fmt))
        except Exception as e:  # noqa: BLE001 - one broken renderer must not lose the others
            if fmt == "json":
                raise
            print(f"mcjax-guard: could not write {name}: {e!r}", file=sys.stderr)
            continue
        paths[fmt] = out / name
    return paths


def print_report(report: Report, console: Console | None = None) -> None:
    """On a terminal, the rich view (colours, a table fitted to its width); anywhere else (a pipe,
    a file, a CI log) plain text that is never wrapped, so paths stay whole and greppable."""
    console = console or Console(stderr=True)
    if not console.is_terminal:
        console.file.write(render_text(settle_statuses(report), stacks=False))
        console.file.flush()
        return
    from runtime_guard.report.render_rich import render_rich

    console.print(render_rich(settle_statuses(report)))


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)  # no fsync: surviving a kill of the job needs only the rename
    os.replace(tmp, path)
