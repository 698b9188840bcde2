"""STAT-style merge of many processes' stacks: equivalence classes and one call tree.

Processes whose (main-thread) stacks are identical form an equivalence class; the merged tree
is the prefix tree of all stacks from the outermost frame, each node carrying the set of
processes that went through it. The odd process — the one not where the others are — ends up
alone on a branch and at the front of the class list.

Stacks are compared on their Python frames (function, file, line) only, so a process whose
snapshot has native frames (py-spy --native) and one whose snapshot does not (faulthandler,
a timed-out native dump) still merge. Runs of library frames (JAX, jaxlib, stdlib,
site-packages) are collapsed to their entry frame (the API the user called) plus their innermost
Python frame; what the stack is blocked on (from native frames when present) is kept on the
node where the stack ends. The result is plain JSON-able data: see docs/report-format.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from runtime_guard.report.model import Frame, Location, StackSnapshot, Thread
from runtime_guard.stacks.frames import Blocked, blocked_on, is_library, phrase, short_path, source_line


def main_thread(snap: StackSnapshot) -> Thread | None:
    for t in snap.threads:
        if t.is_main:
            return t
    for t in snap.threads:
        if t.name == "MainThread":
            return t
    return None


def norm_name(name: str) -> str:
    """py-spy says 'Thread.run' or 'f.<locals>.g' where faulthandler says 'run' or 'g': compare
    on the last part so stacks taken by different methods still match."""
    return name.rsplit(".", 1)[-1]


def python_key(frames: list[Frame]) -> tuple:
    """Identity of a stack for "did it move": its Python frames, outermost first."""
    return tuple((norm_name(f.name), f.file, f.line) for f in reversed(frames) if not f.native)


@dataclass
class DisplayFrame:
    """One node's frame in the merged tree: a user frame, or a collapsed run of library frames."""

    name: str
    file: str
    line: int
    kind: str  # "user" or "library"
    hidden: int = 0  # library frames folded into this node besides `name` and `inner`
    inner: Frame | None = None  # innermost Python frame of a collapsed run, when not the entry

    @property
    def key(self) -> tuple:
        inner = (norm_name(self.inner.name), self.inner.file, self.inner.line) if self.inner else None
        return (self.kind, norm_name(self.name), self.file, self.line, inner)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": self.name, "file": self.file, "short_file": short_path(self.file), "line": self.line,
            "kind": self.kind, "hidden": self.hidden, "inner": None,
        }
        if self.inner is not None:
            d["inner"] = {"name": self.inner.name, "file": self.inner.file, "short_file": short_path(self.inner.file), "line": self.inner.line}
        return d


def display_frames(frames: list[Frame], collapse: bool = True) -> list[DisplayFrame]:
    """Frames (innermost first, as collected) → display frames, outermost first. Native frames
    are dropped here (they differ between collection methods); blocked_on keeps what they say.
    With `collapse`, library frames before the first user frame are dropped and each run of
    library frames becomes one node."""
    py = [f for f in reversed(frames) if not f.native]
    if collapse:
        # The interpreter's or launcher's entry frames (runpy, threading's bootstrap) before the
        # first user frame say nothing about where the program is.
        first_user = next((k for k, f in enumerate(py) if not is_library(f)), None)
        if first_user:
            py = py[first_user:]
    out: list[DisplayFrame] = []
    i = 0
    while i < len(py):
        f = py[i]
        if not collapse or not is_library(f):
            out.append(DisplayFrame(f.name, f.file, f.line, "library" if is_library(f) else "user"))
            i += 1
            continue
        j = i
        while j < len(py) and is_library(py[j]):
            j += 1
        run = py[i:j]
        inner = run[-1] if len(run) > 1 else None
        out.append(DisplayFrame(f.name, f.file, f.line, "library", hidden=max(0, len(run) - 2), inner=inner))
        i = j
    return out


def innermost_user_location(frames: list[Frame]) -> Location | None:
    """Where the user's code is: the innermost non-library frame (else the innermost Python one)."""
    py = [f for f in frames if not f.native]
    f = next((f for f in py if not is_library(f)), py[0] if py else None)
    if f is None:
        return None
    return Location(file=f.file, line=f.line, function=f.name, source=source_line(f.file, f.line))


@dataclass
class ProcessStacks:
    """What the snapshots of one process say."""

    process_index: int
    thread: Thread | None = None  # main thread of the latest usable snapshot
    display: list[DisplayFrame] = field(default_factory=list)
    blocked: Blocked | None = None
    progress: str = ""  # "stuck", "moving", "" (fewer than two usable snapshots)
    location: Location | None = None
    methods: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: bool = False  # stopped by a signal (SIGSTOP, a debugger) when its stacks were taken


