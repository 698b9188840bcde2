"""From symptom to cause: the linter's findings that explain a guard report.

When a report is written, the user files of its call sites and stack frames are linted in
process (`mcjax_lint.api.lint_paths`) and the findings that explain a reported site are kept in
`Report.causes`, best first:

1. the finding's statement contains the site (the loop around the call, the branch holding it,
   the caller's statement that leads into a helper on the stack);
2. the finding names the site as its collective work;
3. the finding's statement comes before the site in the same function (the early exit or the
   branch above it). Only a guess (it may have changed nothing the report shows): the cause's
   `match` says which of the three it is, and this one reads "possible cause", not "likely".

Bounded: the linting runs in a daemon thread given `BUDGET` seconds; whatever happens (a
timeout, an exception, a file that does not parse) the report is still written, with a note.
On a timeout the supervisor, once it has stopped the job, waits up to `LATE_WAIT` seconds more
and rewrites the report with the causes (`finish_late`): nothing waits on it then.
`MCJAX_NO_CAUSES=1` turns it off (benchmarks/report_causes.py compares both).
"""

from __future__ import annotations

import ast
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from runtime_guard.report.model import Frame, Report

BUDGET = 2.0  # seconds a report may wait for its causes
LATE_WAIT = 20.0  # seconds more, once the job is stopped (`finish_late`)
MAX_CAUSES = 5
# Report kinds that describe a failure: a snapshot on request explains nothing.
KINDS = ("divergence", "missing", "exited", "died", "hang")


@dataclass(frozen=True)
class Site:
    process: int
    file: str  # absolute
    line: int
    what: str  # "call site" (of the reported dispatch), "location" (where it is / was), "stack"

    def to_dict(self) -> dict[str, Any]:
        return {"process": self.process, "file": self.file, "line": self.line, "what": self.what}


_prewarm: dict[str, Any] = {}


def prewarm(urgent: bool = False) -> None:
    """Import the linter in a background thread (about half a second of CPU, seconds on a loaded
    machine), so that a report spends its budget on linting. The supervisor calls it as the job
    starts, at the lowest CPU priority (the job's processes are starting too), and again with
    `urgent` when it prepares a report (stacks are being taken meanwhile): then the thread runs
    at normal priority. Idempotent."""
    if os.environ.get("MCJAX_NO_CAUSES"):
        return
    t = _prewarm.get("thread")
    if t is None:
        def load() -> None:
            _prewarm["tid"] = threading.get_native_id()
            _set_nice(_prewarm["tid"], 0 if _prewarm.get("urgent") else 19)
            try:
                import mcjax_lint.analysis.driver  # noqa: F401 - libcst and the rules
                import mcjax_lint.api  # noqa: F401
                import mcjax_lint.engine  # noqa: F401
            except Exception:  # noqa: BLE001 - attach_causes reports it, if it matters
                pass

        _prewarm["urgent"] = urgent
        t = _prewarm["thread"] = threading.Thread(target=load, name="mcjax-causes-import", daemon=True)
        t.start()
    elif urgent and not _prewarm.get("urgent"):
        _prewarm["urgent"] = True
        if t.is_alive() and "tid" in _prewarm:
            _set_nice(_prewarm["tid"], 0)


def _set_nice(tid: int, nice: int) -> None:
    """One thread's CPU priority (Linux: a thread id is a process id for setpriority)."""
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    except (AttributeError, OSError):
        pass  # lowering a priority back needs privileges: it then stays low (still bounded)


def attach_causes(report: Report, budget: float = BUDGET) -> Report:
    """Fill `report.causes` ([] when no finding explains the report). Never raises: a failure
    or a timeout leaves `causes` unset and says why in a note. Returns the report."""
    if report.kind not in KINDS or report.causes is not None or os.environ.get("MCJAX_NO_CAUSES"):
        return report
    try:
        sites = report_sites(report)
        if not sites:
            return report
        files = sorted({s.file for s in sites})
        result: dict[str, Any] = {}

        def run() -> None:
            try:
                from mcjax_lint.api import lint_paths

                result["findings"], result["errors"] = lint_paths(files)
            except BaseException as e:  # noqa: BLE001 - reported as a note
                result["error"] = e

        t = threading.Thread(target=run, name="mcjax-causes", daemon=True)
        t.start()
        t.join(budget)
        if t.is_alive():
            note = (f"likely cause: mcjax-lint did not finish within {budget:g} s; "
                    f"run `mcjax-lint {' '.join(_short(f) for f in files)}`")
            report.notes.append(note)
            _late[id(report)] = (t, result, sites, note)  # finish_late may still use it
            return report
        _fill(report, result, sites)
    except Exception as e:  # noqa: BLE001 - the report must be written whatever happens here
        report.notes.append(f"likely cause: could not run mcjax-lint on the reported files ({e!r})")
    return report


def _fill(report: Report, result: dict[str, Any], sites: list[Site]) -> None:
    if "error" in result:
        raise result["error"]
    report.causes = explain(result["findings"], sites)
    if not report.causes:
        skipped = [e.path for e in result.get("errors") or ()]
        if skipped:
            report.notes.append("likely cause: mcjax-lint could not read " + ", ".join(map(_short, skipped)))


# Reports whose linting ran out of budget: id(report) -> (thread, result, sites, note).
_late: dict[int, tuple[threading.Thread, dict[str, Any], list[Site], str]] = {}


