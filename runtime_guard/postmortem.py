"""Post-mortem reports: every process's stacks, merged, with the odd process named first.

The supervisor calls, when it detects a hang (or on SIGUSR1 / `mcjax-guard dump`, kind
"snapshot"), *before* it kills anything:

    report, paths = collect_and_write("hang", processes, targets, report_dir, headline=...)

or, with stacks it collected itself (`runtime_guard.stacks.collect_stacks`) or received from
other hosts, `write_postmortem(...)`. `processes` are the guard's ProcessReports (index, pid,
status, last dispatch); this module adds the stacks, where each process is, what it is blocked
on, whether it moved between snapshots, the merged call tree, and a one-line summary.
"""

from __future__ import annotations

import linecache
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from runtime_guard.report.model import KINDS, Frame, Location, ProcessReport, Report, StackSnapshot
from runtime_guard.report.view import exit_text, settle_statuses
from runtime_guard.report.writer import write_report
from runtime_guard.stacks.collect import TargetLike, collect_stacks
from runtime_guard.stacks.frames import is_library, short_path
from runtime_guard.stacks.merge import ProcessStacks, merge_stacks, ranges


def build_postmortem_report(
    kind: str,
    processes: Iterable[ProcessReport],
    stacks: dict[int, list[StackSnapshot]],
    guard_notes: Iterable[str] = (),
    *,
    headline: str = "",
    threads: str = "main",
    collapse: bool = True,
    job_id: str = "",
    guard: dict[str, Any] | None = None,
    seq: int | None = None,
    differing_fields: Iterable[str] = (),
    missing_hosts: Iterable[str] = (),
) -> Report:
    """A Report with stacks, merged tree, per-process location/blocked-on/progress and a summary
    naming the odd process. `headline` (e.g. "no dispatch completed for 30 s") starts the summary;
    the guard's own notes are kept first in `notes`."""
    if kind not in KINDS:
        raise ValueError(f"unknown report kind {kind!r}; expected one of {', '.join(KINDS)}")
    procs = {p.process_index: p for p in processes}
    # The guard's culprits of a `died` report, before later exits are settled into statuses.
    died = [i for i, p in sorted(procs.items()) if p.status == "died"] if kind == "died" else None
    settle_statuses(Report(kind=kind, summary="-", processes=list(procs.values())))
    for idx in stacks:
        procs.setdefault(idx, ProcessReport(process_index=idx))
    # Processes may arrive with their snapshots attached (from another host's supervisor).
    stacks = {i: list(stacks.get(i) or p.snapshots) for i, p in procs.items()}
    last_seq = {i: p.last_seq for i, p in procs.items()}
    in_dispatch = {
        i: (p.dispatch.location.file, p.dispatch.location.line,
            f"a cross-process computation ({p.dispatch.name}, dispatch #{p.dispatch.seq})")
        for i, p in procs.items() if p.dispatch is not None and p.dispatch.location is not None
    }
    culprit = one_sided(kind, list(procs.values()), seq) if kind == "exited" else None
    odd = culprit.odd if culprit is not None else died if died else guard_outliers(kind, list(procs.values()))
    merged, per = merge_stacks({i: stacks[i] for i in sorted(procs)}, last_seq, threads=threads,
                               collapse=collapse, in_dispatch=in_dispatch, outliers=odd)

    for idx, p in procs.items():
        p.snapshots = stacks[idx]
        ps = per[idx]
        if ps.blocked is not None:
            p.blocked_on = ps.blocked.what
        p.progress = ps.progress
        guard_in_library = p.location is not None and is_library(Frame("", p.location.file, p.location.line))
        if ps.location is not None and (p.location is None or guard_in_library or kind in ("hang", "missing", "snapshot")):
            p.location = ps.location  # where it is now, in user code; the guard's call site stays in p.dispatch
        if p.status == "unknown":
            p.status = _status(kind, ps)
        if ps.thread is None and not p.note:
            p.note = "no stacks: " + ("; ".join(dict.fromkeys(ps.notes)) or "none collected")
        for loc in (p.location, p.dispatch.location if p.dispatch is not None else None):
            if loc is not None and not loc.source and loc.file and loc.line:
                loc.source = linecache.getline(loc.file, loc.line).strip()
    if culprit is not None:
        for i in culprit.odd:
            if procs[i].status == "ok":
                procs[i].status = "diverged"
    _mark_killed(merged, procs)

    notes = list(guard_notes)
    notes.extend(_method_notes(per))
    for host in missing_hosts:
        notes.append(f"host {host} did not send its stacks in time: its processes are missing from the merge")
    summary = culprit.sentence if culprit is not None else stack_summary(merged, len(procs))
    if headline:
        summary = f"{headline}; {summary}"
    return Report(
        kind=kind,
        summary=summary,
        processes=[procs[i] for i in sorted(procs)],
        created=time.time(),
        job_id=job_id,
        seq=seq,
        differing_fields=list(differing_fields),
        notes=notes,
        merged_stacks=merged,
        guard=dict(guard or {}),
    )


