"""One report across hosts: each "host" runs its own `mcjax-guard python prog.py` supervisor
wrapping one process (as under Slurm); process 0's supervisor collects every host's stacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from runtime_guard.launcher import free_port
from runtime_guard.settings import EXIT_DETECTED
from tests.guard.conftest import PROGRAMS, site_markers


def test_stacks_of_every_host_reach_process_0s_report(tmp_path):
    program = PROGRAMS / "event_stuck_process.py"
    port = free_port()
    procs = []
    for i in range(2):
        # What a cluster launcher provides; the guard fills num_processes/process_id from these.
        env = dict(os.environ, JAX_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", MCJAX_NUM_PROCESSES="2",
                   MCJAX_PROCESS_ID=str(i), JAX_PLATFORMS="cpu", JAX_NUM_CPU_DEVICES="1",
                   XLA_FLAGS="--xla_cpu_collective_timeout_seconds=60")
        cmd = [sys.executable, "-m", "runtime_guard", "--timeout", "4", "--report-dir", str(tmp_path / f"host{i}"),
               "python", str(program)]
        procs.append(subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True))
    outs = []
    for p in procs:
        try:
            outs.append(p.communicate(timeout=150))
        except subprocess.TimeoutExpired:
            p.kill()
            outs.append(p.communicate())
    assert [p.returncode for p in procs] == [EXIT_DETECTED, EXIT_DETECTED], [o[1][-3000:] for o in outs]

    merged = json.loads((tmp_path / "host0" / "report.json").read_text())
    assert merged["kind"] == "missing"
    by_index = {p["process_index"]: p for p in merged["processes"]}
    assert by_index[0]["snapshots"] and by_index[1]["snapshots"], merged["notes"]
    line = site_markers(program)[1]
    assert by_index[1]["location"]["line"] == line and by_index[1]["status"] == "never-joined"
    assert "1" in merged["merged_stacks"]["outliers"] or 1 in merged["merged_stacks"]["outliers"], merged["merged_stacks"]

    local = json.loads((tmp_path / "host1" / "report.json").read_text())
    assert any("sent to process 0's host" in n for n in local["notes"]), local["notes"]
