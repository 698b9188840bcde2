"""Plain-text rendering of a report (report.txt, and the terminal when rich is not wanted).

Sections: the summary; each process (status, last dispatch, where it is, what it waits on);
the merged stack tree with the process set of each branch, outliers marked `>>`; the stacks
of every process, snapshot by snapshot; notes.
"""

from __future__ import annotations

import time
from typing import Any, Iterator

from runtime_guard.report.model import ProcessReport, Report, StackSnapshot
from runtime_guard.report.view import Row, build_view


def render_text(report: Report, color: bool = False, stacks: bool = True) -> str:
    """The whole report as plain text; `stacks=False` leaves out the per-snapshot stacks (the
    terminal's copy, off a terminal). Lines are never wrapped: paths stay whole."""
    view = build_view(report)
    lines = [view.headline]
    lines.extend(f"  {f}" for f in view.facts)
    for r in view.rows:
        lines.extend(_process_lines(r, next(p for p in report.processes if p.process_index == r.process), report))
    for n in view.notes:
        lines.append(f"  note: {n}")
    if view.stacks:
        lines.append(f"  {view.stacks}")
    if report.merged_stacks and report.merged_stacks.get("trees"):
        lines.append("")
        lines.extend(merged_tree_lines(report.merged_stacks))
    if stacks and any(p.snapshots for p in report.processes):
        lines.append("")
        lines.extend(stack_lines(report))
    return "\n".join(lines) + "\n"


def _process_lines(r: Row, p: ProcessReport, report: Report) -> list[str]:
    head = f"  process {r.process} [{r.status}]" + (" <<" if r.odd else "") + (f" pid {p.pid}" if p.pid else "")
    if p.host:
        head += f" on {p.host}"
    out = [head]
    if r.dispatch:
        out.append(f"    dispatch {r.dispatch}" + (f" called at {r.called_at}" if r.called_at else ""))
    if p.dispatch is not None:
        for k, v in p.dispatch.fields.items():
            mark = "*" if k in report.differing_fields else " "
            out.append(f"     {mark} {k}: {v}")
    if r.now_at:
        out.append(f"    {r.now_at if r.now_at.startswith(('left ', 'died ')) else 'now at ' + r.now_at}")
    if r.source:
        out.append(f"      {r.source}")
    if r.waiting:
        out.append(f"    {'waiting on: ' if not r.waiting.startswith('killed') else ''}{r.waiting}")
    if r.note:
        out.append(f"    note: {r.note}")
    return out


def short_name(name: str) -> str:
    """'api_boundary.<locals>.reraise_with_filtered_traceback' → 'reraise_with_filtered_traceback'."""
    return name.rsplit(".<locals>.", 1)[-1]


def frame_label(n: dict[str, Any]) -> str:
    """'name (file:line)' for a merged-tree node; collapsed library runs show their inner frame."""
    text = f"{short_name(n['name'])} ({n.get('short_file') or n['file']}:{n['line']})"
    if n.get("kind") == "library":
        inner = n.get("inner")
        if inner:
            hidden = f" +{n['hidden']} frames" if n.get("hidden") else ""
            text += f" ...{hidden}... {short_name(inner['name'])} ({inner.get('short_file') or inner['file']}:{inner['line']})"
        text = "[lib] " + text
    return text


def merged_tree_lines(merged: dict[str, Any]) -> list[str]:
    scope = "every thread" if merged.get("scope") == "all" else "main thread"
    out = [f"Merged stacks ({scope}; [process set] on each branch; >> marks the odd processes):"]
    classes = merged.get("classes") or []
    if classes:
        out.append("  equivalence classes, odd ones first:")
        for c in classes:
            loc = c.get("location")
            where = f" at {loc['short_file']}:{loc['line']}" if loc else ""
            mark = ">>" if c.get("outlier") else "  "
            extra = ", ".join(x for x in (c.get("ended"), c.get("blocked_on"), c.get("progress")) if x)
            out.append(f"  {mark} [{c['label']}]{where}" + (f" ({extra})" if extra else ""))
    if merged.get("without_stacks"):
        out.append(f"     no stacks from: {', '.join(map(str, merged['without_stacks']))}")
    for tree in merged["trees"]:
        out.append(f"  thread {tree['thread']}:")
        for child in tree["root"]["children"]:
            out.extend(_node_lines(child, "    ", "    "))
    return out


def _node_lines(n: dict[str, Any], first: str, rest: str) -> Iterator[str]:
    mark = ">> " if n.get("outlier") else ""
    yield f"{first}{mark}[{n['label']}] {frame_label(n)}"
    kids = n["children"]
    ends = n.get("ends") or []
    items: list[Any] = [("end", e) for e in ends] + [("node", c) for c in kids]
    for i, (kind, item) in enumerate(items):
        last = i == len(items) - 1
        branch, cont = ("`-- ", "    ") if last else ("|-- ", "|   ")
        if kind == "end":
            what = f"waiting on: {item['blocked_on']}" if item["blocked_on"] else "(stack ends here)"
            yield f"{rest}{branch}[{item['label']}] {what}"
        else:
            yield from _node_lines(item, rest + branch, rest + cont)


def stack_lines(report: Report) -> list[str]:
    out = ["Stacks (innermost frame first):"]
    for p in sorted(report.processes, key=lambda p: p.process_index):
        if not p.snapshots:
            continue
        t0 = p.snapshots[0].taken_at
        prev: StackSnapshot | None = None
        for k, s in enumerate(p.snapshots, 1):
            when = time.strftime("%H:%M:%S", time.localtime(s.taken_at)) if s.taken_at else "?"
            out.append(f"  process {p.process_index}, snapshot {k}/{len(p.snapshots)} at {when} (+{s.taken_at - t0:.1f} s) by {s.method}")
            if s.note:
                out.append(f"    note: {s.note}")
            if prev is not None and _same_python(prev, s):
                out.append("    (same Python stacks as the previous snapshot)")
                continue
            prev = s
            for t in sorted(s.threads, key=lambda t: not t.is_main):  # main thread first
                state = "" if t.active else " (idle)"
                out.append(f"    thread {t.name}{' [main]' if t.is_main else ''}{state}:")
                for f in t.frames:
                    if f.native:
                        name = f.name if len(f.name) <= 120 else f.name[:117] + "..."
                        out.append(f"      {name} [native {f.file.rsplit('/', 1)[-1]}]")
                    else:
                        out.append(f"      {f.name} ({f.file}:{f.line})")
                    for k2, v in (f.locals or {}).items():
                        out.append(f"          {k2} = {v}")
    return out


def _same_python(a: StackSnapshot, b: StackSnapshot) -> bool:
    def key(s: StackSnapshot) -> list[tuple]:
        return [(t.name, [(f.name, f.file, f.line) for f in t.frames if not f.native]) for t in s.threads]

    return bool(a.threads) and key(a) == key(b)