def _mark_killed(merged: dict[str, Any], procs: dict[int, ProcessReport]) -> None:
    """A class whose processes were all killed by one signal says so (`ended`): its stack is where
    each was as it died (a crash dump), not where it waits."""
    dead = {i: exit_text(p.exit_code) for i, p in procs.items() if p.exit_code is not None and p.exit_code < 0}
    for c in merged["classes"]:
        how = {dead.get(i) for i in c["processes"]}
        if len(how) == 1 and None not in how:
            c["ended"] = how.pop()
            c["progress"] = ""


@dataclass
class OneSided:
    """An `exited` report's two sides: who ran the computation the one that left never ran."""

    odd: list[int]  # the processes the report singles out
    sentence: str


def one_sided(kind: str, procs: list[ProcessReport], seq: int | None) -> OneSided | None:
    """The processes that left (`exited`) and those that dispatched #seq, which they never ran,
    each with its line. When the ones that left ended normally (exit 0), the smaller side is odd
    (a rank-0-only collective, one process's batch more or fewer; on a tie, the side that ran the
    extra work). When a process left by an exception, it is."""
    left = [p for p in procs if p.status in ("exited", "died")]
    ran = [p for p in procs if p.dispatch is not None and seq is not None and p.dispatch.seq >= seq
           and p not in left]
    if not left or not ran:
        return None
    normal = all(p.exit_code == 0 for p in left)
    def who(ps: list[ProcessReport]) -> str:
        return _who([p.process_index for p in ps])[0]
    runs = "; ".join(f"{_who([p.process_index])[0]} ran dispatch #{p.dispatch.seq} {p.dispatch.name}"
                     + (f" at {_short(p.dispatch.location)}" if p.dispatch.location else "") for p in ran)
    lefts = "; ".join(f"{_who([p.process_index])[0]} did not: it left" + (f" at {_short(p.location)}" if p.location else "")
                      + f" after dispatch #{p.last_seq}" + (f" ({exit_text(p.exit_code)})" if p.exit_code is not None else "")
                      for p in left)
    # Ended normally: the smaller side did what the others did not (one process's extra batch, or
    # one process's fewer batches); on a tie, the side that ran the extra work.
    odd = (ran if len(ran) <= len(left) else left) if normal else left
    return OneSided(odd=sorted(p.process_index for p in odd),
                    sentence=f"{runs}; {lefts}; the odd one{'s' if len(odd) > 1 else ''}: {who(odd)}")


def guard_outliers(kind: str, procs: list[ProcessReport]) -> list[int] | None:
    """A divergence's odd processes are the guard's (a strict majority against the rest; none on
    a tie), not the stacks': the stacks only show where each went next."""
    if kind != "divergence":
        return None
    diverged = [p.process_index for p in procs if p.status == "diverged"]
    compared = [p for p in procs if p.status in ("ok", "diverged")]
    return diverged if len(diverged) < len(compared) else []


def _short(loc: Location) -> str:
    return f"{short_path(loc.file)}:{loc.line}"


def _status(kind: str, ps: ProcessStacks) -> str:
    if ps.thread is None:
        return "unknown"
    if kind == "hang":
        return "ok" if ps.progress == "moving" else "hung"
    return "ok" if kind == "snapshot" else "unknown"


def _who(procs: list[int], past: bool = False) -> tuple[str, str]:
    if len(procs) == 1:
        return f"process {procs[0]}", "was" if past else "is"
    return f"processes {ranges(procs)}", "were" if past else "are"


