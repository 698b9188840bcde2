"""What every renderer shows, derived once from a report: the headline, the fact lines under it,
one row per process, the notes. Text, rich and HTML all render this view, so they cannot
disagree on a dispatch number, a line or a status; report.json holds the data it is derived from.

Adding a fact to every output is one place: a line in `verdict_lines` (for the report as a
whole) or a field of `Row` (per process) and its cell in each renderer's table.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field

from runtime_guard.report.model import Location, ProcessReport, Report
from runtime_guard.stacks.frames import short_path

# Statuses of processes that are no longer running.
GONE = ("exited", "died")


def exit_text(code: int | None) -> str:
    """'exit 0', 'exit 1', 'killed by SIGABRT' for a subprocess return code ('' when unknown)."""
    if code is None:
        return ""
    if code >= 0:
        return f"exit {code}"
    return f"killed by {signal_name(-code)}"


def signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def settle_statuses(report: Report) -> Report:
    """A process's status agrees with how it ended: one killed by a signal `died`, one that exited
    on its own `exited`, whatever the guard had said when it wrote its verdict (a survivor that
    then aborted is not `ok`). Idempotent; returns the report."""
    for p in report.processes:
        if p.exit_code is None:
            continue
        if p.exit_code < 0:
            p.status = "died"
        elif p.status in ("ok", "hung", "unknown", "never-joined"):
            p.status = "exited"
    return report


def where(loc: Location | None, function: bool = True) -> str:
    """'train.py:76 in step' (short path) or ''."""
    if loc is None or not loc.file:
        return ""
    text = f"{short_path(loc.file)}:{loc.line}"
    if function and loc.function and loc.function != "<module>":
        text += f" in {loc.function}"
    return text


@dataclass
class Row:
    """One process, as every renderer's table shows it."""

    process: int
    odd: bool  # one of the processes the report singles out
    status: str  # status and how it ended: "died (killed by SIGABRT)", "exited (exit 0)", "ok"
    dispatch: str  # "#5 jit(step)" (the dispatch of interest), "#4" (last number only) or ""
    called_at: str  # where that dispatch was called: "train.py:76 in main"
    now_at: str  # where it is now, or was when it left or died, when that is another place
    waiting: str  # what it waits on, or how it ended ("killed by SIGABRT while in a collective ...")
    note: str = ""
    source: str = ""  # the source line at `now_at` (or at `called_at`)


@dataclass
class ReportView:
    kind: str
    headline: str  # "mcjax-guard: DIVERGENCE: <summary>"
    facts: list[str] = field(default_factory=list)  # lines under the headline
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stacks: str = ""  # which processes' stacks the report holds, in words


def build_view(report: Report) -> ReportView:
    odd = set((report.merged_stacks or {}).get("outliers") or [])
    return ReportView(
        kind=report.kind,
        headline=f"mcjax-guard: {report.kind.upper()}: {report.summary}",
        facts=verdict_lines(report),
        rows=[row(p, p.process_index in odd) for p in sorted(report.processes, key=lambda p: p.process_index)],
        notes=list(report.notes),
        stacks=stacks_text(report),
    )


def verdict_lines(report: Report) -> list[str]:
    """The facts under the headline: which dispatch the report is about, in words that match
    the kind (the headline says "died after dispatch #4"; this line says #5 is the first it
    never ran), the fields that differ."""
    out = []
    if report.seq is not None:
        out.append(dispatch_fact(report))
    if report.differing_fields:
        out.append(f"differing fields: {', '.join(report.differing_fields)}")
    from runtime_guard.causes import cause_lines

    out.extend(cause_lines(report))  # the mcjax-lint findings that explain it
    return out


def dispatch_fact(report: Report) -> str:
    seq = report.seq
    who = _plist([p.process_index for p in report.processes if p.status in _CULPRIT.get(report.kind, ())])
    if report.kind == "divergence":
        return f"first differing dispatch: #{seq}"
    if report.kind == "missing":
        return f"dispatch #{seq}: never joined by {who}" if who else f"dispatch #{seq}: not joined by every process"
    if report.kind in ("exited", "died"):
        return f"dispatch #{seq}: the first that {who} never ran" if who else f"dispatch #{seq}: not run by every process"
    if report.kind == "hang":
        return f"every running process is past dispatch #{seq}"
    return f"dispatch #{seq}"


_CULPRIT = {"missing": ("never-joined",), "exited": ("exited",), "died": ("died",)}


def _plist(ps: list[int]) -> str:
    ps = sorted(set(ps))
    if not ps:
        return ""
    return f"process {ps[0]}" if len(ps) == 1 else "processes " + ", ".join(map(str, ps[:-1])) + f" and {ps[-1]}"


def row(p: ProcessReport, odd: bool) -> Row:
    ended = exit_text(p.exit_code)
    status = p.status + (f" ({ended})" if ended else "")
    if p.dispatch is not None:
        dispatch = f"#{p.dispatch.seq} {p.dispatch.name}"
        called = where(p.dispatch.location)
    else:
        dispatch, called = (f"#{p.last_seq}" if p.last_seq else ""), ""
    here = where(p.location)
    if here == called:
        here = ""  # the same place: said once
    elif here and p.status in GONE:
        here = ("died at " if p.status == "died" else "left at ") + here
    waiting = p.blocked_on + (f" ({p.progress})" if p.blocked_on and p.progress else "")
    if p.exit_code is not None and p.exit_code < 0:
        waiting = ended + (f" while {_while(p.blocked_on)}" if p.blocked_on else "")
    src = (p.location.source if p.location is not None and here else "") or (
        p.dispatch.location.source if p.dispatch is not None and p.dispatch.location is not None else "")
    return Row(process=p.process_index, odd=odd, status=status, dispatch=dispatch, called_at=called,
               now_at=here, waiting=waiting, note=p.note, source=src)


def _while(blocked_on: str) -> str:
    return blocked_on if blocked_on.startswith(("leaving", "running", "waiting")) else f"in {blocked_on}"


def stacks_text(report: Report) -> str:
    """'stacks of processes 0 and 1' / 'no stacks could be collected' / '' (none asked for)."""
    merged = report.merged_stacks
    if not merged:
        return ""
    # From the merge itself (a copy without snapshots, as pytest prints it, says the same).
    missing = sorted(merged.get("without_stacks") or [])
    have = sorted(set(merged.get("processes") or []) - set(missing))
    if not have:
        return "no stacks could be collected (see each process's note)"
    text = f"stacks of {_plist(have)}"
    return text + (f"; none from {_plist(missing)}" if missing else "")
