"""Real hangs, real stacks: 3 JAX processes on the CPU hang in three different ways; the collector
(as the supervisor, their parent) takes py-spy stacks, and the report must single out the odd
process and name the file:line where it is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from runtime_guard.postmortem import build_postmortem_report, write_postmortem
from runtime_guard.report.model import ProcessReport, Report
from runtime_guard.stacks import collect_stacks

from .conftest import PROGRAM, point_line

pytestmark = pytest.mark.slow

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "report.schema.json").read_text())

# scenario, odd process, what the odd one waits on, what the others wait on
SCENARIOS = [
    ("branch", 0, "collective", "collective"),
    ("sleep", 1, "sleep", "collective"),
    ("barrier", 2, "barrier", "collective"),
]


def _procs(job) -> list[ProcessReport]:
    return [ProcessReport(process_index=i, pid=p.pid) for i, p in enumerate(job.procs)]


def _check_singled_out(report: Report, job, odd_cat: str | None, others_cat: str | None) -> None:
    odd = job.odd
    odd_line, others_line = point_line(f"{job.scenario}-odd"), point_line(f"{job.scenario}-others")
    assert report.merged_stacks["outliers"] == [odd], report.summary
    head = f"process {odd} is not where the others are: at "
    assert head in report.summary, report.summary
    clause = report.summary[report.summary.index(head):].split(";")[0]
    assert f"{PROGRAM.name}:{odd_line}" in clause, report.summary
    others = sorted(set(range(job.n)) - {odd})
    assert f"processes {','.join(map(str, others))} are at " in report.summary
    assert f"{PROGRAM.name}:{others_line}" in report.summary
    by_idx = {p.process_index: p for p in report.processes}
    assert Path(by_idx[odd].location.file).name == PROGRAM.name
    assert by_idx[odd].location.line == odd_line
    for i in others:
        assert by_idx[i].location.line == others_line
    classes = report.merged_stacks["classes"]
    assert classes[0]["processes"] == [odd] and classes[0]["outlier"]
    if odd_cat:
        assert classes[0]["category"] == odd_cat, classes[0]
    if others_cat:
        assert classes[1]["category"] == others_cat, classes[1]
    # The odd process is alone on its branch of the merged tree, and that branch is marked.
    tree = report.merged_stacks["trees"][0]["root"]
    assert tree["processes"] == list(range(job.n))
    odd_branch = [c for c in tree["children"] if c["processes"] == [odd]] or [
        g for c in tree["children"] for g in c["children"] if g["processes"] == [odd]
    ]
    assert odd_branch and odd_branch[0]["outlier"]


@pytest.mark.parametrize("scenario,odd,odd_cat,others_cat", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_hang_report_singles_out_the_odd_process(shared_hang_job, tmp_path, scenario, odd, odd_cat, others_cat):
    job = shared_hang_job(scenario, n=3, odd=odd)
    stacks = collect_stacks(job.targets, native="first", snapshots=2, interval=1.0, timeout=10.0)
    assert all(job.alive()), "collecting stacks must not kill anyone"
    out = tmp_path / "report"
    report, paths = write_postmortem("hang", _procs(job), stacks, out, headline="no dispatch completed for 5 s")
    # The files are complete when write_postmortem returns (the caller kills right after).
    assert set(paths) == {"json", "text", "html"}
    assert not list(out.glob(".*.tmp")), "no temporary files left behind"
    data = json.loads(paths["json"].read_text())
    jsonschema.validate(data, SCHEMA)
    assert paths["html"].read_text().rstrip().endswith("</html>")
    assert report.summary in paths["text"].read_text()

    loaded = Report.from_dict(data)
    _check_singled_out(loaded, job, odd_cat, others_cat)
    assert loaded.summary.startswith("no dispatch completed for 5 s; ")
    for p in loaded.processes:
        assert p.status == "hung" and p.progress == "stuck"
        assert [s.method for s in p.snapshots] == ["py-spy --native", "py-spy"]
        assert any(f.native for t in p.snapshots[0].threads for f in t.frames)
    assert any("py-spy --native" in n for n in loaded.notes)


@pytest.mark.parametrize(
    "scenario,odd,env",
    [("sleep", 1, {"MCJAX_PYSPY": "/nonexistent/py-spy"}), ("barrier", 2, {"MCJAX_DISABLE_PYSPY": "1"})],
    ids=["pyspy-missing", "pyspy-disabled"],
)
def test_report_comes_from_faulthandler_when_pyspy_is_unavailable(shared_hang_job, monkeypatch, scenario, odd, env):
    job = shared_hang_job(scenario, n=3, odd=odd)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    stacks = collect_stacks(job.targets, native="first", snapshots=2, interval=1.0, timeout=10.0)
    assert all(job.alive()), "the faulthandler signal must not stop the program"
    report = build_postmortem_report("hang", _procs(job), stacks)
    for p in report.processes:
        assert [s.method for s in p.snapshots] == ["faulthandler", "faulthandler"]
        why = "py-spy not found at $MCJAX_PYSPY" if "MCJAX_PYSPY" in env else "py-spy disabled by $MCJAX_DISABLE_PYSPY"
        assert why in p.snapshots[0].note
    assert any(n.startswith("stacks collected with faulthandler (process 0-2)") for n in report.notes), report.notes
    assert any("faulthandler fallback" in n for n in report.notes)
    # Without native frames the odd process is still found from its Python stack and source line.
    _check_singled_out(report, job, {"sleep": "sleep", "barrier": "barrier"}[scenario], None)


def test_refused_pyspy_falls_back_to_nonblocking(shared_hang_job):
    """Another tracer attached to a process makes py-spy's ptrace pause fail with EPERM (a real
    refusal); the collector retries without pausing and says so."""
    import subprocess
    import sys

    job = shared_hang_job("sleep", n=3, odd=1)
    seize = (
        "import ctypes,sys,time\n"
        "libc=ctypes.CDLL(None,use_errno=True)\n"
        "ok=libc.ptrace(0x4206,int(sys.argv[1]),None,None)==0\n"  # PTRACE_SEIZE
        "print('seized' if ok else 'failed',flush=True)\n"
        "time.sleep(60)\n"
    )
    tracer = subprocess.Popen([sys.executable, "-c", seize, str(job.procs[1].pid)], stdout=subprocess.PIPE, text=True)
    try:
        if tracer.stdout.readline().strip() != "seized":
            pytest.skip("cannot ptrace-seize a child here")
        stacks = collect_stacks(job.targets, native="first", snapshots=2, interval=1.0, timeout=10.0)
    finally:
        tracer.kill()
        tracer.wait(timeout=30)
    report = build_postmortem_report("hang", _procs(job), stacks)
    refused = report.processes[1]
    assert [s.method for s in refused.snapshots] == ["py-spy --nonblocking", "py-spy --nonblocking"]
    assert "permission-denied" in refused.snapshots[0].note and "EPERM" in refused.snapshots[0].note
    assert any("process 1: " in n and "permission-denied" in n for n in report.notes), report.notes
    assert report.processes[0].snapshots[0].method == "py-spy --native"
    _check_singled_out(report, job, "sleep", "collective")


def test_no_stacks_at_all_still_gives_a_report(tmp_path, monkeypatch):
    """A process that is gone and a process with neither py-spy nor a fallback: the report says so."""
    import subprocess
    import sys

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=60)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        monkeypatch.setenv("MCJAX_DISABLE_PYSPY", "1")
        stacks = collect_stacks([(0, gone.pid, None), (1, live.pid, None)], snapshots=2, interval=0.2)
    finally:
        live.kill()
        live.wait(timeout=30)
    report, paths = write_postmortem("hang", [], stacks, tmp_path)
    assert report.merged_stacks["without_stacks"] == [0, 1]
    assert "no stacks could be collected" in report.summary
    notes = "\n".join(report.notes)
    assert "py-spy disabled by $MCJAX_DISABLE_PYSPY" in notes and "no in-process fallback dumper" in notes
    assert all(p.note.startswith("no stacks: ") for p in report.processes)
    jsonschema.validate(json.loads(paths["json"].read_text()), SCHEMA)


def test_fallback_is_never_sent_to_a_process_without_the_dumper(tmp_path):
    """SIGUSR2 would kill a process that did not register the handler: the pid in the file's
    header must match before any signal is sent."""
    import subprocess
    import sys

    from runtime_guard.stacks.fallback import FallbackError, request_fallback_dump

    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = tmp_path / "stacks.txt"
        stale.write_text(f"# mcjax-faulthandler pid={os.getpid()} main_thread=0x1\n")  # someone else's header
        with pytest.raises(FallbackError) as e:
            request_fallback_dump(p.pid, stale, timeout=1.0)
        assert e.value.reason == "not-installed"
        assert p.poll() is None
    finally:
        p.kill()
        p.wait(timeout=30)


def test_locals_of_secret_names_are_redacted_in_every_output(hang_job, tmp_path):
    """With --locals (py-spy --locals), a local named like a secret, and a secret-looking entry in
    another local's repr, never reach report.json, report.txt, report.html or the terminal."""
    import io

    from rich.console import Console

    from runtime_guard.report.writer import print_report

    job = hang_job("secret", n=2, odd=1)
    stacks = collect_stacks(job.targets, snapshots=1, timeout=10.0, locals=True)
    report, paths = write_postmortem("missing", _procs(job), stacks, tmp_path / "report")
    frames = [f for s in report.processes[1].snapshots for t in s.threads for f in t.frames]
    held = next((f.locals for f in frames if f.name.endswith("wait_holding_secrets") and f.locals), None)
    if held is None:
        pytest.skip(f"py-spy gave no locals here: {[s.note for s in report.processes[1].snapshots]}")
    assert held["api_token"] == "<redacted>", held
    assert "<redacted>" in held["config"] and "learning_rate" in held["config"], held
    assert held["steps_done"] == "41", held  # not a secret: shown as is
    terminal = io.StringIO()
    print_report(report, Console(file=terminal, force_terminal=False))
    outputs = {name: p.read_text() for name, p in paths.items()}
    outputs["terminal"] = terminal.getvalue()
    for name, text in outputs.items():
        assert "s3cr3t" not in text, name
    assert "api_token = <redacted>" in outputs["text"]


def test_a_stopped_process_is_frozen_not_stuck(hang_job):
    """SIGSTOP (or a debugger) holds the odd process: the report says frozen, as the docs do."""
    import signal

    job = hang_job("sleep", n=2, odd=1)
    os.kill(job.procs[1].pid, signal.SIGSTOP)
    try:
        stacks = collect_stacks(job.targets, snapshots=2, interval=0.5, timeout=5.0)
    finally:
        os.kill(job.procs[1].pid, signal.SIGCONT)
    report = build_postmortem_report("missing", _procs(job), stacks)
    by_idx = {p.process_index: p for p in report.processes}
    assert by_idx[1].progress == "frozen" and by_idx[0].progress == "stuck", report.summary
    assert "(frozen)" in report.summary and "time.sleep (stuck)" not in report.summary, report.summary
    jsonschema.validate(report.to_dict(), SCHEMA)
