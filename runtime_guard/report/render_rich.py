"""Terminal rendering with rich: summary, per-process table, merged stack tree (outliers in red)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from runtime_guard.report.model import Report
from runtime_guard.report.render_text import frame_label
from runtime_guard.stacks.frames import short_path

_KIND_STYLE = {"divergence": "bold red", "missing": "bold red", "exited": "bold yellow", "died": "bold red",
               "hang": "bold magenta", "snapshot": "bold cyan"}


def render_rich(report: Report) -> RenderableType:
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"mcjax-guard: {report.kind.upper()}", style=_KIND_STYLE.get(report.kind, "bold"))
    head.append(f": {report.summary}")
    parts.append(head)
    if report.seq is not None or report.differing_fields:
        extra = f"  at dispatch #{report.seq}" if report.seq is not None else ""
        if report.differing_fields:
            extra += f"  differing fields: {', '.join(report.differing_fields)}"
        parts.append(Text(extra, style="bold"))
    outliers = set((report.merged_stacks or {}).get("outliers") or [])
    parts.append(_process_table(report, outliers))
    if report.differing_fields:
        # Field by field only where they differ in kind; the rest is in report.txt / report.html.
        for p in sorted(report.processes, key=lambda p: p.process_index):
            if p.dispatch is None or not p.dispatch.fields:
                continue
            t = Table(title=f"process {p.process_index}: dispatch #{p.dispatch.seq} {p.dispatch.name}", title_justify="left",
                      show_header=False, box=None, padding=(0, 1))
            for k, v in p.dispatch.fields.items():
                diff = k in report.differing_fields
                t.add_row(Text(("* " if diff else "  ") + k, style="bold red" if diff else ""), Text(str(v)))
            parts.append(t)
    if report.merged_stacks and report.merged_stacks.get("trees"):
        parts.append(merged_tree(report.merged_stacks))
    for n in report.notes:
        parts.append(Text(f"note: {n}", style="dim"))
    return Group(*parts)


def _process_table(report: Report, outliers: set[int]) -> Table:
    t = Table(show_lines=False, header_style="bold", pad_edge=False, box=None)
    for col, ratio in (("proc", None), ("status", None), ("last dispatch", 2), ("at", 3), ("waiting on", 3)):
        t.add_column(col, overflow="fold", ratio=ratio)
    for p in sorted(report.processes, key=lambda p: p.process_index):
        style = "bold red" if p.process_index in outliers else ""
        disp = f"#{p.dispatch.seq} {p.dispatch.name}" if p.dispatch else (f"#{p.last_seq}" if p.last_seq else "")
        where = Text()
        if p.location is not None:
            where.append(f"{short_path(p.location.file)}:{p.location.line}", style="cyan")
            if p.location.function and p.location.function != "<module>":
                where.append(f" in {p.location.function}")
        waiting = p.blocked_on + (f" ({p.progress})" if p.progress else "")
        status = p.status + (f", exit {p.exit_code}" if p.exit_code is not None else "")
        t.add_row(Text(str(p.process_index) + (" <<" if p.process_index in outliers else ""), style=style),
                  Text(status, style=style), disp, where, waiting or (p.note or ""))
    return t


def merged_tree(merged: dict[str, Any]) -> RenderableType:
    trees = []
    for tr in merged["trees"]:
        title = "merged stacks, " + ("main thread" if tr["thread"] == "MainThread" else f"thread {tr['thread']}")
        root = Tree(Text(f"{title} [{tr['root']['label']}]", style="bold"), guide_style="dim")
        for child in tr["root"]["children"]:
            _add(root, child)
        trees.append(root)
    return Group(*trees)


def _add(parent: Tree, n: dict[str, Any]) -> None:
    label = Text()
    label.append(f"[{n['label']}] ", style="bold red" if n.get("outlier") else "bold blue")
    label.append(frame_label(n), style="dim" if n.get("kind") == "library" else ("red" if n.get("outlier") else ""))
    node = parent.add(label)
    for e in n.get("ends") or []:
        t = Text()
        t.append(f"[{e['label']}] ", style="bold red" if n.get("outlier") else "bold blue")
        t.append(f"waiting on: {e['blocked_on'] or '?'}", style="yellow")
        node.add(t)
    for c in n["children"]:
        _add(node, c)
