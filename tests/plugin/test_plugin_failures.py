"""Divergence, hang and a one-process exception fail the test with the guard's report."""

import json
import re
import time

import pytest
from plugin_helpers import gone, line_of, make_module, report_path, run

DIVERGENT = '''
@pytest.mark.mcjax(processes=2, timeout=60)
def test_rank0_branch(mcjax_process_index):
    x, rep = global_array([1.0])
    if mcjax_process_index == 0:
        jax.jit(jnp.max, out_shardings=rep)(x)  # only-rank-0
    jax.jit(jnp.sum, out_shardings=rep)(x)  # everyone
'''

ONE_RAISES = '''
@pytest.mark.mcjax(processes=2, timeout=60)
def test_one_process_raises(mcjax_process_index):
    x, rep = global_array([1.0])
    jax.jit(jnp.sum, out_shardings=rep)(x)
    if mcjax_process_index == 1:
        raise ValueError(f"shard {mcjax_process_index} is corrupt")  # the-raise
    jax.jit(jnp.sum, out_shardings=rep)(x * 2)  # process 0 waits here
'''

HANGS = '''
@pytest.mark.mcjax(processes=2, timeout=16)
def test_one_process_sleeps(mcjax_process_index):
    x, rep = global_array([1.0])
    jax.jit(jnp.sum, out_shardings=rep)(x)
    if mcjax_process_index == 1:
        time.sleep(600)  # the-sleep
    jax.jit(jnp.sum, out_shardings=rep)(x * 2)
'''


@pytest.mark.timeout(200)
def test_divergent_test_fails_naming_both_lines(inner: pytest.Pytester) -> None:
    path = make_module(inner, "test_div", DIVERGENT)
    reports = inner.path / "saved-reports"
    result = run(inner, "--mcjax-report-dir", str(reports))
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "DIVERGENCE" in out
    assert f"test_div.py:{line_of(path, 'only-rank-0')}" in out  # process 0's dispatch...
    assert f"test_div.py:{line_of(path, 'everyone')}" in out  # ...against process 1's
    # A process that already exited when the report was made shows its status too:
    # "[diverged (exit 1)]" (the strict check failed its test); which one has exited is timing.
    assert re.search(r"process 0 \[diverged(?: \(exit \d+\))?\].*\n.*jit\(max\)", out)
    assert re.search(r"process 1 \[diverged(?: \(exit \d+\))?\].*\n.*jit\(sum\)", out)
    assert "FAILED test_div.py::test_rank0_branch - mcjax DIVERGENCE" in out
    # The full report is saved under --mcjax-report-dir, one directory per test, and says the same.
    saved = report_path(out)
    assert saved.is_file() and reports in saved.parents
    data = json.loads((saved.parent / "report.json").read_text())
    assert data["kind"] == "divergence"
    assert {p["location"]["line"] for p in data["processes"]} == {line_of(path, "only-rank-0"), line_of(path, "everyone")}
    assert all(gone(p["pid"]) for p in data["processes"])


@pytest.mark.timeout(200)
def test_exception_on_one_process_shows_its_traceback(inner: pytest.Pytester) -> None:
    path = make_module(inner, "test_exc", ONE_RAISES)
    result = run(inner)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    raise_line = line_of(path, "the-raise")
    # Process 1's own traceback, as pytest prints it, labelled with the process.
    assert "process 1: call failed" in out
    assert ">           raise ValueError(f\"shard {mcjax_process_index} is corrupt\")" in out
    assert "E           ValueError: shard 1 is corrupt" in out
    assert f"test_exc.py:{raise_line}: ValueError" in out
    assert "process 0: call failed" not in out  # process 0 did nothing wrong
    # The guard says who left and where; the short summary names the exception.
    assert "EXITED" in out and "process 1 raised an exception" in out
    assert "FAILED test_exc.py::test_one_process_raises - process 1: ValueError" in out


@pytest.mark.timeout(200)
def test_hanging_test_fails_within_its_timeout(inner: pytest.Pytester) -> None:
    path = make_module(inner, "test_hang", HANGS)
    start = time.monotonic()
    result = run(inner)
    elapsed = time.monotonic() - start
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # The mark's 16 s bound the multi-process run (plus start-up of the outer pytest).
    durations = re.findall(r"in (\d+\.\d+)s", out)
    assert durations and float(durations[-1]) < 16 + 15, out[-500:]
    assert elapsed < 16 + 40
    # The odd process and the line it is stuck on are named, from its stack.
    assert re.search(r"process 1 \[[a-z-]+\]", out)
    assert f"test_hang.py:{line_of(path, 'the-sleep')}" in out and "time.sleep" in out
    data = json.loads((report_path(out).parent / "report.json").read_text())
    assert data["kind"] in ("missing", "hang")
    p1 = next(p for p in data["processes"] if p["process_index"] == 1)
    assert p1["location"]["line"] == line_of(path, "the-sleep")
    assert all(gone(p["pid"]) for p in data["processes"])