def analyze_process(
    process_index: int, snaps: list[StackSnapshot], collapse: bool = True, in_dispatch: tuple[str, int, str] | None = None
) -> ProcessStacks:
    """`in_dispatch`: (file, line, description) of the guard's last dispatch of this process. A
    stack that stops on that line without saying more (no native frames) is in that dispatch,
    a cross-process computation."""
    ps = ProcessStacks(process_index)
    ps.methods = [s.method for s in snaps]
    ps.notes = [s.note for s in snaps if s.note]
    usable = [(s, t) for s in snaps if (t := main_thread(s)) is not None and t.frames]
    if not usable:
        if any(main_thread(s) is not None for s in snaps):
            # A main thread without a Python frame: its program had ended (the interpreter was
            # finishing, e.g. in JAX's shutdown), so there is no stack to show.
            ps.notes.append("its main thread had no Python frame left: the program had ended")
        return ps
    last_snap, last = usable[-1]
    ps.thread = last
    ps.display = display_frames(last.frames, collapse)
    ps.location = innermost_user_location(last.frames)
    keys = [python_key(t.frames) for _, t in usable]
    ps.stopped = any(s.stopped for s in snaps)
    if ps.stopped:
        ps.progress = "frozen"  # it cannot move, whatever it was doing: not "stuck" in its code
    elif len(keys) >= 2:
        ps.progress = "stuck" if all(k == keys[-1] for k in keys) else "moving"
    # The richest snapshot still showing the latest position says best what it is blocked on.
    same = [t for _, t in usable if python_key(t.frames) == keys[-1]]
    richest = max(same, key=lambda t: sum(f.native for f in t.frames))
    ps.blocked = blocked_on(richest.frames, active=last.active)
    if ps.blocked.category == "exit" and ps.location is not None and is_library(Frame("", ps.location.file, ps.location.line)):
        # The program has left: the innermost frame is the guard's or JAX's exit path, not a place
        # in the program (the report takes where it left from the guard's exit record).
        ps.location = None
    if in_dispatch is not None and ps.location is not None and ps.blocked.category in ("device-wait", "jit", "unknown"):
        file, line, what = in_dispatch
        if line == ps.location.line and os.path.basename(file) == os.path.basename(ps.location.file):
            ps.blocked = Blocked("collective", what, None, "")
    return ps


def ranges(procs: Iterable[int]) -> str:
    """[0, 1, 2, 5] → "0-2,5" (STAT's process-set notation)."""
    s = sorted(set(procs))
    parts, i = [], 0
    while i < len(s):
        j = i
        while j + 1 < len(s) and s[j + 1] == s[j] + 1:
            j += 1
        parts.append(str(s[i]) if i == j else f"{s[i]}-{s[j]}" if j > i + 1 else f"{s[i]},{s[j]}")
        i = j + 1
    return ",".join(parts)


def _rank_classes(classes: list[dict[str, Any]]) -> None:
    """Order classes outliers first and mark them: smaller classes; at equal sizes, a class not
    waiting on its peers (the others wait for it), then the least progressed (lowest last
    dispatch seq)."""
    def seq(c: dict[str, Any]) -> float:
        return c["last_seq"][0] if c["last_seq"] else float("inf")

    classes.sort(key=lambda c: (len(c["processes"]), c["waits_on_peers"], seq(c), c["processes"][0]))
    for c in classes:
        c["outlier"] = False
    if len(classes) < 2:
        return
    biggest = max(len(c["processes"]) for c in classes)
    smaller = [c for c in classes if len(c["processes"]) < biggest]
    if smaller:
        for c in smaller:
            c["outlier"] = True
        return
    not_waiting = [c for c in classes if not c["waits_on_peers"]]
    if 0 < len(not_waiting) < len(classes):
        for c in not_waiting:
            c["outlier"] = True
        return
    seqs = {seq(c) for c in classes}
    if len(seqs) > 1 and float("inf") not in seqs:
        low = min(seqs)
        for c in classes:
            c["outlier"] = seq(c) == low
        classes.sort(key=lambda c: (not c["outlier"], c["processes"][0]))


