"""Turn dispatch records into reports. Shared by the in-process comparator (records fetched through
the coordination service) and the supervisor (records read from flight-recorder files)."""

from __future__ import annotations

import linecache
import time
from typing import Any

from runtime_guard.compare import subset_text
from runtime_guard.report.model import Dispatch, Location, ProcessReport, Report

GONE = ("exited", "failed")


def location(rec: dict | None) -> Location | None:
    if not rec or not rec.get("file"):
        return None
    line = int(rec.get("line") or 0)
    src = rec.get("source") or linecache.getline(rec["file"], line).strip()
    return Location(file=rec["file"], line=line, function=rec.get("function", ""), source=src)


def dispatch(rec: dict) -> Dispatch:
    fields = dict(rec.get("fields") or {})
    fields.setdefault("name", rec.get("name", "?"))
    if rec.get("name") and rec["name"] != fields["name"]:
        # The Python function dispatched, with its static arguments' values: two cached variants
        # of one function differ here while the computation's name does not.
        fields["function"] = rec["name"]
    if rec.get("cached"):
        fields["executable"] = "cached (signature of its last compilation)"
    return Dispatch(seq=int(rec["seq"]), name=rec.get("name", "?"), fields=fields, location=location(rec))


def divergence_report(seq: int, info: dict[int, dict], records: dict[int, dict[int, dict]],
                      guard: dict[str, Any] | None = None) -> Report:
    """Processes dispatched different computations at #seq.

    `info[p]`: {"pid", "host", "seq", "status"}; `records[p][s]`: p's record of dispatch #s
    ({"seq", "key", "exact", "name", "file", "line", "function", "source"?, "fields", "cached"})."""
    procs: list[ProcessReport] = []
    field_values: dict[str, set[str]] = {}
    at: dict[int, dict] = {}
    for p in sorted(set(info) | set(records)):
        st = info.get(p, {})
        rec = records.get(p, {}).get(seq)
        if rec is None:
            recs = records.get(p, {})
            last = recs[max(recs)] if recs else None
            gone = st.get("status") in GONE
            procs.append(ProcessReport(
                process_index=p, status="exited" if gone else "never-joined", pid=st.get("pid"),
                host=st.get("host", ""), last_seq=int(st.get("seq", 0)), location=location(last),
                dispatch=dispatch(last) if last else None,
                note=(f"left the program after dispatch #{st.get('seq', 0)}" if gone else
                      f"has dispatched {st.get('seq', 0)} computations, none at #{seq}")))
            continue
        at[p] = rec
        d = dispatch(rec)
        for k, v in d.fields.items():
            field_values.setdefault(k, set()).add(v)
        procs.append(ProcessReport(process_index=p, status="ok", pid=st.get("pid"), host=st.get("host", ""),
                                   last_seq=int(st.get("seq", 0)), location=location(rec), dispatch=d))
    differing = sorted(k for k, v in field_values.items() if len(v) > 1)
    groups: dict[tuple, list[int]] = {}
    for p, rec in at.items():
        groups.setdefault((rec["key"], tuple(sorted(dispatch(rec).fields.items()))), []).append(p)
    sizes = sorted((len(g) for g in groups.values()), reverse=True)
    if len(groups) > 1:
        # A strict majority names the odd ones out; a tie marks everyone as diverged.
        majority = max(groups.values(), key=len) if sizes[0] > sizes[1] else []
        for pr in procs:
            if pr.process_index in at and pr.process_index not in majority:
                pr.status = "diverged"
    parts = []
    for pr in procs:
        if pr.process_index in at and pr.dispatch is not None:
            where = f" at {pr.location.file}:{pr.location.line}" if pr.location else ""
            parts.append(f"process {pr.process_index} ran {pr.dispatch.name}{where}")
        elif pr.status in ("never-joined", "exited"):
            parts.append(f"process {pr.process_index} " + ("had left the program" if pr.status == "exited"
                                                           else "had not got there"))
    summary = f"processes dispatched different computations at #{seq}: " + "; ".join(parts)
    if differing:
        summary += f" (differing: {', '.join(differing)})"
    rep = Report(kind="divergence", summary=summary, processes=procs, created=time.time(), seq=seq,
                 differing_fields=differing, guard=dict(guard or {}))
    odd = [pr.process_index for pr in procs if pr.status == "diverged"]
    if odd and len(odd) < len(at):
        rep.notes.append("odd one out: process " + ", ".join(map(str, odd)))
    return rep


def over_subset(rep: Report, seq: int, subset: tuple[int, ...]) -> Report:
    """Phrase a divergence found in the stream of computations over a subset of the processes."""
    where = subset_text(subset)
    prefix = f"processes dispatched different computations at #{seq}"
    if rep.summary.startswith(prefix):
        rep.summary = f"{where} (a sub-mesh) dispatched different computations at #{seq} of their shared ones" \
                      f"{rep.summary[len(prefix):]}"
    else:
        rep.summary = f"{rep.summary} (among {where})"
    rep.notes.append(f"A computation over a subset of the processes: {where} (a sub-mesh). Dispatch numbers "
                     f"count only the computations over exactly these processes.")
    return rep


def first_divergence(records: dict[int, dict[int, dict]]) -> int | None:
    """First seq where two processes' complete records differ: a different computation, or the
    same computation compiled for different shapes/dtypes/shardings."""
    if len(records) < 2:
        return None
    common = min((max(r) if r else 0) for r in records.values())
    lo = max(min(r) if r else 1 for r in records.values())
    for seq in range(lo, common + 1):
        recs = [r[seq] for r in records.values() if seq in r]
        if len({r["key"] for r in recs}) > 1:
            return seq
        exacts = {r["exact"] for r in recs if r.get("exact")}
        if len(exacts) > 1:
            return seq
    return None
