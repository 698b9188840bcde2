"""End to end through `mcjax-guard -n 3`: the supervisor detects the hang (or the divergence), collects
every process's stacks, writes the report before it kills the group, and the report singles out the
odd process and its line, within the threshold plus 10 s. `mcjax-guard dump` takes a snapshot of a
running job without stopping it."""

from __future__ import annotations

import json
import re
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from runtime_guard.settings import EXIT_DETECTED

from .conftest import PROGRAM, child_env, point_line

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
THRESHOLD = 5.0

# scenario, odd process, report kind the guard gives it, what the odd process is found waiting on
CASES = [
    ("sleep", 1, "missing", "time.sleep"),
    ("barrier", 2, "missing", "a coordination-service barrier (wait_at_barrier)"),
    ("branch", 0, "divergence", "jit(scaled_total)"),
]


def _guard(args: list[str], env: dict[str, str], **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "runtime_guard", *args], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kw)


def _reached_times(out: str) -> list[float]:
    # mcjax-guard -n prefixes each process's output lines with "[i] ".
    lines = (re.sub(r"^\[\d+\] ", "", line) for line in out.splitlines())
    return [float(line.split()[1]) for line in lines if line.startswith("reached ")]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie is gone for our purpose (its parent, the supervisor, has exited).
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except OSError:
        return True


@pytest.mark.parametrize("scenario,odd,kind,waits", CASES, ids=[c[0] for c in CASES])
def test_guard_reports_the_odd_process_of_a_hang(tmp_path, scenario, odd, kind, waits):
    report_dir = tmp_path / "report"
    env = child_env({"MCJAX_RUN_DIR": str(tmp_path / "run")})
    sup = _guard(["-n", "3", "--timeout", str(THRESHOLD), "--report-dir", str(report_dir),
                  "python", str(PROGRAM), scenario, str(odd)], env)
    try:
        out, err = sup.communicate(timeout=150)
    finally:
        if sup.poll() is None:
            os.killpg(sup.pid, signal.SIGKILL)
            sup.wait(timeout=30)
    err = err.decode(errors="replace")
    assert sup.returncode == EXIT_DETECTED, err[-3000:]
    reached = _reached_times(out.decode())
    assert len(reached) == 3, (out, err[-3000:])

    data = json.loads((report_dir / "report.json").read_text())
    jsonschema.validate(data, SCHEMA)
    assert data["kind"] == kind, data["summary"]
    # Detected and written within the threshold plus 10 s of the moment everyone was in place.
    assert data["created"] - max(reached) <= THRESHOLD + 10, data["created"] - max(reached)
    assert (report_dir / "report.html").is_file() and (report_dir / "report.txt").is_file()

    merged = data["merged_stacks"]
    assert merged["outliers"] == [odd], data["summary"]
    head = f"process {odd} is not where the others are: at "
    assert head in data["summary"], data["summary"]
    clause = data["summary"][data["summary"].index(head):].split(";")[0]
    assert f"{PROGRAM.name}:{point_line(scenario + '-odd')}" in clause and waits in clause, data["summary"]
    # Every process's location is the line of the user's code where it is, whatever the kind.
    for p in data["processes"]:
        want = point_line(scenario + ("-odd" if p["process_index"] == odd else "-others"))
        assert (Path(p["location"]["file"]).name, p["location"]["line"]) == (PROGRAM.name, want), p["location"]
        assert p["snapshots"], "every process has stacks"
    # The guard's last dispatch is attached to every process.
    assert all(p["dispatch"] and p["dispatch"]["seq"] >= 1 for p in data["processes"])
    # The report came before the kill: the processes in it are gone now, and it says which method.
    assert all(_gone(p["pid"]) for p in data["processes"])
    assert any(n.startswith("stacks collected with py-spy") for n in data["notes"]), data["notes"]
    # What the terminal showed is the same report.
    assert data["summary"][:60] in " ".join(err.split())


def test_dump_writes_a_snapshot_of_a_running_job(tmp_path):
    report_dir = tmp_path / "report"
    env = child_env({"MCJAX_RUN_DIR": str(tmp_path / "run")})
    sup = _guard(["-n", "3", "--timeout", "300", "--report-dir", str(report_dir),
                  "python", str(PROGRAM), "sleep", "1"], env)
    try:
        buf, deadline = b"", time.monotonic() + 90
        while buf.count(b"reached ") < 3 and time.monotonic() < deadline and sup.poll() is None:
            if select.select([sup.stdout], [], [], 1.0)[0]:
                buf += os.read(sup.stdout.fileno(), 4096)
        assert buf.count(b"reached ") == 3, sup.stderr.read1().decode(errors="replace") if sup.poll() is not None else buf
        time.sleep(1.0)
        listed = subprocess.run([sys.executable, "-m", "runtime_guard", "dump", "--list"], env=env, cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
        assert listed.returncode == 0 and listed.stdout.startswith(f"{sup.pid}\t"), listed
        dump = subprocess.run([sys.executable, "-m", "runtime_guard", "dump", "--wait", "60"], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=90)
        assert dump.returncode == 0, dump.stderr
        snap_dir = Path(dump.stdout.strip().splitlines()[-1])
        assert snap_dir.parent == report_dir and snap_dir.name.startswith("snapshot-")
        data = json.loads((snap_dir / "report.json").read_text())
        jsonschema.validate(data, SCHEMA)
        assert data["kind"] == "snapshot"
        assert data["merged_stacks"]["outliers"] == [1], data["summary"]
        assert f"{PROGRAM.name}:{point_line('sleep-odd')}" in data["summary"]
        assert (snap_dir / "report.html").is_file()
        # The job goes on: the supervisor and all its processes still run, and no hang report yet.
        assert sup.poll() is None and not (report_dir / "report.json").exists()
        assert all(not _gone(p["pid"]) for p in data["processes"])
    finally:
        if sup.poll() is None:
            sup.send_signal(signal.SIGINT)  # the supervisor stops its group on SIGINT
            try:
                sup.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(sup.pid, signal.SIGKILL)
                sup.wait(timeout=30)
    # Its run file is gone with it.
    none_left = subprocess.run([sys.executable, "-m", "runtime_guard", "dump", "--list"], env=env, cwd=ROOT,
                               capture_output=True, text=True, timeout=60)
    assert none_left.returncode == 0 and not none_left.stdout, none_left
    assert "no running guarded job" in none_left.stderr, none_left