def merge_stacks(
    stacks: dict[int, list[StackSnapshot]],
    last_seq: dict[int, int] | None = None,
    threads: str = "main",
    collapse: bool = True,
    in_dispatch: dict[int, tuple[str, int, str]] | None = None,
    outliers: list[int] | None = None,
) -> tuple[dict[str, Any], dict[int, ProcessStacks]]:
    """Merge every process's latest stacks. Returns (merged, per_process): `merged` is the JSON
    structure stored in Report.merged_stacks, `per_process` the analysis of each process.
    `outliers`: the odd processes when the guard's records already say who they are (who ran a
    computation the others never ran), rather than the shape of the stacks."""
    last_seq = last_seq or {}
    in_dispatch = in_dispatch or {}
    per = {i: analyze_process(i, snaps, collapse, in_dispatch.get(i)) for i, snaps in sorted(stacks.items())}
    with_stacks = [p for p in per.values() if p.thread is not None]

    groups: dict[tuple, list[ProcessStacks]] = {}
    for p in with_stacks:
        groups.setdefault(tuple(d.key for d in p.display), []).append(p)
    classes = []
    for members in groups.values():
        procs = sorted(p.process_index for p in members)
        head = members[0]
        b = head.blocked or Blocked("unknown", "")
        whats: dict[str, list[int]] = {}
        for p in members:
            whats.setdefault((p.blocked or b).what, []).append(p.process_index)
        if len(whats) > 1 and all(p.blocked and p.blocked.category == b.category for p in members):
            # One stack, but each member is in its own dispatch (`jit(step) static(n=1)` on one,
            # `static(n=2)` on the other): name each, not the first for all.
            b = Blocked(b.category, "; ".join(f"{w} on {'process' if len(ps) == 1 else 'processes'} {ranges(ps)}"
                                              for w, ps in whats.items()), b.frame, b.name)
        seqs = [last_seq[i] for i in procs if i in last_seq]
        progresses = {p.progress for p in members}
        classes.append({
            "processes": procs,
            "label": ranges(procs),
            "outlier": False,
            "location": _loc_dict(head.location),
            "blocked_on": b.what,
            "category": b.category,
            "phrase": phrase(b),
            "waits_on_peers": b.waits_on_peers,
            "progress": progresses.pop() if len(progresses) == 1 else "mixed",
            "last_seq": [min(seqs), max(seqs)] if seqs else None,
            "frames": [d.to_dict() for d in head.display],
        })
    _rank_classes(classes)
    if outliers is not None:
        forced = set(outliers)
        for c in classes:
            c["outlier"] = bool(forced) and set(c["processes"]) <= forced
        classes.sort(key=lambda c: not c["outlier"])
        outliers = sorted(forced & set(per))  # with or without stacks (a process killed by SIGKILL)
    else:
        outliers = sorted(i for c in classes if c["outlier"] for i in c["processes"])

    trees = [{"thread": "MainThread", "root": _tree([(p.process_index, p.display, p.blocked) for p in with_stacks], outliers)}]
    if threads == "all":
        by_name: dict[str, list[tuple[int, list[DisplayFrame], Blocked | None]]] = {}
        for i, snaps in sorted(stacks.items()):
            usable = [s for s in snaps if s.threads]
            if not usable:
                continue
            for t in usable[-1].threads:
                if t.is_main or not t.frames:
                    continue
                by_name.setdefault(t.name, []).append((i, display_frames(t.frames, collapse), blocked_on(t.frames, t.active)))
        for name in sorted(by_name):
            trees.append({"thread": name, "root": _tree(by_name[name], outliers)})

    merged = {
        "scope": threads,
        "collapsed": collapse,
        "processes": sorted(per),
        "without_stacks": sorted(p.process_index for p in per.values() if p.thread is None),
        "outliers": outliers,
        "classes": classes,
        "trees": trees,
    }
    return merged, per


def _loc_dict(loc: Location | None) -> dict[str, Any] | None:
    if loc is None:
        return None
    return {"file": loc.file, "short_file": short_path(loc.file), "line": loc.line, "function": loc.function, "source": loc.source}


def _tree(items: list[tuple[int, list[DisplayFrame], Blocked | None]], outliers: list[int]) -> dict[str, Any]:
    root: dict[str, Any] = {"name": "", "file": "", "short_file": "", "line": 0, "kind": "root", "hidden": 0, "inner": None,
                            "processes": [], "children": [], "ends": []}
    index: dict[int, dict[tuple, dict[str, Any]]] = {}
    for proc, display, blocked in items:
        node = root
        node["processes"].append(proc)
        for d in display:
            kids = index.setdefault(id(node), {})
            child = kids.get(d.key)
            if child is None:
                child = {**d.to_dict(), "processes": [], "children": [], "ends": []}
                kids[d.key] = child
                node["children"].append(child)
            child["processes"].append(proc)
            node = child
        # Where this stack ends: what it is blocked on there.
        b = blocked or Blocked("unknown", "")
        entry = next((e for e in node["ends"] if e["blocked_on"] == b.what and e["category"] == b.category), None)
        if entry is None:
            entry = {"blocked_on": b.what, "category": b.category, "processes": []}
            node["ends"].append(entry)
        entry["processes"].append(proc)
    out = set(outliers)

    def finish(n: dict[str, Any]) -> None:
        n["processes"].sort()
        n["label"] = ranges(n["processes"])
        n["outlier"] = bool(out) and set(n["processes"]) <= out
        for e in n["ends"]:
            e["processes"].sort()
            e["label"] = ranges(e["processes"])
        for c in n["children"]:
            finish(c)
        n["children"].sort(key=lambda c: (not c["outlier"], len(c["processes"]), c["processes"][0]))

    finish(root)
    return root