def _where(c: dict[str, Any]) -> str:
    loc = c["location"]
    if c.get("ended"):  # died: where it was as it died
        at = f" at {loc['short_file']}:{loc['line']}" if loc else ""
        what = f" while {c['phrase']}" if c["phrase"].startswith(("leaving", "running", "waiting")) else \
            f" {c['phrase']}" if c["phrase"] else ""
        return f"{c['ended']}{at}{what}"
    text = f"at {loc['short_file']}:{loc['line']}" if loc else "" if c["phrase"].startswith("leaving") else "at an unknown place"
    if c["phrase"]:
        text = f"{text} {c['phrase']}".strip()
    if c["progress"] in ("stuck", "frozen"):
        text += f" ({c['progress']})"
    return text


def stack_summary(merged: dict[str, Any], n_processes: int) -> str:
    """One sentence: who is where, the odd process first."""
    classes = merged["classes"]
    missing = merged["without_stacks"]
    tail = f"; no stacks from {_who(missing)[0]}" if missing else ""
    if not classes:
        return "no stacks could be collected (see each process's note)"
    if len(classes) == 1:
        c = classes[0]
        if len(c["processes"]) > 1 and len(c["processes"]) == n_processes:
            return f"all {n_processes} processes are {_where(c)}"
        who, verb = _who(c["processes"], bool(c.get("ended")))
        return f"{who} {verb} {_where(c)}{tail}"
    outliers = [c for c in classes if c["outlier"]]
    others = [c for c in classes if not c["outlier"]]
    if outliers:
        head = outliers[0]
        who, verb = _who(head["processes"])
        parts = [f"{who} {verb} not where the others are: {_where(head)}"]
    else:
        parts = ["the processes are split"]
        others = classes
    for c in outliers[1:] + others:
        who, verb = _who(c["processes"], bool(c.get("ended")))
        parts.append(f"{who} {verb} {_where(c)}")
    return "; ".join(parts) + tail


def _method_notes(per: dict[int, ProcessStacks]) -> list[str]:
    """Say which method produced the stacks, and why a fallback was used."""
    notes = []
    by_method: dict[str, list[int]] = {}
    for idx, ps in per.items():
        for m in dict.fromkeys(ps.methods):
            by_method.setdefault(m, []).append(idx)
    if by_method:
        notes.append("stacks collected with " + "; ".join(f"{m} (process {ranges(v)})" for m, v in sorted(by_method.items())))
    by_note: dict[str, list[int]] = {}
    for idx, ps in sorted(per.items()):
        for n in dict.fromkeys(ps.notes):
            by_note.setdefault(n, []).append(idx)
    for n, idxs in by_note.items():
        notes.append(f"{_who(idxs)[0]}: {n}")
    return notes


def write_postmortem(
    kind: str,
    processes: Iterable[ProcessReport],
    stacks: dict[int, list[StackSnapshot]],
    report_dir: str | os.PathLike[str],
    guard_notes: Iterable[str] = (),
    **kwargs: Any,
) -> tuple[Report, dict[str, Path]]:
    """build_postmortem_report + write_report (json, txt, html; atomic). Returns (report, paths)."""
    report = build_postmortem_report(kind, processes, stacks, guard_notes, **kwargs)
    return report, write_report(report, report_dir)


def collect_and_write(
    kind: str,
    processes: Iterable[ProcessReport],
    targets: Iterable[TargetLike],
    report_dir: str | os.PathLike[str],
    guard_notes: Iterable[str] = (),
    *,
    native: bool | str = "first",
    snapshots: int = 2,
    interval: float = 2.0,
    timeout: float = 5.0,
    locals: bool = False,
    **kwargs: Any,
) -> tuple[Report, dict[str, Path]]:
    """Collect stacks from local `targets` ((process_index, pid, fallback_path) each) and write
    the report. Takes about (snapshots - 1) * interval + ~1.5 s with native frames."""
    stacks = collect_stacks(list(targets), native=native, snapshots=snapshots, interval=interval, timeout=timeout, locals=locals)
    return write_postmortem(kind, processes, stacks, report_dir, guard_notes, **kwargs)


__all__ = ["build_postmortem_report", "collect_and_write", "stack_summary", "write_postmortem"]