def finish_late(report: Report | None, report_dir: str | os.PathLike[str], wait: float = LATE_WAIT) -> bool:
    """After the job is stopped (nothing waits on it any more): give a report whose causes ran
    out of budget up to `wait` more seconds, then rewrite its files with them and print them.
    True when the report was rewritten. Never raises."""
    entry = _late.pop(id(report), None) if report is not None else None
    if entry is None:
        return False
    t, result, sites, note = entry
    try:
        t.join(wait)
        if t.is_alive() or "findings" not in result:
            return False
        report.notes.remove(note)
        _fill(report, result, sites)
        report.notes.append(f"likely cause: found {time.time() - report.created:.1f} s after the report was first "
                            f"written, once the processes were stopped (mcjax-lint ran past its {BUDGET:g} s)")
        from runtime_guard.report.writer import write_report

        write_report(report, report_dir)
        lines = cause_lines(report)
        print("\n".join(f"mcjax-guard: {line}" for line in lines)
              + "\nmcjax-guard: (found after the processes were stopped; the report files now say so)",
              file=sys.stderr)
        return True
    except Exception as e:  # noqa: BLE001
        print(f"mcjax-guard: could not add the likely causes to the report: {e!r}", file=sys.stderr)
        return False


def report_sites(report: Report) -> list[Site]:
    """Every user-code place the report names, per process (the odd ones first): the reported
    dispatch's call site, where the process is (or was), and the user frames of its main
    thread's first snapshot."""
    from runtime_guard.stacks.frames import is_library

    out: list[Site] = []
    seen: set[tuple[int, str, int]] = set()

    def add(p: int, file: str, line: int, what: str) -> None:
        if not file or not line or not file.endswith(".py"):
            return
        if is_library(Frame("", file, line)):
            return
        path = os.path.abspath(file)
        if (p, path, line) in seen or not os.path.isfile(path):
            return
        seen.add((p, path, line))
        out.append(Site(p, path, line, what))

    # The odd processes first (as the report singles them out), so that a finding explaining
    # every process names the odd one's place.
    odd = set((report.merged_stacks or {}).get("outliers") or [])
    odd |= {p.process_index for p in report.processes if p.status in ("diverged", "never-joined", "died", "hung")}
    for p in sorted(report.processes, key=lambda p: (p.process_index not in odd, p.process_index)):
        if p.dispatch is not None and p.dispatch.location is not None:
            add(p.process_index, p.dispatch.location.file, p.dispatch.location.line, "call site")
        if p.location is not None:
            add(p.process_index, p.location.file, p.location.line, "location")
        snap = next((s for s in p.snapshots if s.threads), None)
        if snap is not None:
            th = next((t for t in snap.threads if t.is_main), snap.threads[0])
            for f in th.frames:
                if not f.native:
                    add(p.process_index, f.file, f.line, "stack")
    return out


def explain(findings: list[Any], sites: list[Site]) -> list[dict[str, Any]]:
    """The findings that explain a site, best first (see the module docstring), each once, with
    the site it explains best."""
    scopes: dict[str, list[tuple[int, int]]] = {}
    ranked: list[tuple[tuple, dict[str, Any]]] = []
    for f in findings:
        path = os.path.abspath(f.path)
        best: tuple | None = None
        for order, s in enumerate(sites):
            if s.file != path:
                continue
            rank = _rank(f, s, scopes.setdefault(path, _function_ranges(path)))
            if rank is not None and (best is None or (rank, order) < best[:2]):
                best = (rank, order, s)
        if best is None:
            continue
        rank, order, s = best
        ranked.append(((rank, order, f.line), {
            "code": f.code, "severity": getattr(f.severity, "value", str(f.severity)), "path": path,
            "line": f.line, "end_line": f.end_line, "message": f.message, "site": s.to_dict(),
            "match": MATCHES[rank[0]]}))
    ranked.sort(key=lambda r: r[0])
    return [c for _, c in ranked[:MAX_CAUSES]]


# How a finding explains a site, by `_rank`'s first element.
MATCHES = ("contains", "names", "above")


def _rank(f: Any, s: Site, functions: list[tuple[int, int]]) -> tuple | None:
    if f.line <= s.line <= f.end_line:
        return (0, f.end_line - f.line)  # the innermost statement around the site first
    if any(line == s.line for _, line, _ in f.related):
        return (1, 0)
    if f.end_line < s.line and _scope(functions, f.line) == _scope(functions, s.line):
        return (2, s.line - f.end_line)  # the nearest statement above the site first
    return None


def _function_ranges(path: str) -> list[tuple[int, int]]:
    """(first, last) line of every function in the file."""
    from mcjax_lint.analysis.summary import parse  # the linter's parser: newer grammars too
    from mcjax_lint.errors import AnalysisError

    try:
        with open(path, encoding="utf-8") as fh:
            tree = parse(fh.read(), path)
    except (OSError, UnicodeDecodeError, AnalysisError):
        return []
    return [(n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]


def _scope(functions: list[tuple[int, int]], line: int) -> tuple[int, int] | None:
    """The innermost function holding `line` (None: module level)."""
    inner = None
    for a, b in functions:
        if a <= line <= b and (inner is None or a >= inner[0]):
            inner = (a, b)
    return inner


def cause_lines(report: Report) -> list[str]:
    """Lines under the verdict: 'likely cause: MCJ103 at train.py:75 — loop over ...' (a finding
    that only stands above the site: 'possible cause: ...')."""
    causes = report.causes
    if causes is None:
        return []
    if not causes:
        return ["likely cause: no mcjax-lint finding explains it (no finding at or above the reported "
                "sites in their files)"]
    out = []
    for c in causes:
        s = c.get("site") or {}
        explains = f" (explains process {s['process']} at {_short(s['file'])}:{s['line']})" if s.get("file") else ""
        label = "possible cause" if c.get("match") == "above" else "likely cause"
        out.append(f"{label}: {c['code']} at {_short(c['path'])}:{c['line']} \u2014 {c['message']}{explains}")
    return out


def _short(path: str) -> str:
    from runtime_guard.stacks.frames import short_path

    return short_path(path)
