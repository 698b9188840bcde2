"""Write a report to a directory (report.json, report.txt) and print it to the terminal.

The post-mortem work extends this with report.html and the merged stack tree; callers only use
`write_report` and `print_report`, so they do not change when renderers are added.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.console import Console

from runtime_guard.report.model import Report
from runtime_guard.report.render_text import render_text


def write_report(report: Report, report_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write every format; returns {format: path}. Writes atomically (tmp + rename) so a reader,
    or a kill right after, never sees half a file."""
    out = Path(report_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "report.json", "text": out / "report.txt"}
    _atomic_write(paths["json"], json.dumps(report.to_dict(), indent=2, default=str))
    _atomic_write(paths["text"], render_text(report, color=False))
    return paths


def print_report(report: Report, console: Console | None = None) -> None:
    (console or Console(stderr=True)).print(render_text(report, color=True), markup=False, highlight=False)


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
