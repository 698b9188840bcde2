"""Hazards no cross-process computation shows while it runs, each caught by a real 2-process run,
and its correct twin silent: unequal work found when the job ends, and replicated host data that
differs between processes (opt-in value check)."""

from __future__ import annotations

import os
from pathlib import Path

from runtime_guard.settings import EXIT_DETECTED
from tests.guard.conftest import site_markers

HERE = Path(__file__).parent / "programs"
RESHARD = HERE / "one_more_reshard_at_exit.py"
REPLICATED = HERE / "replicated_params_from_host.py"


def _silent(run) -> None:
    assert run.code == 0, (run.report or {}).get("summary") or run.stderr[-4000:]
    assert not run.report_dir.exists(), run.report


def test_the_same_reshard_everywhere_before_leaving_is_silent(guard_run):
    _silent(guard_run(RESHARD))


def test_one_more_reshard_on_one_process_is_reported_even_when_all_leave(guard_run):
    run = guard_run(RESHARD, program_args=("hazard",))
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    assert run.report["kind"] in ("exited", "divergence"), run.report["summary"]
    loc = run.process(0)["location"]
    assert loc["file"].endswith(RESHARD.name) and loc["line"] == site_markers(RESHARD)[0], loc


def test_replicated_host_data_equal_everywhere_is_silent(guard_run, monkeypatch):
    monkeypatch.setenv("MCJAX_CHECK_REPLICATED", "1")
    _silent(guard_run(REPLICATED))


def test_replicated_host_data_that_differs_is_reported_where_it_was_made(guard_run, monkeypatch):
    monkeypatch.setenv("MCJAX_CHECK_REPLICATED", "1")
    run = guard_run(REPLICATED, program_args=("hazard",))
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    assert run.report["kind"] == "divergence", run.report["summary"]
    for index, line in site_markers(REPLICATED).items():
        loc = run.process(index)["location"]
        assert loc["file"].endswith(REPLICATED.name) and loc["line"] == line, (index, loc)
    assert "digest" in run.report["summary"] or "digest" in str(run.report), run.report["summary"]


def test_the_value_check_is_off_by_default(guard_run):
    assert "MCJAX_CHECK_REPLICATED" not in os.environ
    _silent(guard_run(REPLICATED, program_args=("hazard",)))


THREADS = HERE / "two_threads_dispatching.py"


def test_two_threads_one_after_the_other_are_silent(guard_run):
    _silent(guard_run(THREADS))


def test_two_threads_dispatching_at_once_are_reported_at_the_first_overlap(guard_run):
    run = guard_run(THREADS, program_args=("hazard",))
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    report = run.report
    assert report["kind"] == "divergence" and "two threads at once" in report["summary"], report["summary"]
    odd = [p for p in report["processes"] if p["status"] == "diverged"]
    assert odd and all(p["location"]["line"] == site_markers(THREADS)[0] for p in odd), odd
