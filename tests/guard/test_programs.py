"""Every runnable fixture program, run as real local JAX processes under mcjax-guard.

Hazards must be reported with the right kind and each process's call site; clean programs must
run to completion with their own exit status and leave no report.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from runtime_guard.settings import EXIT_DETECTED
from runtime_guard.stacks.fallback import CRASH_METHOD
from tests.guard.conftest import PROGRAMS, expected_kind, site_markers

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "report.schema.json").read_text())
HAZARDS = sorted(p for p in PROGRAMS.glob("*.py") if p.name.startswith(("hazard_", "event_")))
CLEAN = sorted(PROGRAMS.glob("clean_*.py"))

# Extra options per program: a stuck process is found by the hang threshold.
OPTIONS = {"event_stuck_process.py": ("--timeout", "4"), "hazard_rank0_sync_followers_poll.py": ("--timeout", "4"),
           # Cached closures over different constants, chosen per process: fast mode's call
           # identities cannot tell them apart (docs/guard.md, Limits); strict mode compares the
           # executables themselves.
           "hazard_cached_closure.py": ("--mode", "strict"), "hazard_jit_at_call_site.py": ("--mode", "strict")}


@pytest.mark.parametrize("program", HAZARDS, ids=lambda p: p.stem)
def test_hazard_is_reported(program, guard_run):
    run = guard_run(program, *OPTIONS.get(program.name, ()))
    assert run.code == EXIT_DETECTED, (run.code, run.stderr[-4000:])
    report = run.report
    assert report is not None, run.stderr[-4000:]
    jsonschema.validate(report, SCHEMA)
    assert report["kind"] == expected_kind(program), report["summary"]
    for index, line in site_markers(program).items():
        loc = run.process(index)["location"]
        assert loc is not None and loc["file"].endswith(program.name) and loc["line"] == line, (
            index, loc, report["summary"])
    # A process that died of a fatal signal: its stack, from the crash file, shows where.
    for index, line in site_markers(program, "crash").items():
        snaps = run.process(index)["snapshots"]
        assert snaps and snaps[0]["method"] == CRASH_METHOD, snaps
        main = next(t for t in snaps[0]["threads"] if t["is_main"])
        top = main["frames"][0]  # innermost
        assert top["file"].endswith(program.name) and top["line"] == line, main
    if report["kind"] == "died":
        # The survivors' next collective with the dead process fails (gloo: connection closed):
        # they are reported leaving, where they left, not `ok`.
        for p in report["processes"]:
            if p["status"] != "died":
                assert p["status"] == "exited" and p["note"].startswith("left the program after the death"), p
                assert f"process {p['process_index']} left at {program.name}:" in report["summary"], report["summary"]
    # The terminal got the report too, and the files are complete.
    assert report["kind"].upper() in run.stderr
    assert (run.report_dir / "report.html").stat().st_size > 1000
    assert (run.report_dir / "report.txt").read_text().strip()


@pytest.mark.parametrize("program", CLEAN, ids=lambda p: p.stem)
def test_clean_program_leaves_no_report(program, guard_run):
    run = guard_run(program)
    assert run.code == 0, run.stderr[-4000:]
    assert not run.report_dir.exists(), list(run.report_dir.rglob("*"))
    assert not run.guard_messages, run.stderr[-3000:]


def test_local_calls_before_cross_process_calls_leave_no_report(guard_run):
    """Steps run locally first (on one process; on per-host shapes), then across every process,
    cached: nothing local may enter what the processes compare (a guard-only program: see its
    docstring)."""
    run = guard_run(Path(__file__).parent / "programs" / "local_calls_first.py", n=2)
    assert run.code == 0, (run.report or {}).get("summary") or run.stderr[-4000:]
    assert not run.report_dir.exists(), run.report
    assert "final weights" in run.stdout


def test_per_process_object_state_leaves_no_report(guard_run):
    """One process alone clearing JAX's caches, missing its C++ cache, keeping jit objects or
    closures alive, or memoizing what the other rebuilds: a call's identity must not depend on
    that (see the program's docstring)."""
    run = guard_run(Path(__file__).parent / "programs" / "per_process_object_state.py", n=2)
    assert run.code == 0, (run.report or {}).get("summary") or run.stderr[-4000:]
    assert not run.report_dir.exists(), run.report
    assert run.stdout.count("done") == 2
