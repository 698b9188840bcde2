"""What is not cross-process work is never reported, and a record is never taken back after it
could have been compared: each correct program runs silent under real processes, and its hazard
twin (the same program with one process doing more) is still reported."""

from __future__ import annotations

import re
from pathlib import Path

from runtime_guard.settings import EXIT_DETECTED
from tests.guard.conftest import site_markers

HERE = Path(__file__).parent / "programs"
LOCAL_INPUT = HERE / "local_input_to_cross_process_call.py"
NO_COMMUNICATION = HERE / "no_communication_on_one.py"


def test_a_local_input_converted_inside_a_cross_process_call_is_the_call_once(guard_run):
    """JAX slicing a process-local argument runs a jit of its own inside the call's dispatch: not
    the call. Every call keeps exactly its one record, on every process (it once lost it)."""
    run = guard_run(LOCAL_INPUT, "--devices-per-process", "2")
    assert run.code == 0, (run.report or {}).get("summary") or run.stderr[-4000:]
    assert not run.report_dir.exists(), run.report
    counts = re.findall(r"records per call \[([\d, ]+)\]", run.stdout)
    assert len(counts) == 2, run.stdout[-2000:]
    for c in counts:
        assert [int(x) for x in c.split(",")] == [1] * 8, counts


def test_one_process_calling_with_a_local_input_alone_is_reported(guard_run):
    run = guard_run(LOCAL_INPUT, "--devices-per-process", "2", program_args=("hazard",))
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    assert run.report["kind"] == "divergence", run.report["summary"]
    for index, line in site_markers(LOCAL_INPUT).items():
        loc = run.process(index)["location"]
        assert loc["file"].endswith(LOCAL_INPUT.name) and loc["line"] == line, (index, loc)


def test_computations_that_exchange_nothing_run_on_one_process_silently(guard_run):
    """`w[0]` of a replicated global array on process 0 alone spans both processes' devices, but
    its program has no collective: nobody waits for process 1."""
    run = guard_run(NO_COMMUNICATION)
    assert run.code == 0, (run.report or {}).get("summary") or run.stderr[-4000:]
    assert not run.report_dir.exists(), run.report
    assert not run.guard_messages, run.stderr[-3000:]
    assert "first 0.0" in run.stdout and "double" in run.stdout


def test_a_collective_run_on_one_process_after_them_is_reported(guard_run):
    run = guard_run(NO_COMMUNICATION, program_args=("hazard",))
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    assert run.report["kind"] in ("exited", "divergence"), run.report["summary"]
    loc = run.process(0)["location"]
    assert loc["file"].endswith(NO_COMMUNICATION.name) and loc["line"] == site_markers(NO_COMMUNICATION)[0], loc
