"""`mcjax-guard report DIR` and `mcjax-guard dump`: the report subcommands.

runtime_guard/cli.py wires them in:

    add_report_parser(subparsers)   # sets func=run_report
    add_dump_parser(subparsers)     # sets func=run_dump

Exit codes: 0 done (`dump --list` also when no job runs: it says "no running guarded job"), 1 nothing
to do (no running supervisor / no snapshot came), 2 bad input (or a run directory that is not yours).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from runtime_guard.report.model import Report
from runtime_guard.report.runfile import RunDirError, is_live_supervisor, list_supervisors, snapshot_reports
from runtime_guard.report.writer import FILES, render

FORMATS = ("text", "json", "html", "rich")


def add_report_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "report", help="re-render a saved report", description="Re-render a report saved by mcjax-guard (report.json)."
    )
    p.add_argument("path", metavar="DIR", help="report directory (or its report.json)")
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="text, json, html, or rich (colour terminal); default: rich on a terminal, text otherwise")
    p.add_argument("-o", "--output", metavar="FILE", help="write here instead of standard output")
    p.set_defaults(func=run_report)
    return p


def load_report(path: str | os.PathLike[str]) -> Report:
    """Read DIR/report.json (or the JSON file itself); ValueError with a clear message on bad input."""
    p = Path(path)
    if p.is_dir():
        p = p / "report.json"
    if not p.is_file():
        raise ValueError(f"no report at {p}")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{p}: not a readable JSON report: {e}") from e
    if not isinstance(data, dict) or "kind" not in data or "processes" not in data:
        raise ValueError(f"{p}: not an mcjax-guard report (no 'kind'/'processes')")
    try:
        return Report.from_dict(data)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"{p}: malformed report: {e}") from e


def run_report(args: argparse.Namespace) -> int:
    try:
        report = load_report(args.path)
    except ValueError as e:
        print(f"mcjax-guard report: {e}", file=sys.stderr)
        return 2
    fmt = args.format or ("rich" if sys.stdout.isatty() and not args.output else "text")
    try:
        return _render_to(report, fmt, args.output)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        # A report.json edited by hand or by another tool: its parts are not what they should be.
        print(f"mcjax-guard report: {args.path}: malformed report ({type(e).__name__}: {e})", file=sys.stderr)
        return 2


def _render_to(report: Report, fmt: str, output: str | None) -> int:
    if fmt == "rich":
        from rich.console import Console

        from runtime_guard.report.render_rich import render_rich

        view = render_rich(report)
        if output:
            with open(output, "w", encoding="utf-8") as f:
                Console(file=f, width=120).print(view)
        else:
            Console().print(view)
        return 0
    text = render(report, fmt)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def add_dump_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "dump", help="write a snapshot report of a running job without stopping it",
        description="Ask running mcjax-guard supervisors (SIGUSR1) for a snapshot report: every process's stacks, "
                    "merged. The job keeps running.",
    )
    p.add_argument("--pid", type=int, help="supervisor pid (default: every running supervisor of this user)")
    p.add_argument("--report-dir", help="only the supervisor writing to this report directory")
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the report (default 30; 0: do not wait)")
    p.add_argument("--list", action="store_true",
                   help="only list running supervisors (exit 0; 'no running guarded job' on stderr when none)")
    p.set_defaults(func=run_dump)
    return p


def run_dump(args: argparse.Namespace) -> int:
    try:
        # Only verified supervisors: a live process of this user that started when its run file says.
        sups = list_supervisors()
    except RunDirError as e:
        print(f"mcjax-guard dump: {e}", file=sys.stderr)
        return 2
    if args.pid is not None:
        sups = [s for s in sups if s["pid"] == args.pid]
    if args.report_dir:
        want = str(Path(args.report_dir).resolve())
        sups = [s for s in sups if s.get("report_dir") == want]
    if not sups:
        what = f"pid {args.pid} is not a running mcjax-guard supervisor of yours" if args.pid is not None \
            else "no running guarded job"
        print(f"mcjax-guard dump: {what}{'' if args.list else '; nothing signalled'}", file=sys.stderr)
        return 0 if args.list else 1
    if args.list:
        for s in sups:
            print(f"{s['pid']}\t{s.get('report_dir', '')}\t{' '.join(map(str, s.get('argv', [])))}")
        return 0
    before = {s["pid"]: set(snapshot_reports(s["report_dir"])) for s in sups}
    asked = []
    for s in sups:
        if not is_live_supervisor(s):  # it ended since it was listed
            continue
        try:
            os.kill(s["pid"], signal.SIGUSR1)
            asked.append(s)
        except OSError as e:
            print(f"mcjax-guard dump: cannot signal supervisor {s['pid']}: {e}", file=sys.stderr)
    if not asked:
        return 1
    if args.wait <= 0:
        for s in asked:
            print(f"asked supervisor {s['pid']}; the snapshot will appear under {s['report_dir']}")
        return 0
    deadline = time.monotonic() + args.wait
    pending = {s["pid"]: s for s in asked}
    rc = 0
    while pending and time.monotonic() < deadline:
        for pid, s in list(pending.items()):
            new = sorted(set(snapshot_reports(s["report_dir"])) - before[pid])
            # report.json is written first; wait for the other files unless a renderer failed.
            if new and (all((new[-1].parent / n).exists() for n in FILES.values()) or time.time() - new[-1].stat().st_mtime > 2):
                print(new[-1].parent)
                del pending[pid]
        time.sleep(0.2)
    for pid in pending:
        print(f"mcjax-guard dump: supervisor {pid} wrote no snapshot within {args.wait:g} s", file=sys.stderr)
        rc = 1
    return rc
