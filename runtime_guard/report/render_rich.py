"""Terminal rendering with rich: summary, per-process table, merged stack tree (outliers in red)."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from runtime_guard.report.model import Report
from runtime_guard.report.render_text import frame_label
from runtime_guard.report.view import ReportView, build_view

_KIND_STYLE = {"divergence": "bold red", "missing": "bold red", "exited": "bold yellow", "died": "bold red",
               "hang": "bold magenta", "snapshot": "bold cyan"}


def render_rich(report: Report) -> RenderableType:
    view = build_view(report)
    parts: list[RenderableType] = []
    head = Text()
    head.append(f"mcjax-guard: {report.kind.upper()}", style=_KIND_STYLE.get(report.kind, "bold"))
    head.append(view.headline[len(f"mcjax-guard: {report.kind.upper()}"):])
    parts.append(head)
    for fact in view.facts:
        parts.append(Text(f"  {fact}", style="bold"))
    parts.append(_process_table(view))
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
    for n in view.notes:
        parts.append(Text(f"note: {n}", style="dim"))
    if view.stacks:
        parts.append(Text(view.stacks, style="dim"))
    return Group(*parts)


def _process_table(view: ReportView) -> Table:
    t = Table(show_lines=False, header_style="bold", pad_edge=False, box=None)
    for col, ratio in (("proc", None), ("status", None), ("dispatch", 2), ("called at", 2), ("now at", 2),
                       ("waiting on / note", 3)):
        t.add_column(col, overflow="fold", ratio=ratio)
    for r in view.rows:
        style = "bold red" if r.odd else ""
        t.add_row(Text(str(r.process) + (" <<" if r.odd else ""), style=style), Text(r.status, style=style),
                  r.dispatch, Text(r.called_at, style="cyan"), Text(r.now_at, style="cyan"), r.waiting or r.note)
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
        t.append(f"waiting on: {e['blocked_on']}" if e["blocked_on"] else "(stack ends here)", style="yellow")
        node.add(t)
    for c in n["children"]:
        _add(node, c)
