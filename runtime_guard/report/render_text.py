"""Plain-text rendering of a report (the terminal and report.txt)."""

from __future__ import annotations

from runtime_guard.report.model import Report


def render_text(report: Report, color: bool = False) -> str:
    lines = [f"mcjax-guard: {report.kind.upper()}: {report.summary}"]
    if report.seq is not None:
        lines.append(f"  at dispatch #{report.seq}")
    if report.differing_fields:
        lines.append(f"  differing fields: {', '.join(report.differing_fields)}")
    for p in sorted(report.processes, key=lambda p: p.process_index):
        lines.append(f"  process {p.process_index} [{p.status}]" + (f" pid {p.pid}" if p.pid else ""))
        if p.dispatch is not None:
            lines.append(f"    dispatch #{p.dispatch.seq}: {p.dispatch.name}")
            for k, v in p.dispatch.fields.items():
                mark = "*" if k in report.differing_fields else " "
                lines.append(f"     {mark} {k}: {v}")
        if p.location is not None:
            lines.append(f"    at {p.location.file}:{p.location.line}" + (f" in {p.location.function}" if p.location.function else ""))
            if p.location.source:
                lines.append(f"      {p.location.source}")
        if p.note:
            lines.append(f"    note: {p.note}")
    for n in report.notes:
        lines.append(f"  note: {n}")
    return "\n".join(lines) + "\n"
